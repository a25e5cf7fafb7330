package robots

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/internal/pacing"
)

// loader gets each origin's robots.txt: from the cache in memory, else by
// one load at a time per origin (single flight) from the Store or a fetch,
// compiled into the state that decides. A Transport holds one; its settings
// are the Transport's, frozen at first use.
type loader struct {
	*logs
	cfg   *config
	cache *cache
	stats *stats
	// where a fetch takes its origin's turn, and a pause, like any
	// request
	turns *pacing.Turns

	// missed, if set (only by tests, through export_test.go), is called
	// on each miss before the load is waited for.
	missed func(originKey)
}

// lookup returns the state that decides for origin k at now: the cached one
// if it is fresh, or else the result of a load that the caller waits for.
// hit tells which: the caller's clock reading is still fresh after a hit.
func (l *loader) lookup(ctx context.Context, k originKey, u *url.URL, now time.Duration, userAgent func() string) (s *site, st *state, hit bool, err error) {
	sh := l.cache.shard(k)
	s = sh.get(k)
	if s != nil {
		if s.used.Load() < usedAgain {
			s.used.Store(usedAgain)
		}
		if st := s.cur.Load(); st != nil && st.fresh(now) {
			if !pacing.Probing(ctx) {
				l.stats.hit()
			}
			return s, st, true, nil
		}
	} else {
		s, _ = l.cache.add(sh, k, now)
	}
	if !pacing.Probing(ctx) {
		l.stats.misses.Add(1)
	}
	if h := l.missed; h != nil {
		h(k)
	}
	st, err = l.wait(ctx, s, u, userAgent, false, now)
	for tries := 1; err == errSiteGone; tries++ {
		// s was evicted before its load began: wait for the origin's
		// current site instead, so that an origin has one load at a
		// time (two would send two requests for robots.txt at once,
		// each on a pace that knows no crawl-delay). After a few tries
		// under such churn, load on s as it is.
		s, _ = l.cache.add(sh, k, now)
		st, err = l.wait(ctx, s, u, userAgent, tries >= 8, now)
	}
	return s, st, false, err
}

// now returns the time on the Transport's clock (see Transport.now).
func (l *loader) now() time.Duration { return l.turns.Now() }

// clock returns tm on the Transport's clock.
func (l *loader) clock(tm time.Time) time.Duration { return l.turns.At(tm) }

// errSiteGone is the error of Transport.wait for a site evicted before its
// load began.
var errSiteGone = errors.New("robots: site evicted")

// wait returns the site's state once it is fresh, starting a load unless
// one is in progress, for a request that began at start (on the Transport's
// clock). It gives up when ctx is done, and, with a [*TurnError], when the
// request may not wait so long (see turnLimit): at once if the load waits
// for a turn past that limit, or when MaxWait runs out while the fetch is in
// flight. The load goes on for the other callers. It returns errSiteGone if
// s has been evicted, unless evenGone is set.
func (l *loader) wait(ctx context.Context, s *site, u *url.URL, userAgent func() string, evenGone bool, start time.Duration) (*state, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("robots: waiting for %s/robots.txt: %w", s.origin, err)
	}
	// Under the shard's lock, s is either gone or, once its flight is
	// set, not evicted (a loading site is not): a load never starts on a
	// site that the cache no longer holds.
	sh := l.cache.shard(s.key)
	sh.mu.Lock()
	if s.gone && !evenGone {
		sh.mu.Unlock()
		return nil, errSiteGone
	}
	s.mu.Lock()
	sh.mu.Unlock()
	if st := s.cur.Load(); st != nil && st.fresh(l.now()) {
		s.mu.Unlock()
		return st, nil
	}
	lim := l.turns.LimitOf(ctx, start)
	f := s.flight
	if f == nil {
		f = &flight{done: make(chan struct{}), waiting: make(chan struct{})}
		s.flight = f
		s.mu.Unlock()
		if ctx.Done() == nil && lim.Until == math.MaxInt64 {
			// This caller cannot give up: load on its goroutine.
			l.load(ctx, s, f, userAgent())
			return f.st, nil
		}
		ua := userAgent()
		l.turns.Go(func() { l.load(ctx, s, f, ua) })
	} else {
		s.mu.Unlock()
	}
	var waiting <-chan struct{}
	var timeout <-chan time.Time
	if lim.Until != math.MaxInt64 {
		waiting = f.waiting
		if !lim.Deadline {
			// MaxWait, before the deadline if any.
			timer := time.NewTimer(max(lim.Left(l.now())-1, 0))
			defer timer.Stop()
			timeout = timer.C
		}
	}
	for {
		select {
		case <-f.done:
			return f.st, nil
		case <-waiting:
			waiting = nil
			sendAt := time.Unix(0, f.sendAt.Load())
			if now := l.now(); l.clock(sendAt) >= lim.Until {
				return nil, l.turns.NotYet(ctx, s, u, now, max(l.clock(sendAt)-now, time.Nanosecond), lim, ReasonRobotsTxt)
			}
		case <-timeout:
			select {
			case <-f.done:
				return f.st, nil
			default:
			}
			return nil, l.turns.NotYet(ctx, s, u, l.now(), fetchPoll, lim, ReasonRobotsTxt)
		case <-ctx.Done():
			return nil, fmt.Errorf("robots: waiting for %s/robots.txt: %w", s.origin, ctx.Err())
		}
	}
}

