package redisstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"
)

// TestPauseReasonsOfEarlierVersions: a pause written as earlier versions
// write it (the pause key alone, a message with no reason, a member of the
// sorted set with no reason) reads as one of "retry-after"; one of this
// version keeps its reason through every path, and a pause of an earlier
// version that lengthens it is no longer taken for it.
func TestPauseReasonsOfEarlierVersions(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	admin := newClient(t, addr)
	s := newStore(t, newClient(t, addr))
	s.Prefix = prefix
	ctx := context.Background()
	s.once.Do(s.init)
	s.Close() // no copy of the pauses: PausedUntil asks Redis

	// The pause key of an earlier version: a time on the server's clock.
	const old = "https://old.example"
	tm, err := admin.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	end := tm.Add(time.Hour).UnixMicro()
	if err := admin.Set(ctx, s.pauseKey(old), strconv.FormatInt(end, 10), 2*time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if until, why, err := s.PausedUntil(ctx, old); err != nil || until.IsZero() || why != "retry-after" {
		t.Errorf("PausedUntil of an earlier version's pause: %v %q %v; want an hour, retry-after", until, why, err)
	}
	tk, err := s.Reserve(ctx, old, fleet.TurnRequest{Known: true, MaxWait: 0})
	if err != nil || tk.OK || tk.Why != "retry-after" {
		t.Errorf("Reserve in an earlier version's pause: %+v %v; want none, for retry-after", tk, err)
	}

	// This version's pause, then an earlier version's longer one.
	const o = "https://new.example"
	if err := s.Pause(ctx, o, time.Now().Add(time.Hour), "ratelimit"); err != nil {
		t.Fatal(err)
	}
	if _, why, err := s.PausedUntil(ctx, o); err != nil || why != "ratelimit" {
		t.Errorf("PausedUntil: %q %v; want ratelimit", why, err)
	}
	if tk, err := s.Reserve(ctx, o, fleet.TurnRequest{Known: true, MaxWait: 0}); err != nil || tk.Why != "ratelimit" {
		t.Errorf("Reserve in a pause for ratelimit: %+v %v", tk, err)
	}
	if err := admin.Set(ctx, s.pauseKey(o), strconv.FormatInt(end+time.Hour.Microseconds(), 10), 3*time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if _, why, err := s.PausedUntil(ctx, o); err != nil || why != "retry-after" {
		t.Errorf("PausedUntil after an earlier version lengthened the pause: %q %v; want retry-after", why, err)
	}

	// The copy: a Store that starts watching reads the reasons from the
	// set.
	w := newStore(t, newClient(t, addr))
	w.Prefix = prefix
	waitLive(t, w)
	if until, why, ok := w.WatchedPause(o); !ok || until.IsZero() || why != "ratelimit" {
		t.Errorf("WatchedPause from the set: %v %q %v; want the pause for ratelimit", until, why, ok)
	}
	// A pause of this version reaches it with its reason; then an
	// earlier version's message (no reason, on the channel earlier
	// versions use) of a new pause, and of a longer one.
	const o2, o3 = "https://msg.example", "https://msg3.example"
	if err := s.Pause(ctx, o2, time.Now().Add(time.Hour), "ratelimit"); err != nil {
		t.Fatal(err)
	}
	watchWhy(t, w, o2, "ratelimit")
	if err := admin.Publish(ctx, s.pausesChannel(), o3+" 3600000000").Err(); err != nil {
		t.Fatal(err)
	}
	watchWhy(t, w, o3, "retry-after")
	// Both messages of o2's pause have come (on one Redis, surely: they
	// were sent before o3's): the one without a reason kept it.
	if _, why, _ := w.WatchedPause(o2); why != "ratelimit" {
		t.Errorf("WatchedPause(%s) after both messages of its pause: %q; want ratelimit", o2, why)
	}
	if err := admin.Publish(ctx, s.pausesChannel(), o2+" 7200000000").Err(); err != nil {
		t.Fatal(err)
	}
	watchWhy(t, w, o2, "retry-after")
}

// watchWhy waits up to 5 s for the copy of w to hold a pause of origin for
// the reason want.
func watchWhy(t *testing.T, w *Store, origin, want string) {
	t.Helper()
	var why string
	for deadline := time.Now().Add(5 * time.Second); why != want && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		_, why, _ = w.WatchedPause(origin)
	}
	if why != want {
		t.Errorf("WatchedPause(%s): reason %q; want %q", origin, why, want)
	}
}

// TestAdaptiveFloor: an origin that answers in under 10 ms sets no adaptive
// delay; one that answers in 10 ms sets twice that.
func TestAdaptiveFloor(t *testing.T) {
	addr := redisAddr(t)
	s := newStore(t, newClient(t, addr))
	s.Prefix = testPrefix(t, addr)
	ctx := context.Background()
	const o = "https://example.com"
	r := fleet.TurnRequest{Known: true, MaxWait: time.Hour, Hold: time.Hour, MaxAdaptive: time.Hour}
	for i, c := range []struct {
		took time.Duration
		next bool // a turn at once after the answer
	}{{5 * time.Millisecond, true}, {9 * time.Millisecond, true}, {time.Second, false}} {
		r.ID = uint64(i + 1)
		tk, err := s.Reserve(ctx, o, r)
		if err != nil || !tk.OK {
			t.Fatalf("turn %d: %+v %v", i, tk, err)
		}
		if err := s.Release(ctx, o, fleet.Answer{ID: r.ID, At: time.Now(), Took: c.took, MaxAdaptive: time.Hour}); err != nil {
			t.Fatal(err)
		}
		r.MaxWait = 0
		next, err := s.Reserve(ctx, o, fleet.TurnRequest{Known: true, MaxWait: 0, MaxAdaptive: time.Hour})
		r.MaxWait = time.Hour
		if err != nil || next.OK != c.next {
			t.Errorf("after an answer in %v: %+v %v; want a turn at once: %v", c.took, next, err, c.next)
		}
		if !c.next && next.Why != "slow-answers" {
			t.Errorf("after an answer in %v: Why %q, want slow-answers", c.took, next.Why)
		}
		if next.OK {
			time.Sleep(time.Millisecond) // past the turn just taken
		}
	}
}
