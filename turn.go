package robots

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/f9014239/robots/fleet"
)

// ErrNotYet is matched by a [*TurnError]: a request not sent because its
// origin's turn is further away than MaxWait or its context's deadline.
var ErrNotYet = errors.New("robots: not yet: the origin's turn is later")

// TurnError reports a request that was not sent because its origin's turn
// is further away than it may wait. It matches [ErrNotYet], and
// [context.DeadlineExceeded] when the deadline refused it. The request took
// no turn.
type TurnError struct {
	Origin string // as a Store names it: "https://example.com"

	// RetryAt is the earliest time a retry can be sent: the origin's next turn,
	// or when the fetch of robots.txt it needs is sent (100 ms on when that
	// is unknown). It is never the zero time. While a request to the
	// origin is in flight (Reason is ReasonInFlight), its answer is not
	// known yet: RetryAt is then an estimate, the time the request left plus
	// the origin's recent answer time (a moving average; 0 before the
	// first answer), or now if that has passed, plus the interval. With
	// one caller per origin, a retry at RetryAt is sent; with many, it is the
	// earliest any of them can be, and each retry may find another's
	// turn taken.
	RetryAt time.Time

	// Reason says what holds the origin: ReasonCrawlDelay,
	// ReasonInFlight, ReasonRetryAfter, ReasonBackoff or ReasonRobotsTxt.
	Reason string

	// Err is context.DeadlineExceeded if the deadline refused the request,
	// or nil if MaxWait did.
	Err error
}

// Error returns a message that names the origin and when its turn comes.
func (e *TurnError) Error() string {
	why := "MaxWait"
	if e.Err != nil {
		why = "the deadline"
	}
	msg := "robots: the turn of " + e.Origin + " is at " + e.RetryAt.Format("15:04:05.000")
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	return msg + ", past " + why + ": not sent"
}

// Is reports whether target is ErrNotYet.
func (e *TurnError) Is(target error) bool { return target == ErrNotYet }

// Unwrap returns e.Err.
func (e *TurnError) Unwrap() error { return e.Err }

// turns is where every request to an origin takes its turn: the waits, the
// holds of requests in flight, the pauses and the back-off, over the paces
// of the origins in memory and the Transport's Pacer, if any. A Transport
// holds one; its settings are the Transport's, frozen at first use.
type turns struct {
	*logs
	cfg   *config
	epoch time.Time // the origin of the clock of now
	cache *cache    // the origins' paces
	stats *stats
	// when a Pacer failure was last logged, in Unix ns; 0 if never
	pacerLogged atomic.Int64
	// since when every Reserve cut short by MaxWait has gone unanswered,
	// in Unix ns; 0 if the last one was answered
	pacerSlowSince atomic.Int64
}

// pacerDown notes that a Reserve was cut short by MaxWait, and reports
// whether the Pacer has answered none for storeTimeout, the bound of one
// call: then it counts as failed, and turns are taken in memory, as for a
// Pacer that errs, rather than refused for as long as it hangs.
func (tn *turns) pacerDown() bool {
	now := time.Now().UnixNano()
	since := tn.pacerSlowSince.Load()
	if since == 0 {
		tn.pacerSlowSince.CompareAndSwap(0, now)
		return false
	}
	return now-since >= int64(storeTimeout)
}

// now returns the time since epoch, on the monotonic clock.
func (tn *turns) now() time.Duration { return time.Since(tn.epoch) }

// clock returns tm on the clock of now.
func (tn *turns) clock(tm time.Time) time.Duration { return tm.Sub(tn.epoch) }

// maxWaitKey is the context key of WithMaxWait.
type maxWaitKey struct{}

// WithMaxWait returns a copy of ctx under which a Transport waits at most d
// for a request's turn, in place of Transport.MaxWait; d <= 0 means no limit.
func WithMaxWait(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, maxWaitKey{}, max(d, 0))
}

// maxWaitOf returns the MaxWait of a request with context ctx; 0 for none.
func (tn *turns) maxWaitOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(maxWaitKey{}).(time.Duration); ok {
		return d
	}
	return tn.cfg.maxWait
}