// flight is one load of a site's robots.txt. st is written once before done
// is closed, and read only after. When the fetch must wait for its turn,
// sendAt is set and waiting closed, so that a request that cannot wait so
// long gives up at once.
type flight struct {
	done     chan struct{}
	st       *state
	waiting  chan struct{}
	waitOnce sync.Once
	// when the fetch is sent, in Unix ns; set before waiting is closed, and
	// again if it waits more
	sendAt atomic.Int64
}

// SendAt tells the requests waiting for f that its fetch waits for its
// turn, until at: see pacing.Fetch.
func (f *flight) SendAt(at time.Time) {
	f.sendAt.Store(at.UnixNano())
	f.waitOnce.Do(func() { close(f.waiting) })
}

// add returns a+b, or the longest Duration where that overflows.
func add(a, b time.Duration) time.Duration { return pacing.Add(a, b) }

// fetchPoll is how long after a refusal a request that found a fetch of
// robots.txt in flight, with no known end, may try again (TurnError.RetryAt).
const fetchPoll = 100 * time.Millisecond

// load obtains a new state for s, publishes it and ends f. ctx is the
// context of the request that started it, for the log only: the load serves
// every request that waits for it, so it is neither canceled with that
// request nor carries its values (its httptrace hooks, say). A panic while
// loading (in Base, a Store, a Pacer or the Logger) ends the load with the
// origin unreachable, and is logged; it is not raised again, since the load
// may run on a goroutine of its own. The flight ends whatever happens.
func (l *loader) load(ctx context.Context, s *site, f *flight, userAgent string) {
	ctx = context.WithoutCancel(ctx)
	var st *state
	defer func() {
		// Deferred first, so it runs last: even if what follows panics,
		// the flight ends and its waiters are answered.
		if st == nil {
			st = l.panicked(s, "robots: panic while loading "+s.origin+"/robots.txt")
		}
		// An unreachable robots.txt says nothing of the origin's
		// rules: the pace knows them only from one that was read.
		s.Pace().Know(st.ask.Every, st.entry != nil && st.entry.Access != fleet.AccessUnreachable)
		l.warnCapped(ctx, s, st)
		s.cur.Store(st)
		l.cache.account(s, st.bytes, l.now())
		s.mu.Lock()
		s.flight = nil
		s.mu.Unlock()
		f.st = st
		close(f.done)
	}()
	defer func() {
		if v := recover(); v != nil {
			msg := fmt.Sprintf("robots: panic while loading %s/robots.txt: %v", s.origin, v)
			st = l.panicked(s, msg)
			func() {
				defer func() { recover() }() // a Logger that panics too
				l.log(ctx, msg, "stack", string(debug.Stack()))
			}()
		}
	}()
	st = l.obtain(ctx, s, f, s.cur.Load(), userAgent)
}

