package robots

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/internal/pacing"
	"github.com/f9014239/robots/matcher"
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
	// the origin's response-time estimate (0 before the first answer), or
	// now if that has passed, plus the interval. With
	// one caller per origin, a retry at RetryAt is sent; with many, it is the
	// earliest any of them can be, and each retry may find another's
	// turn taken.
	RetryAt time.Time

	// Reason says what holds the origin: ReasonCrawlDelay (Crawl-delay
	// or MinDelay), ReasonRequestRate, ReasonDefaultPace (DefaultDelay),
	// ReasonSlowAnswers (the adaptive delay), ReasonInFlight (a request
	// awaits its answer), ReasonRetryAfter, ReasonRateLimit, ReasonBackoff
	// (pauses), ReasonRobotsTxt (the fetch of robots.txt) or ReasonPacer
	// (the Pacer did not answer within MaxWait).
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
	cache *cache    // the origins' sites, whose paces it holds
	// the paces of the origins dropped from the cache that still matter
	paces *pacing.Table[originKey]
	stats *stats
	// when a Pacer failure was last logged, in Unix ns; 0 if never
	pacerLogged atomic.Int64
	// since when every Reserve cut short by MaxWait has gone unanswered,
	// in Unix ns; 0 if the last one was answered
	pacerSlowSince atomic.Int64
	// the calls owed to the Pacer and the Store on goroutines of their
	// own, which Transport.Flush waits for
	owed owed
}

// owed counts the calls a Transport makes on goroutines of their own after
// the request that started them has returned (a release, a pause, a fetch
// of robots.txt that a caller gave up on): Transport.Flush waits for them.
// The zero owed owes nothing. It is safe for concurrent use.
type owed struct {
	mu   sync.Mutex
	n    int           // guarded by mu
	done chan struct{} // guarded by mu: closed when n falls to 0; nil while n is 0
}

// add notes one more call owed.
func (o *owed) add() {
	o.mu.Lock()
	if o.n == 0 {
		o.done = make(chan struct{})
	}
	o.n++
	o.mu.Unlock()
}

// paid notes that a call owed was made.
func (o *owed) paid() {
	o.mu.Lock()
	if o.n--; o.n == 0 {
		close(o.done)
		o.done = nil
	}
	o.mu.Unlock()
}