// NextTurn returns when a request for u, with context ctx and no User-Agent
// header, could be sent: its origin's next turn, or now. It takes no turn and
// sends nothing but the fetch of robots.txt, if the origin's copy is missing
// (as Check does); if that fetch is further away than MaxWait, it returns
// when a retry could find it. It returns the error Check would if u is
// refused or cannot be sent. With a Pacer, it knows the turns this Transport
// took, not those of the Pacer's other users: RoundTrip decides.
func (t *Transport) NextTurn(ctx context.Context, u *url.URL) (time.Time, error) {
	t.once.Do(t.init)
	if u == nil {
		return time.Time{}, errors.New("robots: nil URL")
	}
	if !httpScheme(u) {
		return time.Time{}, errScheme(u)
	}
	agent, ua, err := t.identity(ctx, nil)
	if err != nil {
		return time.Time{}, err
	}
	ctx = context.WithValue(ctx, probeKey{}, true)
	now := t.now()
	var s *site
	every := time.Duration(0)
	if isRobotsTxt(u) {
		k, err := keyOf(u)
		if err != nil {
			return time.Time{}, err
		}
		s = t.cache.siteOf(k, now)
		every = t.turns.paceOf(s).fetchEvery(t.cfg.minDelay)
	} else {
		s, _, every, err = t.check(ctx, u, "", agent, t.fetchAgent(nil, ua), now)
		if te, ok := err.(*TurnError); ok && te.Err == nil {
			return te.RetryAt, nil
		}
		if err != nil {
			return time.Time{}, err
		}
	}
	if t.cfg.pacer != nil {
		t.turns.knowWatchedPause(s)
	}
	now = t.now()
	p := t.turns.paceOf(s)
	if every <= 0 && !p.heeded(now) {
		// Such a request takes no turn (see waitTurn): only a pause
		// holds it back.
		return t.epoch.Add(max(now, time.Duration(p.pausedUntil.Load()))), nil
	}
	at, _ := p.earliest(now, every)
	return t.epoch.Add(at), nil
}

// paceOf returns the pace of s's origin: s's own, unless it was dropped
// with s from the cache, and then the pace of the origin's current site.
func (tn *turns) paceOf(s *site) *pace {
	for s.pace.dropped.Load() {
		s = tn.cache.siteOf(s.key, tn.now())
	}
	return s.pace
}

// interval returns how far apart the requests to an origin decided by st
// must be, for the crawler agent ("" for the Transport's own Agent).
func (tn *turns) interval(st *state, agent string) time.Duration {
	if agent == "" || st.robots == nil {
		return st.every
	}
	return tn.delayOf(st.robots.Group(agent).CrawlDelay())
}

// delayOf returns the interval for a group whose crawl-delay is d (ok false
// if it states none), under the Transport's settings.
func (tn *turns) delayOf(d time.Duration, ok bool) time.Duration {
	if !ok || tn.cfg.ignoreCrawlDelay {
		d = 0
	}
	return max(min(d, tn.cfg.maxCrawlDelay), tn.cfg.minDelay)
}

// turnLimit is how far away a request's turn may be: the first instant on
// the Transport's clock (see Transport.now) that it may not be at.
type turnLimit struct {
	until    time.Duration // math.MaxInt64 when the request waits for any turn
	deadline bool          // until is the context's deadline, not MaxWait
	// MaxWait applies (it may be later than the deadline)
	maxWait bool
}

// noLimit is the limit of a request that waits for its turn, however far.
var noLimit = turnLimit{until: math.MaxInt64}

// limitOf returns the limit of a request with context ctx that began at
// start: MaxWait after start (see Transport.MaxWait and WithMaxWait), or its
// deadline if that comes first.
func (tn *turns) limitOf(ctx context.Context, start time.Duration) turnLimit {
	l := noLimit
	if mw := tn.maxWaitOf(ctx); mw > 0 {
		l.until, l.maxWait = add(start, add(mw, 1)), true // a turn MaxWait away is taken
	}
	if dl, ok := ctx.Deadline(); ok {
		if d := tn.clock(dl); d < l.until {
			l.until, l.deadline = d, true
		}
	}
	return l
}

// left returns how long a request under l may wait from now: a wait of
// that or more is refused.
func (l turnLimit) left(now time.Duration) time.Duration {
	if l.until == math.MaxInt64 {
		return math.MaxInt64
	}
	return l.until - now
}

