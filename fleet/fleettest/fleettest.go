// Package fleettest tests implementations of the interfaces of package
// fleet against their contracts, as testing/fstest does for file systems:
// an implementation's own tests call [TestPacer] and [TestStore] with a
// function that makes a fresh instance.
//
// The suite runs on the implementation's own clock, in real time: it asks
// for intervals of an hour where only their order matters, and where time
// must pass (a hold that runs out, a pause that ends) it sleeps at most a
// few seconds and allows for a loaded machine. [Pacers.Clock], for an
// implementation whose clock a test can move, adds the cases that need
// exact times (the MaxWait boundary) and clock jumps.
package fleettest

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"
)

// Pacers makes the Pacers that [TestPacer] tests.
type Pacers struct {
	// New returns a Pacer with no state that t owns (t.Cleanup closes
	// it, if it needs closing). Each call is a new, empty state.
	New func(t *testing.T) fleet.Pacer

	// Reopen, if set, closes p and returns a Pacer on the state p kept,
	// as after a restart: for a Pacer that persists (a file, a server).
	Reopen func(t *testing.T, p fleet.Pacer) fleet.Pacer

	// Shared, if set, returns a second Pacer on the state p keeps, as
	// another process of a fleet would have; p stays open.
	Shared func(t *testing.T, p fleet.Pacer) fleet.Pacer

	// Clock, if set, is the clock of the Pacers New returns, frozen: they
	// read no time but its own, which moves only by Advance (backwards
	// too, for a clock that jumps back). Times a Pacer is given
	// (Pause's until, PushBack's sent) are on the caller's clock, as
	// always.
	Clock interface{ Advance(d time.Duration) }
}

// Forever is a MaxWait that every wait is within.
const Forever = time.Duration(math.MaxInt64)

// Burst is how long after a back-off began the suite sends the request
// of a new incident: a Pacer may count an answer to a request sent up to a
// second after the back-off began as of its burst (the processes of a
// fleet hear of a back-off late), never one sent later.
const Burst = 1100 * time.Millisecond

// slack is what the suite allows for time that passes between two calls on
// a loaded machine.
const slack = 500 * time.Millisecond

// TestPacer tests the Pacers that p makes against the contract of
// fleet.Pacer, in subtests: holds and their release, a lost turn, spacing
// from the answer, the MaxWait boundary, rules unknown, pauses, back-off
// (doubling, bursts, its cap, forgiveness, one request at a time until
// forgiven), the adaptive delay, a context that ends mid-call, an answer
// that comes after its hold ran out, a turn whose request was not sent and, as p
// allows, a second Pacer on the same state, reopening, and clock jumps.
func TestPacer(t *testing.T, p Pacers) {
	t.Run("Holds", func(t *testing.T) { testHolds(t, p) })
	t.Run("SpacingFromAnswer", func(t *testing.T) { testSpacing(t, p) })
	t.Run("LostTurn", func(t *testing.T) { testLostTurn(t, p) })
	t.Run("MaxWait", func(t *testing.T) { testMaxWait(t, p) })
	t.Run("RulesUnknown", func(t *testing.T) { testUnknown(t, p) })
	t.Run("NoInterval", func(t *testing.T) { testNoInterval(t, p) })
	t.Run("Pause", func(t *testing.T) { testPause(t, p) })
	t.Run("Backoff", func(t *testing.T) { testBackoff(t, p) })
	t.Run("OneAtATimeUntilForgiven", func(t *testing.T) { testForgiven(t, p) })
	t.Run("Adaptive", func(t *testing.T) { testAdaptive(t, p) })
	t.Run("ContextEnds", func(t *testing.T) { testContext(t, p) })
	t.Run("LateAnswer", func(t *testing.T) { testLateAnswer(t, p) })
	t.Run("Unsent", func(t *testing.T) { testUnsent(t, p) })
	if p.Shared != nil {
		t.Run("Shared", func(t *testing.T) { testShared(t, p) })
	}
	if p.Reopen != nil {
		t.Run("Reopen", func(t *testing.T) { testReopen(t, p) })
	}
	if p.Clock != nil {
		t.Run("Clock", func(t *testing.T) { testClock(t, p) })
	}
}

