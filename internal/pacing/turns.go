package pacing

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/f9014239/robots/fleet"
)

// Turns is where every request to an origin takes its turn: the waits, the
// holds of requests in flight, the pauses and the back-off, over the paces
// of the origins in memory and a fleet Pacer, if any. A robots.Transport
// holds one. It is set up once with Init, and then safe for concurrent use.
//
// Times are Durations since the epoch given to Init, on the Clock's
// monotonic clock: the time is read once for each decision and passed
// along, never read twice for one.
type Turns struct {
	cfg     Config
	epoch   time.Time
	watcher fleet.PauseWatcher // cfg.Pacer, if it is one
	checker fleet.PauseChecker // cfg.Pacer, if it is one
	// the paces of the origins dropped from the caller's cache that still
	// matter
	paces Table[string]

	// Counts are the counters of the waits and pauses, which
	// robots.Transport.Stats reports.
	Counts Counts

	// when a Pacer failure was last logged, in Unix ns; 0 if never
	pacerLogged atomic.Int64
	// since when every Reserve cut short by MaxWait has gone unanswered,
	// in Unix ns; 0 if the last one was answered
	pacerSlowSince atomic.Int64
	// the calls owed to the Pacer and the Store on goroutines of their
	// own, which Flush waits for
	owed owed
}

// Config is how Turns paces, frozen by Init.
type Config struct {
	MinDelay         time.Duration // the least interval of a fetch of robots.txt
	MaxWait          time.Duration // the default limit of a wait (see WithMaxWait); 0 for none
	TurnTimeout      time.Duration // the longest a turn holds its origin
	MaxAdaptive      time.Duration // the cap of the adaptive delay; 0 turns it off
	IgnoreRetryAfter bool
	MaxRetryAfter    time.Duration // the cap of a pause
	Backoff          fleet.Backoff // First is 0 when there is no back-off
	Pacer            fleet.Pacer   // nil for none
	// CallTimeout bounds each call to the Pacer.
	CallTimeout time.Duration
	// Clock is the clock Turns reads and waits on; nil for the real one.
	Clock Clock
	// Log writes the records of waits, pauses and Pacer failures; nil for
	// none.
	Log Logger
	// NotYet makes the error of a request refused because its turn is
	// further away than it may wait (robots.TurnError).
	NotYet func(r Refusal) error
}

// Refusal is what Turns knows of a request it refused: see Config.NotYet.
type Refusal struct {
	Origin   string
	RetryAt  time.Time
	Reason   string
	Deadline bool // the context's deadline refused it, not MaxWait
}

// Clock is a clock Turns reads and waits on. The zero Config's is the real
// one; tests give one they move themselves.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed, and a
	// function that stops the wait.
	After(d time.Duration) (<-chan time.Time, func() bool)
}

// Logger writes the records of Turns.
type Logger interface {
	// Debugging reports whether debug records are written: a caller
	// builds one only then.
	Debugging(ctx context.Context) bool
	Debug(ctx context.Context, msg string, attrs ...slog.Attr)
	Warn(ctx context.Context, msg string, args ...any)
}

// Site is an origin as Turns sees it.
type Site interface {
	// Origin names the origin, as a fleet.Store names it.
	Origin() string
	// Pace returns the origin's pace: the site's own, or, once that has
	// been dropped (see Table), the origin's current one.
	Pace() *Pace
}

// Fetch is a fetch of robots.txt that other requests wait for: when its
// turn is further away, Turns says when it will be sent.
type Fetch interface {
	SendAt(at time.Time)
}

// Ask is the interval a request keeps after the previous answer to its
// origin, and what sets it.
type Ask struct {
	Every time.Duration // at least 0
	Why   string        // a Reason
	// the origin's rules are known; false for a fetch of robots.txt
	// before any was read, which keeps the previous turn's interval too
	Known bool
	// when Why is ReasonDefaultPace: the interval without the default
	// (MinDelay, or a stated delay of zero)
	Floor time.Duration
	// if positive, the time (on the Turns' clock) when the request was
	// decided, which its turn may take as now
	Now time.Duration
}

// Stated returns the interval of a without the default pace.
func (a Ask) Stated() time.Duration {
	if a.Why == ReasonDefaultPace {
		return a.Floor
	}
	return a.Every
}