// panicked returns the state of s after a load that panicked: the fetch
// failed as unreachable, with msg as its error, and the last good copy (if
// any) is kept, as for any unreachable fetch.
func (l *loader) panicked(s *site, msg string) *state {
	err := errors.New(msg)
	r := &fetchResult{access: fleet.AccessUnreachable, err: err}
	return l.compileFetched(next(entryOf(s.cur.Load()), r, time.Now()), r, s.cur.Load())
}

// entryOf returns st's entry, or nil if st is nil.
func entryOf(st *state) *fleet.Entry {
	if st == nil {
		return nil
	}
	return st.entry
}

// obtain returns the state of s that follows prevSt (nil if none): an entry
// another user of the Store has fetched, or else the result of a fetch. The
// fetch takes the origin's turn before it is sent, like any request, and
// while it holds the Store's lock, so that no other user of the Store and
// Pacer sees the new entry before the fetch is counted as a turn.
func (l *loader) obtain(logCtx context.Context, s *site, f *flight, prevSt *state, userAgent string) *state {
	// The load's own context: no caller's values, no cancellation, and
	// no MaxWait, so that the fetch and its redirects wait for their
	// turns however far away.
	ctx := pacing.WithMaxWait(context.Background(), 0)
	prev := entryOf(prevSt)
	store := l.cfg.store
	if store != nil {
		sctx, cancel := context.WithTimeout(ctx, l.cfg.fetchTimeout)
		defer cancel()
		var notBefore time.Time
		if ns := s.forget.Swap(0); ns != 0 {
			notBefore = time.Unix(0, ns)
		}
		if e := l.storeGet(sctx, logCtx, s.origin); e != nil {
			if time.Now().Before(e.Expires) && !e.FetchedAt.Before(notBefore) {
				l.stats.storeHits.Add(1)
				return l.compile(e, nil)
			}
			if prev == nil || e.Expires.After(prev.Expires) {
				prev, prevSt = e, nil // the Store's entry has its Body
			}
		}
		if lk, ok := store.(fleet.Locker); ok {
			unlock, e := l.lockOrWait(sctx, logCtx, lk, s.origin, notBefore)
			if e != nil {
				l.stats.storeHits.Add(1)
				return l.compile(e, nil)
			}
			if unlock != nil {
				defer unlock()
			}
		}
	}

	// The fetch is a request to the origin: it waits for its turn,
	// spaced by the interval last known for the origin (on a first visit,
	// by the interval of the origin's latest turn in a shared Pacer; see
	// Pacer.Reserve) and never during a pause. With no deadline, waitTurn
	// fails only if the Pacer and the memory both fail, which they cannot.
	a := l.turns.FetchAsk(s)
	if prev != nil && prevSt == nil {
		// The Store's entry says what this Transport may not have
		// seen: the crawl-delay that the fleet keeps.
		if pa := l.compile(prev, nil).ask; pa.Every > a.Every {
			a.Every, a.Why = pa.Every, pa.Why
		}
	}
	tk, _ := l.turns.Wait(ctx, s, a, f, l.now(), nil)
	sent := l.now()
	r := l.fetch(ctx, s.origin, s.route.Load(), userAgent)
	// The request after the fetch is spaced from its answer, not from
	// when it left: the site sees the two at least an interval apart,
	// however long the fetch took.
	l.turns.Release(logCtx, s, tk, add(sent, r.hopWait), r.status == 0 && r.err != nil)
	if r.retryAfter > 0 && !l.cfg.ignoreRetryAfter {
		// A robots.txt that asks to wait pauses its origin like a
		// page does: the last good copy is obeyed, but no request
		// goes out until the pause ends.
		l.turns.Pause(logCtx, s, r.retryAfter, ReasonRetryAfter)
	} else if r.rateLimit > 0 {
		l.turns.Pause(logCtx, s, r.rateLimit, ReasonRateLimit)
	}
	now := time.Now()
	e := next(prev, r, now)
	l.stats.fetched(r.access)
	l.logFetch(logCtx, s.origin, r, e)
	if store != nil {
		pctx, cancel := l.storeCtx(ctx)
		if err := store.Put(pctx, s.origin, e); err != nil {
			l.stats.storeErrors.Add(1)
			l.log(logCtx, "robots: store put failed", "origin", s.origin, "err", err)
		}
		cancel()
	}
	return l.compileFetched(e, r, prevSt)
}