const origin = "https://example.com"

// reserve calls Reserve and fails t on an error.
func reserve(t *testing.T, p fleet.Pacer, r fleet.TurnRequest) fleet.Turn {
	t.Helper()
	tk, err := p.Reserve(context.Background(), origin, r)
	if err != nil {
		t.Fatalf("Reserve(%+v): %v", r, err)
	}
	if tk.Wait < 0 || tk.OK && tk.InFlight || tk.ID != 0 && !tk.OK {
		t.Fatalf("Reserve(%+v) = %+v: not a Turn the contract allows", r, tk)
	}
	return tk
}

// release calls Release of turn id, answered now after took.
func release(t *testing.T, p fleet.Pacer, id uint64, took time.Duration, failed bool) {
	t.Helper()
	a := fleet.Answer{ID: id, At: time.Now(), Took: took, Failed: failed}
	if err := p.Release(context.Background(), origin, a); err != nil {
		t.Fatalf("Release(%+v): %v", a, err)
	}
}

// pacerRelease calls Release with a.
func pacerRelease(t *testing.T, p fleet.Pacer, a fleet.Answer) {
	t.Helper()
	if err := p.Release(context.Background(), origin, a); err != nil {
		t.Fatalf("Release(%+v): %v", a, err)
	}
}

// sleep lets d pass on the Pacer's clock.
func sleep(p Pacers, d time.Duration) {
	if p.Clock != nil {
		p.Clock.Advance(d)
		return
	}
	time.Sleep(d)
}

// within reports whether got is in [want-slack, want], or is want exactly on
// a frozen clock.
func within(p Pacers, got, want time.Duration) bool {
	if p.Clock != nil {
		return got == want
	}
	return got <= want && got >= want-slack
}

// held is a request for a turn that holds the origin for an hour.
func held(every time.Duration, id uint64) fleet.TurnRequest {
	return fleet.TurnRequest{Every: every, Known: true, MaxWait: Forever, Hold: time.Hour, ID: id}
}

func testHolds(t *testing.T, p Pacers) {
	pc := p.New(t)
	tk := reserve(t, pc, held(time.Hour, 7))
	if !tk.OK || tk.Wait != 0 || tk.ID != 7 {
		t.Fatalf("first turn %+v; want taken at once, named 7", tk)
	}
	if in := reserve(t, pc, held(time.Hour, 8)); in.OK || !in.InFlight || in.Wait <= 0 {
		t.Errorf("Reserve while held: %+v; want InFlight, a wait", in)
	}
	release(t, pc, 8, 0, false)
	if in := reserve(t, pc, held(time.Hour, 9)); !in.InFlight {
		t.Errorf("a Release of another ID ended the hold: %+v", in)
	}
	release(t, pc, 7, 0, false)
	next := reserve(t, pc, held(time.Hour, 10))
	if !next.OK || !within(p, next.Wait, time.Hour) {
		t.Errorf("turn after the release: %+v; want an hour after it", next)
	}
	release(t, pc, 7, 0, false) // a second release of a turn: nothing
	if in := reserve(t, pc, held(time.Hour, 11)); !in.InFlight {
		t.Errorf("a second Release of a released turn ended the next hold: %+v", in)
	}
}

func testSpacing(t *testing.T, p Pacers) {
	pc := p.New(t)
	const every = 10 * time.Second
	tk := reserve(t, pc, held(every, 1))
	sleep(p, 2*slack) // the request takes a while to be answered
	release(t, pc, tk.ID, 2*slack, false)
	next := reserve(t, pc, fleet.TurnRequest{Every: every, Known: true, MaxWait: Forever, Hold: time.Hour, ID: 2})
	// Spaced from the turn, the wait would be at most every - 2*slack.
	if !next.OK || !within(p, next.Wait, every) {
		t.Errorf("turn after an answer that took %v: %+v; want %v after the answer", 2*slack, next, every)
	}
}

