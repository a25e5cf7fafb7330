package robots

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/f9014239/robots/fleet"
)

// Backoff is how a Transport pauses an origin that pushes back without
// saying for how long (see Transport.Backoff); it is shared through a
// fleet.Pacer.
type Backoff = fleet.Backoff

// Why a request to an origin is held back: the Reason of a [TurnError],
// and an attribute of the debug records of held requests.
const (
	ReasonCrawlDelay = "crawl-delay" // the interval after the previous answer (Crawl-delay, MinDelay)
	ReasonInFlight   = "in-flight"   // a request to the origin awaits its answer
	ReasonRetryAfter = "retry-after" // a pause the origin asked for with Retry-After
	ReasonBackoff    = "backoff"     // a pause after the origin pushed back (see Backoff)
	ReasonRobotsTxt  = "robots.txt"  // the fetch of the origin's robots.txt
	ReasonPacer      = "pacer"       // the Pacer did not answer within MaxWait
)

// pace is the in-memory pace of one origin: its latest turn, the turn in
// flight if any, its pause and its back-off, all on the Transport's clock
// (see Transport.now). It outlives the origin's cache entry while it still
// matters (see pace.matters and cache.park), so that dropping a parsed
// robots.txt never lets a request out early.
//
// A turn is taken at max(now, last+max(every, lastEvery), pausedUntil) and
// becomes the new last, keeping its interval as lastEvery, as the Pacer
// contract says. A turn that keeps an interval holds the origin (held*)
// until its answer, which becomes last, so that the next turn is spaced
// from the answer; no turn is taken while one is held. doc/design.md says
// why this is not a rate.Limiter.
type pace struct {
	// heedUntil, in ns on the Transport's clock: until then even a
	// request with no interval takes a turn (a pause, a back-off and its
	// forgiveness). Written under mu.
	heedUntil   atomic.Int64
	pausedUntil atomic.Int64 // ns on the Transport's clock; written under mu

	mu sync.Mutex
	// guarded by mu: the latest turn taken, or its answer; valid if seq != 0
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

	// guarded by mu: the turn in flight (heldSeq != 0): when it was
	// taken, when its hold runs out, and a channel closed when it ends
	heldSeq   uint64
	heldAt    time.Duration
	heldUntil time.Duration
	freed     chan struct{}
	// guarded by mu: a moving average of the time from a held turn to
	// its answer, for estimates (see estimate)
	answer time.Duration
	// guarded by mu: ReasonRetryAfter or ReasonBackoff, for pausedUntil
	pauseWhy string
	// guarded by mu: the back-off in memory: its level, and when its
	// latest pause began and ends
	boLevel        int
	boStart, boEnd time.Duration

	// written under mu: dropped from the cache (see drop); no turn is taken
	// here
	dropped atomic.Bool
}

// turn is one reservation of a pace, for its release or give-back.
type turn struct {
	p         *pace // nil for no turn
	at        time.Duration
	seq       uint64
	held      bool // the turn holds the origin until released
	prevLast  time.Duration
	prevEvery time.Duration
	prevSeq   uint64
	// taken in the Transport's Pacer (which cannot give it back), with
	// this ID if held
	pacer bool
	id    uint64
}

// grant is what pace.reserve answers.
type grant struct {
	wait time.Duration // until the turn, or, if !ok, the estimate of when it may be free
	ok   bool
	why  string // what sets the turn's time, if wait > 0 or !ok
	// when !ok for a turn in flight: closed when it ends, and when its
	// hold runs out at the latest
	freed  <-chan struct{}
	freeBy time.Duration
	tk     turn
}

// reserve takes p's next turn at now, spaced from the previous one (from
// its answer, once answered) by the larger of every and its interval; see
// Pacer.Reserve. The turn holds p for hold at most when it keeps an
// interval, or p is in a back-off. It takes none if a turn is in flight, or
// if its wait is maxWait or more. It panics if p has been dropped: use
// Transport.paceOf.
func (p *pace) reserve(now, every, maxWait, hold time.Duration) grant {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dropped.Load() {
		panic("robots: turn taken on a dropped pace")
	}
	if g, busy := p.inFlight(now, every); busy {
		return g
	}
	at, why := p.turnAt(now, every)
	wait := at - now
	if wait > 0 && wait >= maxWait {
		return grant{wait: wait, why: why}
	}
	p.next++
	tk := turn{p: p, at: at, seq: p.next, prevLast: p.last, prevEvery: p.lastEvery, prevSeq: p.seq}
	p.take(at, every)
	if hold > 0 && (p.lastEvery > 0 || int64(now) < p.heedUntil.Load()) {
		p.hold(&tk, add(at, hold))
	}
	return grant{wait: wait, ok: true, why: why, tk: tk}
}