// storeTimeout bounds each call to a Store, so that a slow store delays a
// load by little more than that before the Transport goes on without it.
const storeTimeout = 2 * time.Second

// storeCtx returns ctx bounded for one call to the Store.
func (l *loader) storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, min(storeTimeout, l.cfg.fetchTimeout))
}

// storeGet returns the Store's entry of origin, or nil if it has none or
// fails.
func (l *loader) storeGet(ctx, logCtx context.Context, origin string) *fleet.Entry {
	ctx, cancel := l.storeCtx(ctx)
	defer cancel()
	e, err := l.cfg.store.Get(ctx, origin)
	if err != nil {
		l.stats.storeErrors.Add(1)
		l.log(logCtx, "robots: store get failed", "origin", origin, "err", err)
		return nil
	}
	return e
}

// lockTTL is how long a Store's fetch lock is held at most: the fetch's
// wait for its turn, the fetch and the Put.
func (l *loader) lockTTL() time.Duration {
	// The wait for the turn is bounded here, not by the longest pause or
	// crawl-delay: a lock left by a process that died must not hold the
	// fleet's loads back for a day. A fetch whose lock runs out while it
	// waits is only made twice, each in its turn.
	return min(l.cfg.maxCrawlDelay+l.cfg.maxRetryAfter, maxLockWait) + l.cfg.fetchTimeout + 2*storeTimeout
}

// maxLockWait bounds the wait for a turn that a Store's fetch lock covers.
const maxLockWait = 5 * time.Minute

// warnCapped logs, once per load, that MaxCrawlDelay shortens the crawl-delay
// that st's robots.txt asks of the Transport's agent.
func (l *loader) warnCapped(ctx context.Context, s *site, st *state) {
	if st.robots == nil || l.cfg.ignoreCrawlDelay || l.cfg.logger == nil {
		return
	}
	agent := l.cfg.agent
	if agent == "" {
		agent = "*"
	}
	g := st.robots.Group(agent)
	if d, ok := g.CrawlDelay(); ok && d > l.cfg.maxCrawlDelay {
		l.log(ctx, "robots: Crawl-delay capped at MaxCrawlDelay", "origin", s.origin,
			"asked", d, "kept", l.cfg.maxCrawlDelay)
	}
	if d, ok := g.RequestRate(); ok && d > l.cfg.maxCrawlDelay {
		l.log(ctx, "robots: Request-rate capped at MaxCrawlDelay", "origin", s.origin,
			"asked", d, "kept", l.cfg.maxCrawlDelay)
	}
}

// lockOrWait takes the Store's fetch lock of origin, or waits for the entry
// its holder will put. It returns the unlock func when the caller should
// fetch holding the lock, a fresh entry when the holder put one, or neither
// when the caller should fetch without the lock (ctx done, or a store error).
// An entry fetched before notBefore is not taken (see Transport.Forget).
func (l *loader) lockOrWait(ctx, logCtx context.Context, lk fleet.Locker, origin string, notBefore time.Time) (unlock func(), e *fleet.Entry) {
	usable := func(e *fleet.Entry) bool {
		return e != nil && time.Now().Before(e.Expires) && !e.FetchedAt.Before(notBefore)
	}
	delay := 50 * time.Millisecond
	for {
		lctx, cancel := l.storeCtx(ctx)
		unlock, ok, err := lk.TryLock(lctx, origin, l.lockTTL())
		cancel()
		if err != nil {
			l.stats.storeErrors.Add(1)
			l.log(logCtx, "robots: store lock failed", "origin", origin, "err", err)
			return nil, nil
		}
		if ok {
			// The last holder may have put its entry and unlocked
			// since this load looked: then there is nothing to fetch.
			if e := l.storeGet(ctx, logCtx, origin); usable(e) {
				unlock()
				return nil, e
			}
			return unlock, nil
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, nil
		case <-timer.C:
		}
		delay = min(2*delay, time.Second)
		if e := l.storeGet(ctx, logCtx, origin); usable(e) {
			return nil, e
		}
	}
}
