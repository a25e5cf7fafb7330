package fleettest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"
)

// Stores makes the Stores that [TestStore] tests.
type Stores struct {
	// New returns a Store with no entries that t owns (t.Cleanup closes
	// it, if it needs closing).
	New func(t *testing.T) fleet.Store

	// Reopen, if set, closes s and returns a Store on the entries s kept,
	// as after a restart.
	Reopen func(t *testing.T, s fleet.Store) fleet.Store

	// LocksExtend is set for a Locker that extends a lock while its
	// holder lives (so that a slow fetch keeps it), and lets it run out
	// only ttl after its holder stopped: the suite does not wait for the
	// ttl of a lock whose holder it cannot stop.
	LocksExtend bool
}

// TestStore tests the Stores that s makes against the contract of
// fleet.Store, and of fleet.Locker where they implement it: an entry put is
// got back whole until it expires, a later Put replaces it, an origin never
// put has none, one Locker's lock excludes every other TryLock of the origin
// until it is released or its ttl runs out, and a call with a done context
// returns.
func TestStore(t *testing.T, s Stores) {
	t.Run("GetPut", func(t *testing.T) { testGetPut(t, s) })
	t.Run("Locks", func(t *testing.T) { testLocks(t, s) })
	t.Run("ContextEnds", func(t *testing.T) { testStoreContext(t, s) })
	if s.Reopen != nil {
		t.Run("Reopen", func(t *testing.T) { testStoreReopen(t, s) })
	}
}

// sample returns an entry with every field set, expiring at expires: its
// validators (ETag, Last-Modified) too, which a Store keeps so that a
// refresh can be conditional.
func sample(expires time.Time) *fleet.Entry {
	now := time.Now().Truncate(time.Millisecond)
	return &fleet.Entry{
		Access: fleet.AccessSuccess, Body: []byte("User-agent: *\nDisallow: /private\n"),
		FetchedAt: now.Add(-time.Minute), Expires: expires.Truncate(time.Millisecond),
		UnreachableSince: now.Add(-time.Second), Failures: 3, Error: "robots.txt: 503 Service Unavailable",
		ETag: `W/"5e-1a2b"`, LastModified: "Mon, 07 Dec 2026 08:00:00 GMT",
	}
}

// equalEntry reports whether got is want, times compared as instants to the
// microsecond.
func equalEntry(got, want *fleet.Entry) bool {
	same := func(a, b time.Time) bool {
		return a.IsZero() == b.IsZero() && (a.IsZero() || a.Sub(b).Abs() < time.Microsecond)
	}
	return got != nil && got.Access == want.Access && bytes.Equal(got.Body, want.Body) &&
		same(got.FetchedAt, want.FetchedAt) && same(got.Expires, want.Expires) &&
		same(got.UnreachableSince, want.UnreachableSince) && got.Failures == want.Failures && got.Error == want.Error &&
		got.ETag == want.ETag && got.LastModified == want.LastModified
}

func get(t *testing.T, st fleet.Store, origin string) *fleet.Entry {
	t.Helper()
	e, err := st.Get(context.Background(), origin)
	if err != nil {
		t.Fatalf("Get(%q): %v", origin, err)
	}
	return e
}

func put(t *testing.T, st fleet.Store, origin string, e *fleet.Entry) {
	t.Helper()
	if err := st.Put(context.Background(), origin, e); err != nil {
		t.Fatalf("Put(%q): %v", origin, err)
	}
}

func testGetPut(t *testing.T, s Stores) {
	st := s.New(t)
	if e := get(t, st, origin); e != nil {
		t.Errorf("Get of an origin never put: %+v; want nil", e)
	}
	want := sample(time.Now().Add(time.Hour))
	put(t, st, origin, want)
	if got := get(t, st, origin); !equalEntry(got, want) {
		t.Errorf("Get after Put: %+v; want %+v", got, want)
	}
	// Every Access, an empty body, zero times.
	for _, a := range []fleet.Access{fleet.AccessUnavailable, fleet.AccessUnreachable, fleet.AccessSuccess} {
		e := &fleet.Entry{Access: a, Expires: time.Now().Add(time.Hour).Truncate(time.Millisecond)}
		put(t, st, origin, e)
		if got := get(t, st, origin); !equalEntry(got, e) {
			t.Errorf("Get after a Put of %+v: %+v", e, got)
		}
	}
	if e := get(t, st, "https://other.example"); e != nil {
		t.Errorf("Get of another origin: %+v; want nil", e)
	}
	// An entry that has expired may be kept (for its retention) or not;
	// kept, it is whole.
	old := sample(time.Now().Add(-time.Second))
	put(t, st, "https://expired.example", old)
	if got := get(t, st, "https://expired.example"); got != nil && !equalEntry(got, old) {
		t.Errorf("Get of an expired entry: %+v; want it whole, or nil", got)
	}
}

func testLocks(t *testing.T, s Stores) {
	st := s.New(t)
	l, ok := st.(fleet.Locker)
	if !ok {
		t.Skip("not a fleet.Locker")
	}
	ctx := context.Background()
	unlock, ok, err := l.TryLock(ctx, origin, time.Hour)
	if err != nil || !ok {
		t.Fatalf("first TryLock: %v, %v; want the lock", ok, err)
	}
	if _, ok, err := l.TryLock(ctx, origin, time.Hour); err != nil || ok {
		t.Errorf("TryLock of a locked origin: %v, %v; want no lock", ok, err)
	}
	if u, ok, err := l.TryLock(ctx, "https://other.example", time.Hour); err != nil || !ok {
		t.Errorf("TryLock of another origin: %v, %v; want the lock", ok, err)
	} else {
		u()
	}
	unlock()
	unlock2, ok, err := l.TryLock(ctx, origin, 2*slack)
	if err != nil || !ok {
		t.Fatalf("TryLock after unlock: %v, %v; want the lock", ok, err)
	}
	unlock() // a stale unlock leaves the new holder's lock alone
	if _, ok, _ := l.TryLock(ctx, origin, time.Hour); ok {
		t.Errorf("a second unlock of a released lock released the next holder's")
	}
	if !s.LocksExtend {
		time.Sleep(2*slack + slack/2)
		unlock3, ok, err := l.TryLock(ctx, origin, time.Hour)
		if err != nil || !ok {
			t.Errorf("TryLock after the ttl of the lock ran out: %v, %v; want the lock", ok, err)
		} else {
			unlock3()
		}
	}
	unlock2()
}

func testStoreContext(t *testing.T, s Stores) {
	st := s.New(t)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	st.Put(done, origin, sample(time.Now().Add(time.Hour)))
	if e, err := st.Get(done, origin); err == nil && e != nil && !equalEntry(e, sample(e.Expires)) && e.Access != fleet.AccessSuccess {
		t.Errorf("Get with a done context: %+v; want an error, nil or the entry", e)
	}
	if l, ok := st.(fleet.Locker); ok {
		if unlock, ok, err := l.TryLock(done, origin, time.Hour); err == nil && ok {
			unlock()
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("calls with a done context took %v", d)
	}
}

func testStoreReopen(t *testing.T, s Stores) {
	st := s.New(t)
	want := sample(time.Now().Add(time.Hour))
	put(t, st, origin, want)
	st = s.Reopen(t, st)
	if got := get(t, st, origin); !equalEntry(got, want) {
		t.Errorf("Get after reopening: %+v; want %+v", got, want)
	}
}
