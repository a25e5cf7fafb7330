package robots

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"time"
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

	// At is the earliest time a retry can be sent: the origin's next turn,
	// or when the fetch of robots.txt it needs is sent (100 ms on when that
	// is unknown). It is never the zero time.
	At time.Time

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
	return "robots: the turn of " + e.Origin + " is at " + e.At.Format("15:04:05.000") + ", past " + why + ": not sent"
}

// Is reports whether target is ErrNotYet.
func (e *TurnError) Is(target error) bool { return target == ErrNotYet }

// Unwrap returns e.Err.
func (e *TurnError) Unwrap() error { return e.Err }

// maxWaitKey is the context key of WithMaxWait.
type maxWaitKey struct{}

// WithMaxWait returns a copy of ctx under which a Transport waits at most d
// for a request's turn, in place of Transport.MaxWait; d <= 0 means no limit.
func WithMaxWait(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, maxWaitKey{}, max(d, 0))
}

// maxWaitOf returns the MaxWait of a request with context ctx; 0 for none.
func (t *Transport) maxWaitOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(maxWaitKey{}).(time.Duration); ok {
		return d
	}
	return t.cfg.maxWait
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
	now := t.now()
	var s *site
	every := time.Duration(0)
	if isRobotsTxt(u) {
		k, err := keyOf(u)
		if err != nil {
			return time.Time{}, err
		}
		s = t.cache.siteOf(k, now)
		every = t.paceOf(s).fetchEvery(t.cfg.minDelay)
	} else {
		s, _, every, err = t.check(ctx, u, "", agent, t.fetchAgent(nil, ua), now)
		if te, ok := err.(*TurnError); ok && te.Err == nil {
			return te.At, nil
		}
		if err != nil {
			return time.Time{}, err
		}
	}
	if t.cfg.pacer != nil {
		t.knowWatchedPause(s)
	}
	now = t.now()
	p := t.paceOf(s)
	if every <= 0 {
		// Such a request takes no turn (see waitTurn): only a pause
		// holds it back.
		return t.epoch.Add(max(now, time.Duration(p.pausedUntil.Load()))), nil
	}
	return t.epoch.Add(p.earliest(now, every)), nil
}

// paceOf returns the pace of s's origin: s's own, unless it was dropped
// with s from the cache, and then the pace of the origin's current site.
func (t *Transport) paceOf(s *site) *pace {
	for s.pace.dropped.Load() {
		s = t.cache.siteOf(s.key, t.now())
	}
	return s.pace
}

// interval returns how far apart the requests to an origin decided by st
// must be, for the crawler agent ("" for the Transport's own Agent).
func (t *Transport) interval(st *state, agent string) time.Duration {
	if agent == "" || st.robots == nil {
		return st.every
	}
	return t.delayOf(st.robots.Group(agent).CrawlDelay())
}