func testLostTurn(t *testing.T, p Pacers) {
	pc := p.New(t)
	const every = 10 * time.Second
	hold := 2 * slack
	r := fleet.TurnRequest{Every: every, Known: true, MaxWait: Forever, Hold: hold, ID: 1}
	if tk := reserve(t, pc, r); !tk.OK || tk.ID != 1 {
		t.Fatalf("first turn %+v", tk)
	}
	sleep(p, hold+slack/2) // never released: its hold runs out
	r.ID = 2
	tk := reserve(t, pc, r)
	// The next turn is every after the end of the hold.
	if !tk.OK || tk.Wait > every || tk.Wait < every-hold-slack || p.Clock != nil && tk.Wait != every-slack/2 {
		t.Errorf("turn after a hold ran out: %+v; want %v after the hold's end", tk, every)
	}
	release(t, pc, 1, 0, false) // the lost turn's late release
	r.ID = 3
	if in := reserve(t, pc, r); !in.InFlight {
		t.Errorf("the late Release of a lost turn ended the next one's hold: %+v", in)
	}
}

func testMaxWait(t *testing.T, p Pacers) {
	pc := p.New(t)
	r := fleet.TurnRequest{Every: time.Hour, Known: true, MaxWait: Forever}
	reserve(t, pc, r)
	r.MaxWait = time.Hour - time.Minute
	if tk := reserve(t, pc, r); tk.OK || tk.InFlight || !within(p, tk.Wait, time.Hour) {
		t.Errorf("turn an hour away with MaxWait %v: %+v; want none, and the wait", r.MaxWait, tk)
	}
	r.MaxWait = time.Hour
	if tk := reserve(t, pc, r); !tk.OK || !within(p, tk.Wait, time.Hour) {
		t.Errorf("turn an hour away (or less) with MaxWait an hour: %+v; want it taken", tk)
	}
	r.MaxWait = 0
	if tk := reserve(t, pc, r); tk.OK || !within(p, tk.Wait, 2*time.Hour) {
		t.Errorf("turn two hours away with MaxWait 0: %+v; want none", tk)
	}
}

func testUnknown(t *testing.T, p Pacers) {
	pc := p.New(t)
	reserve(t, pc, fleet.TurnRequest{Every: time.Hour, Known: true, MaxWait: Forever})
	// Rules unknown: the turn keeps the previous interval.
	u := reserve(t, pc, fleet.TurnRequest{Every: time.Second, Known: false, MaxWait: Forever, Hold: time.Hour, ID: 5})
	if !u.OK || u.ID != 5 || !within(p, u.Wait, time.Hour) {
		t.Fatalf("turn with the rules unknown: %+v; want an hour away, holding the origin", u)
	}
	release(t, pc, 5, 0, false)
	if tk := reserve(t, pc, fleet.TurnRequest{Every: 0, Known: true, MaxWait: 0}); tk.OK {
		t.Errorf("turn after a fetch with the rules unknown: %+v; want the hour kept", tk)
	}
	// Known: the turn keeps the interval asked for, once it is taken.
	pc = p.New(t)
	reserve(t, pc, fleet.TurnRequest{Every: time.Hour, Known: true, MaxWait: Forever})
	k := reserve(t, pc, fleet.TurnRequest{Every: time.Second, Known: true, MaxWait: Forever})
	if !k.OK || !within(p, k.Wait, time.Hour) {
		t.Fatalf("turn with a shorter interval: %+v; want an hour away", k)
	}
	if tk := reserve(t, pc, fleet.TurnRequest{Every: time.Second, Known: true, MaxWait: Forever}); !within(p, tk.Wait, time.Hour+time.Second) {
		t.Errorf("turn after one that keeps a second: %+v; want a second after it", tk)
	}
}

func testNoInterval(t *testing.T, p Pacers) {
	pc := p.New(t)
	for i := range 3 {
		tk := reserve(t, pc, fleet.TurnRequest{Known: true, Hold: time.Hour, ID: uint64(i + 1)})
		if !tk.OK || tk.Wait != 0 || tk.ID != 0 {
			t.Errorf("turn %d with no interval, adaptive delay or back-off: %+v; want taken at once, holding nothing", i, tk)
		}
	}
	tk := reserve(t, pc, fleet.TurnRequest{Known: true, Hold: time.Hour, ID: 9, MaxAdaptive: time.Minute})
	if !tk.OK || tk.ID != 9 {
		t.Errorf("turn with the adaptive delay on: %+v; want it held", tk)
	}
}