// Ticket is one turn taken by Wait, for its Release or GiveBack. The zero
// Ticket took no turn.
type Ticket struct {
	p *Pace // nil for no turn
	t Turn
	// taken in the Pacer (which cannot give it back); t.ID names it there
	// if held
	pacer bool
}

// Taken reports whether k holds a turn to release.
func (k Ticket) Taken() bool { return k.p != nil }

// At returns the time of k's turn.
func (k Ticket) At() time.Duration { return k.t.At }

// Counts are the counters of Turns.
type Counts struct {
	Waits, WaitTime, NotYet      atomic.Int64 // WaitTime in ns
	Pauses, Backoffs, RateLimits atomic.Int64
	InFlightWaits, DefaultWaits  atomic.Int64
	SlowWaits, RequestRateWaits  atomic.Int64
}

// waitedFor counts a request that waited for, or was refused for, the
// reason why, in the counter of that reason if it has one.
func (c *Counts) waitedFor(why string) {
	switch why {
	case ReasonInFlight:
		c.InFlightWaits.Add(1)
	case ReasonDefaultPace:
		c.DefaultWaits.Add(1)
	case ReasonSlowAnswers:
		c.SlowWaits.Add(1)
	case ReasonRequestRate:
		c.RequestRateWaits.Add(1)
	}
}

// Init sets tn up with cfg, on a clock whose times are counted from epoch.
// It must be called once, before any other method.
func (tn *Turns) Init(cfg Config, epoch time.Time) {
	tn.cfg, tn.epoch = cfg, epoch
	tn.watcher, _ = cfg.Pacer.(fleet.PauseWatcher)
	tn.checker, _ = cfg.Pacer.(fleet.PauseChecker)
}

// Now returns the time since the epoch.
func (tn *Turns) Now() time.Duration {
	if tn.cfg.Clock == nil {
		return time.Since(tn.epoch)
	}
	return tn.cfg.Clock.Now().Sub(tn.epoch)
}

// Wall returns the wall time of d, a time on tn's clock.
func (tn *Turns) Wall(d time.Duration) time.Time { return tn.epoch.Add(d) }

// At returns tm on tn's clock.
func (tn *Turns) At(tm time.Time) time.Duration { return tm.Sub(tn.epoch) }

// after waits on tn's clock: see Clock.After.
func (tn *Turns) after(d time.Duration) (<-chan time.Time, func() bool) {
	if tn.cfg.Clock == nil {
		t := time.NewTimer(d)
		return t.C, t.Stop
	}
	return tn.cfg.Clock.After(d)
}

// TakePace returns the pace of origin, for a site the caller adds to its
// cache: the one handed back, if it still matters, or a new one.
func (tn *Turns) TakePace(origin string) *Pace { return tn.paces.Take(origin) }

// HandBack hands back p, the pace of origin, whose site the caller dropped
// from its cache at now: it is kept while it can hold a request back.
func (tn *Turns) HandBack(origin string, p *Pace, now time.Duration) {
	tn.paces.HandBack(origin, p, now)
}

// maxWaitKey is the context key of WithMaxWait.
type maxWaitKey struct{}

// WithMaxWait returns a copy of ctx under which a request waits at most d
// for its turn; d <= 0 means no limit.
func WithMaxWait(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, maxWaitKey{}, max(d, 0))
}

// maxWaitOf returns the MaxWait of a request with context ctx; 0 for none.
func (tn *Turns) maxWaitOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(maxWaitKey{}).(time.Duration); ok {
		return d
	}
	return tn.cfg.MaxWait
}

// probeKey marks the context of a probe (robots.Transport.NextTurn), which
// sends nothing: a refusal there is not counted.
type probeKey struct{}

// Probe returns a copy of ctx that marks a probe: its refusals and waits
// are not counted.
func Probe(ctx context.Context) context.Context { return context.WithValue(ctx, probeKey{}, true) }

// Probing reports whether ctx is a probe's.
func Probing(ctx context.Context) bool { return ctx.Value(probeKey{}) != nil }