// notYet returns the error of a request to s refused at now because its turn
// is wait away, past l, for the reason why.
func (tn *turns) notYet(ctx context.Context, s *site, now, wait time.Duration, l turnLimit, why string) *TurnError {
	if ctx.Value(probeKey{}) == nil {
		tn.stats.notYet.Add(1)
		if why == ReasonInFlight {
			tn.stats.inFlightWaits.Add(1)
		}
	}
	e := &TurnError{Origin: s.origin, RetryAt: tn.epoch.Add(add(now, wait)), Reason: why}
	if l.deadline {
		e.Err = context.DeadlineExceeded
	}
	if tn.debugging(ctx) {
		tn.debug(ctx, "robots: not sent yet", slog.String("origin", s.origin),
			slog.Duration("in", wait), slog.Time("at", e.RetryAt), slog.String("reason", why), slog.Bool("deadline", l.deadline))
	}
	return e
}

// probeKey marks the context of a NextTurn, which sends nothing: a refusal
// there is not counted in Stats.NotYet.
type probeKey struct{}

// waitTurn waits for s's next turn, which is every after the previous one's
// answer and not during a pause, for a request for u (nil for a fetch of
// robots.txt) that began at start (on the Transport's clock). It returns at
// once, with a [*TurnError], if the turn is further away than the request
// may wait (see turnLimit), and with an error that wraps ctx's error if ctx
// is done while it waits. A request refused so takes no turn. The turn it
// returns must be released (see Transport.release) when the request is
// answered.
//
// It is the one place where a request to an origin takes its turn: every
// request the Transport sends, the fetch of robots.txt included, passes
// here first. The fetch passes its flight f (nil for other requests): its
// turn is taken even when no interval is known yet, and when it must wait,
// f tells the requests waiting for it when it will be sent. (The fetch's
// context has no MaxWait: see Transport.obtain.)
//
// A request that is not a fetch takes no turn when no interval applies and
// the origin is not paused nor backing off (the hot path), unless always is
// set: then it takes one, so that a later request is spaced from it.
func (tn *turns) waitTurn(ctx context.Context, s *site, every time.Duration, f *flight, always bool, start time.Duration, u *url.URL) (turn, error) {
	if f == nil && !always && tn.free(s, every) {
		return turn{}, nil
	}
	lim := tn.limitOf(ctx, start)
	var waited time.Duration
	defer func() {
		if waited > 0 {
			tn.stats.paceWaits.Add(1)
			tn.stats.paceWait.Add(int64(waited))
		}
	}()
	poll := minPoll // the Pacer's turn in flight is asked about at most so often
	for {
		g, err := tn.reserve(ctx, s, every, lim, f, &waited, u)
		if err != nil {
			return turn{}, err
		}
		if !g.ok {
			// A request in flight, whose answer this one may wait for.
			if g.freed == nil {
				// In the Pacer: ask again, less and less often.
				g.wait = max(g.wait, poll)
				poll = min(2*poll, maxPoll)
			}
			if err := tn.waitFreed(ctx, s, g, lim, &waited, u); err != nil {
				return turn{}, err
			}
			continue
		}
		tk := g.tk
		if g.wait > 0 {
			if f != nil {
				f.sendAt.Store(time.Now().Add(g.wait).UnixNano())
				f.wait()
			}
			tn.debugWait(ctx, s, g.wait, g.why, u)
			if err := tn.sleep(ctx, s, g.wait, &waited); err != nil {
				tn.giveBack(ctx, s, tk)
				return turn{}, err
			}
		}
		// A pause that began while this request waited holds it back
		// too: no request goes to a paused origin.
		if !tn.paused(ctx, s, g.wait > 0) {
			if !tk.held && tk.p != nil {
				// A turn that holds nothing is moved to when its
				// request leaves, if it woke late.
				tk.p.release(tk, tn.now())
			}
			return tk, nil
		}
		tn.giveBack(ctx, s, tk)
	}
}

// A request that finds its origin's turn held by another user of the Pacer
// asks the Pacer again after the wait it foresees, and no sooner than a poll
// interval that doubles from minPoll to maxPoll.
const (
	minPoll = 10 * time.Millisecond
	maxPoll = 250 * time.Millisecond
)

// free reports whether a request to s with the interval every takes no
// turn: the hot path. No interval applies, the origin is neither paused nor
// backing off, and the Pacer's copy of the fleet's pauses, if any, says so.
func (tn *turns) free(s *site, every time.Duration) bool {
	return every <= 0 && !s.pace.dropped.Load() &&
		(s.pace.heedUntil.Load() == 0 || !s.pace.heeded(tn.now())) &&
		(tn.cfg.pacer == nil || tn.watchedUnpaused(s.origin))
}

