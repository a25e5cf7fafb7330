package robots

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/url"
	"time"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/internal/pacing"
)

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

// pacerRelease releases the held turn a.ID of s in the Pacer, answered as a
// says.
func (tn *turns) pacerRelease(ctx context.Context, s *site, a fleet.Answer) {
	tn.afterAnswer(ctx, func(pctx context.Context) {
		if err := tn.cfg.pacer.Release(pctx, s.origin, a); err != nil {
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
		tn.goOwed(run)
		return
	}
	run()
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
// It returns a grant that is not ok when a request to the origin is in
// flight and the caller may wait for its answer. If the turn is at or past
// lim, reserve takes none and returns a [*TurnError]; an error that wraps
// ctx's error if ctx is done.
//
// now is the time on the Transport's clock, read no earlier than the
// caller's last wait.
func (tn *turns) reserve(ctx context.Context, s *site, a ask, lim turnLimit, f *flight, waited *time.Duration, u *url.URL, now time.Duration) (grant, error) {
	p := tn.cfg.pacer
	if p == nil {
		if now < 0 {
			now = tn.now()
		}
		return tn.reserveMemory(ctx, s, u, a, lim, now)
	}
	tn.knowWatchedPause(s)
	for {
		now = tn.now()
		at, why := tn.paceOf(s).Next(now, tn.request(a, lim.left(now)))
		if why == ReasonInFlight {
			// In flight from this process: wait for its answer here.
			g, err := tn.reserveMemory(ctx, s, u, a, lim, now)
			if err == nil && g.ok {
				tn.giveBack(ctx, s, g.tk) // answered meanwhile
				continue
			}
			return g, err
		}
		known := at - now
		if known <= 0 {
			break
		}
		if known >= lim.left(now) {
			return grant{}, tn.notYet(ctx, s, u, now, known, lim, why)
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
	now = tn.now()
	left := lim.left(now)
	// The Pacer holds the turn if it keeps an interval, or the origin
	// is backing off in the fleet (see Pacer.Reserve).
	hold := tn.cfg.turnTimeout
	// The turn's ID is drawn here, so that a turn whose answer is lost
	// (the call cut short by MaxWait) can be released all the same.
	id := rand.Uint64() | 1
	pctx, cancel := tn.pacerCtx(ctx, lim)
	asked := time.Now()
	r, err := p.Reserve(pctx, s.origin, fleet.TurnRequest{Every: a.every, Known: a.known, MaxWait: left - 1, Hold: hold, ID: id, MaxAdaptive: tn.cfg.maxAdaptive})
	cutShort := err != nil && ctx.Err() == nil && pctx.Err() != nil && lim.maxWait && !tn.pacerDown()
	cancel()
	if err == nil {
		tn.pacerSlowSince.Store(0)
	}
	if err == nil && r.OK && r.Wait >= left && lim.until != math.MaxInt64 {
		// A Pacer that rounds may hand out a turn at the limit itself.
		r.OK = false
		if r.ID != 0 {
			tn.pacerRelease(ctx, s, fleet.Answer{ID: r.ID, At: time.Now(), Unsent: true})
		}
	}
	why := a.why
	if pacing.Spacing(r.Why) {
		why = r.Why // the Pacer knows what sets the turn: a pause of another's, say
	}
	switch {
	case err == nil && r.OK:
		// Counted from the answer, not the question: the turn the
		// process remembers is never earlier than the Pacer's.
		wait := max(r.Wait, 0)
		at := add(tn.now(), wait)
		t := tn.paceOf(s).Record(at, a.every, a.why, r.ID != 0, add(at, hold), r.ID)
		return grant{wait: wait, ok: true, why: why, tk: turn{p: tn.paceOf(s), t: t, pacer: true}}, nil
	case err == nil && r.InFlight:
		// In flight from another user of the Pacer: poll it, from
		// when it foresees a free turn (see waitFreed).
		wait := max(r.Wait, time.Millisecond)
		if lim.until != math.MaxInt64 && wait >= left {
			return grant{}, tn.notYet(ctx, s, u, now, wait, lim, ReasonInFlight)
		}
		return grant{wait: wait, why: ReasonInFlight}, nil
	case err == nil:
		wait := max(r.Wait, time.Nanosecond) // a Pacer that refuses a turn it says is now
		return grant{}, tn.notYet(ctx, s, u, now, wait, lim, why)
	case ctx.Err() != nil:
		tn.releaseLost(ctx, s, id, hold)
		return grant{}, fmt.Errorf("robots: waiting for the turn of %s: %w", s.origin, ctx.Err())
	case cutShort:
		// The Pacer did not answer within MaxWait: the turn is
		// refused, not taken in memory, which knows nothing of the
		// fleet's requests in flight. One the Pacer took is released.
		tn.releaseLost(ctx, s, id, hold)
		now = tn.now()
		return grant{}, tn.notYet(ctx, s, u, now, max(time.Since(asked), time.Millisecond), lim, ReasonPacer)
	}
	tn.pacerFailed(ctx, s.origin, err)
	return tn.reserveMemory(ctx, s, u, a, lim, tn.now())
}

// reserveMemory takes s's next turn in memory, for a request that keeps a
// under the limit lim. It returns a grant that is not ok when a request to
// the origin is in flight and the caller may wait for its answer, and a
// [*TurnError] when the turn is at or past lim. now, on the Transport's
// clock, may be a little stale, never ahead: a turn is then taken no
// earlier than it should, and its wait is counted from now.
func (tn *turns) reserveMemory(ctx context.Context, s *site, u *url.URL, a ask, lim turnLimit, now time.Duration) (grant, error) {
	p := tn.paceOf(s)
	g, w := p.Reserve(now, tn.request(a, lim.left(now)))
	for w.Dropped {
		// Dropped with its site since paceOf: nothing in it can hold a
		// request back, and the origin's current pace decides.
		p = tn.paceOf(s)
		g, w = p.Reserve(now, tn.request(a, lim.left(now)))
	}
	if !g.OK && (w.Freed == nil || g.Wait >= lim.left(now)) {
		return grant{}, tn.notYet(ctx, s, u, now, g.Wait, lim, g.Why)
	}
	return grant{wait: g.Wait, ok: g.OK, why: g.Why, freed: w.Freed, freeBy: w.By, tk: turn{p: p, t: g.Turn}}, nil
}

// releaseLost releases, in the Pacer, the turn id that a Reserve cut short
// may have taken with a hold, on a goroutine bounded by storeTimeout: the
// caller does not wait for it.
func (tn *turns) releaseLost(ctx context.Context, s *site, id uint64, hold time.Duration) {
	if hold <= 0 {
		return
	}
	tn.goOwed(func() {
		tn.pacerRelease(context.WithoutCancel(ctx), s, fleet.Answer{ID: id, At: time.Now(), Unsent: true})
	})
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
