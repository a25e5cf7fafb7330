package pacing

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots/fleet"
)

// TestTable: a pace handed back is kept while it matters and taken back;
// one that no longer matters is dropped, takes no turn, and the origin
// gets a new one.
func TestTable(t *testing.T) {
	var tb Table[string]
	p := tb.Take("a")
	r := Request{Every: 10 * s, Known: true, MaxWait: time.Hour, Hold: time.Minute}
	g, _ := p.Reserve(0, r)
	p.Release(s, g.Turn, fleet.Answer{Took: s})
	tb.HandBack("a", p, 2*s) // the next turn is at 11s: it matters
	if q := tb.Take("a"); q != p {
		t.Fatal("a pace that matters was not kept")
	}
	tb.HandBack("a", p, 20*s) // past its interval: dropped
	if !p.Dropped() {
		t.Fatal("a pace that no longer matters was kept")
	}
	if _, w := p.Reserve(20*s, r); !w.Dropped {
		t.Error("a dropped pace took a turn")
	}
	if q := tb.Take("a"); q == p || q.Dropped() {
		t.Error("the origin of a dropped pace did not get a new one")
	}
	if tb.Len() != 0 {
		t.Errorf("%d paces kept", tb.Len())
	}
}

// TestPaceWaiters: a request that finds a turn held waits on a channel
// closed by the release, made only when someone waits.
func TestPaceWaiters(t *testing.T) {
	var p Pace
	r := Request{Known: true, MaxWait: time.Hour, Hold: time.Minute, MaxAdaptive: time.Hour}
	g, w := p.Reserve(0, r)
	if !g.OK || w.Freed != nil {
		t.Fatalf("first turn %+v %+v", g, w)
	}
	g2, w2 := p.Reserve(0, r)
	if g2.OK || w2.Freed == nil || w2.By != time.Minute {
		t.Fatalf("second turn while held: %+v %+v", g2, w2)
	}
	p.Release(s, g.Turn, fleet.Answer{Took: s})
	select {
	case <-w2.Freed:
	default:
		t.Fatal("the release did not wake the waiter")
	}
	if g3, _ := p.Reserve(s, r); !g3.OK {
		t.Errorf("turn after the release: %+v", g3)
	}
}

// TestMemoryPacer: the Memory Pacer follows the rules through the
// fleet.Pacer contract: holds, the answer's response time, MaxWait's
// boundary, pauses, back-off, and a context that has ended.
func TestMemoryPacer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		p := &Memory{Jitter: func() float64 { return 0 }}
		const o = "https://example.com"
		r := fleet.TurnRequest{Every: s, Known: true, MaxWait: time.Hour, Hold: time.Minute, ID: 7, MaxAdaptive: time.Hour}
		tk, err := p.Reserve(ctx, o, r)
		if err != nil || !tk.OK || tk.ID != 7 || tk.Wait != 0 {
			t.Fatalf("first turn %+v %v", tk, err)
		}
		if tk2, _ := p.Reserve(ctx, o, r); tk2.OK || !tk2.InFlight {
			t.Fatalf("a turn while one is held: %+v", tk2)
		}
		time.Sleep(2 * s)
		p.Release(ctx, o, fleet.Answer{ID: 7, At: time.Now(), Took: 2 * s})
		p.Release(ctx, o, fleet.Answer{ID: 7, At: time.Now(), Took: 0}) // twice: ignored
		if e := p.Estimate(o); e != 2*s {
			t.Errorf("estimate %v, want 2s", e)
		}
		r.ID = 8
		// Spaced by the adaptive delay: twice 2s.
		if tk, _ := p.Reserve(ctx, o, fleet.TurnRequest{Every: s, Known: true, MaxWait: 4*s - 1, Hold: time.Minute, MaxAdaptive: time.Hour}); tk.OK {
			t.Errorf("a turn 4s away under MaxWait 4s-1ns: %+v", tk)
		}
		r.MaxWait = 4 * s
		if tk, _ := p.Reserve(ctx, o, r); !tk.OK || tk.Wait != 4*s {
			t.Errorf("a turn 4s away under MaxWait 4s: %+v", tk)
		}
		until, _ := p.PushBack(ctx, o, time.Now(), fleet.Backoff{First: time.Minute, Max: time.Hour, Forgive: time.Hour})
		if d := time.Until(until); d != time.Minute {
			t.Errorf("back-off pause %v, want 1m", d)
		}
		if pu, _, _ := p.PausedUntil(ctx, o); !pu.Equal(until) {
			t.Errorf("PausedUntil %v, want %v", pu, until)
		}
		done, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := p.Reserve(done, o, r); err == nil {
			t.Error("Reserve with an ended context: no error")
		}
		if err := p.Release(done, o, fleet.Answer{ID: 8}); err == nil {
			t.Error("Release with an ended context: no error")
		}
	})
}