// waitFreed waits for the request in flight that g reports to be answered,
// or for its hold to run out, for a request under the limit l. It returns a
// [*TurnError] when l runs out first.
func (tn *turns) waitFreed(ctx context.Context, s *site, g grant, l turnLimit, waited *time.Duration, u *url.URL) error {
	now := tn.now()
	d := g.freeBy - now
	if g.freed == nil {
		d = g.wait // in flight in the Pacer: poll
	}
	byLimit := false
	if left := l.left(now); left <= d {
		d, byLimit = max(left-1, 0), true
	}
	tn.debugWait(ctx, s, g.wait, ReasonInFlight, u)
	start := time.Now()
	defer func() { *waited += time.Since(start) }()
	timer := time.NewTimer(max(d, 0))
	defer timer.Stop()
	select {
	case <-g.freed:
		tn.stats.inFlightWaits.Add(1)
		return nil
	case <-timer.C:
		if byLimit {
			now := tn.now()
			at, _ := tn.paceOf(s).earliest(now, 0)
			wait := max(at-now, g.wait-time.Since(start), time.Nanosecond)
			return tn.notYet(ctx, s, now, wait, l, ReasonInFlight)
		}
		tn.stats.inFlightWaits.Add(1)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("robots: waiting for the turn of %s: %w", s.origin, ctx.Err())
	}
}

// debugWait writes a debug record of a request for u (nil: robots.txt) held
// for wait before its turn, for the reason why.
func (tn *turns) debugWait(ctx context.Context, s *site, wait time.Duration, why string, u *url.URL) {
	if tn.debugging(ctx) {
		tn.debug(ctx, "robots: waiting for the turn", slog.String("origin", s.origin),
			slog.String("url", urlOf(s, u)), slog.Duration("wait", wait), slog.String("reason", why))
	}
}

// urlOf names the request for u (nil: robots.txt) of s in a record.
func urlOf(s *site, u *url.URL) string {
	if u == nil {
		return s.origin + "/robots.txt"
	}
	return u.Redacted()
}

// release notes that the request that took tk (the zero turn for none) of
// s was answered now: the next turn is spaced from now, in memory and in
// the Pacer.
func (tn *turns) release(ctx context.Context, s *site, tk turn) {
	if tk.p == nil {
		return
	}
	tk.p.release(tk, tn.now())
	if tk.pacer && tk.held {
		tn.pacerRelease(ctx, s, tk.id)
	}
}

// giveBack returns tk, a turn whose request was not sent: see turn.giveBack.
// A turn held in the Pacer is released there.
func (tn *turns) giveBack(ctx context.Context, s *site, tk turn) {
	tk.giveBack(tn.now())
	if tk.pacer && tk.held {
		tn.pacerRelease(ctx, s, tk.id)
	}
}

// pacerRelease releases the held turn id of s in the Pacer, answered now.
func (tn *turns) pacerRelease(ctx context.Context, s *site, id uint64) {
	answered := time.Now()
	tn.afterAnswer(ctx, func(pctx context.Context) {
		if err := tn.cfg.pacer.Release(pctx, s.origin, id, answered); err != nil {
			tn.pacerFailed(ctx, s.origin, err)
		}
	})
}

// afterAnswer makes call, a call to the Pacer after a request's answer (a
// release, a pause, a back-off), under a context of its own bounded by
// storeTimeout, so that it is made even when the request is cancelled as its
// answer comes. For a request under MaxWait it is made on a goroutine of its
// own, which ends with the call: a worker that gave MaxWait is not held by
// a Pacer that hangs. The memory's state is the caller's to change first.
func (tn *turns) afterAnswer(ctx context.Context, call func(context.Context)) {
	run := func() {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		defer cancel()
		call(pctx)
	}
	if tn.maxWaitOf(ctx) > 0 {
		go run()
		return
	}
	run()
}

// sleep waits for d, or until ctx is done, and adds the time it waited to
// *waited.
func (tn *turns) sleep(ctx context.Context, s *site, d time.Duration, waited *time.Duration) error {
	start := time.Now()
	timer := time.NewTimer(d)
	defer func() { *waited += time.Since(start) }()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		timer.Stop()
		return fmt.Errorf("robots: waiting for the turn of %s: %w", s.origin, ctx.Err())
	}
}

