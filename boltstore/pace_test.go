package boltstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/fleet"
)

// The Pacer's rules, on a clock that moves only when the test moves it: the
// same cases as redisstore's, where they apply to one process.

func checkWait(t *testing.T, what string, got, want time.Duration) {
	t.Helper()
	if got != want {
		t.Errorf("%s: wait %v, want %v", what, got, want)
	}
}

// TestReserveWaits takes turns back to back: Reserve returns at once, with
// waits that grow by every, and another origin has turns of its own.
func TestReserveWaits(t *testing.T) {
	c := newFakeClock()
	s := openTest(t, tempPath(t), withClock(c.now))
	const every = 300 * time.Millisecond
	for i := range 5 {
		wait, ok := reserve(t, s, "https://example.com", every, forever)
		if !ok {
			t.Fatalf("turn %d not taken", i)
		}
		checkWait(t, fmt.Sprintf("turn %d", i), wait, time.Duration(i)*every)
	}
	if wait, ok := reserve(t, s, "https://example.org", every, 0); wait != 0 || !ok {
		t.Errorf("Reserve of another origin = %v, %v; want its turn at once", wait, ok)
	}
	if wait, ok := reserve(t, s, "https://example.net", every, -time.Second); wait != 0 || !ok {
		t.Errorf("Reserve of a free origin with a negative maxWait = %v, %v; want the turn at once", wait, ok)
	}
}

// TestReserveKeepsInterval: each turn keeps its interval. A caller with no
// interval, after a turn taken with one, waits it out; a caller that does
// not know the origin's rules hands the interval on to the next, and one
// that knows it asks for no delay does not.
func TestReserveKeepsInterval(t *testing.T) {
	c := newFakeClock()
	s := openTest(t, tempPath(t), withClock(c.now))
	const origin = "https://example.com"
	reserve(t, s, origin, time.Second, forever)
	wait, _ := reserve(t, s, origin, 0, forever)
	checkWait(t, "every 0 after a turn with every 1s", wait, time.Second)
	wait, _ = reserve(t, s, origin, 0, forever)
	checkWait(t, "every 0 after a turn with every 0", wait, time.Second)

	const other = "https://example.org"
	reserve(t, s, other, time.Second, forever)
	for i := 1; i <= 2; i++ {
		wait, _ = reserve(t, s, other, -time.Nanosecond, forever)
		checkWait(t, fmt.Sprintf("unknown rules, turn %d", i), wait, time.Duration(i)*time.Second)
	}
	wait, _ = reserve(t, s, other, 0, forever)
	checkWait(t, "every 0 after unknown rules", wait, 3*time.Second)
	wait, _ = reserve(t, s, other, 0, forever)
	checkWait(t, "every 0 after every 0", wait, 3*time.Second)

	// A turn is kept for a minute after it: a longer interval asked
	// later is spaced from it until then, and not after.
	const third = "https://example.net"
	reserve(t, s, third, 0, forever)
	c.advance(59 * time.Second)
	wait, _ = reserve(t, s, third, 2*time.Minute, 0)
	checkWait(t, "every 2m, 59s after a turn", wait, 61*time.Second)
	c.advance(61 * time.Second)
	if wait, ok := reserve(t, s, "https://example.info", 0, forever); wait != 0 || !ok {
		t.Errorf("a new origin: %v, %v", wait, ok)
	}
}

// TestReserveMaxWait has callers that cannot wait for the next turn: they
// take none, and the next caller that can wait gets the turn they were told
// of.
func TestReserveMaxWait(t *testing.T) {
	c := newFakeClock()
	s := openTest(t, tempPath(t), withClock(c.now))
	const origin = "https://example.com"
	if wait, ok := reserve(t, s, origin, time.Hour, 0); wait != 0 || !ok {
		t.Fatalf("first Reserve = %v, %v; want the turn at once", wait, ok)
	}
	for range 3 {
		wait, ok := reserve(t, s, origin, time.Hour, time.Second)
		if ok {
			t.Fatalf("Reserve with a turn an hour away and a maxWait of 1s took it (wait %v)", wait)
		}
		checkWait(t, "Reserve past maxWait", wait, time.Hour)
	}
	if wait, ok := reserve(t, s, origin, time.Hour, time.Hour); !ok || wait != time.Hour {
		t.Errorf("Reserve with maxWait equal to the wait = %v, %v; want the turn", wait, ok)
	}
	wait, ok := reserve(t, s, origin, time.Hour, forever)
	if !ok {
		t.Fatal("Reserve with no bound: no turn")
	}
	checkWait(t, "turn after the refusals", wait, 2*time.Hour)
}

