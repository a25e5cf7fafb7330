package pacing

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/f9014239/robots/fleet"
)

// Pace is the pace of one origin in a Transport's memory: a [State] under a
// lock, on the Transport's clock, with what its requests wait on. The
// zero Pace is an origin never seen. A Pace is safe for concurrent use.
//
// A Pace that no longer matters may be dropped from its [Table]; a dropped
// Pace takes no turn: the caller finds the origin's current one instead.
type Pace struct {
	// heedUntil and pausedUntil mirror s.HeedUntil and s.PausedUntil, in
	// ns, for reads without the lock; written under mu.
	heedUntil   atomic.Int64
	pausedUntil atomic.Int64
	dropped     atomic.Bool // written under mu
	// the groups of the origin (see groups.memberOf), and when a request
	// may next learn its address, in ns on the clock (0: now)
	member   atomic.Pointer[member]
	sampleAt atomic.Int64

	mu sync.Mutex
	s  State // guarded by mu
	// guarded by mu: closed when the held turn ends; made by the first
	// request that waits for it, so that a turn nobody waits for costs
	// no allocation
	freed chan struct{}
	// guarded by mu: the longest interval known for the origin, and
	// whether a robots.txt of it was read (see Know)
	every time.Duration
	knows bool
}

// sync mirrors the State's pause into the atomics and closes freed once
// no turn is held. The caller holds p.mu.
func (p *Pace) sync() {
	if p.heedUntil.Load() != int64(p.s.HeedUntil) {
		p.heedUntil.Store(int64(p.s.HeedUntil))
	}
	if p.pausedUntil.Load() != int64(p.s.PausedUntil) {
		p.pausedUntil.Store(int64(p.s.PausedUntil))
	}
	if p.s.HeldID == 0 && p.freed != nil {
		close(p.freed)
		p.freed = nil
	}
}

// overdue ends a hold that ran out at now. Unlike a Pacer's (see
// [State.expire]), a hold in a Transport's memory belongs to a request of
// its own that is still awaiting its answer, not to a holder that may be
// lost: it counts as an answer as slow as the hold was long, so that the
// next request waits the adaptive delay after it, and the answer, when it
// comes, is late (see [State.Release]). The caller holds p.mu.
func (p *Pace) overdue(now time.Duration) {
	if s := &p.s; s.HeldID != 0 && now >= s.HeldUntil {
		s.Sample(s.HeldUntil-s.HeldAt, true)
		s.expire(now)
	}
}

// Wait is what a request that finds a turn held waits on: Freed is closed
// when the turn ends, which is at By at the latest. Dropped says that the
// Pace was dropped from its Table and took no turn: the caller asks the
// origin's current Pace.
type Wait struct {
	Freed   <-chan struct{}
	By      time.Duration
	Dropped bool
}

// Reserve takes the origin's next turn at now: see [State.Reserve]. When a
// turn is held, the Grant is not OK and the Wait says what to wait on. A
// dropped Pace takes no turn (Wait.Dropped).
func (p *Pace) Reserve(now time.Duration, r Request) (Grant, Wait) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dropped.Load() {
		return Grant{}, Wait{Dropped: true}
	}
	p.overdue(now)
	g := p.s.Reserve(now, r)
	var w Wait
	if g.InFlight {
		if p.freed == nil {
			p.freed = make(chan struct{})
		}
		w = Wait{Freed: p.freed, By: p.s.HeldUntil}
	}
	if g.OK {
		p.every = max(p.every, r.Every)
	}
	p.sync()
	return g, w
}

// Next returns the next turn at now for r without taking it: see
// [State.Next].
func (p *Pace) Next(now time.Duration, r Request) (time.Duration, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.overdue(now)
	at, why := p.s.Next(now, r)
	p.sync()
	return at, why
}

// Release notes the answer a to the request of t at now: see
// [State.Release]; a turn that held nothing is settled (see
// [State.Settle]).
func (p *Pace) Release(now time.Duration, t Turn, a fleet.Answer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.Held {
		a.ID = t.ID
		p.overdue(now)
		p.s.Release(now, a)
	} else {
		p.s.Settle(now, t)
	}
	p.sync()
}

// Settle moves t, a turn that held nothing, to now: see [State.Settle].
func (p *Pace) Settle(now time.Duration, t Turn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.s.Settle(now, t)
}

// GiveBack returns t, whose request was not sent: see [State.GiveBack].
// A turn taken elsewhere (Record) cannot be given back: its hold ends as
// that of a request not sent (see [State.Release]).
func (p *Pace) GiveBack(t Turn, recorded bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if recorded {
		if t.Held && p.s.HeldSeq == t.Seq {
			p.s.unhold(p.s.HeldAt)
		}
	} else {
		p.s.GiveBack(t)
	}
	p.sync()
}

