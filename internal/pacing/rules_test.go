package pacing

import (
	"math"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"
)

const s = time.Second

func req(every time.Duration, known bool) Request {
	return Request{Every: every, Known: known, MaxWait: time.Hour}
}

// TestKeepsInterval: each turn keeps its interval; the next is spaced by
// the larger of its own and the latest turn's; a turn of unknown rules
// hands the latest interval on, one with a known interval of zero does
// not; a give-back restores the interval with the turn.
func TestKeepsInterval(t *testing.T) {
	var p State
	steps := []struct {
		r    Request
		want time.Duration
	}{
		{req(s, true), 0},         // first turn, keeps 1s
		{req(0, true), s},         // spaced by the latest's 1s; keeps 0
		{req(0, true), s},         // the latest kept 0
		{req(2*s, true), 3 * s},   // keeps 2s
		{req(0, false), 5 * s},    // spaced by 2s; hands 2s on
		{req(0, false), 7 * s},    // and again
		{req(3*s, false), 10 * s}, // its own floor, 3s, is larger; keeps 3s
		{req(0, true), 13 * s},    // known, no delay: spaced by 3s, keeps 0
		{Request{MaxWait: time.Hour, Hold: time.Minute}, 13 * s}, // unknown: keeps 0 too, and holds
		{req(0, true), 13 * s}, // held: not taken
	}
	for i, st := range steps[:9] {
		g := p.Reserve(0, st.r)
		if !g.OK || g.Wait != st.want {
			t.Errorf("turn %d (%+v) at %v, %v; want %v", i, st.r, g.Wait, g.OK, st.want)
		}
		if i == 8 && !g.Turn.Held {
			t.Errorf("a turn of unknown rules holds nothing")
		}
	}
	if g := p.Reserve(0, steps[9].r); g.OK || !g.InFlight {
		t.Errorf("a turn taken while one is held: %+v", g)
	}
	var q State
	q.Reserve(0, req(2*s, true))
	tk := q.Reserve(0, req(0, true)).Turn // at 2s, keeps 0
	q.GiveBack(tk)
	if g := q.Reserve(0, req(0, true)); g.Wait != 2*s {
		t.Errorf("turn after a give-back at %v, want 2s: the 2s interval restored", g.Wait)
	}
}

// TestMaxWaitBoundary: a turn exactly MaxWait away is taken; one a
// nanosecond further is not.
func TestMaxWaitBoundary(t *testing.T) {
	var p State
	p.Reserve(0, req(s, true))
	if g := p.Reserve(0, Request{Every: s, Known: true, MaxWait: s - 1}); g.OK || g.Wait != s {
		t.Errorf("a turn 1s away under MaxWait 1s-1ns: %+v", g)
	}
	if g := p.Reserve(0, Request{Every: s, Known: true, MaxWait: s}); !g.OK || g.Wait != s {
		t.Errorf("a turn 1s away under MaxWait 1s: %+v", g)
	}
}

// TestHoldSpacesFromAnswer: a held turn blocks the next until released,
// and the next is spaced from the answer; a hold that runs out spaces
// from its end and is no sample of the estimate (its holder was lost).
func TestHoldSpacesFromAnswer(t *testing.T) {
	var p State
	r := Request{Every: s, Known: true, MaxWait: time.Hour, Hold: time.Minute}
	g := p.Reserve(0, r)
	if !g.OK || !g.Turn.Held {
		t.Fatalf("first turn %+v", g)
	}
	if g2 := p.Reserve(3*s, r); g2.OK || !g2.InFlight {
		t.Fatalf("second turn while held: %+v", g2)
	}
	if !p.Release(5*s, fleet.Answer{ID: g.Turn.ID, Took: 5 * s}) {
		t.Fatal("release of the held turn ignored")
	}
	if p.Release(5*s, fleet.Answer{ID: g.Turn.ID, Took: 5 * s}) {
		t.Error("a second release of one turn counted")
	}
	g = p.Reserve(5*s, r)
	if !g.OK || g.Wait != s {
		t.Fatalf("turn after an answer at 5s: %+v, want 1s on", g)
	}
	// Never released: the hold runs out at 6s+1m.
	at := 6*s + time.Minute
	if g2 := p.Reserve(at, r); !g2.OK || g2.Wait != s {
		t.Errorf("turn after a lost hold: %+v, want 1s after the hold's end", g2)
	}
	if p.Est != 5*s {
		t.Errorf("estimate %v after a hold that ran out, want the last answer's 5s", p.Est)
	}
}

