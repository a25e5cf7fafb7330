package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"

	bolt "go.etcd.io/bbolt"

	"github.com/f9014239/robots"
)

// sameEntry reports whether a and b hold the same fields.
func sameEntry(a, b *fleet.Entry) bool {
	return a.Access == b.Access && bytes.Equal(a.Body, b.Body) && a.FetchedAt.Equal(b.FetchedAt) &&
		a.Expires.Equal(b.Expires) && a.UnreachableSince.Equal(b.UnreachableSince) &&
		a.Failures == b.Failures && a.Error == b.Error && a.ETag == b.ETag && a.LastModified == b.LastModified
}

// TestEntries puts entries of each kind and reads them back, from the Store
// that put them and from the file reopened.
func TestEntries(t *testing.T) {
	path := tempPath(t)
	s := openTest(t, path)
	ctx := context.Background()
	now := time.Now()
	entries := map[string]*fleet.Entry{
		"https://success.example": {Access: fleet.AccessSuccess, Body: []byte("User-agent: *\nDisallow: /private\n"),
			FetchedAt: now, Expires: now.Add(24 * time.Hour)},
		"https://empty.example": {Access: fleet.AccessSuccess, Body: []byte{}, FetchedAt: now, Expires: now.Add(time.Hour)},
		"https://validators.example": {Access: fleet.AccessSuccess, Body: []byte("User-agent: *\nDisallow: /\n"),
			FetchedAt: now, Expires: now.Add(time.Hour), ETag: `W/"5f-1a"`, LastModified: "Mon, 07 Dec 2026 10:00:00 GMT"},
		"https://etag-empty.example":  {Access: fleet.AccessSuccess, Body: []byte{}, FetchedAt: now, Expires: now.Add(time.Hour), ETag: `"e"`},
		"https://unavailable.example": {Access: fleet.AccessUnavailable, FetchedAt: now, Expires: now.Add(time.Hour)},
		"https://unreachable.example": {Access: fleet.AccessSuccess, Body: []byte("User-agent: *\nAllow: /\n"),
			FetchedAt: now.Add(-48 * time.Hour), Expires: now.Add(time.Minute), UnreachableSince: now.Add(-time.Hour),
			Failures: 3, Error: "robots: 503 Service Unavailable"},
		"https://never.example": {Expires: now.Add(time.Minute), UnreachableSince: now, Failures: 1, Error: "dial tcp: refused"},
		"http://[::1]:8080":     {Expires: now.Add(time.Minute)},
	}
	for o, e := range entries {
		if err := s.Put(ctx, o, e); err != nil {
			t.Fatal(err)
		}
	}
	check := func(s *Store, when string) {
		t.Helper()
		for o, want := range entries {
			got, err := s.Get(ctx, o)
			if err != nil || got == nil || !sameEntry(got, want) {
				t.Errorf("%s: Get(%s) = %+v, %v; want %+v", when, o, got, err, want)
			}
		}
		if e, err := s.Get(ctx, "https://absent.example"); e != nil || err != nil {
			t.Errorf("%s: Get of an absent origin = %v, %v; want nil, nil", when, e, err)
		}
	}
	check(s, "before Close")
	// A newer entry replaces an older one.
	e := &fleet.Entry{Access: fleet.AccessUnavailable, FetchedAt: now, Expires: now.Add(2 * time.Hour)}
	entries["https://success.example"] = e
	if err := s.Put(ctx, "https://success.example", e); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "https://success.example"); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: %v, want ErrClosed", err)
	}
	s = openTest(t, path)
	check(s, "reopened")
	if n := count(t, s); n != int64(len(entries)) {
		t.Errorf("%d entries counted, want %d", n, len(entries))
	}
}

// count returns the entries s counts, checking that the entries bucket and
// the index hold as many.
func count(t *testing.T, s *Store) int64 {
	t.Helper()
	var n, entries, index int64
	s.view(func(tx *bolt.Tx) error {
		n = i64(tx.Bucket(bucketMeta).Get(keyCount))
		entries = int64(tx.Bucket(bucketEntries).Stats().KeyN)
		index = int64(tx.Bucket(bucketExpiry).Stats().KeyN)
		return nil
	})
	if n != entries || n != index {
		t.Errorf("count %d, but %d entries and %d index keys", n, entries, index)
	}
	return n
}