// holdFor returns how long a turn with the interval every holds its origin
// at most (see Transport.TurnTimeout).
func (tn *turns) holdFor() time.Duration { return tn.cfg.turnTimeout }

// reserve takes s's next turn from everything the process knows: its own
// turns and pauses (kept in memory whether or not there is a Pacer), the
// copy of the fleet's pauses a PauseWatcher keeps, and the Pacer, if any.
// Where they disagree, the later turn wins: a Pacer that forgot a turn or a
// pause (its store evicted or lost it) cannot make a request leave before
// a turn the process took or a pause it knows of.
//
// With a Pacer, reserve first waits out what the process knows, and then
// asks the Pacer, once: its answer can only make the turn later. The turn
// is recorded in memory too. If the Pacer fails, the turn is taken in
// memory. A turn taken in memory can be given back; one taken in a Pacer
// cannot.
//
// It returns a grant that is not ok when a request to the origin is in
// flight and the caller may wait for its answer. If the turn is at or past
// lim, reserve takes none and returns a [*TurnError]; an error that wraps
// ctx's error if ctx is done.
func (tn *turns) reserve(ctx context.Context, s *site, every time.Duration, lim turnLimit, f *flight, waited *time.Duration, u *url.URL) (grant, error) {
	p := tn.cfg.pacer
	if p == nil {
		now := tn.now()
		g := tn.paceOf(s).reserve(now, every, lim.left(now), tn.holdFor())
		if !g.ok && (g.freed == nil || g.wait >= lim.left(now)) {
			return grant{}, tn.notYet(ctx, s, now, g.wait, lim, g.why)
		}
		return g, nil
	}
	tn.knowWatchedPause(s)
	for {
		now := tn.now()
		at, why := tn.paceOf(s).earliest(now, every)
		if why == ReasonInFlight {
			// In flight from this process: wait for its answer here.
			g := tn.paceOf(s).reserve(now, every, lim.left(now), tn.holdFor())
			if g.ok {
				tn.giveBack(ctx, s, g.tk) // answered meanwhile
				continue
			}
			if g.freed == nil || g.wait >= lim.left(now) {
				return grant{}, tn.notYet(ctx, s, now, g.wait, lim, g.why)
			}
			return g, nil
		}
		known := at - now
		if known <= 0 {
			break
		}
		if known >= lim.left(now) {
			return grant{}, tn.notYet(ctx, s, now, known, lim, why)
		}
		if f != nil {
			f.sendAt.Store(time.Now().Add(known).UnixNano())
			f.wait()
		}
		tn.debugWait(ctx, s, known, why, u)
		if err := tn.sleep(ctx, s, known, waited); err != nil {
			return grant{}, err
		}
	}
	now := tn.now()
	left := lim.left(now)
	iv, known := pacerEvery(every)
	// The Pacer holds the turn if it keeps an interval, or the origin
	// is backing off in the fleet (see Pacer.Reserve).
	hold := tn.holdFor()
	// The turn's ID is drawn here, so that a turn whose answer is lost
	// (the call cut short by MaxWait) can be released all the same.
	id := rand.Uint64() | 1
	pctx, cancel := tn.pacerCtx(ctx, lim)
	asked := time.Now()
	r, err := p.Reserve(pctx, s.origin, fleet.TurnRequest{Every: iv, Known: known, MaxWait: left, Hold: hold, ID: id})
	cutShort := err != nil && ctx.Err() == nil && pctx.Err() != nil && lim.maxWait && !tn.pacerDown()
	cancel()
	if err == nil {
		tn.pacerSlowSince.Store(0)
	}
	if err == nil && r.OK && r.Wait >= left && lim.until != math.MaxInt64 {
		// A Pacer that rounds may hand out a turn at the limit itself.
		r.OK = false
		if r.ID != 0 {
			tn.pacerRelease(ctx, s, r.ID)
		}
	}
	switch {
	case err == nil && r.OK:
		// Counted from the answer, not the question: the turn the
		// process remembers is never earlier than the Pacer's.
		wait := max(r.Wait, 0)
		at := add(tn.now(), wait)
		tk := tn.paceOf(s).record(at, every, r.ID != 0, add(at, hold), r.ID)
		return grant{wait: wait, ok: true, why: ReasonCrawlDelay, tk: tk}, nil
	case err == nil && r.InFlight:
		// In flight from another user of the Pacer: poll it, from
		// when it foresees a free turn (see waitFreed).
		wait := max(r.Wait, time.Millisecond)
		if lim.until != math.MaxInt64 && wait >= left {
			return grant{}, tn.notYet(ctx, s, now, wait, lim, ReasonInFlight)
		}
		return grant{wait: wait, why: ReasonInFlight}, nil
	case err == nil:
		wait := max(r.Wait, time.Nanosecond) // a Pacer that refuses a turn it says is now
		return grant{}, tn.notYet(ctx, s, now, wait, lim, ReasonCrawlDelay)
	case ctx.Err() != nil:
		tn.releaseLost(ctx, s, id, hold)
		return grant{}, fmt.Errorf("robots: waiting for the turn of %s: %w", s.origin, ctx.Err())
	case cutShort:
		// The Pacer did not answer within MaxWait: the turn is
		// refused, not taken in memory, which knows nothing of the
		// fleet's requests in flight. One the Pacer took is released.
		tn.releaseLost(ctx, s, id, hold)
		now = tn.now()
		return grant{}, tn.notYet(ctx, s, now, max(time.Since(asked), time.Millisecond), lim, ReasonPacer)
	}
	tn.pacerFailed(ctx, s.origin, err)
	now = tn.now()
	g := tn.paceOf(s).reserve(now, every, lim.left(now), tn.holdFor())
	if !g.ok && (g.freed == nil || g.wait >= lim.left(now)) {
		return grant{}, tn.notYet(ctx, s, now, g.wait, lim, g.why)
	}
	return g, nil
}

