package fleet

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

func TestMemoryStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := &MemoryStore{MaxEntries: 3}
		for i := range 10 {
			if err := s.Put(ctx, fmt.Sprint(i), &Entry{Failures: i}); err != nil {
				t.Fatal(err)
			}
		}
		n := 0
		for i := range 10 {
			if e, _ := s.Get(ctx, fmt.Sprint(i)); e != nil {
				n++
			}
		}
		if e, _ := s.Get(ctx, "9"); n != 3 || e == nil || e.Failures != 9 {
			t.Errorf("%d entries kept (want 3), last %+v", n, e)
		}

		unlock, ok, err := s.TryLock(ctx, "o", time.Minute)
		if !ok || err != nil {
			t.Fatalf("TryLock = %v, %v", ok, err)
		}
		if _, ok, _ := s.TryLock(ctx, "o", time.Minute); ok {
			t.Errorf("second TryLock succeeded")
		}
		if _, ok, _ := s.TryLock(ctx, "p", time.Minute); !ok {
			t.Errorf("TryLock of another origin failed")
		}
		unlock()
		unlock2, ok, _ := s.TryLock(ctx, "o", time.Minute)
		if !ok {
			t.Errorf("TryLock after unlock failed")
		}
		time.Sleep(time.Minute)
		if _, ok, _ := s.TryLock(ctx, "o", time.Minute); !ok {
			t.Errorf("TryLock after the ttl failed")
		}
		unlock2() // a stale unlock does not release the new holder
		if _, ok, _ := s.TryLock(ctx, "o", time.Minute); ok {
			t.Errorf("a stale unlock released the lock")
		}
	})
}

// TestMemoryStoreMaxBytes: a MemoryStore drops entries to stay within its
// MaxBytes, counts an entry put again once, and keeps an entry larger than
// MaxBytes alone.
func TestMemoryStoreMaxBytes(t *testing.T) {
	ctx := context.Background()
	body := make([]byte, 100<<10)
	s := &MemoryStore{MaxBytes: 1 << 20}
	for i := range 50 {
		s.Put(ctx, fmt.Sprint("https://o", i, ".example"), &Entry{Access: AccessSuccess, Body: body})
		s.Put(ctx, fmt.Sprint("https://o", i, ".example"), &Entry{Access: AccessSuccess, Body: body}) // again: counted once
	}
	n := 0
	for i := range 50 {
		if e, _ := s.Get(ctx, fmt.Sprint("https://o", i, ".example")); e != nil {
			n++
		}
	}
	if e, _ := s.Get(ctx, "https://o49.example"); e == nil || n != 10 || s.bytes > s.MaxBytes {
		t.Errorf("%d entries of 100 KiB kept in 1 MiB, counted %d bytes; the last one kept: %v", n, s.bytes, e != nil)
	}
	s.Put(ctx, "https://big.example", &Entry{Access: AccessSuccess, Body: make([]byte, 2<<20)})
	if e, _ := s.Get(ctx, "https://big.example"); e == nil || len(s.entries) != 1 {
		t.Errorf("an entry over MaxBytes: kept %v, with %d entries in all; want it kept alone", e != nil, len(s.entries))
	}
	s.Put(ctx, "https://small.example", &Entry{Access: AccessUnavailable})
	if len(s.entries) != 1 || s.bytes != entrySize("https://small.example", &Entry{}) {
		t.Errorf("after a small entry: %d entries, %d bytes; want the large one dropped", len(s.entries), s.bytes)
	}
}