// Limit is how far away a request's turn may be: the first instant on
// the Turns' clock that it may not be at.
type Limit struct {
	Until    time.Duration // math.MaxInt64 when the request waits for any turn
	Deadline bool          // Until is the context's deadline, not MaxWait
	// MaxWait applies (it may be later than the deadline)
	maxWait bool
}

// NoLimit is the limit of a request that waits for its turn, however far.
var NoLimit = Limit{Until: math.MaxInt64}

// LimitOf returns the limit of a request with context ctx that began at
// start: MaxWait after start (see WithMaxWait), or its deadline if that
// comes first.
func (tn *Turns) LimitOf(ctx context.Context, start time.Duration) Limit {
	l := NoLimit
	if mw := tn.maxWaitOf(ctx); mw > 0 {
		l.Until, l.maxWait = Add(start, Add(mw, 1)), true // a turn MaxWait away is taken
	}
	if dl, ok := ctx.Deadline(); ok {
		if d := tn.At(dl); d < l.Until {
			l.Until, l.Deadline = d, true
		}
	}
	return l
}

// Left returns how long a request under l may wait from now: a wait of
// that or more is refused.
func (l Limit) Left(now time.Duration) time.Duration {
	if l.Until == math.MaxInt64 {
		return math.MaxInt64
	}
	return l.Until - now
}

// NotYet returns the error of a request for u (nil: robots.txt) to s
// refused at now because its turn is wait away, past l, for the reason why.
func (tn *Turns) NotYet(ctx context.Context, s Site, u *url.URL, now, wait time.Duration, l Limit, why string) error {
	if !Probing(ctx) {
		tn.Counts.NotYet.Add(1)
		tn.Counts.waitedFor(why)
	}
	r := Refusal{Origin: s.Origin(), RetryAt: tn.Wall(Add(now, wait)), Reason: why, Deadline: l.Deadline}
	if tn.debugging(ctx) {
		tn.cfg.Log.Debug(ctx, "robots: not sent yet", slog.String("origin", r.Origin), slog.String("url", urlOf(s, u)),
			slog.Duration("in", wait), slog.Time("at", r.RetryAt), slog.String("reason", why), slog.Bool("deadline", l.Deadline))
	}
	return tn.cfg.NotYet(r)
}

// debugging reports whether tn writes debug records.
func (tn *Turns) debugging(ctx context.Context) bool {
	return tn.cfg.Log != nil && tn.cfg.Log.Debugging(ctx)
}

// warn writes a record, if tn has a Logger.
func (tn *Turns) warn(ctx context.Context, msg string, args ...any) {
	if tn.cfg.Log != nil {
		tn.cfg.Log.Warn(ctx, msg, args...)
	}
}

// FetchAsk returns the interval of a fetch of the robots.txt of s: the
// longest interval known for the origin, at least MinDelay; unknown if no
// robots.txt of it was read.
func (tn *Turns) FetchAsk(s Site) Ask {
	every, known := s.Pace().FetchEvery(tn.cfg.MinDelay)
	return Ask{Every: every, Why: ReasonCrawlDelay, Known: known}
}

// untimed reports whether a request that keeps a takes no turn when its
// origin is not heeded: no interval, known rules, no adaptive delay.
func (tn *Turns) untimed(a Ask) bool {
	return a.Every <= 0 && a.Known && tn.cfg.MaxAdaptive <= 0
}

// Free reports whether a request to s that keeps a may leave at once and
// takes no turn (the hot path): no interval applies, no adaptive delay,
// the origin is neither paused nor backing off, and the Pacer's copy of
// the fleet's pauses, if it keeps one, says so.
func (tn *Turns) Free(s Site, a Ask) bool {
	return tn.untimed(a) && !s.Pace().Heeded(tn.Now()) &&
		(tn.cfg.Pacer == nil || tn.watchedUnpaused(s.Origin()))
}

// Next returns when a request to s that keeps a could take its turn, on
// the Turns' clock, without taking it: it counts nothing. With a Pacer, it
// knows the turns this process took, not those of the Pacer's other users.
func (tn *Turns) Next(s Site, a Ask) time.Duration {
	if tn.cfg.Pacer != nil {
		tn.knowWatchedPause(s)
	}
	now := tn.Now()
	p := s.Pace()
	if tn.untimed(a) && !p.Heeded(now) {
		return max(now, p.PausedUntil()) // such a request takes no turn
	}
	at, _ := p.Next(now, tn.request(a, 0))
	return at
}

