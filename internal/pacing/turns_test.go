package pacing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"
)

// fakeClock is a Clock that moves only by Advance.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	c       chan time.Time
	stopped bool
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) (<-chan time.Time, func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- c.now
		return t.c, func() bool { return false }
	}
	c.timers = append(c.timers, t)
	return t.c, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// Advance moves the clock by d and fires the timers due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.at.After(c.now):
			t.stopped = true
			t.c <- c.now
		default:
			kept = append(kept, t)
		}
	}
	c.timers = kept
}

// waiting waits (on the real clock, briefly) until a timer is pending.
func (c *fakeClock) waiting(t *testing.T) {
	t.Helper()
	for range 5000 {
		c.mu.Lock()
		n := 0
		for _, tm := range c.timers {
			if !tm.stopped {
				n++
			}
		}
		c.mu.Unlock()
		if n > 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("nothing waits on the clock")
}

// testSite is a Site with a pace of its own.
type testSite struct{ p Pace }

func (s *testSite) Origin() string { return "https://example.com" }
func (s *testSite) Pace() *Pace    { return &s.p }

// newTurns returns Turns on a fake clock, with the Pacer p (nil for none).
func newTurns(p fleet.Pacer) (*Turns, *fakeClock) {
	c := newFakeClock()
	tn := new(Turns)
	tn.Init(Config{
		TurnTimeout: time.Minute, MaxAdaptive: time.Hour, MaxRetryAfter: time.Hour,
		Backoff: fleet.Backoff{First: time.Second, Max: time.Minute, Forgive: time.Minute},
		Pacer:   p, CallTimeout: 2 * time.Second, Clock: c,
		NotYet: func(r Refusal) error { return &refused{r} },
	}, c.Now())
	return tn, c
}

type refused struct{ Refusal }

func (r *refused) Error() string { return fmt.Sprintf("refused %+v", r.Refusal) }

var every10 = Ask{Every: 10 * time.Second, Why: ReasonCrawlDelay, Known: true}

// TestWaitSpacesFromAnswer: a turn is spaced from the answer to the one
// before, and a request that may not wait that long is refused with the
// exact time of the turn and its reason.
func TestWaitSpacesFromAnswer(t *testing.T) {
	tn, c := newTurns(nil)
	s := new(testSite)
	ctx := context.Background()
	tk, err := tn.Wait(ctx, s, every10, nil, tn.Now(), nil)
	if err != nil || !tk.Taken() || tk.At() != 0 {
		t.Fatalf("first turn: %+v, %v", tk, err)
	}
	c.Advance(3 * time.Second) // the answer takes 3 s
	tn.Release(ctx, s, tk, tk.At(), false)
	if at := tn.Next(s, every10); at != 13*time.Second {
		t.Errorf("next turn at %v, want 13s (10s after the answer)", at)
	}
	_, err = tn.Wait(WithMaxWait(ctx, 5*time.Second), s, every10, nil, tn.Now(), nil)
	var r *refused
	if !errors.As(err, &r) || r.Reason != ReasonCrawlDelay || !r.RetryAt.Equal(tn.epoch.Add(13*time.Second)) || r.Deadline {
		t.Fatalf("a request that may wait 5s for a turn 10s away: %v", err)
	}
	if n := tn.Counts.NotYet.Load(); n != 1 {
		t.Errorf("NotYet counted %d, want 1", n)
	}
	// One that may wait takes the turn when the clock reaches it.
	done := make(chan error, 1)
	go func() {
		tk, err := tn.Wait(ctx, s, every10, nil, tn.Now(), nil)
		if err == nil && tn.Now() != 13*time.Second {
			err = fmt.Errorf("left at %v", tn.Now())
		}
		tn.Release(ctx, s, tk, tk.At(), false)
		done <- err
	}()
	c.waiting(t)
	c.Advance(10 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, d := tn.Counts.Waits.Load(), tn.Counts.WaitTime.Load(); n != 1 || time.Duration(d) != 10*time.Second {
		t.Errorf("waits counted: %d, %v; want 1, 10s", n, time.Duration(d))
	}
}

// TestWaitCancelledIsUnsent: a request whose context ends while it waits
// for a turn it took in the Pacer gives it back as unsent: the Pacer's
// estimate of the site is not lowered, and its hold ends.
func TestWaitCancelledIsUnsent(t *testing.T) {
	p := new(Memory)
	ctx := context.Background()
	a := Ask{Known: true}
	// Another process's request, answered in 2 s: the Pacer's estimate is
	// 2 s, its adaptive delay 4 s.
	other, oc := newTurns(p)
	os := new(testSite)
	tk, err := other.Wait(ctx, os, a, nil, other.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	oc.Advance(2 * time.Second)
	other.Release(ctx, os, tk, tk.At(), false)
	if est := p.Estimate(os.Origin()); est != 2*time.Second {
		t.Fatalf("the Pacer's estimate %v, want 2s", est)
	}
	// This process takes the next turn in the Pacer, 4 s away, and its
	// request is cancelled while it waits for it.
	tn, c := newTurns(p)
	s := new(testSite)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := tn.Wait(wctx, s, a, nil, tn.Now(), nil)
		done <- err
	}()
	c.waiting(t)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	if est := p.Estimate(s.Origin()); est != 2*time.Second {
		t.Errorf("the Pacer's estimate after a cancelled wait: %v, want 2s (no answer was heard)", est)
	}
	if r, _ := p.Reserve(ctx, s.Origin(), fleet.TurnRequest{Known: true, MaxWait: time.Hour, Hold: time.Minute, ID: 9, MaxAdaptive: time.Hour}); !r.OK {
		t.Errorf("the Pacer after a cancelled wait: %+v; want a turn (the hold ended)", r)
	}
}

// TestAnsweredRateLimit: "quota spent, wait 5 s" pauses the origin for 5 s,
// and the refusal says so.
func TestAnsweredRateLimit(t *testing.T) {
	tn, c := newTurns(nil)
	s := new(testSite)
	ctx := context.Background()
	a := Ask{Known: true}
	tk, _ := tn.Wait(ctx, s, a, nil, tn.Now(), nil)
	c.Advance(time.Second)
	tn.Release(ctx, s, tk, tk.At(), false)
	tn.Answered(ctx, s, http.StatusOK, http.Header{"Ratelimit": {`"default";r=0;t=5`}}, tk.At())
	if tn.Free(s, a) {
		t.Error("a paused origin is free")
	}
	_, err := tn.Wait(WithMaxWait(ctx, time.Second), s, a, nil, tn.Now(), nil)
	var r *refused
	if !errors.As(err, &r) || r.Reason != ReasonRateLimit || !r.RetryAt.Equal(tn.epoch.Add(6*time.Second)) {
		t.Fatalf("a request during the pause: %v; want refused until 6s for %q", err, ReasonRateLimit)
	}
	c.Advance(5 * time.Second)
	if _, err := tn.Wait(WithMaxWait(ctx, time.Second), s, a, nil, tn.Now(), nil); err != nil {
		t.Errorf("a request after the pause: %v", err)
	}
}

// TestFlushWaitsForGo: Flush returns once every call run by Go has
// returned, and with ctx's error if ctx ends first.
func TestFlushWaitsForGo(t *testing.T) {
	var tn Turns
	if err := tn.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var ran sync.WaitGroup
	ran.Add(1)
	tn.Go(func() { <-release; ran.Done() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := tn.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Flush while a call is owed: %v", err)
	}
	close(release)
	if err := tn.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	ran.Wait()
}
