package robots

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/internal/pacing"
)

// Backoff is how a Transport pauses an origin that pushes back without
// saying for how long (see Transport.Backoff); it is shared through a
// fleet.Pacer.
type Backoff = fleet.Backoff

// Why a request to an origin is held back: the Reason of a [TurnError],
// and an attribute of the debug records of held requests.
const (
	ReasonCrawlDelay  = pacing.ReasonCrawlDelay  // "crawl-delay": the interval after the previous answer (Crawl-delay, MinDelay)
	ReasonRequestRate = pacing.ReasonRequestRate // "request-rate": the interval of robots.txt's Request-rate
	ReasonDefaultPace = pacing.ReasonDefaultPace // "default-pace": DefaultDelay, for an origin that states no delay
	ReasonSlowAnswers = pacing.ReasonSlowAnswers // "slow-answers": the adaptive delay, twice the origin's response time
	ReasonInFlight    = pacing.ReasonInFlight    // "in-flight": a request to the origin awaits its answer
	ReasonRetryAfter  = pacing.ReasonRetryAfter  // "retry-after": a pause the origin asked for with Retry-After
	ReasonRateLimit   = pacing.ReasonRateLimit   // "ratelimit": a pause the origin asked for with a RateLimit field
	ReasonBackoff     = pacing.ReasonBackoff     // "backoff": a pause after the origin pushed back (see Backoff)
	ReasonRobotsTxt   = pacing.ReasonRobotsTxt   // "robots.txt": the fetch of the origin's robots.txt
	ReasonPacer       = pacing.ReasonPacer       // "pacer": the Pacer did not answer within MaxWait
)

// ask is the interval a request keeps after the previous answer to its
// origin, and what sets it.
type ask struct {
	every time.Duration // at least 0
	why   string        // a Reason
	// the origin's rules are known; false for a fetch of robots.txt
	// before any was read, which keeps the previous turn's interval too
	known bool
	// when why is ReasonDefaultPace: the interval without DefaultDelay
	// (MinDelay, or a stated delay of zero)
	floor time.Duration
	// if positive, the time on the Transport's clock when the request was
	// decided, which its turn may take as now (see turns.reserveMemory)
	now time.Duration
}

// stated returns the interval of a without DefaultDelay.
func (a ask) stated() time.Duration {
	if a.why == ReasonDefaultPace {
		return a.floor
	}
	return a.every
}

// turn is one turn of an origin's pace, for its release or give-back.
type turn struct {
	p *pacing.Pace // nil for no turn
	t pacing.Turn
	// taken in the Transport's Pacer (which cannot give it back); t.ID
	// names it there if held
	pacer bool
}

// grant is what turns.reserve answers.
type grant struct {
	wait time.Duration // until the turn, or, if !ok, the estimate of when it may be free
	ok   bool
	why  string // what sets the turn's time, if wait > 0 or !ok
	// when !ok for a turn in flight in memory: closed when it ends, and
	// when its hold runs out (freeBy) at the latest
	freed  <-chan struct{}
	freeBy time.Duration
	tk     turn
}

// add returns a+b, or the longest Duration where that overflows.
func add(a, b time.Duration) time.Duration { return pacing.Add(a, b) }

// request returns the pacing request of a request that keeps a, and may
// wait up to left (a wait of left or more is refused).
func (tn *turns) request(a ask, left time.Duration) pacing.Request {
	return pacing.Request{Every: a.every, Why: a.why, Known: a.known, MaxWait: left - 1,
		Hold: tn.cfg.turnTimeout, MaxAdaptive: tn.cfg.maxAdaptive}
}

