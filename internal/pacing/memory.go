package pacing

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/f9014239/robots/fleet"
)

// Memory is a [fleet.Pacer] and [fleet.PauseChecker] in memory, on the
// rules of [State], for the Transports of one process (and tests). The zero
// value is ready; its clock is the monotonic clock from its first use. A
// Memory is safe for concurrent use by multiple goroutines. It forgets an
// origin once its State no longer matters (see State.Matters), at most
// every 1,024 new origins, so that it holds the origins that can still
// hold a request back.
type Memory struct {
	// Jitter, if set, returns the back-off's random fraction in [0, 1);
	// if nil, math/rand/v2's Float64.
	Jitter func() float64

	mu    sync.Mutex
	epoch time.Time         // guarded by mu: set at first use
	m     map[string]*State // guarded by mu
	swept int               // guarded by mu: len(m) after the last sweep
}

// state returns origin's State at now, and now. The caller holds p.mu.
func (p *Memory) state(origin string) (*State, time.Duration) {
	if p.m == nil {
		p.m = make(map[string]*State)
		p.epoch = time.Now()
	}
	now := time.Since(p.epoch)
	s := p.m[origin]
	if s == nil {
		if len(p.m) > max(2*p.swept, 1024) {
			for k, v := range p.m {
				if !v.Matters(now, 0) {
					delete(p.m, k)
				}
			}
			p.swept = len(p.m)
		}
		s = new(State)
		p.m[origin] = s
	}
	return s, now
}

// Reserve implements [fleet.Pacer] with [State.Reserve].
func (p *Memory) Reserve(ctx context.Context, origin string, r fleet.TurnRequest) (fleet.Turn, error) {
	if err := ctx.Err(); err != nil {
		return fleet.Turn{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s, now := p.state(origin)
	g := s.Reserve(now, Request{Every: r.Every, Known: r.Known, MaxWait: max(r.MaxWait, 0), Hold: r.Hold, ID: r.ID, MaxAdaptive: r.MaxAdaptive})
	return fleet.Turn{OK: g.OK, Wait: max(g.Wait, 0), InFlight: g.InFlight, ID: g.Turn.ID, Why: g.Why}, nil
}

// Release implements [fleet.Pacer] with [State.Release]: the next turn is
// spaced from when Release is called.
func (p *Memory) Release(ctx context.Context, origin string, a fleet.Answer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s, now := p.state(origin)
	s.Release(now, a)
	return nil
}

// Pause implements [fleet.Pacer] with [State.Pause].
func (p *Memory) Pause(ctx context.Context, origin string, until time.Time, why string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s, now := p.state(origin)
	if d := time.Until(until); d > 0 {
		s.Pause(Add(now, d), PauseReason(why))
	}
	return nil
}

// PushBack implements [fleet.Pacer] with [State.PushBack].
func (p *Memory) PushBack(ctx context.Context, origin string, sent time.Time, b fleet.Backoff) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	j := rand.Float64
	if p.Jitter != nil {
		j = p.Jitter
	}
	jitter := j()
	p.mu.Lock()
	defer p.mu.Unlock()
	s, now := p.state(origin)
	until, _ := s.PushBack(now, now-time.Since(sent), b, jitter)
	return time.Now().Add(until - now), nil
}

// PausedUntil implements [fleet.PauseChecker]: when origin's pause ends, or
// the zero time.
func (p *Memory) PausedUntil(ctx context.Context, origin string) (time.Time, string, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s, now := p.state(origin)
	if !s.Paused(now) {
		return time.Time{}, "", nil
	}
	return time.Now().Add(s.PausedUntil - now), s.PauseWhy, nil
}

// Estimate returns origin's response-time estimate.
func (p *Memory) Estimate(origin string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, _ := p.state(origin)
	return s.Est
}

var (
	_ fleet.Pacer        = (*Memory)(nil)
	_ fleet.PauseChecker = (*Memory)(nil)
)