// TestLateAnswer: the answer to a turn whose hold ran out pauses the
// origin for the spacing after it, and a slower answer raises the
// estimate; the answer of a turn released already, or of an unknown one,
// changes nothing.
func TestLateAnswer(t *testing.T) {
	var p State
	r := Request{Every: 10 * s, Known: true, MaxWait: time.Hour, Hold: 2 * s, ID: 1}
	p.Reserve(0, r)
	r.ID = 2
	g := p.Reserve(20*s, r) // the hold of 1 ran out at 2s: the turn is at 12s
	if !g.OK || g.Wait != 0 {
		t.Fatalf("turn after a lost hold: %+v", g)
	}
	p.Release(21*s, fleet.Answer{ID: 2, Took: s})
	// The lost turn's answer comes at 25s, after 25s.
	if p.Release(25*s, fleet.Answer{ID: 1, Took: 25 * s, MaxAdaptive: time.Hour}) {
		t.Fatal("a late answer released a hold")
	}
	if p.Est != 25*s {
		t.Errorf("estimate %v after a late answer of 25s", p.Est)
	}
	r.ID = 3
	if at, why := p.Next(25*s, r); at != 75*s || why != ReasonSlowAnswers {
		t.Errorf("next turn after a late answer at 25s: %v (%s), want 75s (twice 25s after it)", at, why)
	}
	// A second late answer of 1, or one of 2 (released), changes nothing.
	before := p
	p.Release(30*s, fleet.Answer{ID: 1, Took: 30 * s, MaxAdaptive: time.Hour})
	p.Release(30*s, fleet.Answer{ID: 2, Took: 30 * s, MaxAdaptive: time.Hour})
	p.Release(30*s, fleet.Answer{ID: 99, Took: 30 * s, MaxAdaptive: time.Hour})
	if p != before {
		t.Errorf("answers of turns not late changed the pace: %+v, was %+v", p, before)
	}
}

// TestUnsent: a turn whose request was never sent ends its hold with no
// sample, and the next turn is spaced from the turn, not from the
// release.
func TestUnsent(t *testing.T) {
	var p State
	r := Request{Every: 10 * s, Known: true, MaxWait: time.Hour, Hold: time.Minute, MaxAdaptive: time.Hour}
	g := p.Reserve(0, r)
	p.Release(s, fleet.Answer{ID: g.Turn.ID, Took: s})
	g = p.Reserve(2*s, r) // at 11s
	if !p.Release(5*s, fleet.Answer{ID: g.Turn.ID, Unsent: true}) {
		t.Fatal("an unsent turn kept its hold")
	}
	if p.Est != s {
		t.Errorf("estimate %v after an unsent turn, want 1s", p.Est)
	}
	if at, _ := p.Next(5*s, r); at != 21*s {
		t.Errorf("next turn after an unsent one at 11s: %v, want 21s", at)
	}
}