// answered pauses s as the answer to a request sent at sent (on the
// Transport's clock), with status and header h, asks: a 429 or 503 for as
// long as its Retry-After asks; else, on any status, for as long as its
// RateLimit field asks (see parseRateLimit); else a 429 or 503 under the
// back-off. Pauses are capped at MaxRetryAfter. A Retry-After that is
// absent, zero, in the past, malformed or ignored is not usable; a
// malformed RateLimit field is ignored.
func (tn *turns) answered(ctx context.Context, s *site, status int, h http.Header, sent time.Duration) {
	pushed := status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
	if pushed && !tn.cfg.ignoreRetryAfter {
		if d, ok := retryAfter(h.Get("Retry-After"), time.Now()); ok && d > 0 {
			tn.pause(ctx, s, d, ReasonRetryAfter)
			return
		}
	}
	if _, has := h["Ratelimit"]; has {
		if d, ok := parseRateLimit(h); ok && d > 0 {
			tn.pause(ctx, s, d, ReasonRateLimit)
			return
		}
	}
	if pushed {
		tn.backOff(ctx, s, status, sent)
	}
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
	until, isNew := p.PushBack(now, sent, b, rand.Float64())
	if pc := tn.cfg.pacer; pc != nil {
		// The fleet's back-off may be at a higher level: its pause, if
		// longer, is kept in memory too.
		tn.afterAnswer(ctx, func(pctx context.Context) {
			pu, err := pc.PushBack(pctx, s.origin, tn.epoch.Add(sent), b)
			if err != nil {
				tn.pacerFailed(ctx, s.origin, err)
			} else if d := tn.clock(pu); d > until {
				p.BackedOff(tn.now(), d, b)
			}
		})
	}
	if isNew {
		tn.stats.backoffs.Add(1)
		tn.log(ctx, "robots: origin pushed back; backing off", "origin", s.origin,
			"status", status, "pause", (until - now).Round(time.Millisecond))
	}
}

// pause pauses s for d, capped at MaxRetryAfter, in memory and in the
// Pacer, for the reason why (ReasonRetryAfter or ReasonRateLimit).
func (tn *turns) pause(ctx context.Context, s *site, d time.Duration, why string) {
	if d > tn.cfg.maxRetryAfter {
		field := "Retry-After"
		if why == ReasonRateLimit {
			field = "RateLimit"
		}
		tn.log(ctx, "robots: "+field+" capped at MaxRetryAfter", "origin", s.origin,
			"asked", d, "kept", tn.cfg.maxRetryAfter)
		d = tn.cfg.maxRetryAfter
	}
	if why == ReasonRateLimit {
		tn.stats.rateLimits.Add(1)
	} else {
		tn.stats.pauses.Add(1)
	}
	// The pause is kept in memory in any case, so that the requests of
	// this Transport that wait for a turn see it at once.
	tn.paceOf(s).Pause(add(tn.now(), d), why)
	if p := tn.cfg.pacer; p != nil {
		// The pause must reach the fleet even when the request that
		// met the 429 or 503 is cancelled as the response comes back.
		until := time.Now().Add(d)
		tn.afterAnswer(ctx, func(pctx context.Context) {
			if err := p.Pause(pctx, s.origin, until, why); err != nil {
				tn.pacerFailed(ctx, s.origin, err)
			}
		})
	}
}

// knowWatchedPause copies into s's pace the pause that the Pacer's copy of
// the fleet's pauses holds for s's origin, if it is a PauseWatcher and the
// copy holds one: a pause known from any source holds, even when the copy
// may be stale or the Pacer no longer holds it.
func (tn *turns) knowWatchedPause(s *site) {
	if tn.cfg.watcher == nil {
		return
	}
	if until, why, _ := tn.cfg.watcher.WatchedPause(s.origin); !until.IsZero() && time.Now().Before(until) {
		tn.paceOf(s).Pause(tn.clock(until), pacing.PauseReason(why))
	}
}

// watchedUnpaused reports whether the Pacer is a PauseWatcher whose copy is
// up to date and holds no pause of origin that has not ended.
func (tn *turns) watchedUnpaused(origin string) bool {
	if tn.cfg.watcher == nil {
		return false
	}
	until, _, ok := tn.cfg.watcher.WatchedPause(origin)
	return ok && (until.IsZero() || !time.Now().Before(until))
}

// paused reports whether s's origin is paused now, in memory or, when the
// request waited for its turn and the Pacer can tell, in the Pacer.
func (tn *turns) paused(ctx context.Context, s *site, waited bool) bool {
	if tn.paceOf(s).Paused(tn.now()) {
		return true
	}
	pc, ok := tn.cfg.pacer.(fleet.PauseChecker)
	if !ok || !waited {
		return false
	}
	pctx, cancel := context.WithTimeout(ctx, storeTimeout)
	until, why, err := pc.PausedUntil(pctx, s.origin)
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
	tn.paceOf(s).Pause(tn.clock(until), pacing.PauseReason(why))
	return true
}
