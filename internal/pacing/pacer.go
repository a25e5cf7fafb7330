package pacing

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/url"
	"time"

	"github.com/f9014239/robots/fleet"
)

// grant is what reserve answers.
type grant struct {
	wait time.Duration // until the turn, or, if !ok, the estimate of when it may be free
	ok   bool
	why  string // what sets the turn's time, if wait > 0 or !ok
	// when !ok for a turn in flight in memory: closed when it ends, and
	// when its hold runs out (freeBy) at the latest
	freed  <-chan struct{}
	freeBy time.Duration
	tk     Ticket
}

// request returns the pacing request of a request that keeps a, and may
// wait up to left (a wait of left or more is refused).
func (tn *Turns) request(a Ask, left time.Duration) Request {
	return Request{Every: a.Every, Why: a.Why, Known: a.Known, MaxWait: left - 1,
		Hold: tn.cfg.TurnTimeout, MaxAdaptive: tn.cfg.MaxAdaptive}
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
// is released as unsent.
//
// It returns a grant that is not ok when a request to the origin is in
// flight and the caller may wait for its answer. If the turn is at or past
// lim, reserve takes none and returns the error of NotYet; an error that
// wraps ctx's error if ctx is done.
//
// now is the time on the Turns' clock, read no earlier than the caller's
// last wait.
func (tn *Turns) reserve(ctx context.Context, s Site, a Ask, lim Limit, f Fetch, waited *time.Duration, u *url.URL, now time.Duration) (grant, error) {
	p := tn.cfg.Pacer
	if p == nil {
		return tn.reserveMemory(ctx, s, u, a, lim, now)
	}
	tn.knowWatchedPause(s)
	for {
		now = tn.Now()
		at, why := s.Pace().Next(now, tn.request(a, lim.Left(now)))
		if why == ReasonInFlight {
			// In flight from this process: wait for its answer here.
			g, err := tn.reserveMemory(ctx, s, u, a, lim, now)
			if err == nil && g.ok {
				tn.GiveBack(ctx, s, g.tk) // answered meanwhile
				continue
			}
			return g, err
		}
		known := at - now
		if known <= 0 {
			break
		}
		if known >= lim.Left(now) {
			return grant{}, tn.NotYet(ctx, s, u, now, known, lim, why)
		}
		if f != nil {
			f.SendAt(tn.Wall(at))
		}
		tn.debugWait(ctx, s, known, why, u)
		if err := tn.sleep(ctx, s, known, waited); err != nil {
			return grant{}, err
		}
	}
	now = tn.Now()
	left := lim.Left(now)
	// The Pacer holds the turn if it keeps an interval, or the origin
	// is backing off in the fleet (see Pacer.Reserve).
	hold := tn.cfg.TurnTimeout
	// The turn's ID is drawn here, so that a turn whose answer is lost
	// (the call cut short by MaxWait) can be released all the same.
	id := rand.Uint64() | 1
	pctx, cancel := tn.pacerCtx(ctx, lim, now)
	asked := now
	r, err := p.Reserve(pctx, s.Origin(), fleet.TurnRequest{Every: a.Every, Known: a.Known, MaxWait: left - 1, Hold: hold, ID: id, MaxAdaptive: tn.cfg.MaxAdaptive})
	callerDone := err != nil && over(ctx)
	cutShort := err != nil && !callerDone && over(pctx) && lim.maxWait && !tn.pacerDown()
	cancel()
	if err == nil {
		tn.pacerSlowSince.Store(0)
	}
	if err == nil && r.OK && r.Wait >= left && lim.Until != math.MaxInt64 {
		// A Pacer that rounds may hand out a turn at the limit itself.
		r.OK = false
		if r.ID != 0 {
			tn.pacerRelease(ctx, s, fleet.Answer{ID: r.ID, At: tn.Wall(tn.Now()), Unsent: true})
		}
	}
	why := a.Why
	if Spacing(r.Why) {
		why = r.Why // the Pacer knows what sets the turn: a pause of another's, say
	}
	switch {
	case err == nil && r.OK:
		// Counted from the answer, not the question: the turn the
		// process remembers is never earlier than the Pacer's.
		wait := max(r.Wait, 0)
		at := Add(tn.Now(), wait)
		pace := s.Pace()
		t := pace.Record(at, a.Every, a.Why, r.ID != 0, Add(at, hold), r.ID)
		return grant{wait: wait, ok: true, why: why, tk: Ticket{p: pace, t: t, pacer: true}}, nil
	case err == nil && r.InFlight:
		// In flight from another user of the Pacer: poll it, from
		// when it foresees a free turn (see waitFreed).
		wait := max(r.Wait, time.Millisecond)
		if lim.Until != math.MaxInt64 && wait >= left {
			return grant{}, tn.NotYet(ctx, s, u, now, wait, lim, ReasonInFlight)
		}
		return grant{wait: wait, why: ReasonInFlight}, nil
	case err == nil:
		wait := max(r.Wait, time.Nanosecond) // a Pacer that refuses a turn it says is now
		return grant{}, tn.NotYet(ctx, s, u, now, wait, lim, why)
	case callerDone:
		tn.releaseLost(ctx, s, id, hold)
		return grant{}, fmt.Errorf("robots: waiting for the turn of %s: %w", s.Origin(), cmp.Or(ctx.Err(), context.DeadlineExceeded))
	case cutShort:
		// The Pacer did not answer within MaxWait: the turn is
		// refused, not taken in memory, which knows nothing of the
		// fleet's requests in flight. One the Pacer took is released.
		tn.releaseLost(ctx, s, id, hold)
		now = tn.Now()
		return grant{}, tn.NotYet(ctx, s, u, now, max(now-asked, time.Millisecond), lim, ReasonPacer)
	}
	tn.pacerFailed(ctx, s.Origin(), err)
	return tn.reserveMemory(ctx, s, u, a, lim, tn.Now())
}

// over reports whether ctx is done or its deadline has passed: a call cut
// short by its deadline may return before ctx says so (go-redis v9.24.0
// does), and its failure is the caller's, not the Pacer's.
func over(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// reserveMemory takes s's next turn in memory, for a request that keeps a
// under the limit lim. It returns a grant that is not ok when a request to
// the origin is in flight and the caller may wait for its answer, and the
// error of NotYet when the turn is at or past lim. now may be a little
// stale, never ahead: a turn is then taken no earlier than it should, and
// its wait is counted from now.
func (tn *Turns) reserveMemory(ctx context.Context, s Site, u *url.URL, a Ask, lim Limit, now time.Duration) (grant, error) {
	p := s.Pace()
	g, w := p.Reserve(now, tn.request(a, lim.Left(now)))
	for w.Dropped {
		// Dropped with its site since Pace: nothing in it can hold a
		// request back, and the origin's current pace decides.
		p = s.Pace()
		g, w = p.Reserve(now, tn.request(a, lim.Left(now)))
	}
	if !g.OK && (w.Freed == nil || g.Wait >= lim.Left(now)) {
		return grant{}, tn.NotYet(ctx, s, u, now, g.Wait, lim, g.Why)
	}
	return grant{wait: g.Wait, ok: g.OK, why: g.Why, freed: w.Freed, freeBy: w.By, tk: Ticket{p: p, t: g.Turn}}, nil
}

// pacerDown notes that a Reserve was cut short by MaxWait, and reports
// whether the Pacer has answered none for CallTimeout, the bound of one
// call: then it counts as failed, and turns are taken in memory, as for a
// Pacer that errs, rather than refused for as long as it hangs.
func (tn *Turns) pacerDown() bool {
	now := int64(tn.Now())
	since := tn.pacerSlowSince.Load()
	if since == 0 {
		tn.pacerSlowSince.CompareAndSwap(0, max(now, 1))
		return false
	}
	return now-since >= int64(tn.cfg.CallTimeout)
}

// pacerRelease releases the held turn a.ID of s in the Pacer, answered as a
// says.
func (tn *Turns) pacerRelease(ctx context.Context, s Site, a fleet.Answer) {
	tn.afterAnswer(ctx, func(pctx context.Context) {
		if err := tn.cfg.Pacer.Release(pctx, s.Origin(), a); err != nil {
			tn.pacerFailed(ctx, s.Origin(), err)
		}
	})
}

// afterAnswer makes call, a call to the Pacer after a request's answer (a
// release, a pause, a back-off), under a context of its own bounded by
// CallTimeout, so that it is made even when the request is cancelled as
// its answer comes. For a request under MaxWait it is made on a goroutine
// of its own (see Go), which ends with the call: a worker that gave
// MaxWait is not held by a Pacer that hangs. The memory's state is the
// caller's to change first.
func (tn *Turns) afterAnswer(ctx context.Context, call func(context.Context)) {
	run := func() {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tn.cfg.CallTimeout)
		defer cancel()
		call(pctx)
	}
	if tn.maxWaitOf(ctx) > 0 {
		tn.Go(run)
		return
	}
	run()
}

// releaseLost releases, in the Pacer, the turn id that a Reserve cut short
// may have taken with a hold, as unsent, on a goroutine bounded by
// CallTimeout: the caller does not wait for it.
func (tn *Turns) releaseLost(ctx context.Context, s Site, id uint64, hold time.Duration) {
	if hold <= 0 {
		return
	}
	tn.Go(func() {
		tn.pacerRelease(context.WithoutCancel(ctx), s, fleet.Answer{ID: id, At: tn.Wall(tn.Now()), Unsent: true})
	})
}

// pacerCtx returns ctx bounded for one call to the Pacer at now: by
// CallTimeout, and by the request's limit, so that a Pacer that hangs holds
// a request no longer than MaxWait. A Reserve cut short by MaxWait refuses
// the request for now (ReasonPacer), until the Pacer has answered none for
// CallTimeout (see pacerDown); other failures take the turn in memory.
func (tn *Turns) pacerCtx(ctx context.Context, lim Limit, now time.Duration) (context.Context, context.CancelFunc) {
	d := tn.cfg.CallTimeout
	if lim.maxWait {
		d = min(d, max(lim.Left(now)-1, time.Millisecond))
	}
	return context.WithTimeout(ctx, d)
}

// pacerFailed logs that the Pacer failed for origin, unless a failure was
// logged in the last pacerLogInterval.
func (tn *Turns) pacerFailed(ctx context.Context, origin string, err error) {
	if tn.debugging(ctx) {
		tn.cfg.Log.Debug(ctx, "robots: pacing in memory", slog.String("origin", origin), slog.Any("err", err))
	}
	now := int64(tn.Now())
	last := tn.pacerLogged.Load()
	if last != 0 && now-last < int64(pacerLogInterval) || !tn.pacerLogged.CompareAndSwap(last, max(now, 1)) {
		return
	}
	tn.warn(ctx, "robots: pacer failed; pacing in memory", "origin", origin, "err", err)
}

// pacerLogInterval is the least time between two records of Pacer failures:
// a Pacer is asked for every request, and when it fails, it fails for each.
const pacerLogInterval = time.Minute

// knowWatchedPause copies into s's pace the pause that the Pacer's copy of
// the fleet's pauses holds for s's origin, if it is a PauseWatcher and the
// copy holds one: a pause known from any source holds, even when the copy
// may be stale or the Pacer no longer holds it.
func (tn *Turns) knowWatchedPause(s Site) {
	if tn.watcher == nil {
		return
	}
	if until, why, _ := tn.watcher.WatchedPause(s.Origin()); !until.IsZero() {
		if d := tn.At(until); d > tn.Now() {
			s.Pace().Pause(d, PauseReason(why))
		}
	}
}

// watchedUnpaused reports whether the Pacer is a PauseWatcher whose copy is
// up to date and holds no pause of origin that has not ended.
func (tn *Turns) watchedUnpaused(origin string) bool {
	if tn.watcher == nil {
		return false
	}
	until, _, fresh := tn.watcher.WatchedPause(origin)
	return fresh && (until.IsZero() || tn.At(until) <= tn.Now())
}

// paused reports whether s's origin is paused at now, in memory or, when
// the request waited for its turn and the Pacer can tell, in the Pacer.
func (tn *Turns) paused(ctx context.Context, s Site, now time.Duration, waited bool) bool {
	if s.Pace().Paused(now) {
		return true
	}
	pc := tn.checker
	if pc == nil || !waited {
		return false
	}
	pctx, cancel := context.WithTimeout(ctx, tn.cfg.CallTimeout)
	until, why, err := pc.PausedUntil(pctx, s.Origin())
	cancel()
	if err != nil {
		tn.pacerFailed(ctx, s.Origin(), err)
		return false
	}
	d := tn.At(until)
	if until.IsZero() || d <= tn.Now() {
		return false
	}
	// Kept in memory, so that the next turn waits it out before asking
	// the Pacer again, even if the Pacer's own turn ignores it.
	s.Pace().Pause(d, PauseReason(why))
	return true
}