// TestHeldTurns: a turn that keeps an interval holds its origin until it is
// released, and the next is spaced from the release; one never released
// holds it until the end of its hold, from which the next is spaced.
func TestHeldTurns(t *testing.T) {
	c := newFakeClock()
	s := openTest(t, tempPath(t), withClock(c.now))
	ctx := context.Background()
	const origin = "https://example.com"
	const every, hold = time.Second, 10 * time.Second

	tk := reserveHold(t, s, origin, every, forever, hold)
	if !tk.OK || tk.ID == 0 || tk.Wait != 0 {
		t.Fatalf("first turn: %+v; want taken at once, with an ID", tk)
	}
	in := reserveHold(t, s, origin, every, forever, hold)
	if in.OK || !in.InFlight || in.Wait != every {
		t.Errorf("Reserve while held = %+v; want InFlight, wait %v", in, every)
	}
	c.advance(3 * time.Second)
	// Its answer is due now (no estimate of the origin's response time
	// yet): a turn may be free an interval later.
	if in := reserveHold(t, s, origin, every, forever, hold); !in.InFlight || in.Wait != every {
		t.Errorf("Reserve while held, past the interval = %+v; want InFlight, wait %v", in, every)
	}
	if err := s.Release(ctx, origin, fleet.Answer{ID: tk.ID + 1}); err != nil {
		t.Fatal(err)
	}
	if in := reserveHold(t, s, origin, every, forever, hold); !in.InFlight {
		t.Errorf("a Release of another ID released the turn: %+v", in)
	}
	if err := s.Release(ctx, origin, fleet.Answer{ID: tk.ID}); err != nil {
		t.Fatal(err)
	}
	tk2 := reserveHold(t, s, origin, every, forever, hold)
	if !tk2.OK || tk2.Wait != every {
		t.Errorf("turn after the release = %+v; want an interval after it", tk2)
	}
	// Never released: the hold ends at tk2's turn plus hold, and the
	// next turn is an interval after that.
	c.advance(every + hold + 500*time.Millisecond)
	tk3 := reserveHold(t, s, origin, every, forever, hold)
	if !tk3.OK || tk3.Wait != every-500*time.Millisecond {
		t.Errorf("turn after a hold ran out = %+v; want %v", tk3, every-500*time.Millisecond)
	}
	if err := s.Release(ctx, origin, fleet.Answer{ID: tk2.ID}); err != nil {
		t.Fatal(err)
	}
	if in := reserveHold(t, s, origin, every, forever, hold); !in.InFlight {
		t.Errorf("a late Release of a hold that ran out released the next: %+v", in)
	}

	// A turn that keeps no interval holds nothing; one with the rules
	// unknown does, even with no interval.
	if tk := reserveHold(t, s, "https://a.example", 0, forever, hold); !tk.OK || tk.ID != 0 {
		t.Errorf("turn with every 0 = %+v; want no hold", tk)
	}
	if tk := reserveHold(t, s, "https://b.example", -time.Nanosecond, forever, hold); !tk.OK || tk.ID == 0 {
		t.Errorf("turn with the rules unknown = %+v; want a hold", tk)
	}
}