// releaseLost releases, in the Pacer, the turn id that a Reserve cut short
// may have taken with a hold, on a goroutine bounded by storeTimeout: the
// caller does not wait for it.
func (tn *turns) releaseLost(ctx context.Context, s *site, id uint64, hold time.Duration) {
	if hold <= 0 {
		return
	}
	go tn.pacerRelease(context.WithoutCancel(ctx), s, id)
}

// pacerCtx returns ctx bounded for one call to the Pacer: by storeTimeout,
// and by the request's limit, so that a Pacer that hangs holds a request no
// longer than MaxWait. A Reserve cut short by MaxWait refuses the request
// for now (ReasonPacer), until the Pacer has answered none for storeTimeout
// (see pacerDown); other failures take the turn in memory.
func (tn *turns) pacerCtx(ctx context.Context, lim turnLimit) (context.Context, context.CancelFunc) {
	d := storeTimeout
	if lim.maxWait {
		d = min(d, max(lim.left(tn.now())-1, time.Millisecond))
	}
	return context.WithTimeout(ctx, d)
}

// knowWatchedPause copies into s's pace the pause that the Pacer's copy of
// the fleet's pauses holds for s's origin, if it is a PauseWatcher and the
// copy holds one: a pause known from any source holds, even when the copy
// may be stale or the Pacer no longer holds it.
func (tn *turns) knowWatchedPause(s *site) {
	if tn.cfg.watcher == nil {
		return
	}
	if until, _ := tn.cfg.watcher.WatchedPause(s.origin); !until.IsZero() && time.Now().Before(until) {
		tn.paceOf(s).pause(tn.clock(until), ReasonRetryAfter)
	}
}

// pushedBack pauses s if resp, the answer to a request sent at sent (on
// the Transport's clock), is a 429 or 503: for as long as its Retry-After
// asks, capped at MaxRetryAfter, or, when it has no usable one (absent,
// zero, in the past, malformed, or ignored), under the back-off.
func (tn *turns) pushedBack(ctx context.Context, s *site, status int, h http.Header, sent time.Duration) {
	if status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
		return
	}
	if !tn.cfg.ignoreRetryAfter {
		if d, ok := retryAfter(h.Get("Retry-After"), time.Now()); ok && d > 0 {
			tn.pause(ctx, s, d)
			return
		}
	}
	tn.backOff(ctx, s, status, sent)
}