func testPause(t *testing.T, p Pacers) {
	pc := p.New(t)
	ctx := context.Background()
	// The reason travels with the pause: a RateLimit pause is reported
	// as one wherever it is met.
	const why = "ratelimit"
	if err := pc.Pause(ctx, origin, time.Now().Add(time.Hour), why); err != nil {
		t.Fatal(err)
	}
	if err := pc.Pause(ctx, origin, time.Now().Add(time.Minute), "retry-after"); err != nil {
		t.Fatal(err)
	}
	if err := pc.Pause(ctx, origin, time.Now().Add(-time.Minute), "retry-after"); err != nil {
		t.Fatal(err)
	}
	tk := reserve(t, pc, fleet.TurnRequest{Known: true, MaxWait: time.Minute})
	if tk.OK || tk.Wait > time.Hour || tk.Wait < time.Hour-slack {
		t.Errorf("turn in a pause of an hour: %+v; want none, an hour away (a shorter pause changes nothing)", tk)
	}
	if tk.Why != "" && tk.Why != why {
		t.Errorf("turn in a pause for %q: Why %q", why, tk.Why)
	}
	if c, ok := pc.(fleet.PauseChecker); ok {
		until, got, err := c.PausedUntil(ctx, origin)
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Until(until); d > time.Hour || d < time.Hour-slack && p.Clock == nil {
			t.Errorf("PausedUntil: %v from now; want an hour", d)
		}
		if got != why {
			t.Errorf("PausedUntil: reason %q; want %q", got, why)
		}
	}
	if w, ok := pc.(fleet.PauseWatcher); ok {
		// The copy may be stale for a moment: ask until it is not.
		var got string
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			var fresh bool
			_, got, fresh = w.WatchedPause(origin)
			if got != "" || fresh && p.Clock != nil {
				break
			}
		}
		if got != why {
			t.Errorf("WatchedPause: reason %q; want %q", got, why)
		}
	}
	// Every request takes a turn, held, while the origin is paused.
	if tk := reserve(t, pc, fleet.TurnRequest{Known: true, MaxWait: Forever, Hold: time.Hour, ID: 3}); !tk.OK || tk.ID != 3 {
		t.Errorf("turn after a pause: %+v; want it held", tk)
	}
}

// pushBack calls PushBack and returns the pause it set, from now.
func pushBack(t *testing.T, pc fleet.Pacer, sent time.Time, b fleet.Backoff) time.Duration {
	t.Helper()
	until, err := pc.PushBack(context.Background(), origin, sent, b)
	if err != nil {
		t.Fatalf("PushBack: %v", err)
	}
	return time.Until(until)
}

// pauseOf reports whether d is the pause of level-th incident of b, with
// its jitter (up to a tenth), on the caller's clock.
func pauseOf(p Pacers, d time.Duration, b fleet.Backoff, level int) bool {
	want := b.First
	for range level - 1 {
		want = min(2*want, b.Max)
	}
	lo := want - slack
	if p.Clock != nil {
		lo = want - 50*time.Millisecond
	}
	return d >= lo && d <= want+want/10+10*time.Millisecond
}

