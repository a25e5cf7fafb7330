package robots

import (
	"context"
	"errors"
	"net/url"
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

	// RetryAt is the earliest time a retry can be sent, never zero: the
	// origin's next turn, or when the fetch of robots.txt it needs is sent.
	// While a request to the origin is in flight (ReasonInFlight), it is an
	// estimate from the origin's response time. With many callers, each
	// retry may find another's turn taken.
	RetryAt time.Time

	// Reason says what holds the origin: one of the Reason constants.
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

// turnError is the error of a request that package pacing refused.
func turnError(r pacing.Refusal) error {
	e := &TurnError{Origin: r.Origin, RetryAt: r.RetryAt, Reason: r.Reason}
	if r.Deadline {
		e.Err = context.DeadlineExceeded
	}
	return e
}

// Backoff is how a Transport pauses an origin that pushes back without
// saying for how long (see Transport.Backoff).
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
	ReasonVisitTime   = pacing.ReasonVisitTime   // "visit-time": the origin's Visit-time window is not open
	ReasonDomainCap   = pacing.ReasonDomainCap   // "domain-cap": the origin's registrable domain (or GroupOf's group) has DomainCap requests in flight
	ReasonAddressCap  = pacing.ReasonAddressCap  // "address-cap": the origin's server address has its cap of requests in flight
)

// WithMaxWait returns a copy of ctx under which a Transport waits at most d
// for a request's turn, in place of Transport.MaxWait; d <= 0 means no limit.
func WithMaxWait(ctx context.Context, d time.Duration) context.Context {
	return pacing.WithMaxWait(ctx, d)
}

// NextTurn returns when a request for u, with context ctx and no User-Agent
// header, could be sent: its origin's next turn, or now. It takes no turn and
// sends nothing but the fetch of robots.txt a missing copy needs (as Check
// does), and returns the error Check would. It knows a Visit-time window. With a Pacer, it knows the turns
// this Transport took, not those of the Pacer's other users.
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
	ctx = pacing.Probe(ctx)
	var s *site
	var st *state
	var a pacing.Ask
	if isRobotsTxt(u) {
		k, err := keyOf(u)
		if err != nil {
			return time.Time{}, err
		}
		s = t.cache.siteOf(k, t.now())
		a = t.turns.FetchAsk(s)
	} else {
		s, st, a, err = t.check(ctx, u, "", agent, t.fetchAgent(nil, ua), t.now())
		if te, ok := err.(*TurnError); ok && te.Err == nil {
			return te.RetryAt, nil
		}
		if err != nil {
			return time.Time{}, err
		}
	}
	at := t.turns.Next(s, a)
	if w := t.visitWaitOf(st, agent); w > 0 {
		at = max(at, t.now()+w) // a closed Visit-time window holds it
	}
	return t.turns.Wall(at), nil
}

// interval returns how far apart the requests to an origin decided by st
// must be, for the crawler agent ("" for the Transport's own Agent).
func (l *loader) interval(st *state, agent string) pacing.Ask {
	if agent == "" || st.robots == nil {
		return st.ask
	}
	return l.delayOf(st.robots.Group(agent))
}

// delayOf returns the interval for the group g of robots.txt (nil when
// there are no rules: robots.txt unavailable or unreachable), under the
// Transport's settings: the longest of the delay the group states
// (Crawl-delay, or Request-rate's T/n, the longer; at most MaxCrawlDelay),
// MinDelay, and, if the group states neither (or IgnoreCrawlDelay is set),
// DefaultDelay unless NoDefaultPace is set. The adaptive delay is the
// pace's own (see pacing.State.Adaptive).
func (l *loader) delayOf(g *matcher.Group) pacing.Ask {
	a := pacing.Ask{Why: ReasonCrawlDelay, Known: true}
	stated := false
	if g != nil && !l.cfg.ignoreCrawlDelay {
		if d, ok := g.CrawlDelay(); ok {
			a.Every, stated = d, true
		}
		if d, ok := g.RequestRate(); ok {
			stated = true
			if d > a.Every {
				a.Every, a.Why = d, ReasonRequestRate
			}
		}
		a.Every = min(a.Every, l.cfg.maxCrawlDelay)
	}
	if l.cfg.minDelay > a.Every {
		a.Every, a.Why = l.cfg.minDelay, ReasonCrawlDelay
	}
	if !stated && l.cfg.defaultDelay > a.Every {
		a.Every, a.Why = l.cfg.defaultDelay, ReasonDefaultPace
		a.Floor = max(a.Floor, l.cfg.minDelay)
	}
	return a
}