// delayOf returns the interval for a group whose crawl-delay is d (ok false
// if it states none), under the Transport's settings.
func (t *Transport) delayOf(d time.Duration, ok bool) time.Duration {
	if !ok || t.cfg.ignoreCrawlDelay {
		d = 0
	}
	return max(min(d, t.cfg.maxCrawlDelay), t.cfg.minDelay)
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
func (t *Transport) limitOf(ctx context.Context, start time.Duration) turnLimit {
	l := noLimit
	if mw := t.maxWaitOf(ctx); mw > 0 {
		l.until, l.maxWait = start+mw+1, true // a turn MaxWait away is taken
	}
	if dl, ok := ctx.Deadline(); ok {
		if d := t.clock(dl); d < l.until {
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
// is wait away, past l.
func (t *Transport) notYet(ctx context.Context, s *site, now, wait time.Duration, l turnLimit) *TurnError {
	t.stats.notYet.Add(1)
	e := &TurnError{Origin: s.origin, At: t.epoch.Add(now + wait)}
	if l.deadline {
		e.Err = context.DeadlineExceeded
	}
	if t.debugging(ctx) {
		t.debug(ctx, "robots: not sent yet", slog.String("origin", s.origin),
			slog.Duration("in", wait), slog.Time("at", e.At), slog.Bool("deadline", l.deadline))
	}
	return e
}

// waitTurn waits for s's next turn, which is every after the previous one
// and not during a pause, for a request that began at start (on the
// Transport's clock). It returns at once, with a [*TurnError], if the turn
// is further away than the request may wait (see turnLimit), and with an
// error that wraps ctx's error if ctx is done while it waits. A request
// refused so takes no turn.
//
// It is the one place where a request to an origin takes its turn: every
// request the Transport sends, the fetch of robots.txt included, passes
// here first. The fetch passes its flight f (nil for other requests): its
// turn is taken even when no interval is known yet, and when it must wait,
// f tells the requests waiting for it when it will be sent. (The fetch's
// context has no MaxWait: see Transport.obtain.)
//
// A request that is not a fetch takes no turn when no interval applies and
// the origin is not paused (the hot path), unless always is set: then it
// takes one, so that a later request is spaced from it.
func (t *Transport) waitTurn(ctx context.Context, s *site, every time.Duration, f *flight, always bool, start time.Duration) (time.Duration, error) {
	if every <= 0 && f == nil && !always && !s.pace.dropped.Load() &&
		(s.pace.pausedUntil.Load() == 0 || !s.pace.paused(t.now())) &&
		(t.cfg.pacer == nil || t.watchedUnpaused(s.origin)) {
		return noTurn, nil // the hot path: nothing to wait for
	}
	lim := t.limitOf(ctx, start)
	var waited time.Duration
	defer func() {
		if waited > 0 {
			t.stats.paceWaits.Add(1)
			t.stats.paceWait.Add(int64(waited))
		}
	}()
	for {
		wait, tk, err := t.reserve(ctx, s, every, lim, f, &waited)
		if err != nil {
			return noTurn, err
		}
		if wait > 0 {
			if f != nil {
				f.sendAt.Store(time.Now().Add(wait).UnixNano())
				f.wait()
			}
			t.debugWait(ctx, s, wait, f)
			if err := t.sleep(ctx, s, wait, &waited); err != nil {
				tk.giveBack()
				return noTurn, err
			}
		}
		// A pause that began while this request waited holds it back
		// too: no request goes to a paused origin.
		if !t.paused(ctx, s, wait > 0) {
			now := t.now()
			t.paceOf(s).departed(tk.at, now)
			return max(tk.at, now), nil
		}
		tk.giveBack()
	}
}

// debugWait writes a debug record of a request held for wait before its
// turn; f is the flight of a fetch of robots.txt, or nil.
func (t *Transport) debugWait(ctx context.Context, s *site, wait time.Duration, f *flight) {
	if t.debugging(ctx) {
		t.debug(ctx, "robots: waiting for the turn", slog.String("origin", s.origin),
			slog.Duration("wait", wait), slog.Bool("robots_txt", f != nil))
	}
}

// noTurn is what waitTurn returns for a request that took no turn.
const noTurn = time.Duration(-1)

// departed notes that the request that took the turn at of s (noTurn for
// none) has had its answer at now; see pace.departed.
func (t *Transport) departed(s *site, at time.Duration) {
	if at != noTurn {
		t.paceOf(s).departed(at, t.now())
	}
}

// sleep waits for d, or until ctx is done, and adds the time it waited to
// *waited.
func (t *Transport) sleep(ctx context.Context, s *site, d time.Duration, waited *time.Duration) error {
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
// If the turn is at or past lim, reserve takes none and returns a
// [*TurnError]; an error that wraps ctx's error if ctx is done.
func (t *Transport) reserve(ctx context.Context, s *site, every time.Duration, lim turnLimit, f *flight, waited *time.Duration) (time.Duration, turn, error) {
	p := t.cfg.pacer
	if p == nil {
		now := t.now()
		wait, ok, tk := t.paceOf(s).reserve(now, every, lim.left(now))
		if !ok {
			return 0, turn{}, t.notYet(ctx, s, now, wait, lim)
		}
		return wait, tk, nil
	}
	t.knowWatchedPause(s)
	for {
		now := t.now()
		known := t.paceOf(s).earliest(now, every) - now
		if known <= 0 {
			break
		}
		if known >= lim.left(now) {
			return 0, turn{}, t.notYet(ctx, s, now, known, lim)
		}
		if f != nil {
			f.sendAt.Store(time.Now().Add(known).UnixNano())
			f.wait()
		}
		t.debugWait(ctx, s, known, f)
		if err := t.sleep(ctx, s, known, waited); err != nil {
			return 0, turn{}, err
		}
	}
	now := t.now()
	left := lim.left(now)
	iv, known := pacerEvery(every)
	wait, ok, err := p.Reserve(ctx, s.origin, iv, known, left)
	if err == nil && ok && wait >= left && lim.until != math.MaxInt64 {
		// A Pacer that rounds may hand out a turn at the limit itself.
		ok = false
	}
	switch {
	case err == nil && ok:
		// Counted from the answer, not the question: the turn the
		// process remembers is never earlier than the Pacer's.
		at := t.now() + max(wait, 0)
		t.paceOf(s).record(at, every)
		return max(wait, 0), turn{at: at}, nil
	case err == nil:
		if wait <= 0 {
			wait = time.Nanosecond // a Pacer that refuses a turn it says is now
		}
		return 0, turn{}, t.notYet(ctx, s, now, wait, lim)
	case ctx.Err() != nil:
		return 0, turn{}, fmt.Errorf("robots: waiting for the turn of %s: %w", s.origin, ctx.Err())
	}
	t.pacerFailed(ctx, s.origin, err)
	now = t.now()
	wait, ok, tk := t.paceOf(s).reserve(now, every, lim.left(now))
	if !ok {
		return 0, turn{}, t.notYet(ctx, s, now, wait, lim)
	}
	return wait, tk, nil
}

// knowWatchedPause copies into s's pace the pause that the Pacer's copy of
// the fleet's pauses holds for s's origin, if it is a PauseWatcher and the
// copy holds one: a pause known from any source holds, even when the copy
// may be stale or the Pacer no longer holds it.
func (t *Transport) knowWatchedPause(s *site) {
	if t.cfg.watcher == nil {
		return
	}
	if until, _ := t.cfg.watcher.WatchedPause(s.origin); !until.IsZero() && time.Now().Before(until) {
		t.paceOf(s).pause(t.clock(until))
	}
}

// pauseFor pauses s until the time resp's Retry-After asks for, capped at
// MaxRetryAfter, if resp is a 429 or 503 that carries one.
func (t *Transport) pauseFor(ctx context.Context, s *site, resp *http.Response) {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return
	}
	d, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now())
	if !ok || d <= 0 {
		return
	}
	t.pause(ctx, s, d)
}

// pause pauses s for d, capped at MaxRetryAfter, in memory and in the Pacer.
func (t *Transport) pause(ctx context.Context, s *site, d time.Duration) {
	d = min(d, t.cfg.maxRetryAfter)
	t.stats.pauses.Add(1)
	// The pause is kept in memory in any case, so that the requests of
	// this Transport that wait for a turn see it at once.
	t.paceOf(s).pause(t.now() + d)
	if p := t.cfg.pacer; p != nil {
		// The pause must reach the fleet even when the request that
		// met the 429 or 503 is cancelled as the response comes back.
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		defer cancel()
		if err := p.Pause(pctx, s.origin, time.Now().Add(d)); err != nil {
			t.pacerFailed(ctx, s.origin, err)
		}
	}
}

// watchedUnpaused reports whether the Pacer is a PauseWatcher whose copy is
// up to date and holds no pause of origin that has not ended.
func (t *Transport) watchedUnpaused(origin string) bool {
	if t.cfg.watcher == nil {
		return false
	}
	until, ok := t.cfg.watcher.WatchedPause(origin)
	return ok && (until.IsZero() || !time.Now().Before(until))
}

// paused reports whether s's origin is paused now, in memory or, when the
// request waited for its turn and the Pacer can tell, in the Pacer.
func (t *Transport) paused(ctx context.Context, s *site, waited bool) bool {
	if t.paceOf(s).paused(t.now()) {
		return true
	}
	pc, ok := t.cfg.pacer.(PauseChecker)
	if !ok || !waited {
		return false
	}
	until, err := pc.PausedUntil(ctx, s.origin)
	if err != nil {
		t.pacerFailed(ctx, s.origin, err)
		return false
	}
	if !time.Now().Before(until) {
		return false
	}
	// Kept in memory, so that the next turn waits it out before asking
	// the Pacer again, even if the Pacer's own turn ignores it.
	t.paceOf(s).pause(t.clock(until))
	return true
}

// pacerFailed logs that the Pacer failed for origin, unless a failure was
// logged in the last pacerLogInterval.
func (t *Transport) pacerFailed(ctx context.Context, origin string, err error) {
	if t.debugging(ctx) {
		t.debug(ctx, "robots: pacing in memory", slog.String("origin", origin), slog.Any("err", err))
	}
	now := time.Now().UnixNano()
	last := t.pacerLogged.Load()
	if last != 0 && now-last < int64(pacerLogInterval) || !t.pacerLogged.CompareAndSwap(last, now) {
		return
	}
	t.log(ctx, "robots: pacer failed; pacing in memory", "origin", origin, "err", err)
}

// pacerLogInterval is the least time between two records of Pacer failures:
// a Pacer is asked for every request, and when it fails, it fails for each.
const pacerLogInterval = time.Minute