func testBackoff(t *testing.T, p Pacers) {
	pc := p.New(t)
	b := fleet.Backoff{First: time.Minute, Max: 3 * time.Minute, Forgive: time.Hour}
	d := pushBack(t, pc, time.Now(), b)
	if !pauseOf(p, d, b, 1) {
		t.Errorf("first back-off: %v; want %v and up to a tenth", d, b.First)
	}
	// An answer to a request sent before the back-off began: the same burst.
	if d2 := pushBack(t, pc, time.Now().Add(-time.Minute), b); d2 > d+10*time.Millisecond || d2 < d-slack {
		t.Errorf("a push-back of the same burst: %v; want the current pause, %v", d2, d)
	}
	if tk := reserve(t, pc, fleet.TurnRequest{Known: true, MaxWait: 0}); tk.OK {
		t.Errorf("turn during a back-off: %+v; want none before it ends", tk)
	}
	// New incidents (requests sent after it began) double it, to Max.
	sleep(p, Burst)
	if d := pushBack(t, pc, time.Now(), b); !pauseOf(p, d, b, 2) {
		t.Errorf("second back-off: %v; want %v and up to a tenth", d, 2*b.First)
	}
	sleep(p, Burst)
	if d := pushBack(t, pc, time.Now(), b); !pauseOf(p, d, b, 3) {
		t.Errorf("third back-off: %v; want %v (Max) and up to a tenth", d, b.Max)
	}

	// Forgiveness: once the origin has not pushed back for Forgive after
	// the end of its last pause, the count starts again.
	pc = p.New(t)
	b = fleet.Backoff{First: slack / 5, Max: time.Hour, Forgive: slack / 5}
	pushBack(t, pc, time.Now(), b)
	sleep(p, max(b.First+b.First/10+b.Forgive+slack/5, Burst))
	if d := pushBack(t, pc, time.Now(), b); !pauseOf(p, d, b, 1) {
		t.Errorf("back-off after it was forgiven: %v; want %v again", d, b.First)
	}
}

func testForgiven(t *testing.T, p Pacers) {
	pc := p.New(t)
	b := fleet.Backoff{First: slack / 5, Max: time.Hour, Forgive: time.Hour}
	pushBack(t, pc, time.Now(), b)
	sleep(p, b.First+b.First/10+slack/5)
	checkOneAtATime(t, pc, "after its pause, before it is forgiven")
}

// checkOneAtATime checks that pc holds the origin one request at a time,
// for requests with no interval and the adaptive delay off.
func checkOneAtATime(t *testing.T, pc fleet.Pacer, when string) {
	t.Helper()
	r := fleet.TurnRequest{Known: true, MaxWait: Forever, Hold: time.Hour, ID: 21}
	tk := reserve(t, pc, r)
	if !tk.OK || tk.ID != 21 {
		t.Fatalf("%s: turn %+v; want it held", when, tk)
	}
	r.ID = 22
	if in := reserve(t, pc, r); !in.InFlight {
		t.Errorf("%s: second turn %+v; want InFlight, one request at a time", when, in)
	}
	release(t, pc, 21, 0, false)
	if tk := reserve(t, pc, r); !tk.OK || tk.ID != 22 {
		t.Errorf("%s: turn after the release %+v; want it taken and held", when, tk)
	}
	release(t, pc, 22, 0, false)
}

func testAdaptive(t *testing.T, p Pacers) {
	pc := p.New(t)
	r := fleet.TurnRequest{Known: true, MaxWait: Forever, Hold: time.Hour, MaxAdaptive: time.Hour}
	// Each turn is taken ahead, at the wait the one before set, and
	// released at once: the next is spaced from the later of the turn and
	// its release, the turn.
	step := func(id uint64, took time.Duration, failed bool, want time.Duration, what string) {
		t.Helper()
		r.ID = id
		tk := reserve(t, pc, r)
		if !tk.OK || tk.ID != id {
			t.Fatalf("%s: turn %+v; want it held", what, tk)
		}
		release(t, pc, id, took, failed)
		next := reserve(t, pc, fleet.TurnRequest{Known: true, MaxWait: 0, Hold: time.Hour, MaxAdaptive: r.MaxAdaptive, ID: id + 100})
		if next.OK || !within(p, next.Wait, tk.Wait+want) {
			t.Errorf("%s: next turn %+v; want %v after the last (%v)", what, next, want, tk.Wait)
		}
	}
	// Twice the estimate, which rises at once to a slower answer...
	step(1, time.Minute, false, 2*time.Minute, "an answer in a minute")
	// ... falls a quarter of the way to a faster one ...
	step(2, 0, false, 2*45*time.Second, "then one at once")
	// ... and never falls for a failure.
	step(3, 0, true, 2*45*time.Second, "then a failure at once")
	step(4, 2*time.Minute, true, 4*time.Minute, "then a failure in two minutes")
	// It is capped by MaxAdaptive.
	r.MaxAdaptive = time.Minute
	step(5, time.Hour, false, time.Minute, "an answer in an hour, capped at a minute")

	// A hold that runs out is no answer: its holder was lost, which costs
	// the site the hold and no more, and says nothing of its speed.
	pc = p.New(t)
	hold := 2 * slack
	if tk := reserve(t, pc, fleet.TurnRequest{Known: true, MaxWait: Forever, Hold: hold, ID: 1, MaxAdaptive: time.Hour}); !tk.OK {
		t.Fatalf("turn %+v", tk)
	}
	sleep(p, hold+hold/2)
	if tk := reserve(t, pc, fleet.TurnRequest{Known: true, MaxWait: 0, Hold: time.Hour, ID: 2, MaxAdaptive: time.Hour}); !tk.OK || tk.Wait != 0 {
		t.Errorf("turn after a hold of %v ran out: %+v; want it at once (a lost holder is no slow answer)", hold, tk)
	}
}

