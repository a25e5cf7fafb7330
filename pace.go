package robots

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Pacer keeps the turns of each origin for the Transports that share it,
// for example across the processes of a fleet (see Transport.Pacer).
// Origins are named as for a [Store]. A Pacer must be safe for concurrent
// use by multiple goroutines.
//
// A Transport also keeps the turns and pauses it knows of in memory, and
// waits them out before it calls Reserve, so that a Pacer that loses its
// state cannot make it send early. If a Pacer fails, the Transport logs the
// error and paces the origin itself for that request.
type Pacer interface {
	// Reserve takes origin's next turn and returns how long to wait for it,
	// without waiting itself. The turn is the first instant after any pause
	// that is at least max(every, prev) after the previous turn, prev being
	// the interval that turn kept. The new turn keeps every if known is
	// true; known is false when the caller does not know the origin's rules
	// (it is about to fetch robots.txt), and then the turn keeps
	// max(every, prev), so that a fetch does not shorten the interval the
	// rules set. If the wait would exceed maxWait, Reserve takes no turn and
	// returns ok false with the wait it foresees.
	Reserve(ctx context.Context, origin string, every time.Duration, known bool, maxWait time.Duration) (wait time.Duration, ok bool, err error)

	// Pause delays origin's turns until at least until; an earlier end than
	// the one set changes nothing. Its context is the Transport's own,
	// bounded by 2 seconds, so that a pause outlives a canceled request.
	Pause(ctx context.Context, origin string, until time.Time) error
}

// pace is the in-memory pace of one origin: when its latest turn was handed
// out and until when it is paused, both on the Transport's clock (see
// Transport.now). It outlives the origin's cache entry while it still
// matters (see pace.matters and cache.park), so that dropping a parsed
// robots.txt never lets a request out early.
//
// A turn is taken at max(now, last+max(every, lastEvery), pausedUntil) and
// becomes the new last, keeping its interval as lastEvery, as the Pacer
// contract says. last only moves forward, except on a give-back (see
// turn.giveBack). doc/design.md says why this is not a rate.Limiter.
type pace struct {
	pausedUntil atomic.Int64 // ns on the Transport's clock; written under mu

	mu sync.Mutex
	// guarded by mu: the latest turn taken; valid if seq != 0
	last      time.Duration
	lastEvery time.Duration // guarded by mu: the interval that last keeps
	// guarded by mu: the reservation that took last; 0 if none
	seq uint64
	// guarded by mu: the last reservation number handed out
	next uint64
	// guarded by mu: the longest interval known for the origin
	every time.Duration
	// guarded by mu: a robots.txt of the origin was parsed (see know)
	knows bool
	// written under mu: dropped from the cache (see drop); no turn is taken
	// here
	dropped atomic.Bool
}

// turn is one reservation of a pace, for a give-back.
type turn struct {
	// nil for a turn taken in a Pacer, which cannot be given back
	p         *pace
	at        time.Duration
	seq       uint64
	prevLast  time.Duration
	prevEvery time.Duration
	prevSeq   uint64
}

// reserve takes p's next turn at now, spaced from the previous one by the
// larger of every and its interval; see Pacer.Reserve. It panics if p has
// been dropped: use Transport.paceOf.
func (p *pace) reserve(now, every, maxWait time.Duration) (wait time.Duration, ok bool, tk turn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dropped.Load() {
		panic("robots: turn taken on a dropped pace")
	}
	at := p.turnAt(now, every)
	wait = at - now
	if wait > 0 && wait >= maxWait {
		return wait, false, turn{}
	}
	p.next++
	tk = turn{p: p, at: at, seq: p.next, prevLast: p.last, prevEvery: p.lastEvery, prevSeq: p.seq}
	p.take(at, every)
	return wait, true, tk
}

// departed notes that the request of the turn at left at now, or that its
// answer came then: if that turn is still the latest one taken, the next is
// spaced from now, so that a request that woke late, or a fetch of robots.txt
// that took long, is not followed by one closer than the interval.
func (p *pace) departed(at, now time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seq != 0 && p.last == at && now > at {
		p.last = now
	}
}

// turnAt returns p's next turn at now for a request with the interval
// every, without taking it. The caller holds p.mu.
func (p *pace) turnAt(now, every time.Duration) time.Duration {
	at := max(now, time.Duration(p.pausedUntil.Load()))
	if p.seq != 0 {
		at = max(at, p.last+max(abs(every), p.lastEvery))
	}
	return at
}

// earliest returns p's next turn at now for a request with the interval
// every, as reserve would take it, without taking it.
func (p *pace) earliest(now, every time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.turnAt(now, every)
}

// take makes at, a turn taken with the interval every, the latest turn of
// p, unless a later one was taken. The caller holds p.mu and has counted
// the reservation in p.next.
func (p *pace) take(at, every time.Duration) {
	if p.seq == 0 || at >= p.last {
		p.lastEvery = keptEvery(every, p.lastEvery, p.seq != 0)
		p.last, p.seq = at, p.next
	}
	p.every = max(p.every, every)
}