// TestAdaptive: the estimate rises at once and falls a quarter of the way;
// the adaptive delay is twice it, capped, and spaces the next turn.
func TestAdaptive(t *testing.T) {
	var p State
	r := Request{Known: true, MaxWait: time.Hour, Hold: time.Minute, MaxAdaptive: time.Hour}
	now := time.Duration(0)
	answer := func(took time.Duration) {
		t.Helper()
		g := p.Reserve(now, r)
		if !g.OK || !g.Turn.Held {
			t.Fatalf("turn %+v: the adaptive pace holds every turn", g)
		}
		now = Add(now, g.Wait+took)
		p.Release(now, fleet.Answer{ID: g.Turn.ID, Took: took})
	}
	answer(20 * time.Millisecond)
	answer(1500 * time.Millisecond)
	if p.Est != 1500*time.Millisecond {
		t.Fatalf("estimate %v after a 1.5s answer, want 1.5s at once", p.Est)
	}
	if at, why := p.Next(now, r); at-now != 3*s || why != ReasonSlowAnswers {
		t.Errorf("next turn %v on (%s), want 3s (slow-answers)", at-now, why)
	}
	answer(100 * time.Millisecond)
	if want := 1500*time.Millisecond - 1400*time.Millisecond/4; p.Est != want {
		t.Errorf("estimate %v after a faster answer, want %v", p.Est, want)
	}
	p.Sample(10*time.Millisecond, true)
	if p.Est < time.Second {
		t.Errorf("a failure lowered the estimate to %v", p.Est)
	}
	if a := p.Adaptive(2 * s); a != 2*s {
		t.Errorf("adaptive delay %v under a 2s cap", a)
	}
	if a := p.Adaptive(0); a != 0 {
		t.Errorf("adaptive delay %v when off", a)
	}
	p.Est = math.MaxInt64
	if a := p.Adaptive(time.Hour); a != time.Hour {
		t.Errorf("adaptive delay %v of an endless estimate, want the cap", a)
	}
}

// TestBackoff: levels double to Max, a burst is one incident, forgiveness
// starts over, jitter only lengthens, and a back-off holds every turn.
func TestBackoff(t *testing.T) {
	b := fleet.Backoff{First: s, Max: 4 * s, Forgive: 10 * s}
	var p State
	until, isNew := p.PushBack(0, 0, b, 0)
	if until != s || !isNew {
		t.Fatalf("first pushback: %v %v", until, isNew)
	}
	if u, n := p.PushBack(0, 0, b, 0); u != s || n {
		t.Errorf("an answer of the same burst: %v %v", u, n)
	}
	for _, want := range []time.Duration{2 * s, 4 * s, 4 * s} {
		now := p.BoEnd // a new incident as the last pause ends
		u, _ := p.PushBack(now, now, b, 0)
		if u-now != want {
			t.Errorf("level %d: pause %v, want %v", p.BoLevel, u-now, want)
		}
	}
	r := Request{Known: true, MaxWait: time.Hour, Hold: time.Minute}
	if g := p.Reserve(p.BoEnd, r); !g.OK || !g.Turn.Held {
		t.Errorf("a turn while backing off holds nothing: %+v", g)
	}
	now := Add(p.BoEnd, b.Forgive+1)
	u, _ := p.PushBack(now, now, b, 0)
	if u-now != s {
		t.Errorf("after forgiveness: pause %v, want 1s", u-now)
	}
	for _, j := range []float64{-1, 0, 0.5, 0.999, 2} {
		d := BackoffPause(b, 1, j)
		if d < s || d > s+s/10 {
			t.Errorf("jitter %v: pause %v, want within [1s, 1.1s]", j, d)
		}
	}
	if d := BackoffPause(fleet.Backoff{First: math.MaxInt64 / 2, Max: math.MaxInt64}, 70, 1); d <= 0 {
		t.Errorf("an endless back-off overflowed to %v", d)
	}
}

// TestClockBack: a clock that jumps back never brings a turn earlier.
func TestClockBack(t *testing.T) {
	var p State
	r := Request{Every: 10 * s, Known: true, MaxWait: time.Hour}
	p.Reserve(100*s, r)
	g := p.Reserve(50*s, r) // the clock went back 50s
	if !g.OK || 50*s+g.Wait != 110*s {
		t.Errorf("turn at %v after the clock went back, want 110s", 50*s+g.Wait)
	}
}