func testLateAnswer(t *testing.T, p Pacers) {
	// With an interval: the late answer pauses the origin for it.
	pc := p.New(t)
	const every = 10 * time.Second
	hold := 2 * slack
	r := fleet.TurnRequest{Every: every, Known: true, MaxWait: Forever, Hold: hold, ID: 1}
	if tk := reserve(t, pc, r); !tk.OK || tk.ID != 1 {
		t.Fatalf("first turn %+v", tk)
	}
	sleep(p, hold+3*slack) // the hold runs out; the answer comes 1.5 s later
	release(t, pc, 1, hold+3*slack, false)
	r.ID, r.MaxWait = 2, 0
	// Spaced from the end of the hold, the wait would be every-3*slack.
	if tk := reserve(t, pc, r); tk.OK || !within(p, tk.Wait, every) {
		t.Errorf("turn after an answer that came %v after its hold ran out: %+v; want %v after the answer", 3*slack, tk, every)
	}

	// With the adaptive delay: the late answer is a sample, and pauses
	// the origin for twice it.
	pc = p.New(t)
	r = fleet.TurnRequest{Known: true, MaxWait: Forever, Hold: hold, ID: 1, MaxAdaptive: time.Hour}
	if tk := reserve(t, pc, r); !tk.OK || tk.ID != 1 {
		t.Fatalf("first turn %+v", tk)
	}
	sleep(p, hold+3*slack)
	pacerRelease(t, pc, fleet.Answer{ID: 1, At: time.Now(), Took: hold + 3*slack, MaxAdaptive: time.Hour})
	r.ID, r.MaxWait = 2, 0
	// Spaced from the end of the hold, the wait would be 2*took-3*slack.
	if tk := reserve(t, pc, r); tk.OK || !within(p, tk.Wait, 2*(hold+3*slack)) {
		t.Errorf("turn after a late answer that took %v: %+v; want twice that after it", hold+3*slack, tk)
	}
}

func testUnsent(t *testing.T, p Pacers) {
	pc := p.New(t)
	r := fleet.TurnRequest{Known: true, MaxWait: Forever, Hold: time.Hour, ID: 1, MaxAdaptive: time.Hour}
	reserve(t, pc, r)
	release(t, pc, 1, slack, false) // the estimate: slack; the adaptive delay 2*slack
	r.ID = 2
	tk := reserve(t, pc, r)
	if !tk.OK || !within(p, tk.Wait, 2*slack) {
		t.Fatalf("second turn %+v; want it %v away", tk, 2*slack)
	}
	// Its request is never sent (its wait was cancelled) and says so. As
	// an answer in 0 s, it would lower the estimate and space the next
	// turn from now.
	pacerRelease(t, pc, fleet.Answer{ID: 2, At: time.Now(), Unsent: true})
	r.ID, r.MaxWait = 3, 0
	if tk := reserve(t, pc, r); tk.OK || !within(p, tk.Wait, 4*slack) {
		t.Errorf("turn after an unsent one: %+v; want %v from now (%v after the unsent turn)", tk, 4*slack, 2*slack)
	}
}