// keptEvery returns the interval that a turn taken with the interval every
// keeps, after a turn that kept prev (if there was one): every, or when
// every is negative (the caller does not know the origin's rules), the
// larger of -every and prev. See Pacer.Reserve.
func keptEvery(every, prev time.Duration, hasPrev bool) time.Duration {
	if every >= 0 {
		return every
	}
	if !hasPrev {
		prev = 0
	}
	return max(-every, prev)
}

// unknownEvery is the interval passed for a request whose origin's rules
// the Transport does not know, with the least interval floor (MinDelay): a
// negative one, which a Pacer spaces like -floor and which hands the
// previous turn's interval on (see Pacer.Reserve). It is never zero, which
// would say "known, no delay".
func unknownEvery(floor time.Duration) time.Duration {
	return -max(floor, time.Nanosecond)
}

// pacerEvery returns the arguments of [Pacer.Reserve] for the interval
// every, negative when the rules are unknown (see unknownEvery).
func pacerEvery(every time.Duration) (iv time.Duration, known bool) {
	if every >= 0 {
		return every, true
	}
	if every == unknownEvery(0) {
		return 0, false
	}
	return -every, false
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// record notes a turn at taken elsewhere (by a Pacer), so that the pace in
// memory, which takes over when the Pacer fails, spaces the next request
// from it. It cannot be given back.
func (p *pace) record(at, every time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dropped.Load() {
		return
	}
	p.next++
	p.take(at, every)
}

// giveBack returns the turn tk, if it is still the latest one taken.
func (tk turn) giveBack() {
	if tk.p == nil {
		return
	}
	tk.p.mu.Lock()
	defer tk.p.mu.Unlock()
	if tk.p.seq == tk.seq {
		tk.p.last, tk.p.lastEvery, tk.p.seq = tk.prevLast, tk.prevEvery, tk.prevSeq
	}
}

// paused reports whether p is paused at now.
func (p *pace) paused(now time.Duration) bool {
	u := p.pausedUntil.Load()
	return u != 0 && u > int64(now)
}

// pause pauses p until until, unless it is paused longer.
func (p *pace) pause(until time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if int64(until) > p.pausedUntil.Load() {
		p.pausedUntil.Store(int64(until))
	}
}

// know records every as an interval known for the origin. The pace keeps
// the longest interval it has known, whatever crawler token asked for it:
// the fetch of robots.txt is spaced by it, and the pace of an evicted origin
// is kept while it can hold a request back by it. (A crawl-delay that
// shrinks keeps the fetch spaced by the old one: more polite, never less.)
//
// rules tells whether every comes from a robots.txt that was read (or
// found absent), rather than from a failure to read one: only then does
// the pace know the origin's rules (see fetchEvery).
func (p *pace) know(every time.Duration, rules bool) {
	p.mu.Lock()
	p.every = max(p.every, every)
	p.knows = p.knows || rules
	p.mu.Unlock()
}

// fetchEvery returns the interval of a request for robots.txt at p's
// origin, with the least interval floor (MinDelay): the longest interval
// known for the origin, or unknownEvery if no robots.txt of it was parsed.
func (p *pace) fetchEvery(floor time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.knows {
		return unknownEvery(floor)
	}
	return max(p.every, floor)
}

// matters reports whether p can still hold a request back at now or later:
// a turn or a pause end is ahead, or the interval since the last turn has
// not passed. The caller holds p.mu.
func (p *pace) matters(now time.Duration) bool {
	return p.paused(now) || p.seq != 0 && p.last+max(p.every, p.lastEvery) > now
}

// drop marks p dropped and reports true, unless it still matters at now.
// A dropped pace takes no more turns: a request that holds it finds the
// origin's current pace instead (see Transport.paceOf), which may be new,
// since nothing in p could hold a request back any more.
func (p *pace) drop(now time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.dropped.Load() && !p.matters(now) {
		p.dropped.Store(true)
	}
	return p.dropped.Load()
}

// PauseWatcher is implemented by a [Pacer] that keeps in the process an
// up-to-date copy of the pauses its users set. For a request with no
// interval to keep (no crawl-delay, no MinDelay), a Transport does not call
// Reserve when the copy says the origin is not paused.
type PauseWatcher interface {
	// WatchedPause returns when origin's pause ends, or the zero time; ok
	// is false when the copy may be stale. It must not block.
	WatchedPause(origin string) (until time.Time, ok bool)
}

// PauseChecker is implemented by a [Pacer] that can tell whether an origin
// is paused. A Transport asks it before it sends a request that has waited
// for its turn, since another user may have paused the origin meanwhile.
// Unlike a [PauseWatcher], which reads a copy in the process and must not
// block, it may ask the shared state and wait for the answer; a Pacer may
// be both.
type PauseChecker interface {
	// PausedUntil returns when origin's pause ends, or the zero time.
	PausedUntil(ctx context.Context, origin string) (time.Time, error)
}