// TestEntryBounds: a Put beyond MaxEntries or MaxBytes drops the entries
// that expire first; an entry larger than MaxBytes is kept alone.
func TestEntryBounds(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	entry := func(i int, size int) *fleet.Entry {
		return &fleet.Entry{Access: fleet.AccessSuccess, Body: bytes.Repeat([]byte("#"), size),
			FetchedAt: now, Expires: now.Add(time.Duration(i) * time.Minute)}
	}
	t.Run("entries", func(t *testing.T) {
		s := openTest(t, tempPath(t), WithMaxEntries(3))
		for _, i := range []int{5, 1, 4, 2, 3} {
			if err := s.Put(ctx, fmt.Sprintf("https://%d.example", i), entry(i, 10)); err != nil {
				t.Fatal(err)
			}
		}
		for i := 1; i <= 5; i++ {
			e, _ := s.Get(ctx, fmt.Sprintf("https://%d.example", i))
			if kept := e != nil; kept != (i >= 3) {
				t.Errorf("entry %d kept: %v; want only those that expire last", i, kept)
			}
		}
		if n := count(t, s); n != 3 {
			t.Errorf("%d entries, want 3", n)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		origin := func(i int) string { return fmt.Sprintf("https://%d.example", i) }
		size := entrySize(origin(1), encodeEntry(entry(1, 1000)))
		s := openTest(t, tempPath(t), WithMaxBytes(3*size))
		for i := 1; i <= 5; i++ {
			if err := s.Put(ctx, origin(i), entry(i, 1000)); err != nil {
				t.Fatal(err)
			}
		}
		if n := count(t, s); n != 3 {
			t.Errorf("%d entries, want 3", n)
		}
		if err := s.Put(ctx, origin(9), entry(9, int(4*size))); err != nil {
			t.Fatal(err)
		}
		if n := count(t, s); n != 1 {
			t.Errorf("%d entries after a Put larger than MaxBytes, want it alone", n)
		}
		if e, _ := s.Get(ctx, origin(9)); e == nil {
			t.Error("the large entry was not kept")
		}
	})
}

// TestRetention: an entry expired for longer than its retention is none, and
// compaction deletes it from the file.
func TestRetention(t *testing.T) {
	c := newFakeClock()
	s := openTest(t, tempPath(t), withClock(c.now), WithRetain(time.Hour))
	ctx := context.Background()
	now := time.Unix(0, c.now())
	for i, exp := range []time.Duration{-2 * time.Hour, -30 * time.Minute, time.Hour} {
		e := &fleet.Entry{Access: fleet.AccessUnavailable, FetchedAt: now, Expires: now.Add(exp)}
		if err := s.Put(ctx, fmt.Sprintf("https://%d.example", i), e); err != nil {
			t.Fatal(err)
		}
	}
	// The first was dropped by the Puts after it.
	if n := count(t, s); n != 2 {
		t.Errorf("%d entries, want 2", n)
	}
	if e, _ := s.Get(ctx, "https://1.example"); e == nil {
		t.Error("an entry expired within its retention is gone")
	}
	c.advance(time.Hour)
	if e, _ := s.Get(ctx, "https://1.example"); e != nil {
		t.Error("an entry expired longer than its retention is returned")
	}
	s.compact()
	if n := count(t, s); n != 1 {
		t.Errorf("%d entries after compaction, want 1", n)
	}
}

// TestUnreadableEntry: an entry that Get cannot decode is an error that
// matches ErrUnreadable, and a Put replaces it.
func TestUnreadableEntry(t *testing.T) {
	// An entry written before validators were kept reads as it did.
	v1 := []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}
	v1 = append(v1, "User-agent: *\nDisallow: /\n"...)
	if e, err := decodeEntry(v1); err != nil || e.Access != fleet.AccessSuccess || string(e.Body) != "User-agent: *\nDisallow: /\n" || e.ETag != "" {
		t.Errorf("version 1 entry: %+v, %v", e, err)
	}

	s := openTest(t, tempPath(t))
	ctx := context.Background()
	const origin = "https://example.com"
	good := encodeEntry(&fleet.Entry{Access: fleet.AccessUnavailable, Expires: time.Now().Add(time.Hour), Error: "x"})
	v2 := encodeEntry(&fleet.Entry{Access: fleet.AccessUnavailable, Expires: time.Now().Add(time.Hour), Error: "x", ETag: `"tag"`})
	for _, v := range [][]byte{{}, {9, 1, 2}, good[:entryHeader+1], good[:len(good)-1], v2[:len(v2)-1], v2[:len(v2)-4]} {
		err := s.write(func(tx *bolt.Tx) error { return tx.Bucket(bucketEntries).Put([]byte(origin), v) })
		if err != nil {
			t.Fatal(err)
		}
		if e, err := s.Get(ctx, origin); !errors.Is(err, ErrUnreadable) {
			t.Errorf("Get of %q = %v, %v; want ErrUnreadable", v, e, err)
		}
	}
	if err := s.Put(ctx, origin, &fleet.Entry{Access: fleet.AccessUnavailable, Expires: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if e, err := s.Get(ctx, origin); err != nil || e == nil {
		t.Errorf("Get after a Put over an unreadable entry = %v, %v", e, err)
	}
}

// TestReopen: a Store closed and opened again keeps each origin's turns,
// pauses and back-off, and takes no turn earlier than before.
func TestReopen(t *testing.T) {
	c := newFakeClock()
	path := tempPath(t)
	s := openTest(t, path, withClock(c.now))
	ctx := context.Background()
	b := robots.Backoff{First: time.Minute, Max: time.Hour, Forgive: time.Hour}
	reserve(t, s, "https://paced.example", time.Hour, forever)
	held := reserveHold(t, s, "https://held.example", time.Second, forever, time.Minute)
	if err := s.Pause(ctx, "https://paused.example", time.Now().Add(time.Hour), "retry-after"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PushBack(ctx, "https://backoff.example", time.Now(), b); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c.advance(time.Second)
	s = openTest(t, path, withClock(c.now))
	if s.floor != 0 {
		t.Errorf("floor %v after a clean Close, want none", s.floor)
	}
	if wait, _ := reserve(t, s, "https://paced.example", time.Hour, 0); wait != time.Hour-time.Second {
		t.Errorf("paced origin: wait %v, want %v", wait, time.Hour-time.Second)
	}
	// A turn held when the Store closed still holds the origin: its
	// request may still be answered. Its release, by the turn's ID, spaces
	// the next turn an interval from it.
	if tk := reserveHold(t, s, "https://held.example", time.Second, forever, time.Minute); tk.OK || !tk.InFlight {
		t.Errorf("origin held when closed: %+v; want it in flight", tk)
	}
	if err := s.Release(ctx, "https://held.example", fleet.Answer{ID: held.ID}); err != nil {
		t.Fatal(err)
	}
	if tk := reserveHold(t, s, "https://held.example", time.Second, forever, time.Minute); !tk.OK || tk.Wait != time.Second {
		t.Errorf("origin released after reopening: %+v; want a turn an interval away", tk)
	}
	if until, _, _ := s.WatchedPause("https://paused.example"); time.Until(until) < 59*time.Minute {
		t.Errorf("pause after reopening ends in %v, want an hour", time.Until(until))
	}
	if wait, ok := reserve(t, s, "https://paused.example", 0, 0); ok || wait < 59*time.Minute {
		t.Errorf("paused origin: %v, %v; want no turn for an hour", wait, ok)
	}
	c.advance(2 * time.Minute) // the back-off's pause has ended; its level is kept
	until, err := s.PushBack(ctx, "https://backoff.example", time.Now(), b)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(until); d < 2*time.Minute-time.Second {
		t.Errorf("second back-off after reopening: %v, want level 2 (2 minutes)", d)
	}
}

// TestRecovery: after a crash, the turns taken since the last write are
// lost, and every origin is taken to have had a turn at the last heartbeat
// plus the lease, with the interval it kept.
func TestRecovery(t *testing.T) {
	c := newFakeClock()
	path := tempPath(t)
	// A flusher that never runs: the test writes when it means to.
	s := openTest(t, path, withClock(c.now), withFlushInterval(time.Hour))
	reserve(t, s, "https://written.example", 10*time.Second, forever)
	held := reserveHold(t, s, "https://held.example", 10*time.Second, forever, time.Minute)
	if err := s.flush(false); err != nil {
		t.Fatal(err)
	}
	hb := c.now()
	c.advance(300 * time.Millisecond)
	reserve(t, s, "https://lost.example", 10*time.Second, forever)
	reserve(t, s, "https://written.example", 10*time.Second, forever) // lost: 10s after the first
	if n := s.writes.Load(); n != 1 {
		t.Errorf("%d writes, want 1 (the flush): Reserve within the lease writes nothing", n)
	}
	crash(t, s)
	c.advance(200 * time.Millisecond)

	s = openTest(t, path, withClock(c.now), withFlushInterval(time.Hour))
	floor := hb + int64(leaseDuration)
	if s.floor != floor {
		t.Errorf("floor %v, want the heartbeat plus the lease, %v", s.floor, floor)
	}
	now := c.now()
	for _, tc := range []struct {
		origin string
		every  time.Duration
		want   int64 // the turn
	}{
		// written: its turn at hb-300ms+0 is earlier than the floor
		{"https://written.example", 10 * time.Second, floor + int64(10*time.Second)},
		{"https://lost.example", 10 * time.Second, floor + int64(10*time.Second)},
		{"https://never.example", 10 * time.Second, floor + int64(10*time.Second)},
		{"https://never2.example", -time.Nanosecond, floor + 1},
		{"https://never3.example", 0, now},
	} {
		tk := reserveHold(t, s, tc.origin, tc.every, forever, time.Minute)
		if !tk.OK || now+int64(tk.Wait) != tc.want {
			t.Errorf("%s: %+v, want a turn in %v", tc.origin, tk, time.Duration(tc.want-now))
		}
	}
	// held: its hold, written before the crash, still holds the origin
	// (its hold runs to a minute after its turn), until it is released.
	if tk := reserveHold(t, s, "https://held.example", 10*time.Second, forever, time.Minute); tk.OK || !tk.InFlight {
		t.Errorf("https://held.example: %+v, want it in flight", tk)
	}
	if err := s.Release(context.Background(), "https://held.example", fleet.Answer{ID: held.ID}); err != nil {
		t.Fatal(err)
	}
	// Released before the floor: a turn the crash lost may be as late.
	if tk := reserveHold(t, s, "https://held.example", 10*time.Second, forever, time.Minute); !tk.OK || now+int64(tk.Wait) != floor+int64(10*time.Second) {
		t.Errorf("https://held.example after its release: %+v, want a turn 10s after the floor", tk)
	}

	// The floor is kept in the file until a later heartbeat passes it:
	// the one that Open wrote counts.
	crash(t, s)
	s = openTest(t, path, withClock(c.now))
	if want := max(floor, now+int64(leaseDuration)); s.floor != want {
		t.Errorf("floor after a crash before any write: %v, want %v", s.floor, want)
	}
}

// TestLease: the first Reserve more than a lease after the last write
// writes the file before it returns.
func TestLease(t *testing.T) {
	c := newFakeClock()
	s := openTest(t, tempPath(t), withClock(c.now), withFlushInterval(time.Hour))
	reserve(t, s, "https://a.example", time.Second, forever)
	if n := s.writes.Load(); n != 0 {
		t.Fatalf("%d writes within the lease of Open's heartbeat, want none", n)
	}
	c.advance(leaseDuration + time.Millisecond)
	reserve(t, s, "https://a.example", time.Second, forever)
	if n := s.writes.Load(); n != 1 {
		t.Errorf("%d writes after a Reserve past the lease, want 1", n)
	}
	reserve(t, s, "https://a.example", time.Second, forever)
	if n := s.writes.Load(); n != 1 {
		t.Errorf("%d writes after a Reserve within the renewed lease, want 1", n)
	}
}

// TestCompaction: paces that can no longer hold a turn back are deleted
// from memory and from the file; those that can are kept.
func TestCompaction(t *testing.T) {
	c := newFakeClock()
	path := tempPath(t)
	s := openTest(t, path, withClock(c.now))
	ctx := context.Background()
	reserve(t, s, "https://short.example", time.Second, forever)
	reserve(t, s, "https://long.example", 10*time.Minute, forever)
	if err := s.Pause(ctx, "https://paused.example", time.Now().Add(5*time.Minute), "retry-after"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PushBack(ctx, "https://backoff.example", time.Now(), robots.Backoff{First: time.Second, Max: time.Second, Forgive: time.Hour}); err != nil {
		t.Fatal(err)
	}
	c.advance(2 * time.Minute)
	s.compact()
	paces := func() []string { return slices.Sorted(maps.Keys(filePaces(t, s))) }
	want := "https://backoff.example https://long.example https://paused.example"
	if got := strings.Join(paces(), " "); got != want {
		t.Errorf("paces in the file after 2 minutes: %s; want %s", got, want)
	}
	c.advance(2 * time.Hour)
	s.compact()
	if got := paces(); len(got) != 0 {
		t.Errorf("paces in the file after 2 hours: %v; want none", got)
	}
	for i := range s.shards {
		if n := len(s.shards[i].m); n != 0 {
			t.Errorf("shard %d holds %d paces", i, n)
		}
	}
}

// TestLocked: a second Store on the same file fails within about a second,
// with an error that matches ErrLocked and names the file.
func TestLocked(t *testing.T) {
	path := tempPath(t)
	openTest(t, path)
	start := time.Now()
	s, err := Open(path)
	if err == nil {
		s.Close()
		t.Fatal("a second Open of an open file succeeded")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the second Open failed after %v, want a second", d)
	}
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Errorf("second Open: %v; want ErrLocked, naming %s", err, path)
	}
}

// TestWriteFailure: while the file takes no writes, Put, Pause and PushBack
// return the error, and the paces go on in memory; once it takes them
// again, what was held in memory is written.
func TestWriteFailure(t *testing.T) {
	c := newFakeClock()
	path := tempPath(t)
	s := openTest(t, path, withClock(c.now), withFlushInterval(10*time.Millisecond))
	ctx := context.Background()
	diskFull := errors.New("no space left on device")
	fail := func() error { return diskFull }
	s.beforeWrite.Store(&fail)
	e := &fleet.Entry{Access: fleet.AccessUnavailable, Expires: time.Now().Add(time.Hour)}
	if err := s.Put(ctx, "https://example.com", e); !errors.Is(err, diskFull) {
		t.Errorf("Put: %v, want the write's error", err)
	}
	if err := s.Pause(ctx, "https://paused.example", time.Now().Add(time.Hour), "retry-after"); !errors.Is(err, diskFull) {
		t.Errorf("Pause: %v, want the write's error", err)
	}
	if until, _, _ := s.WatchedPause("https://paused.example"); until.IsZero() {
		t.Error("the pause whose write failed does not hold in memory")
	}
	if _, err := s.PushBack(ctx, "https://backoff.example", time.Now(), robots.Backoff{First: time.Minute, Max: time.Hour, Forgive: time.Hour}); !errors.Is(err, diskFull) {
		t.Errorf("PushBack: %v, want the write's error", err)
	}
	c.advance(2 * leaseDuration)
	for i := range 3 {
		wait, ok := reserve(t, s, "https://paced.example", time.Second, forever)
		if !ok || wait != time.Duration(i)*time.Second {
			t.Errorf("Reserve %d while writes fail = %v, %v", i, wait, ok)
		}
	}
	if err := s.Close(); !errors.Is(err, diskFull) {
		t.Errorf("Close: %v, want the write's error", err)
	}
	// The file was left as after a crash: the next Open recovers.
	s = openTest(t, path, withClock(c.now), withFlushInterval(10*time.Millisecond))
	if s.floor == 0 {
		t.Error("no recovery after a Close whose write failed")
	}
	if until, _, _ := s.WatchedPause("https://paused.example"); !until.IsZero() {
		t.Error("a pause never written survived")
	}

	// The file takes writes again: the flusher writes what changed
	// meanwhile.
	s.beforeWrite.Store(&fail)
	if err := s.Pause(ctx, "https://paused.example", time.Now().Add(time.Hour), "retry-after"); err == nil {
		t.Fatal("Pause with writes failing: no error")
	}
	s.beforeWrite.Store(nil)
	c.advance(2 * time.Second) // past the retry delay
	deadline := time.Now().Add(5 * time.Second)
	for s.dirtyCount() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, path, withClock(c.now))
	if until, _, _ := s.WatchedPause("https://paused.example"); until.IsZero() {
		t.Error("the pause held in memory was not written once the file took writes")
	}
}

// filePaces returns the paces that s's file holds: its snapshot, and its
// journal replayed.
func filePaces(t *testing.T, s *Store) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	err := s.view(func(tx *bolt.Tx) error {
		tx.Bucket(bucketPaces).ForEach(func(k, v []byte) error {
			m[string(k)] = bytes.Clone(v)
			return nil
		})
		return tx.Bucket(bucketJournal).ForEach(func(_, v []byte) error {
			return decodeJournal(v, func(o string, p []byte) {
				if len(p) == 0 {
					delete(m, o)
				} else {
					m[o] = bytes.Clone(p)
				}
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// dirtyCount returns the paces not yet written.
func (s *Store) dirtyCount() int {
	n := 0
	for i := range s.shards {
		s.shards[i].mu.Lock()
		n += len(s.shards[i].dirty)
		s.shards[i].mu.Unlock()
	}
	return n
}

// TestFileBounded puts entries and takes turns of ever new origins, for
// many rounds, within bounds: the file stops growing.
func TestFileBounded(t *testing.T) {
	c := newFakeClock()
	path := tempPath(t)
	s := openTest(t, path, withClock(c.now), WithMaxEntries(60), withFlushInterval(time.Hour))
	ctx := context.Background()
	body := bytes.Repeat([]byte("Disallow: /x\n"), 40)
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	var sizes []int64
	for round := range 24 {
		now := time.Unix(0, c.now())
		for i := range 30 {
			o := fmt.Sprintf("https://r%d-%d.example", round, i)
			e := &fleet.Entry{Access: fleet.AccessSuccess, Body: body, FetchedAt: now, Expires: now.Add(time.Hour)}
			if err := s.Put(ctx, o, e); err != nil {
				t.Fatal(err)
			}
			reserve(t, s, o, time.Second, forever)
		}
		c.advance(2 * time.Minute)
		s.compact()
		sizes = append(sizes, size())
	}
	t.Logf("file sizes by round: %v", sizes)
	if last, mid := sizes[len(sizes)-1], sizes[len(sizes)/2]; last > mid {
		t.Errorf("the file grew from %d to %d bytes in the second half", mid, last)
	}
}

// bucketKeys returns the keys in the paces bucket and the journal of s.
func bucketKeys(t *testing.T, s *Store) (paces, journal int) {
	t.Helper()
	s.view(func(tx *bolt.Tx) error {
		paces = tx.Bucket(bucketPaces).Stats().KeyN
		journal = tx.Bucket(bucketJournal).Stats().KeyN
		return nil
	})
	return paces, journal
}

// TestJournal: a flush appends what changed to the journal; a journal as
// large as the snapshot (and 1 MiB) makes the next flush a checkpoint; Open
// replays the journal after a crash, and Close ends with a checkpoint.
func TestJournal(t *testing.T) {
	c := newFakeClock()
	path := tempPath(t)
	s := openTest(t, path, withClock(c.now), withFlushInterval(time.Hour))
	for i := range 3 {
		reserve(t, s, fmt.Sprintf("https://%d.example", i), time.Hour, forever)
	}
	s.flush(false)
	reserve(t, s, "https://3.example", time.Hour, forever)
	s.flush(false)
	if p, j := bucketKeys(t, s); p != 0 || j != 2 {
		t.Errorf("after two flushes: %d paces, %d journal values; want 0 and 2", p, j)
	}
	want := filePaces(t, s)
	crash(t, s)
	s = openTest(t, path, withClock(c.now), withFlushInterval(time.Hour))
	if p, j := bucketKeys(t, s); p != 4 || j != 0 {
		t.Errorf("after Open replayed the journal: %d paces, %d journal values; want 4 and 0", p, j)
	}
	if got := filePaces(t, s); !maps.EqualFunc(got, want, bytes.Equal) {
		t.Errorf("paces after a crash and Open: %d, want %d as written", len(got), len(want))
	}
	if wait, _ := reserve(t, s, "https://3.example", time.Hour, 0); wait < 59*time.Minute {
		t.Errorf("a turn replayed from the journal waits %v, want an hour", wait)
	}

	checkpoints := 0
	for round := 0; round < 20 && checkpoints == 0; round++ {
		for i := range 5000 {
			reserve(t, s, fmt.Sprintf("https://r%d-%d.example", round, i), time.Hour, forever)
		}
		if err := s.flush(false); err != nil {
			t.Fatal(err)
		}
		if _, j := bucketKeys(t, s); j == 0 {
			checkpoints++
		}
	}
	if checkpoints == 0 {
		t.Fatal("no checkpoint after 100,000 paces written")
	}
	s.flushMu.Lock()
	jb := s.journalBytes
	s.flushMu.Unlock()
	if p, _ := bucketKeys(t, s); p < 5000 || jb != 0 {
		t.Errorf("after a checkpoint: %d paces, %d journal bytes", p, jb)
	}
	reserve(t, s, "https://last.example", time.Hour, forever)
	s.flush(false)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, path, withClock(c.now))
	if _, j := bucketKeys(t, s); j != 0 {
		t.Errorf("%d journal values after Close, want none", j)
	}
	if wait, _ := reserve(t, s, "https://last.example", time.Hour, 0); wait < 59*time.Minute {
		t.Errorf("a turn written at Close waits %v, want an hour", wait)
	}
}

// TestHungDisk: a write that does not return holds a caller no longer than
// its context.
func TestHungDisk(t *testing.T) {
	s := openTest(t, tempPath(t), withFlushInterval(time.Hour))
	release := make(chan struct{})
	hang := func() error { <-release; return nil }
	s.beforeWrite.Store(&hang)
	defer close(release)
	for name, call := range map[string]func(ctx context.Context) error{
		"Put": func(ctx context.Context) error {
			return s.Put(ctx, "https://example.com", &fleet.Entry{Expires: time.Now().Add(time.Hour)})
		},
		"Pause": func(ctx context.Context) error {
			return s.Pause(ctx, "https://example.com", time.Now().Add(time.Hour), "retry-after")
		},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		err := call(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
			t.Errorf("%s on a hung disk: %v after %v; want the context's error at its deadline", name, err, time.Since(start))
		}
	}
}

// TestTryLock: one fetch lock per origin at a time, in the process; it is
// released by its unlock or after its ttl.
func TestTryLock(t *testing.T) {
	s := openTest(t, tempPath(t))
	ctx := context.Background()
	unlock, ok, err := s.TryLock(ctx, "https://example.com", time.Minute)
	if err != nil || !ok {
		t.Fatalf("TryLock = %v, %v", ok, err)
	}
	if _, ok, _ := s.TryLock(ctx, "https://example.com", time.Minute); ok {
		t.Error("a second TryLock of a held lock succeeded")
	}
	if _, ok, _ := s.TryLock(ctx, "https://example.org", time.Millisecond); !ok {
		t.Error("TryLock of another origin failed")
	}
	unlock()
	if _, ok, _ := s.TryLock(ctx, "https://example.com", time.Minute); !ok {
		t.Error("TryLock after unlock failed")
	}
	time.Sleep(2 * time.Millisecond)
	if _, ok, _ := s.TryLock(ctx, "https://example.org", time.Minute); !ok {
		t.Error("TryLock after the ttl failed")
	}
	s.Close()
	if _, _, err := s.TryLock(ctx, "https://example.net", time.Minute); !errors.Is(err, ErrClosed) {
		t.Errorf("TryLock after Close: %v, want ErrClosed", err)
	}
}
