package robots

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
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
// paces the origins it caches itself, with one [rate.Limiter] per origin,
// dropped with the origin. Set Transport.Pacer to share the pace of origins
// between Transports, for example across the processes of a fleet of
// crawlers.
//
// Origins are named as for a [Store]. A Pacer must be safe for concurrent use
// by multiple goroutines. If it returns an error, the Transport logs it and
// paces the origin itself for that request, as if it had no Pacer; a request
// whose context is done by then is not sent.
type Pacer interface {
	// Reserve takes origin's next turn for one request, turns being at
	// least every apart, and returns how long the caller must wait for
	// it. every may be zero: then only a pause delays the turn. If the
	// wait would be longer than maxWait, Reserve takes no turn and
	// returns ok false.
	Reserve(ctx context.Context, origin string, every, maxWait time.Duration) (wait time.Duration, ok bool, err error)

	// Pause delays origin's turns until at least until.
	Pause(ctx context.Context, origin string, until time.Time) error
}

// pace is the in-memory pace of one cached origin.
type pace struct {
	pausedUntil atomic.Int64 // on the Transport's clock (ns since epoch); written under mu

	mu  sync.Mutex
	lim *rate.Limiter // guarded by mu; lazily initialised
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

// waitTurn waits for s's next turn, which is every after the last one
// unless s is paused for longer. It returns at once, with an error that wraps
// context.DeadlineExceeded, if the turn would come after ctx's deadline, and
// with an error that wraps ctx's error if ctx is done while it waits.
func (t *Transport) waitTurn(ctx context.Context, s *site, every time.Duration) error {
	if t.cfg.pacer == nil && every <= 0 {
		if p := s.pace.pausedUntil.Load(); p == 0 || p <= int64(t.now()) {
			return nil // the hot path: nothing to wait for
		}
	}
	maxWait := time.Duration(math.MaxInt64)
	if dl, ok := ctx.Deadline(); ok {
		maxWait = time.Until(dl)
	}
	var wait time.Duration
	var ok bool
	if p := t.cfg.pacer; p != nil {
		var err error
		wait, ok, err = p.Reserve(ctx, s.origin, every, maxWait)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("robots: waiting for the turn of %s: %w", s.origin, ctx.Err())
			}
			t.pacerFailed(ctx, s.origin, err)
			if dl, ok := ctx.Deadline(); ok {
				maxWait = time.Until(dl)
			}
			wait, ok = t.reserve(s, every, maxWait)
		}
	} else {
		wait, ok = t.reserve(s, every, maxWait)
	}
	if !ok {
		return fmt.Errorf("robots: the turn of %s is %v away, past the deadline: %w", s.origin, wait, context.DeadlineExceeded)
	}
	if wait <= 0 {
		return nil
	}
	t.stats.paceWaits.Add(1)
	start := time.Now()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		t.stats.paceWait.Add(int64(wait))
		return nil
	case <-ctx.Done():
		t.stats.paceWait.Add(int64(time.Since(start)))
		return fmt.Errorf("robots: waiting for the turn of %s: %w", s.origin, ctx.Err())
	}
}

// reserve takes s's next turn in memory; see Pacer.Reserve.
func (t *Transport) reserve(s *site, every, maxWait time.Duration) (wait time.Duration, ok bool) {
	s.pace.mu.Lock()
	defer s.pace.mu.Unlock()
	now := t.now()
	at := max(now, time.Duration(s.pace.pausedUntil.Load()))
	if every <= 0 {
		wait = at - now
		return wait, wait < maxWait || wait == 0
	}
	// During a pause the turns are taken from its end on, so that the
	// requests it held back leave one per interval, not all at once.
	lim := s.pace.limiter(t.epoch.Add(at), every)
	r := lim.ReserveN(t.epoch.Add(at), 1)
	wait = r.DelayFrom(t.epoch.Add(now))
	if wait > 0 && wait >= maxWait {
		r.CancelAt(t.epoch.Add(now))
		return wait, false
	}
	return wait, true
}

// limiter returns the pace's limiter, set at now to one event per every. The
// caller holds p.mu.
func (p *pace) limiter(now time.Time, every time.Duration) *rate.Limiter {
	if p.lim == nil {
		p.lim = rate.NewLimiter(rate.Every(every), 1)
	} else if l := rate.Every(every); p.lim.Limit() != l {
		p.lim.SetLimitAt(now, l)
	}
	return p.lim
}

// tookTurn records that a request (the fetch of robots.txt) was sent to s
// without waiting for its turn, so that the next request waits every after it.
func (t *Transport) tookTurn(ctx context.Context, s *site, every time.Duration) {
	if every <= 0 {
		return
	}
	if p := t.cfg.pacer; p != nil {
		_, _, err := p.Reserve(ctx, s.origin, every, time.Duration(math.MaxInt64))
		if err == nil {
			return
		}
		t.pacerFailed(ctx, s.origin, err)
	}
	s.pace.mu.Lock()
	defer s.pace.mu.Unlock()
	now := t.epoch.Add(t.now())
	s.pace.limiter(now, every).ReserveN(now, 1)
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
	d = min(d, t.cfg.maxRetryAfter)
	t.stats.pauses.Add(1)
	if p := t.cfg.pacer; p != nil {
		err := p.Pause(ctx, s.origin, time.Now().Add(d))
		if err == nil {
			return
		}
		t.pacerFailed(ctx, s.origin, err)
	}
	s.pace.mu.Lock()
	defer s.pace.mu.Unlock()
	if until := int64(t.now() + d); until > s.pace.pausedUntil.Load() {
		s.pace.pausedUntil.Store(until)
	}
}

// pacerLogInterval is the least time between two records of Pacer failures:
// a Pacer is asked for every request, and when it fails, it fails for each.
const pacerLogInterval = time.Minute

// pacerFailed logs that the Pacer failed for origin, unless a failure was
// logged in the last pacerLogInterval.
func (t *Transport) pacerFailed(ctx context.Context, origin string, err error) {
	now := time.Now().UnixNano()
	last := t.pacerLogged.Load()
	if last != 0 && now-last < int64(pacerLogInterval) || !t.pacerLogged.CompareAndSwap(last, now) {
		return
	}
	t.log(ctx, "robots: pacer failed; pacing in memory", "origin", origin, "err", err)
}