func testContext(t *testing.T, p Pacers) {
	pc := p.New(t)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if tk, err := pc.Reserve(done, origin, held(time.Hour, 1)); err == nil && tk.OK {
		// A Pacer may take the turn before it looks at the context; its
		// ID releases it.
		release(t, pc, 1, 0, false)
	}
	// Whatever a call that ended mid-way did, the caller's ID releases its
	// turn: the next is an hour after the release, or free.
	for i := range 20 {
		id := uint64(100 + i)
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i)*50*time.Microsecond)
		start := time.Now()
		// The rules unknown: a turn that holds the origin with no interval.
		pc.Reserve(ctx, origin, fleet.TurnRequest{Known: false, MaxWait: Forever, Hold: time.Hour, ID: id})
		cancel()
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Reserve with a context of %v returned after %v", time.Duration(i)*50*time.Microsecond, d)
		}
		release(t, pc, id, 0, false)
		if in := reserve(t, pc, fleet.TurnRequest{Known: true, MaxWait: 0}); in.InFlight {
			t.Fatalf("after a Reserve whose context ended, and the release of its ID: %+v; want the origin free", in)
		}
	}
	for _, f := range []func(ctx context.Context) error{
		func(ctx context.Context) error { return pc.Release(ctx, origin, fleet.Answer{ID: 5, At: time.Now()}) },
		func(ctx context.Context) error {
			return pc.Pause(ctx, origin, time.Now().Add(time.Second), "retry-after")
		},
		func(ctx context.Context) error {
			_, err := pc.PushBack(ctx, origin, time.Now(), fleet.Backoff{First: time.Second, Max: time.Second})
			return err
		},
	} {
		start := time.Now()
		f(done)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("a call with a done context returned after %v", d)
		}
	}
}

func testShared(t *testing.T, p Pacers) {
	a := p.New(t)
	b := p.Shared(t, a)
	tk := reserve(t, a, held(time.Hour, 1))
	if !tk.OK {
		t.Fatalf("turn %+v", tk)
	}
	if in := reserve(t, b, held(time.Hour, 2)); !in.InFlight {
		t.Errorf("a turn held through one Pacer: the other's %+v; want InFlight", in)
	}
	release(t, b, 1, 0, false)
	if tk := reserve(t, a, held(time.Hour, 3)); !tk.OK || !within(p, tk.Wait, time.Hour) {
		t.Errorf("released through the other Pacer: %+v; want a turn an hour after", tk)
	}

	// The adaptive delay is the fleet's: an answer's time reported through
	// one Pacer spaces the turns the other hands out.
	a = p.New(t)
	b = p.Shared(t, a)
	r := fleet.TurnRequest{Known: true, MaxWait: Forever, Hold: time.Hour, ID: 1, MaxAdaptive: time.Hour}
	if tk := reserve(t, a, r); !tk.OK || tk.ID != 1 {
		t.Fatalf("turn with the adaptive delay on: %+v; want it held", tk)
	}
	release(t, b, 1, time.Minute, false)
	r.ID, r.MaxWait = 2, 0
	if tk := reserve(t, a, r); tk.OK || !within(p, tk.Wait, 2*time.Minute) {
		t.Errorf("after an answer in a minute, released through the other Pacer: %+v; want the next turn two minutes after it", tk)
	}

	a = p.New(t)
	b = p.Shared(t, a)
	bo := fleet.Backoff{First: slack / 5, Max: time.Hour, Forgive: time.Hour}
	pushBack(t, a, time.Now(), bo)
	if d := pushBack(t, b, time.Now().Add(-time.Second), bo); !pauseOf(p, d, bo, 1) {
		t.Errorf("a push-back of the burst through the other Pacer: %v; want the first pause", d)
	}
	sleep(p, bo.First+bo.First/10+slack/5)
	checkOneAtATime(t, b, "backing off, through the other Pacer")
}

