package redisstore

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// waitLive waits until s's copy of the pauses is up to date, or fails t.
func waitLive(t testing.TB, s *Store) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, _, ok := s.WatchedPause("https://example.com"); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the copy of the pauses never became live")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitWatched waits until s's copy holds a pause of origin, and returns
// when that pause ends, or fails t after limit.
func waitWatched(t *testing.T, s *Store, origin string, limit time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if until, _, ok := s.WatchedPause(origin); ok && !until.IsZero() {
			return until
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pause of %s did not reach the copy within %v", origin, limit)
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// TestWatchPropagation measures how long a pause set by one process takes
// to reach the copy of another, checks it against the documented worst
// case, and checks that a process that starts watching later finds the
// pauses that have not ended.
func TestWatchPropagation(t *testing.T) {
	stores := newStores(t, 2)
	a, b := stores[0], stores[1]
	waitLive(t, b)
	ctx := context.Background()
	const n = 40
	var lags []time.Duration
	for i := range n {
		origin := fmt.Sprintf("https://p%d.example", i)
		until := time.Now().Add(10 * time.Second)
		start := time.Now()
		if err := a.Pause(ctx, origin, until, "retry-after"); err != nil {
			t.Fatal(err)
		}
		got := waitWatched(t, b, origin, DefaultWatchInterval+DefaultTimeout)
		lags = append(lags, time.Since(start))
		if got.Before(until.Add(-time.Millisecond)) {
			t.Errorf("the copy's pause of %s ends %v before the pause set", origin, until.Sub(got))
		}
		if _, _, ok := b.WatchedPause(fmt.Sprintf("https://q%d.example", i)); !ok {
			t.Fatal("the copy stopped being live")
		}
		if until, _, _ := b.WatchedPause(fmt.Sprintf("https://q%d.example", i)); !until.IsZero() {
			t.Errorf("an origin never paused is paused in the copy until %v", until)
		}
	}
	slices.Sort(lags)
	t.Logf("pause set by one process seen by another (Pause call included): median %v, p90 %v, max %v over %d pauses",
		lags[n/2], lags[n*9/10], lags[n-1], n)

	// A process that starts now finds the pauses in the sorted set.
	late := newStore(t, newClient(t, redisAddr(t)))
	late.Prefix = a.Prefix
	waitLive(t, late)
	if until, _, _ := late.WatchedPause("https://p0.example"); until.IsZero() {
		t.Error("a Store that started watching after a pause does not see it")
	}
}

// TestWatchReconnects kills the subscriptions of a Store: its copy stops
// being used at once, and when it is live again, it holds a pause set while
// the subscription was down.
func TestWatchReconnects(t *testing.T) {
	stores := newStores(t, 2)
	a, b := stores[0], stores[1]
	waitLive(t, b)
	admin := newClient(t, redisAddr(t))
	ctx := context.Background()
	err := eachNode(ctx, admin, func(ctx context.Context, c *redis.Client) error {
		return c.ClientKillByFilter(ctx, "TYPE", "pubsub").Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	// The pause may be set before b notices, while b is down, or after
	// b is back: in each case b must see it once it is live.
	if err := a.Pause(ctx, "https://down.example", time.Now().Add(10*time.Second), "retry-after"); err != nil {
		t.Fatal(err)
	}
	// b may not have noticed the kill yet when the pause is published, so
	// it may not be waiting for its subscription yet: it must hold the
	// pause within the documented bound, whichever happened.
	waitWatched(t, b, "https://down.example", DefaultWatchInterval+DefaultTimeout)
}

// TestWatchSilentFailure stops the Redis server from answering (CLIENT
// PAUSE): a Store stops using its copy within WatchInterval plus Timeout,
// the documented bound, and uses it again when Redis answers.
func TestWatchSilentFailure(t *testing.T) {
	addr := redisAddr(t)
	s := newStore(t, newClient(t, addr))
	s.Prefix = testPrefix(t, addr)
	s.WatchInterval, s.Timeout = 200*time.Millisecond, 200*time.Millisecond
	waitLive(t, s)
	admin := newClient(t, addr)
	ctx := context.Background()
	const pause = 1500 * time.Millisecond
	start := time.Now()
	err := eachNode(ctx, admin, func(ctx context.Context, c *redis.Client) error {
		return c.Do(ctx, "CLIENT", "PAUSE", pause.Milliseconds(), "ALL").Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	bound := s.WatchInterval + s.Timeout
	for {
		if _, _, ok := s.WatchedPause("https://example.com"); !ok {
			break
		}
		if time.Since(start) > bound+spacingTolerance {
			t.Fatalf("the copy was still used %v after Redis stopped answering, want at most %v", time.Since(start), bound)
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("copy given up %v after Redis stopped answering (bound %v)", time.Since(start), bound)
	waitLive(t, s)
	if d := time.Since(start); d < pause-spacingTolerance {
		t.Errorf("the copy was live again %v after Redis stopped answering for %v", d, pause)
	}
}

// TestFleetPauseReachesEveryProcess: a 429 with Retry-After that one
// process receives holds back the requests of another, which asks Redis for
// nothing for its own requests.
func TestFleetPauseReachesEveryProcess(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	var busy atomic.Bool
	var arrivals atomic.Pointer[[]time.Time]
	arrivals.Store(new([]time.Time))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/robots.txt":
			w.Write([]byte(disallowPrivate))
		case busy.Load():
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			a := append(*arrivals.Load(), time.Now())
			arrivals.Store(&a)
		}
	}))
	t.Cleanup(srv.Close)
	a, b := newProcess(t, addr, prefix, nil), newProcess(t, addr, prefix, nil)
	ctx := context.Background()
	for _, p := range []*process{a, b} {
		if err := get(ctx, p.client, srv.URL+"/page"); err != nil {
			t.Fatal(err)
		}
		waitLive(t, p.store)
	}
	busy.Store(true)
	if err := get(ctx, a.client, srv.URL+"/page"); err != nil {
		t.Fatal(err)
	}
	pausedAt := time.Now()
	busy.Store(false)
	waitWatched(t, b.store, srv.URL, DefaultWatchInterval+DefaultTimeout)
	if err := get(ctx, b.client, srv.URL+"/page"); err != nil {
		t.Fatal(err)
	}
	times := *arrivals.Load()
	last := times[len(times)-1]
	if d := last.Sub(pausedAt); d < time.Second-10*time.Millisecond {
		t.Errorf("process b's request went %v after process a was told Retry-After: 1", d)
	}
}