// wait waits until no call is owed, or ctx is done.
func (o *owed) wait(ctx context.Context) error {
	o.mu.Lock()
	done := o.done
	o.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// goOwed runs f on a goroutine of its own, owed until it returns.
func (tn *turns) goOwed(f func()) {
	tn.owed.add()
	go func() {
		defer tn.owed.paid()
		f()
	}()
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
	var a ask
	if isRobotsTxt(u) {
		k, err := keyOf(u)
		if err != nil {
			return time.Time{}, err
		}
		s = t.cache.siteOf(k, now)
		a = t.turns.fetchAsk(s)
	} else {
		s, _, a, err = t.check(ctx, u, "", agent, t.fetchAgent(nil, ua), now)
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
	if t.turns.untimed(a) && !p.Heeded(now) {
		// Such a request takes no turn (see waitTurn): only a pause
		// holds it back.
		return t.epoch.Add(max(now, p.PausedUntil())), nil
	}
	at, _ := p.Next(now, t.turns.request(a, 0))
	return t.epoch.Add(at), nil
}

// paceOf returns the pace of s's origin: s's own, unless it was dropped
// with s from the cache, and then the pace of the origin's current site.
func (tn *turns) paceOf(s *site) *pacing.Pace {
	for s.pace.Dropped() {
		s = tn.cache.siteOf(s.key, tn.now())
	}
	return s.pace
}

// interval returns how far apart the requests to an origin decided by st
// must be, for the crawler agent ("" for the Transport's own Agent).
func (tn *turns) interval(st *state, agent string) ask {
	if agent == "" || st.robots == nil {
		return st.ask
	}
	return tn.delayOf(st.robots.Group(agent))
}

// delayOf returns the interval for the group g of robots.txt (nil when
// there are no rules: robots.txt unavailable or unreachable), under the
// Transport's settings: the longest of the delay the group states
// (Crawl-delay, or Request-rate's T/n, the longer; at most MaxCrawlDelay),
// MinDelay, and, if the group states neither (or IgnoreCrawlDelay is set),
// DefaultDelay unless NoDefaultPace is set. The adaptive delay is the
// pace's own (see pacing.State.Adaptive).
func (tn *turns) delayOf(g *matcher.Group) ask {
	a := ask{why: ReasonCrawlDelay, known: true}
	stated := false
	if g != nil && !tn.cfg.ignoreCrawlDelay {
		if d, ok := g.CrawlDelay(); ok {
			a.every, stated = d, true
		}
		if d, ok := g.RequestRate(); ok {
			stated = true
			if d > a.every {
				a.every, a.why = d, ReasonRequestRate
			}
		}
		a.every = min(a.every, tn.cfg.maxCrawlDelay)
	}
	if tn.cfg.minDelay > a.every {
		a.every, a.why = tn.cfg.minDelay, ReasonCrawlDelay
	}
	if !stated && tn.cfg.defaultDelay > a.every {
		a.every, a.why = tn.cfg.defaultDelay, ReasonDefaultPace
		a.floor = max(a.floor, tn.cfg.minDelay)
	}
	return a
}

// fetchAsk returns the interval of a fetch of the robots.txt of s's
// origin: the longest interval known for the origin, at least MinDelay;
// unknown if no robots.txt of it was read.
func (tn *turns) fetchAsk(s *site) ask {
	every, known := tn.paceOf(s).FetchEvery(tn.cfg.minDelay)
	return ask{every: every, why: ReasonCrawlDelay, known: known}
}

// untimed reports whether a request that keeps a takes no turn when its
// origin is not heeded: no interval, known rules, no adaptive delay.
func (tn *turns) untimed(a ask) bool {
	return a.every <= 0 && a.known && tn.cfg.maxAdaptive <= 0
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

// notYet returns the error of a request for u (nil: robots.txt) to s
// refused at now because its turn is wait away, past l, for the reason why.
func (tn *turns) notYet(ctx context.Context, s *site, u *url.URL, now, wait time.Duration, l turnLimit, why string) *TurnError {
	if ctx.Value(probeKey{}) == nil {
		tn.stats.notYet.Add(1)
		tn.stats.waitedFor(why)
	}
	e := &TurnError{Origin: s.origin, RetryAt: tn.epoch.Add(add(now, wait)), Reason: why}
	if l.deadline {
		e.Err = context.DeadlineExceeded
	}
	if tn.debugging(ctx) {
		tn.debug(ctx, "robots: not sent yet", slog.String("origin", s.origin), slog.String("url", urlOf(s, u)),
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
func (tn *turns) waitTurn(ctx context.Context, s *site, a ask, f *flight, always bool, start time.Duration, u *url.URL) (turn, error) {
	if f == nil && !always && tn.free(s, a) {
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
	now := a.now
	if now <= 0 {
		now = tn.now()
	}
	for {
		g, err := tn.reserve(ctx, s, a, lim, f, &waited, u, now)
		now = -1 // read afresh after this
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
			if ctx.Value(probeKey{}) == nil && g.why != ReasonInFlight {
				tn.stats.waitedFor(g.why)
			}
			if err := tn.sleep(ctx, s, g.wait, &waited); err != nil {
				tn.giveBack(ctx, s, tk)
				return turn{}, err
			}
		}
		// A pause that began while this request waited holds it back
		// too: no request goes to a paused origin.
		if g.wait <= 0 || !tn.paused(ctx, s, true) {
			if !tk.t.Held && tk.p != nil {
				// A turn that holds nothing is moved to when its
				// request leaves, if it woke late.
				tk.p.Settle(tn.now(), tk.t)
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

// free reports whether a request to s that keeps a takes no turn: no
// interval applies (see untimed), the origin is neither paused nor backing
// off, and the Pacer's copy of the fleet's pauses, if any, says so.
func (tn *turns) free(s *site, a ask) bool {
	return tn.untimed(a) && !s.pace.Dropped() && !s.pace.Heeded(tn.now()) &&
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
			at, _ := tn.paceOf(s).Next(now, tn.request(ask{known: true}, 0))
			wait := max(at-now, g.wait-time.Since(start), time.Nanosecond)
			return tn.notYet(ctx, s, u, now, wait, l, ReasonInFlight)
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
// s, sent at sent on the Transport's clock, was answered now (failed: with
// a network error or a timeout, not a caller's cancel): the next turn is
// spaced from now, in memory and in the Pacer, and the time from sent to
// now is a sample of the origin's response time.
func (tn *turns) release(ctx context.Context, s *site, tk turn, sent time.Duration, failed bool) {
	if tk.p == nil {
		return
	}
	now := tn.now()
	a := fleet.Answer{ID: tk.t.ID, At: time.Now(), Took: max(now-sent, 0), Failed: failed, MaxAdaptive: tn.cfg.maxAdaptive}
	tk.p.Release(now, tk.t, a)
	if tk.pacer && tk.t.Held {
		tn.pacerRelease(ctx, s, a)
	}
}

// giveBack returns tk, a turn whose request was not sent (see
// pacing.Pace.GiveBack). A turn held in the Pacer is released there.
func (tn *turns) giveBack(ctx context.Context, s *site, tk turn) {
	if tk.p == nil {
		return
	}
	tk.p.GiveBack(tk.t, tk.pacer)
	if tk.pacer && tk.t.Held {
		tn.pacerRelease(ctx, s, fleet.Answer{ID: tk.t.ID, At: time.Now(), Unsent: true})
	}
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