// Wait waits for the next turn of s for a request for u (nil: a fetch of
// robots.txt) that keeps a and began at start: every after the previous
// answer, and not during a pause. It returns at once, with the error of
// Config.NotYet, if the turn is further away than the request may wait
// (see LimitOf), and with an error that wraps ctx's error if ctx is done
// while it waits. A request refused so takes no turn. The turn it returns
// must be released (Release) when the request is answered, or given back
// (GiveBack) if it is not sent.
//
// It is the one place where a request to an origin takes its turn: every
// request the Transport sends, the fetch of robots.txt included, passes
// here first. A fetch passes itself as f (nil for other requests): when it
// must wait, f learns when it will be sent. A request takes a turn even
// when Free would let it go, so that a later request is spaced from it.
func (tn *Turns) Wait(ctx context.Context, s Site, a Ask, f Fetch, start time.Duration, u *url.URL) (Ticket, error) {
	lim := tn.LimitOf(ctx, start)
	var waited time.Duration
	defer func() {
		if waited > 0 {
			tn.Counts.Waits.Add(1)
			tn.Counts.WaitTime.Add(int64(waited))
		}
	}()
	poll := minPoll // the Pacer's turn in flight is asked about at most so often
	now := a.Now
	if now <= 0 {
		now = tn.Now()
	}
	for {
		g, err := tn.reserve(ctx, s, a, lim, f, &waited, u, now)
		if err != nil {
			return Ticket{}, err
		}
		if !g.ok {
			// A request in flight, whose answer this one may wait for.
			if g.freed == nil {
				// In the Pacer: ask again, less and less often.
				g.wait = max(g.wait, poll)
				poll = min(2*poll, maxPoll)
			}
			if err := tn.waitFreed(ctx, s, g, lim, &waited, u); err != nil {
				return Ticket{}, err
			}
			now = tn.Now()
			continue
		}
		tk := g.tk
		if g.wait > 0 {
			if f != nil {
				f.SendAt(tn.Wall(Add(tn.Now(), g.wait)))
			}
			tn.debugWait(ctx, s, g.wait, g.why, u)
			if !Probing(ctx) && g.why != ReasonInFlight {
				tn.Counts.waitedFor(g.why)
			}
			if err := tn.sleep(ctx, s, g.wait, &waited); err != nil {
				tn.GiveBack(ctx, s, tk)
				return Ticket{}, err
			}
		}
		// A pause that began while this request waited holds it back
		// too: no request goes to a paused origin.
		if g.wait <= 0 || !tn.paused(ctx, s, tn.Now(), true) {
			if !tk.t.Held && tk.p != nil {
				// A turn that holds nothing is moved to when its
				// request leaves, if it woke late.
				tk.p.Settle(tn.Now(), tk.t)
			}
			return tk, nil
		}
		tn.GiveBack(ctx, s, tk)
	}
}

// A request that finds its origin's turn held by another user of the Pacer
// asks the Pacer again after the wait it foresees, and no sooner than a poll
// interval that doubles from minPoll to maxPoll.
const (
	minPoll = 10 * time.Millisecond
	maxPoll = 250 * time.Millisecond
)

// waitFreed waits for the request in flight that g reports to be answered,
// or for its hold to run out, for a request under the limit l. It returns
// the error of NotYet when l runs out first.
func (tn *Turns) waitFreed(ctx context.Context, s Site, g grant, l Limit, waited *time.Duration, u *url.URL) error {
	now := tn.Now()
	d := g.freeBy - now
	if g.freed == nil {
		d = g.wait // in flight in the Pacer: poll
	}
	byLimit := false
	if left := l.Left(now); left <= d {
		d, byLimit = max(left-1, 0), true
	}
	tn.debugWait(ctx, s, g.wait, ReasonInFlight, u)
	timer, stop := tn.after(max(d, 0))
	defer stop()
	select {
	case <-g.freed:
		*waited += tn.Now() - now
		tn.Counts.InFlightWaits.Add(1)
		return nil
	case <-timer:
		end := tn.Now()
		*waited += end - now
		if byLimit {
			at, _ := s.Pace().Next(end, tn.request(Ask{Known: true}, 0))
			wait := max(at-end, g.wait-(end-now), time.Nanosecond)
			return tn.NotYet(ctx, s, u, end, wait, l, ReasonInFlight)
		}
		tn.Counts.InFlightWaits.Add(1)
		return nil
	case <-ctx.Done():
		*waited += tn.Now() - now
		return fmt.Errorf("robots: waiting for the turn of %s: %w", s.Origin(), ctx.Err())
	}
}