// backOff pauses s under the back-off, for a 429 or 503 with no usable
// Retry-After on a request sent at sent; see Backoff.
func (tn *turns) backOff(ctx context.Context, s *site, status int, sent time.Duration) {
	b := tn.cfg.backoff
	if b.First <= 0 {
		return // IgnoreBackoff
	}
	now := tn.now()
	p := tn.paceOf(s)
	until, isNew := p.pushBack(now, sent, b, rand.Float64())
	if pc := tn.cfg.pacer; pc != nil {
		// The fleet's back-off may be at a higher level: its pause, if
		// longer, is kept in memory too.
		tn.afterAnswer(ctx, func(pctx context.Context) {
			pu, err := pc.PushBack(pctx, s.origin, tn.epoch.Add(sent), b)
			if err != nil {
				tn.pacerFailed(ctx, s.origin, err)
			} else if d := tn.clock(pu); d > until {
				p.backedOff(tn.now(), d, b)
			}
		})
	}
	if isNew {
		tn.stats.backoffs.Add(1)
		tn.log(ctx, "robots: origin pushed back; backing off", "origin", s.origin,
			"status", status, "pause", (until - now).Round(time.Millisecond))
	}
}

// pause pauses s for d, capped at MaxRetryAfter, in memory and in the Pacer.
func (tn *turns) pause(ctx context.Context, s *site, d time.Duration) {
	if d > tn.cfg.maxRetryAfter {
		tn.log(ctx, "robots: Retry-After capped at MaxRetryAfter", "origin", s.origin,
			"asked", d, "kept", tn.cfg.maxRetryAfter)
		d = tn.cfg.maxRetryAfter
	}
	tn.stats.pauses.Add(1)
	// The pause is kept in memory in any case, so that the requests of
	// this Transport that wait for a turn see it at once.
	tn.paceOf(s).pause(add(tn.now(), d), ReasonRetryAfter)
	if p := tn.cfg.pacer; p != nil {
		// The pause must reach the fleet even when the request that
		// met the 429 or 503 is cancelled as the response comes back.
		until := time.Now().Add(d)
		tn.afterAnswer(ctx, func(pctx context.Context) {
			if err := p.Pause(pctx, s.origin, until); err != nil {
				tn.pacerFailed(ctx, s.origin, err)
			}
		})
	}
}

// watchedUnpaused reports whether the Pacer is a PauseWatcher whose copy is
// up to date and holds no pause of origin that has not ended.
func (tn *turns) watchedUnpaused(origin string) bool {
	if tn.cfg.watcher == nil {
		return false
	}
	until, ok := tn.cfg.watcher.WatchedPause(origin)
	return ok && (until.IsZero() || !time.Now().Before(until))
}

// paused reports whether s's origin is paused now, in memory or, when the
// request waited for its turn and the Pacer can tell, in the Pacer.
func (tn *turns) paused(ctx context.Context, s *site, waited bool) bool {
	if tn.paceOf(s).paused(tn.now()) {
		return true
	}
	pc, ok := tn.cfg.pacer.(fleet.PauseChecker)
	if !ok || !waited {
		return false
	}
	pctx, cancel := context.WithTimeout(ctx, storeTimeout)
	until, err := pc.PausedUntil(pctx, s.origin)
	cancel()
	if err != nil {
		tn.pacerFailed(ctx, s.origin, err)
		return false
	}
	if !time.Now().Before(until) {
		return false
	}
	// Kept in memory, so that the next turn waits it out before asking
	// the Pacer again, even if the Pacer's own turn ignores it.
	tn.paceOf(s).pause(tn.clock(until), ReasonRetryAfter)
	return true
}

// pacerFailed logs that the Pacer failed for origin, unless a failure was
// logged in the last pacerLogInterval.
func (tn *turns) pacerFailed(ctx context.Context, origin string, err error) {
	if tn.debugging(ctx) {
		tn.debug(ctx, "robots: pacing in memory", slog.String("origin", origin), slog.Any("err", err))
	}
	now := time.Now().UnixNano()
	last := tn.pacerLogged.Load()
	if last != 0 && now-last < int64(pacerLogInterval) || !tn.pacerLogged.CompareAndSwap(last, now) {
		return
	}
	tn.log(ctx, "robots: pacer failed; pacing in memory", "origin", origin, "err", err)
}

// pacerLogInterval is the least time between two records of Pacer failures:
// a Pacer is asked for every request, and when it fails, it fails for each.
const pacerLogInterval = time.Minute
