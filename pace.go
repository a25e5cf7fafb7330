package robots

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Pacer keeps the turns of each origin for the Transports that share it,
// for example across the processes of a fleet (see Transport.Pacer).
// Origins are named as for a [Store]. A Pacer must be safe for concurrent
// use by multiple goroutines, and return when its context is done; the
// Transport bounds each call by 2 seconds, and by MaxWait.
//
// A turn is taken with Reserve and, when it holds the origin, released with
// Release once its request is answered: while it is held no other turn of
// the origin is taken, and the next one is spaced from the answer, so that
// the site sees one request at a time, an interval apart from the answer to
// the one before, whichever process sends them.
//
// A Transport also keeps the turns and pauses it knows of in memory, and
// waits them out before it calls Reserve, so that a Pacer that loses its
// state cannot make it send early. If a Pacer fails, the Transport logs the
// error and paces the origin itself for that request.
type Pacer interface {
	// Reserve takes origin's next turn and says how long to wait for it,
	// without waiting itself. The turn is the first instant, after any
	// pause, that is at least max(r.Every, prev) after the previous turn
	// (after its answer if it was released, or after its hold ran out if
	// it was not), prev being the interval that turn kept. The new turn
	// keeps r.Every if r.Known, or else (the caller does not know the
	// origin's rules: it is about to fetch robots.txt) max(r.Every, prev),
	// so that a fetch does not shorten the interval the rules set.
	//
	// The turn holds the origin, if r.Hold is positive, when it keeps an
	// interval, when r.Known is false (a fetch of robots.txt, which may
	// find a crawl-delay), or when the origin is backing off (from a
	// PushBack until the back-off is forgiven). If the previous turn is still held, Reserve
	// takes none and returns InFlight, with Wait its estimate of when a
	// turn may be free. If the turn is further away than r.MaxWait, it
	// takes none and returns the wait it foresees.
	Reserve(ctx context.Context, origin string, r TurnRequest) (Turn, error)

	// Release ends the hold of the turn id of origin, answered at
	// answered: the next turn is spaced from then (or from when the
	// Pacer hears of it, if later). A turn that no longer holds the
	// origin (its hold ran out, or it was released) is left alone.
	Release(ctx context.Context, origin string, id uint64, answered time.Time) error

	// Pause delays origin's turns until at least until; an earlier end
	// than the one set changes nothing. Its context is the Transport's
	// own, bounded by 2 seconds, so that a pause outlives a canceled
	// request.
	Pause(ctx context.Context, origin string, until time.Time) error

	// PushBack records that origin pushed back (a 429 or 503 without a
	// usable Retry-After) on a request sent at sent, pauses the origin
	// under the back-off b, and returns when that pause ends. An answer
	// to a request sent no later than the current back-off began is of
	// the same burst: it changes nothing. Otherwise the back-off's level goes up
	// by one, or starts again at one if the last back-off pause ended
	// more than b.Forgive ago, and the origin is paused for
	// min(b.First × 2^(level-1), b.Max), lengthened by a random fraction
	// of at most a tenth.
	PushBack(ctx context.Context, origin string, sent time.Time, b Backoff) (until time.Time, err error)
}

// TurnRequest is what a Transport asks of [Pacer.Reserve].
type TurnRequest struct {
	Every time.Duration // the interval to keep after the previous turn
	Known bool          // false when the caller does not know the origin's rules
	// MaxWait is the longest wait the caller takes: a turn further away
	// is not taken.
	MaxWait time.Duration
	// Hold, if positive, makes the turn hold the origin until it is
	// released, or for Hold after the turn at the most.
	Hold time.Duration
	// ID, if not zero, names the turn if it holds the origin: the caller
	// draws it at random, so that it can release a turn whose answer it
	// never got. A Pacer may name the turn itself when ID is zero.
	ID uint64
}

// Turn is the answer of [Pacer.Reserve].
type Turn struct {
	OK       bool          // the turn is taken
	Wait     time.Duration // until the turn if OK, or until a turn may be free
	InFlight bool          // not taken: a turn of the origin is held
	ID       uint64        // names a held turn for Release (TurnRequest.ID if given); 0 if it holds nothing
}

// Backoff is how an origin that pushes back without saying for how long
// (a 429 or 503 without a usable Retry-After) is paused: for First at its
// first incident, doubling at each new one up to Max, lengthened by up to
// a tenth at random; the count starts again once the origin has not pushed
// back for Forgive after the end of its last pause. Concurrent answers of
// one burst are one incident. See Transport.Backoff for the defaults.
type Backoff struct {
	First   time.Duration
	Max     time.Duration
	Forgive time.Duration
}

// next returns the pause of the back-off level level (1 for the first
// incident), with the random fraction jitter in [0, 1) of its tenth added.
func (b Backoff) pause(level int, jitter float64) time.Duration {
	d := b.First
	for i := 1; i < level && d < b.Max; i++ {
		d = add(d, d)
	}
	d = min(d, b.Max)
	return add(d, time.Duration(float64(d)/10*jitter))
}

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
// turn: p is paused, in a back-off or its forgiveness, or dropped.
func (p *pace) heeded(now time.Duration) bool {
	u := p.heedUntil.Load()
	return u != 0 && u > int64(now) || p.dropped.Load()
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
	p.boStart, p.boEnd = now, add(now, b.pause(p.boLevel, jitter))
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