// TestPause: a pause delays every turn, even without a crawl-delay; a
// shorter pause does not shorten it; the turns it held back are spaced by
// every from its end; the copy that WatchedPause reads has it.
func TestPause(t *testing.T) {
	c := newFakeClock()
	s := openTest(t, tempPath(t), withClock(c.now))
	ctx := context.Background()
	const origin = "https://example.com"
	if until, _, ok := s.WatchedPause(origin); !until.IsZero() || !ok {
		t.Errorf("WatchedPause before a pause = %v, %v", until, ok)
	}
	if err := s.Pause(ctx, origin, time.Now().Add(2*time.Second), "retry-after"); err != nil {
		t.Fatal(err)
	}
	pause := 2 * time.Second
	for _, d := range []time.Duration{10 * time.Millisecond, -time.Second} {
		if err := s.Pause(ctx, origin, time.Now().Add(d), "retry-after"); err != nil {
			t.Fatal(err)
		}
	}
	near := func(what string, got, want time.Duration) {
		t.Helper()
		if got < want-50*time.Millisecond || got > want {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	wait, ok := reserve(t, s, origin, 0, 100*time.Millisecond)
	if ok {
		t.Fatal("Reserve in a pause, past maxWait, took the turn")
	}
	near("Reserve in a pause", wait, pause)
	until, _, _ := s.WatchedPause(origin)
	near("WatchedPause", time.Until(until), pause)
	pu, _, err := s.PausedUntil(ctx, origin)
	if err != nil {
		t.Fatal(err)
	}
	near("PausedUntil", time.Until(pu), pause)
	wait, _ = reserve(t, s, origin, 0, forever)
	near("every 0 in a pause", wait, pause)
	const every = 300 * time.Millisecond
	for i := range 3 {
		wait, _ = reserve(t, s, origin, every, forever)
		near(fmt.Sprintf("turn %d after the pause", i), wait, pause+time.Duration(i+1)*every)
	}
	c.advance(time.Hour)
	if until, _, _ := s.WatchedPause(origin); !until.IsZero() {
		t.Errorf("WatchedPause after the pause = %v; want the zero time", until)
	}
}

// TestPushBack: the back-off's level goes up with each incident, an answer
// to a request sent before its start is of its burst, and it starts again
// once forgiven.
func TestPushBack(t *testing.T) {
	c := newFakeClock()
	s := openTest(t, tempPath(t), withClock(c.now))
	ctx := context.Background()
	const origin = "https://example.com"
	b := robots.Backoff{First: time.Second, Max: 4 * time.Second, Forgive: time.Minute}
	push := func(sent time.Time) time.Duration {
		t.Helper()
		until, err := s.PushBack(ctx, origin, sent, b)
		if err != nil {
			t.Fatal(err)
		}
		return time.Until(until)
	}
	within := func(what string, got, least time.Duration) {
		t.Helper()
		if got < least-50*time.Millisecond || got > least+least/10 {
			t.Errorf("%s: pause %v, want %v and up to a tenth more", what, got, least)
		}
	}
	sent := time.Now()
	within("first incident", push(sent), time.Second)
	within("same burst", push(sent.Add(-time.Millisecond)), time.Second)
	for i, want := range []time.Duration{2 * time.Second, 4 * time.Second, 4 * time.Second} {
		c.advance(time.Millisecond) // a request sent after the back-off began
		within(fmt.Sprintf("incident %d", i+2), push(time.Now()), want)
	}
	if wait, ok := reserve(t, s, origin, 0, 0); ok || wait < 4*time.Second {
		t.Errorf("Reserve in a back-off = %v, %v; want none for 4s", wait, ok)
	}
	c.advance(5*time.Second + time.Minute + time.Millisecond)
	within("after forgiveness", push(time.Now()), time.Second)
}

// TestBackingOffHolds: while an origin is backing off, until its back-off
// is forgiven, a turn with no interval holds it, one request at a time, and
// takes the ID its caller drew.
func TestBackingOffHolds(t *testing.T) {
	c := newFakeClock()
	s := openTest(t, tempPath(t), withClock(c.now))
	ctx := context.Background()
	const origin = "https://example.com"
	b := robots.Backoff{First: time.Second, Max: time.Second, Forgive: time.Minute}
	ask := fleet.TurnRequest{Known: true, MaxWait: time.Hour, Hold: time.Minute, ID: 42}
	if r, err := s.Reserve(ctx, origin, ask); err != nil || !r.OK || r.ID != 0 {
		t.Fatalf("Reserve before any pushback = %+v, %v; want a turn that holds nothing", r, err)
	}
	if _, err := s.PushBack(ctx, origin, time.Now(), b); err != nil {
		t.Fatal(err)
	}
	c.advance(2 * time.Second) // the pause is over; forgiven in a minute
	r, err := s.Reserve(ctx, origin, ask)
	if err != nil || !r.OK || r.ID != 42 {
		t.Fatalf("Reserve while backing off = %+v, %v; want a held turn with ID 42", r, err)
	}
	if r, _ := s.Reserve(ctx, origin, ask); !r.InFlight {
		t.Errorf("second Reserve while backing off = %+v, want InFlight", r)
	}
	if err := s.Release(ctx, origin, fleet.Answer{ID: 42}); err != nil {
		t.Fatal(err)
	}
	c.advance(2 * time.Minute) // forgiven
	if r, err := s.Reserve(ctx, origin, ask); err != nil || !r.OK || r.ID != 0 {
		t.Errorf("Reserve once forgiven = %+v, %v; want a turn that holds nothing", r, err)
	}
}
