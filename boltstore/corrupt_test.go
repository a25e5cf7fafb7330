package boltstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"

	bolt "go.etcd.io/bbolt"
)

// goodFile returns the path of a Store's file with entries and paces, closed.
func goodFile(t *testing.T) string {
	t.Helper()
	path := tempPath(t)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now()
	for i := range 100 {
		o := fmt.Sprintf("https://%d.example", i)
		e := &fleet.Entry{Access: fleet.AccessSuccess, Body: []byte(strings.Repeat("Disallow: /private\n", 20+i)),
			FetchedAt: now, Expires: now.Add(time.Hour)}
		if err := s.Put(ctx, o, e); err != nil {
			t.Fatal(err)
		}
		reserve(t, s, o, time.Hour, forever)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkCorrupt fails t unless Open of path fails with an error that matches
// ErrCorrupt and names path.
func checkCorrupt(t *testing.T, path string) {
	t.Helper()
	s, err := Open(path)
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded")
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "delete") {
		t.Errorf("Open: %v; want ErrCorrupt, naming %s and saying to delete it", err, path)
	}
	t.Logf("Open: %v", err)
}

// TestCorruptFiles opens files that are not whole Store files: each fails
// with a clear error, and none panics.
func TestCorruptFiles(t *testing.T) {
	write := func(t *testing.T, b []byte) string {
		path := tempPath(t)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	t.Run("empty", func(t *testing.T) { checkCorrupt(t, write(t, nil)) })
	t.Run("text", func(t *testing.T) { checkCorrupt(t, write(t, []byte("User-agent: *\nDisallow: /\n"))) })
	t.Run("random", func(t *testing.T) {
		for _, n := range []int{100, 4096, 64 << 10} {
			checkCorrupt(t, write(t, []byte(rand.Text()+strings.Repeat(rand.Text(), n/26))))
			b := make([]byte, n)
			rand.Read(b)
			checkCorrupt(t, write(t, b))
		}
	})
	t.Run("truncated", func(t *testing.T) {
		good, err := os.ReadFile(goodFile(t))
		if err != nil {
			t.Fatal(err)
		}
		m, ok := readMeta(good)
		if !ok {
			t.Fatal("no meta page in a good file")
		}
		used := int(m.highWater * m.pageSize)
		for _, n := range []int{100, int(m.pageSize), 2 * int(m.pageSize), used / 2, used - int(m.pageSize)} {
			checkCorrupt(t, write(t, good[:n]))
		}
	})
	t.Run("foreign bbolt file", func(t *testing.T) {
		path := tempPath(t)
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		db.Update(func(tx *bolt.Tx) error {
			_, err := tx.CreateBucket([]byte("widgets"))
			return err
		})
		db.Close()
		checkCorrupt(t, path)
	})
	t.Run("other format", func(t *testing.T) {
		path := goodFile(t)
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyFormat, []byte("boltstore 99")) })
		db.Close()
		checkCorrupt(t, path)
	})
	t.Run("unreadable pace", func(t *testing.T) {
		path := goodFile(t)
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketPaces).Put([]byte("https://1.example"), []byte{7, 7}) })
		db.Close()
		s := openTest(t, path)
		if wait, _ := reserve(t, s, "https://1.example", time.Hour, 0); wait != 0 {
			t.Errorf("an unreadable pace holds a turn back %v", wait)
		}
		if wait, _ := reserve(t, s, "https://2.example", time.Hour, 0); wait == 0 {
			t.Error("a readable pace was lost")
		}
	})
}

// TestDamagedPages alters bytes of the pages of a good file, other than its
// meta pages, and uses the Store if Open succeeds: no panic, no fault. Each file costs
// about a second of syncs: 6 files, or 60 with ROBOTS_LONG_TESTS=1 (.ci/run sets it).
func TestDamagedPages(t *testing.T) {
	seeds := uint64(6)
	if os.Getenv("ROBOTS_LONG_TESTS") != "" {
		seeds = 60
	}
	good, err := os.ReadFile(goodFile(t))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := readMeta(good)
	used := int(m.highWater * m.pageSize)
	ctx := context.Background()
	var opened, failed int
	for seed := range seeds {
		r := mrand.New(mrand.NewPCG(seed, 1))
		b := append([]byte{}, good...)
		for range 1 + r.IntN(8) {
			at := 2*int(m.pageSize) + r.IntN(used-2*int(m.pageSize))
			b[at] = byte(r.Uint32())
		}
		path := tempPath(t)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Errorf("seed %d: Open: %v; want it to name the file", seed, err)
			}
			failed++
			continue
		}
		opened++
		for i := range 100 {
			o := fmt.Sprintf("https://%d.example", i)
			s.Get(ctx, o)
			if i%10 == 0 {
				s.Put(ctx, o, &fleet.Entry{Access: fleet.AccessUnavailable, Expires: time.Now().Add(time.Hour)})
			}
			s.Reserve(ctx, o, fleet.TurnRequest{Every: time.Second, Known: true})
		}
		s.compact()
		s.Close()
	}
	t.Logf("%d damaged files opened, %d refused", opened, failed)
}