// Record notes a turn taken elsewhere: see [State.Record]. On a dropped
// pace it records nothing.
func (p *Pace) Record(at, every time.Duration, why string, held bool, until time.Duration, id uint64) Turn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dropped.Load() {
		return Turn{At: at, ID: id, Held: held}
	}
	t := p.s.Record(at, every, why, held, until, id)
	p.every = max(p.every, every)
	p.sync()
	return t
}

// Pause pauses the origin until until for the reason why: see
// [State.Pause].
func (p *Pace) Pause(until time.Duration, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.s.Pause(until, why)
	p.sync()
}

// PausedUntil returns the end of the origin's pause, without the lock.
func (p *Pace) PausedUntil() time.Duration { return time.Duration(p.pausedUntil.Load()) }

// Paused reports whether the origin is paused at now, without the lock.
func (p *Pace) Paused(now time.Duration) bool {
	u := p.pausedUntil.Load()
	return u != 0 && u > int64(now)
}

// Heeded reports, without the lock, whether a request at now with no
// interval must take a turn: the origin is paused, or in a back-off or its
// forgiveness.
func (p *Pace) Heeded(now time.Duration) bool {
	u := p.heedUntil.Load()
	return u != 0 && u > int64(now)
}

// Dropped reports whether p was dropped from its Table.
func (p *Pace) Dropped() bool { return p.dropped.Load() }

// PushBack records an incident of pushback: see [State.PushBack].
func (p *Pace) PushBack(now, sent time.Duration, b fleet.Backoff, jitter float64) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	until, isNew := p.s.PushBack(now, sent, b, jitter)
	p.sync()
	return until, isNew
}

// BackedOff notes a back-off pause set elsewhere: see [State.BackedOff].
func (p *Pace) BackedOff(now, until time.Duration, b fleet.Backoff) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.s.BackedOff(now, until, b)
	p.sync()
}

// Sample adds a response time to the estimate without a turn: see
// [State.Sample].
func (p *Pace) Sample(took time.Duration, failed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.s.Sample(took, failed)
}

// Estimate returns the origin's response-time estimate.
func (p *Pace) Estimate() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.s.Est
}

// Know records every as an interval known for the origin. The pace keeps
// the longest interval it has known, whatever crawler token asked for it:
// the fetch of robots.txt is spaced by it, and the pace of an evicted origin
// is kept while it can hold a request back by it. (A crawl-delay that
// shrinks keeps the fetch spaced by the old one: more polite, never less.)
// rules tells whether every comes from a robots.txt that was read (or
// found absent), rather than from a failure to read one: only then does
// the pace know the origin's rules (see FetchEvery).
func (p *Pace) Know(every time.Duration, rules bool) {
	p.mu.Lock()
	p.every = max(p.every, every)
	p.knows = p.knows || rules
	p.mu.Unlock()
}

// FetchEvery returns the interval of a fetch of the origin's robots.txt
// with the least interval floor, and whether the origin's rules are known:
// the longest interval known, or floor if no robots.txt of it was read.
func (p *Pace) FetchEvery(floor time.Duration) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.knows {
		return floor, false
	}
	return max(p.every, floor), true
}

// drop marks p dropped and reports true, unless it still matters at now.
func (p *Pace) drop(now time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.dropped.Load() && !p.s.Matters(now, p.every) {
		p.dropped.Store(true)
	}
	return p.dropped.Load()
}

// Table holds the paces of the origins that still matter, keyed by K: a
// Transport takes an origin's Pace from it when it caches the origin, and
// hands it back when it drops the origin from its cache; the Table keeps
// it while it can hold a request back, so that dropping a parsed
// robots.txt never lets a request out early. The zero Table is empty. A
// Table is safe for concurrent use.
type Table[K comparable] struct {
	mu    sync.Mutex
	m     map[K]*Pace // guarded by mu: the paces handed back that still matter
	swept int         // guarded by mu: len(m) after the last sweep
}

// Take returns the pace of k: the one handed back, if it still matters,
// or a new one.
func (t *Table[K]) Take(k K) *Pace {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.m[k]; p != nil {
		delete(t.m, k)
		return p
	}
	return new(Pace)
}

// HandBack hands back p, the pace of k, whose origin was dropped from the
// cache at now: it is kept while it matters, and dropped otherwise (the
// kept ones are swept when their number doubles).
func (t *Table[K]) HandBack(k K, p *Pace, now time.Duration) {
	if p.drop(now) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[K]*Pace)
	}
	t.m[k] = p
	if len(t.m) > max(2*t.swept, 1024) {
		for k, p := range t.m {
			if p.drop(now) {
				delete(t.m, k)
			}
		}
		t.swept = len(t.m)
	}
}

// Len returns the number of paces kept for dropped origins.
func (t *Table[K]) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}