// inFlight reports whether a turn of p is held at now, and if so the grant
// that says so. A hold that has run out ends here, as if answered then. The
// caller holds p.mu.
func (p *pace) inFlight(now, every time.Duration) (grant, bool) {
	if p.heldSeq == 0 {
		return grant{}, false
	}
	if now >= p.heldUntil {
		p.unhold(p.heldUntil)
		return grant{}, false
	}
	return grant{wait: p.estimate(now, every) - now, why: ReasonInFlight, freed: p.freed, freeBy: p.heldUntil}, true
}

// estimate returns when the turn after the one in flight may come: its
// answer, expected the origin's average answer time after it left (or now,
// if that has passed), plus the interval; never later than the end of its
// hold plus the interval, nor earlier than a pause's end. The caller holds
// p.mu.
func (p *pace) estimate(now, every time.Duration) time.Duration {
	answer := min(max(add(p.heldAt, p.answer), now), p.heldUntil)
	at := add(answer, max(abs(every), p.lastEvery))
	return max(at, time.Duration(p.pausedUntil.Load()))
}

// hold makes tk, the turn just taken, hold p until until. The caller holds
// p.mu.
func (p *pace) hold(tk *turn, until time.Duration) {
	tk.held = true
	p.heldSeq, p.heldAt, p.heldUntil = tk.seq, tk.at, until
	p.freed = make(chan struct{})
}

// unhold ends the hold of the turn in flight, answered at answer, which
// becomes the latest turn's time. The caller holds p.mu.
func (p *pace) unhold(answer time.Duration) {
	if p.seq == p.heldSeq && answer > p.last {
		p.last = answer
	}
	p.heldSeq = 0
	close(p.freed)
	p.freed = nil
}

// release notes that the request of tk was answered at now: if tk still
// holds p, the next turn is spaced from now. It also moves a turn that
// held nothing to now, if it is still the latest, so that a request that
// woke late is not followed by one closer than the interval.
func (p *pace) release(tk turn, now time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if tk.held && p.heldSeq == tk.seq {
		if d := now - tk.at; d > 0 {
			if p.answer == 0 {
				p.answer = d
			} else {
				p.answer += (d - p.answer) / 4
			}
		}
		p.unhold(now)
		return
	}
	if p.seq == tk.seq && p.last == tk.at && now > tk.at {
		p.last = now
	}
}

// turnAt returns p's next turn at now for a request with the interval
// every, without taking it, and what sets it. The caller holds p.mu.
func (p *pace) turnAt(now, every time.Duration) (time.Duration, string) {
	at, why := now, ""
	if pu := time.Duration(p.pausedUntil.Load()); pu > at {
		at, why = pu, p.pauseWhy
	}
	if p.seq != 0 {
		if next := add(p.last, max(abs(every), p.lastEvery)); next > at {
			at, why = next, ReasonCrawlDelay
		}
	}
	return at, why
}