func testReopen(t *testing.T, p Pacers) {
	pc := p.New(t)
	ctx := context.Background()
	reserve(t, pc, held(time.Hour, 1))
	if err := pc.Pause(ctx, "https://paused.example", time.Now().Add(time.Hour), "retry-after"); err != nil {
		t.Fatal(err)
	}
	bo := fleet.Backoff{First: slack / 5, Max: time.Hour, Forgive: time.Hour}
	if _, err := pc.PushBack(ctx, "https://backoff.example", time.Now(), bo); err != nil {
		t.Fatal(err)
	}
	pc = p.Reopen(t, pc)
	if in := reserve(t, pc, held(time.Hour, 2)); !in.InFlight {
		t.Errorf("a turn held before reopening: %+v; want InFlight", in)
	}
	release(t, pc, 1, 0, false)
	if tk := reserve(t, pc, held(time.Hour, 3)); !tk.OK || !within(p, tk.Wait, time.Hour) {
		t.Errorf("turn after the release of one held before reopening: %+v; want an hour after", tk)
	}
	tk, err := pc.Reserve(ctx, "https://paused.example", fleet.TurnRequest{Known: true})
	if err != nil || tk.OK || tk.Wait < time.Hour-time.Minute {
		t.Errorf("paused origin after reopening: %+v, %v; want no turn for an hour", tk, err)
	}
	sleep(p, bo.First+bo.First/10+slack/5)
	r := fleet.TurnRequest{Known: true, MaxWait: Forever, Hold: time.Hour, ID: 4}
	if tk, err := pc.Reserve(ctx, "https://backoff.example", r); err != nil || !tk.OK || tk.ID != 4 {
		t.Fatalf("origin backing off, after reopening: %+v, %v; want a turn held", tk, err)
	}
	r.ID = 5
	if in, err := pc.Reserve(ctx, "https://backoff.example", r); err != nil || !in.InFlight {
		t.Errorf("origin backing off, after reopening: second turn %+v, %v; want one request at a time", in, err)
	}
	// The level goes on: the next incident doubles the pause.
	until, err := pc.PushBack(ctx, "https://backoff.example", time.Now(), bo)
	if d := time.Until(until); err != nil || !pauseOf(p, d, bo, 2) {
		t.Errorf("back-off after reopening: %v, %v; want level 2, %v", d, err, 2*bo.First)
	}
}

func testClock(t *testing.T, p Pacers) {
	pc := p.New(t)
	// MaxWait's boundary: a turn exactly MaxWait away is taken, one
	// further away (strictly) is not.
	reserve(t, pc, fleet.TurnRequest{Every: time.Hour, Known: true, MaxWait: Forever})
	if tk := reserve(t, pc, fleet.TurnRequest{Every: time.Hour, Known: true, MaxWait: time.Hour - 1}); tk.OK || tk.Wait != time.Hour {
		t.Errorf("turn an hour away, MaxWait an hour less 1ns: %+v; want none", tk)
	}
	if tk := reserve(t, pc, fleet.TurnRequest{Every: time.Hour, Known: true, MaxWait: time.Hour}); !tk.OK || tk.Wait != time.Hour {
		t.Errorf("turn an hour away, MaxWait an hour: %+v; want it taken", tk)
	}

	// A clock that jumps back: no turn comes sooner after the latest one
	// than its interval, on either clock.
	pc = p.New(t)
	tk := reserve(t, pc, held(10*time.Second, 1))
	release(t, pc, tk.ID, 0, false)
	p.Clock.Advance(-time.Hour)
	if tk := reserve(t, pc, fleet.TurnRequest{Every: 10 * time.Second, Known: true, MaxWait: 0}); tk.OK || tk.Wait < 10*time.Second {
		t.Errorf("after the clock jumped back an hour: %+v; want no turn for at least the interval", tk)
	}
	p.Clock.Advance(time.Hour)
	// A clock that jumps forward: a hold runs out, as if that time passed.
	tk = reserve(t, pc, fleet.TurnRequest{Every: 10 * time.Second, Known: true, MaxWait: Forever, Hold: time.Minute, ID: 2})
	p.Clock.Advance(tk.Wait + 2*time.Hour)
	if tk := reserve(t, pc, fleet.TurnRequest{Every: 10 * time.Second, Known: true, MaxWait: 0, Hold: time.Minute, ID: 3}); !tk.OK {
		t.Errorf("after the clock jumped two hours past a hold: %+v; want a turn", tk)
	}
}