// debugWait writes a debug record of a request for u (nil: robots.txt) held
// for wait before its turn, for the reason why.
func (tn *Turns) debugWait(ctx context.Context, s Site, wait time.Duration, why string, u *url.URL) {
	if tn.debugging(ctx) {
		tn.cfg.Log.Debug(ctx, "robots: waiting for the turn", slog.String("origin", s.Origin()),
			slog.String("url", urlOf(s, u)), slog.Duration("wait", wait), slog.String("reason", why))
	}
}

// urlOf names the request for u (nil: robots.txt) of s in a record.
func urlOf(s Site, u *url.URL) string {
	if u == nil {
		return s.Origin() + "/robots.txt"
	}
	return u.Redacted()
}

// Release notes that the request that took tk (the zero Ticket for none)
// to s, sent at sent on the Turns' clock, was answered now (failed: with a
// network error or a timeout, not a caller's cancel): the next turn is
// spaced from now, in memory and in the Pacer, and the time from sent to
// now is a sample of the origin's response time.
func (tn *Turns) Release(ctx context.Context, s Site, tk Ticket, sent time.Duration, failed bool) {
	if tk.p == nil {
		return
	}
	now := tn.Now()
	a := fleet.Answer{ID: tk.t.ID, Took: max(now-sent, 0), Failed: failed, MaxAdaptive: tn.cfg.MaxAdaptive}
	tk.p.Release(now, tk.t, a)
	if tk.pacer && tk.t.Held {
		a.At = tn.Wall(now)
		tn.pacerRelease(ctx, s, a)
	}
}

// GiveBack returns tk, a turn whose request was not sent (see
// Pace.GiveBack). A turn held in the Pacer is released there as unsent.
func (tn *Turns) GiveBack(ctx context.Context, s Site, tk Ticket) {
	if tk.p == nil {
		return
	}
	tk.p.GiveBack(tk.t, tk.pacer)
	if tk.pacer && tk.t.Held {
		tn.pacerRelease(ctx, s, fleet.Answer{ID: tk.t.ID, At: tn.Wall(tn.Now()), Unsent: true})
	}
}

// sleep waits for d, or until ctx is done, and adds the time it waited to
// *waited.
func (tn *Turns) sleep(ctx context.Context, s Site, d time.Duration, waited *time.Duration) error {
	start := tn.Now()
	timer, stop := tn.after(d)
	defer func() { *waited += tn.Now() - start }()
	select {
	case <-timer:
		return nil
	case <-ctx.Done():
		stop()
		return fmt.Errorf("robots: waiting for the turn of %s: %w", s.Origin(), ctx.Err())
	}
}

// owed counts the calls Turns makes on goroutines of their own after the
// request that started them has returned (a release, a pause, a fetch of
// robots.txt that a caller gave up on): Flush waits for them. The zero
// owed owes nothing. It is safe for concurrent use.
type owed struct {
	mu   sync.Mutex
	n    int           // guarded by mu
	done chan struct{} // guarded by mu: closed when n falls to 0; nil while n is 0
}

// Go runs f on a goroutine of its own, owed until it returns: Flush waits
// for it.
func (tn *Turns) Go(f func()) {
	o := &tn.owed
	o.mu.Lock()
	if o.n == 0 {
		o.done = make(chan struct{})
	}
	o.n++
	o.mu.Unlock()
	go func() {
		defer func() {
			o.mu.Lock()
			if o.n--; o.n == 0 {
				close(o.done)
				o.done = nil
			}
			o.mu.Unlock()
		}()
		f()
	}()
}

// Flush waits until no call run by Go is under way, or ctx is done.
func (tn *Turns) Flush(ctx context.Context) error {
	o := &tn.owed
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