// earliest returns p's next turn at now for a request with the interval
// every, as reserve would take it, without taking it, and what sets it.
func (p *pace) earliest(now, every time.Duration) (time.Duration, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if g, busy := p.inFlight(now, every); busy {
		return add(now, g.wait), g.why
	}
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

// add returns a+b, or the longest Duration where that overflows: a wait
// that a setting without a cap makes endless stays endless.
func add(a, b time.Duration) time.Duration {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// record notes a turn at taken elsewhere (by a Pacer, with the ID id), so
// that the pace in memory, which takes over when the Pacer fails, spaces
// the next request from it; a held turn holds p too, until until, so that
// the process's other requests wait for its answer here rather than in the
// Pacer. It cannot be given back.
func (p *pace) record(at, every time.Duration, held bool, until time.Duration, id uint64) turn {
	p.mu.Lock()
	defer p.mu.Unlock()
	tk := turn{pacer: true, id: id, at: at}
	if p.dropped.Load() {
		return tk
	}
	p.next++
	tk.p, tk.seq = p, p.next
	if p.heldSeq != 0 {
		// The Pacer handed out a turn while this process holds one
		// (its hold ran out there first): this one holds from now on.
		p.unhold(at)
	}
	p.take(at, every)
	if held {
		p.hold(&tk, until)
	}
	return tk
}

// giveBack returns the turn tk, if it is still the latest one taken, and
// ends its hold. A turn taken in a Pacer is not given back: its hold ends
// as if answered at now.
func (tk turn) giveBack(now time.Duration) {
	if tk.p == nil {
		return
	}
	tk.p.mu.Lock()
	defer tk.p.mu.Unlock()
	if tk.pacer {
		if tk.held && tk.p.heldSeq == tk.seq {
			tk.p.unhold(now)
		}
		return
	}
	if tk.held && tk.p.heldSeq == tk.seq {
		tk.p.heldSeq = 0
		close(tk.p.freed)
		tk.p.freed = nil
	}
	if tk.p.seq == tk.seq {
		tk.p.last, tk.p.lastEvery, tk.p.seq = tk.prevLast, tk.prevEvery, tk.prevSeq
	}
}

// paused reports whether p is paused at now.
func (p *pace) paused(now time.Duration) bool {
	u := p.pausedUntil.Load()
	return u != 0 && u > int64(now)
}

// heeded reports whether a request at now with no interval must take a
// turn: p is paused, or in a back-off or its forgiveness.
func (p *pace) heeded(now time.Duration) bool {
	return p.heedUntil.Load() > int64(now)
}

// pause pauses p until until for the reason why, unless it is paused
// longer.
func (p *pace) pause(until time.Duration, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pauseLocked(until, why)
}

func (p *pace) pauseLocked(until time.Duration, why string) {
	if int64(until) > p.pausedUntil.Load() {
		p.pausedUntil.Store(int64(until))
		p.pauseWhy = why
	}
	if int64(until) > p.heedUntil.Load() {
		p.heedUntil.Store(int64(until))
	}
}

// pushBack records an incident of pushback at now on a request sent at
// sent, under the back-off b with the random fraction jitter, and returns
// when p's pause ends, as Pacer.PushBack does in memory. new is false when
// the answer is of the burst of the current back-off: its request was sent
// no later than that back-off began.
func (p *pace) pushBack(now, sent time.Duration, b Backoff, jitter float64) (until time.Duration, new bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.boLevel > 0 && sent <= p.boStart {
		return p.boEnd, false
	}
	if p.boLevel > 0 && now > add(p.boEnd, b.Forgive) {
		p.boLevel = 0
	}
	p.boLevel++
	p.boStart, p.boEnd = now, add(now, backoffPause(b, p.boLevel, jitter))
	p.pauseLocked(p.boEnd, ReasonBackoff)
	p.heedBackoff(b)
	return p.boEnd, true
}

// backedOff notes a back-off pause until until, set by the Pacer for the
// request sent at sent: the pace in memory holds it too.
func (p *pace) backedOff(now, until time.Duration, b Backoff) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if until > p.boEnd {
		p.boLevel = max(p.boLevel, 1)
		p.boStart, p.boEnd = now, until
	}
	p.pauseLocked(until, ReasonBackoff)
	p.heedBackoff(b)
}

// heedBackoff makes every request to p take a turn, one at a time, until
// its back-off is forgiven. The caller holds p.mu.
func (p *pace) heedBackoff(b Backoff) {
	if u := int64(add(p.boEnd, b.Forgive)); u > p.heedUntil.Load() {
		p.heedUntil.Store(u)
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
// a turn is held, a turn, a pause or a back-off's forgiveness ends ahead,
// or the interval since the last turn has not passed. The caller holds
// p.mu.
func (p *pace) matters(now time.Duration) bool {
	return p.heldSeq != 0 || p.heedUntil.Load() > int64(now) ||
		p.seq != 0 && add(p.last, max(p.every, p.lastEvery)) > now
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

// backoffPause returns the pause of the back-off b at the level level (1 for the first
// incident), with the random fraction jitter in [0, 1) of its tenth added.
func backoffPause(b Backoff, level int, jitter float64) time.Duration {
	d := b.First
	for i := 1; i < level && d < b.Max; i++ {
		d = add(d, d)
	}
	d = min(d, b.Max)
	return add(d, time.Duration(float64(d)/10*jitter))
}
