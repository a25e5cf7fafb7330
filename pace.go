package robots

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// DefaultMaxCrawlDelay caps the crawl-delay a Transport honours when
	// MaxCrawlDelay is zero: a robots.txt that asks for more gets this.
	DefaultMaxCrawlDelay = 30 * time.Second

	// DefaultMaxRetryAfter caps the pause that the Retry-After header of
	// a 429 or 503 response sets, when MaxRetryAfter is zero.
	DefaultMaxRetryAfter = 5 * time.Minute
)

// Pacer spaces the requests sent to each origin. By default, a Transport
// paces the origins it knows itself, in memory. Set Transport.Pacer to share
// the pace of origins between Transports, for example across the processes
// of a fleet of crawlers.
//
// Each turn keeps the interval it was taken with, and the next turn is
// spaced from it by the larger of that interval and the next caller's. So a
// Transport that has parsed no robots.txt of an origin (it shares no [Store],
// or the Store no longer holds the entry), and fetches it, leaves at least
// the crawl-delay of the latest turn after that turn, though it does not know
// the crawl-delay itself. Sharing a Store as well spares the fleet a fetch of
// robots.txt per Transport.
//
// A Transport never sends a request before a turn it knows of itself, so
// that a Pacer that loses what it holds (a store that evicts or forgets a
// key) cannot make it impolite: it keeps its own turns and the pauses it
// knows of (its own, and a [PauseWatcher]'s copy) in memory, waits them out
// before it calls Reserve, and then waits as long as Reserve says.
//
// Origins are named as for a [Store]. A Pacer must be safe for concurrent use
// by multiple goroutines. If it returns an error, the Transport logs it and
// paces the origin itself for that request, as if it had no Pacer; a request
// whose context is done by then is not sent. Pause is called with a context
// of its own, bounded by a short timeout (2 seconds), so that a pause
// reaches the Pacer even when the request that met it is canceled.
type Pacer interface {
	// Reserve takes origin's next turn for one request and returns how
	// long the caller must wait for it. It must not wait itself: the
	// Transport waits, so that it can count the wait and give up with
	// the request's context.
	//
	// Each turn taken keeps an interval. The turn is the first instant
	// that is not before the end of a pause (see Pause) and is at least
	// the larger of every and the interval of the origin's previous turn
	// (the latest one taken, by any user of the Pacer) after that turn.
	// The turn keeps every as its interval: a caller that knows the
	// origin's rules, and passes zero because they ask for no delay, is
	// spaced by the previous turn's interval but does not hand it on.
	//
	// A negative every says that the caller does not know the origin's
	// rules (it fetches a robots.txt it has not parsed before) and asks
	// for at least -every. The turn is spaced as for -every, and keeps
	// the larger of -every and the previous turn's interval: it hands the
	// origin's interval on to the next turn rather than dropping it.
	// (A Pacer written before negative intervals meant this treats them
	// as zero, as it always did.)
	//
	// If the wait would be longer than maxWait, Reserve takes no turn and
	// returns ok false with the wait it foresees. A turn taken is never
	// handed out again.
	Reserve(ctx context.Context, origin string, every, maxWait time.Duration) (wait time.Duration, ok bool, err error)

	// Pause delays origin's turns until at least until. A later end
	// than the one already set wins; an earlier one changes nothing.
	Pause(ctx context.Context, origin string, until time.Time) error
}

// pace is the in-memory pace of one origin: when its latest turn was handed
// out and until when it is paused, both on the Transport's clock (see
// Transport.now). It outlives the origin's cache entry while it still
// matters (see pace.matters and cache.park), so that dropping a parsed
// robots.txt never lets a request out early.
//
// # Turns and give-backs
//
// A turn is taken at max(now, last+max(every, lastEvery), pausedUntil) and
// becomes the new last, keeping its interval as lastEvery, as the Pacer
// contract says (every is the interval of the request that takes the turn,
// negative if it does not know the origin's rules; see Pacer.Reserve). A pace
// has no clock of its own, only times on the Transport's monotonic clock
// (Transport.now): now, a pause end (now plus a Retry-After, when its
// answer is read) and a Pacer's turn (now plus the wait it returned), so no
// call can move a clock back. last only moves forward, except on a
// give-back: a request that does not use its turn (its context ended while
// it waited, or a pause began) restores the previous last and lastEvery
// only if its turn is still the latest one taken (seq). Then no later turn was computed from
// it, and restoring leaves the pace as if the turn had never been taken.
// Otherwise the unused turn stays taken: a later turn was spaced from it,
// and handing it out again would put the next request one interval after
// the previous last, on a turn already held. A give-back can leave a gap,
// never two requests in one interval.
//
// # Why not golang.org/x/time/rate
//
// A rate.Limiter can take turns from a pause's end, provided that every
// call passes it one clock that never goes back (say the latest of now,
// the pause end and any time passed before). Reserving at the pause end and
// cancelling or reserving at now, as this package once did, moves its clock
// back: the tokens counted at the pause end are counted again from now on,
// and the turns queued behind the pause are handed out twice (with
// Every(500ms), turns 2.5s, 3s and 3.5s queued at 0.5s, and one refused and
// cancelled at 0.5s: the next two get 2.5s and 3s again).
//
// What a Limiter cannot express is an interval per request. It keeps
// tokens, not the time of the latest turn: the time since that turn is
// turned into tokens at the limit in force, and SetLimit prices again the
// turns already reserved. Turns at 0 and 2s under Every(2s), then a request
// under Every(500ms), all reserved at 0: the third turn is at 1s, before
// the second. And a request under rate.Inf (no interval) takes no turn at
// all, so the request after it is not spaced from it. The Transport needs
// both: the fetch of robots.txt is spaced by the longest crawl-delay known
// for its origin (none on a first visit) and the page after it by the one
// it finds, and crawler agents with different crawl-delays share their
// origin's turns. So a pace keeps the time of the latest turn itself, and
// the Pacer contract, which redisstore follows, has the same model.
type pace struct {
	pausedUntil atomic.Int64 // ns on the Transport's clock; written under mu

	mu        sync.Mutex
	last      time.Duration // guarded by mu: the latest turn taken; valid if seq != 0
	lastEvery time.Duration // guarded by mu: the interval that last keeps
	seq       uint64        // guarded by mu: the reservation that took last; 0 if none
	next      uint64        // guarded by mu: the last reservation number handed out
	every     time.Duration // guarded by mu: the longest interval known for the origin
	knows     bool          // guarded by mu: a robots.txt of the origin was parsed (see know)
	dropped   atomic.Bool   // written under mu: dropped from the cache (see drop); no turn is taken here
}

// turn is one reservation of a pace, for a give-back.
type turn struct {
	p         *pace // nil for a turn taken in a Pacer, which cannot be given back
	at        time.Duration
	seq       uint64
	prevLast  time.Duration
	prevEvery time.Duration
	prevSeq   uint64
}

// reserve takes p's next turn at now, spaced from the previous one by the
// larger of every and its interval; see Pacer.Reserve. It panics if p has been dropped: use Transport.paceOf.
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

// PauseWatcher is implemented by a [Pacer] that keeps, in the process, a copy
// of the pauses that any of its users set, kept up to date within a bound
// that it documents (for example by a subscription to the pauses as they are
// set). A Transport whose Pacer is a PauseWatcher does not call Reserve for a
// request that no interval applies to (no crawl-delay, no MinDelay) when the
// copy says that its origin is not paused: such a request takes no turn, as
// it takes none in a Transport without a Pacer. Requests with an interval,
// and the fetches of robots.txt, still call Reserve.
type PauseWatcher interface {
	// WatchedPause returns when origin's pause ends according to the
	// copy, or the zero time if the copy holds no pause of origin. It
	// must not block or do I/O: it is called on every such request. ok
	// is false when the copy may be stale (for example while its
	// subscription is broken): then the Transport calls Reserve.
	WatchedPause(origin string) (until time.Time, ok bool)
}

// PauseChecker is implemented by a [Pacer] that can tell whether an origin is
// paused. A Transport asks it before it sends a request that has waited for
// its turn, since another user of the Pacer may have paused the origin
// meanwhile: the request then waits for a new turn after the pause. Without
// it, a pause set elsewhere while a request waited is seen by the requests
// that reserve after it only.
type PauseChecker interface {
	// PausedUntil returns when origin's pause ends, or the zero time if
	// it is not paused.
	PausedUntil(ctx context.Context, origin string) (time.Time, error)
}
