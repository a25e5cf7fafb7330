package boltstore

import (
	"context"
	"hash/maphash"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/internal/pacing"
)

// shardCount is the number of shards of the paces in memory, each with its
// own lock, so that requests to different origins seldom wait for each
// other.
const shardCount = 32

// shard holds the paces of some origins.
type shard struct {
	mu sync.Mutex
	m  map[string]*pace // guarded by mu
	// guarded by mu: the origins whose pace changed since it was last
	// written; one that is not in m is deleted from the file
	dirty map[string]struct{}
}

func (s *Store) shard(origin string) *shard {
	return &s.shards[maphash.String(s.seed, origin)%shardCount]
}

// pace is the state of one origin under the rules of the Pacer contract,
// which package pacing keeps: its latest turn, the turn that holds it, its
// pause, its back-off and its response-time estimate. Its times are Unix ns
// on the Store's clock (see Store.now).
type pace = pacing.State

// idle reports whether p can no longer hold a turn back at now or later,
// nor has a turn within lastKeep: then the Store forgets it.
func idle(p *pace, now int64) bool { return !p.Matters(time.Duration(now), time.Duration(lastKeep)) }

// changed notes that the pace of origin, in sh, has changed: it is
// written by the next flush. The caller holds sh.mu.
func (s *Store) changed(sh *shard, origin string) uint64 {
	sh.dirty[origin] = struct{}{}
	return s.gen.Add(1)
}

// paceOf returns origin's pace in sh, a new one if there is none. The
// caller holds sh.mu.
func (s *Store) paceOf(sh *shard, origin string) *pace {
	p := sh.m[origin]
	if p == nil {
		p = &pace{}
		sh.m[origin] = p
	}
	return p
}

// recover applies the floor to p before a turn for r: after an unclean
// exit, an origin whose latest turn the file holds from before the floor,
// or none, is taken to have had a turn at the floor keeping its interval
// (see Open), if the turn for r keeps any spacing. The caller holds the
// shard's lock.
func (s *Store) recover(p *pace, r fleet.TurnRequest) {
	if s.floor <= 0 || p.HeldID != 0 || p.LastSeq != 0 && p.Last >= time.Duration(s.floor) {
		return
	}
	gap := max(r.Every, p.LastEvery, p.Adaptive(r.MaxAdaptive))
	if !r.Known {
		gap = max(gap, 1)
	}
	if gap > 0 {
		p.Record(time.Duration(s.floor), p.LastEvery, p.LastWhy, false, 0, 0)
	}
}

// Reserve implements [fleet.Pacer] with the rules of the contract (those of
// package internal/pacing, which the Transport's memory and redisstore's
// scripts follow): it takes origin's next turn, the first instant after
// origin's pause that is at least the spacing after the latest turn (after
// its answer once released, after its hold's end if never released), and
// returns how long to wait for it, without waiting. The spacing is the
// largest of r.Every, the latest turn's interval and the adaptive delay
// (twice the origin's response-time estimate, at most r.MaxAdaptive). A
// turn holds the origin, when r.Hold is positive, if it keeps an interval,
// the rules are unknown, the adaptive delay is on or the origin is backing
// off, until Release or r.Hold after it: meanwhile Reserve takes no turn
// and returns InFlight. A turn further away than r.MaxWait (strictly) is
// not taken.
//
// It does no I/O: the turn is written to the file by the next flush, within
// 100 ms, together with a heartbeat. The first Reserve after a second
// without one (the lease of the last heartbeat) writes the file itself
// before it returns, so that no turn is taken later than a lease after the
// heartbeat the file holds; see the package documentation.
func (s *Store) Reserve(ctx context.Context, origin string, r fleet.TurnRequest) (fleet.Turn, error) {
	if err := ctx.Err(); err != nil {
		return fleet.Turn{}, err
	}
	s.reserves.Add(1)
	id := r.ID
	if id == 0 {
		// Named at random, as redisstore does: a turn number could name
		// a turn of an earlier run.
		id = rand.Uint64() | 1
	}
	sh := s.shard(origin)
	sh.mu.Lock()
	if s.closed.Load() {
		sh.mu.Unlock()
		return fleet.Turn{}, ErrClosed
	}
	now := s.now()
	p := s.paceOf(sh, origin)
	s.recover(p, r)
	g := p.Reserve(time.Duration(now), pacing.Request{
		Every: r.Every, Known: r.Known, MaxWait: max(r.MaxWait, 0), Hold: r.Hold, ID: id, MaxAdaptive: r.MaxAdaptive,
	})
	if !g.OK {
		sh.mu.Unlock()
		return fleet.Turn{Wait: max(g.Wait, 0), InFlight: g.InFlight, Why: g.Why}, nil
	}
	gen := s.changed(sh, origin)
	sh.mu.Unlock()
	if now > s.lease.Load() && now >= s.retryAt.Load() {
		// A failure is logged; the turn holds in memory.
		s.flushWithin(ctx, gen)
	}
	return fleet.Turn{Wait: max(g.Wait, 0), OK: true, ID: g.Turn.ID, Why: g.Why}, nil
}

// Release implements [fleet.Pacer]: it ends the hold of the turn a.ID of
// origin, if it still holds it, spaces the next turn from now, and takes
// a.Took (a.Failed) as a sample of the origin's response time. It does no
// I/O: the next flush writes it.
func (s *Store) Release(ctx context.Context, origin string, a fleet.Answer) error {
	if a.ID == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	sh := s.shard(origin)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	p := sh.m[origin]
	if p == nil || !p.Release(time.Duration(s.now()), a) {
		return nil
	}
	s.changed(sh, origin)
	return nil
}

// Pause implements [fleet.Pacer]: it holds back origin's turns until at
// least until, and writes the pause to the file before it returns (pauses
// are rare). Until the pause ends every request to origin takes a turn,
// one at a time. If the write fails, the pause holds in memory and Pause
// returns the error.
func (s *Store) Pause(ctx context.Context, origin string, until time.Time, why string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d := time.Until(until)
	if d <= 0 {
		return nil
	}
	sh := s.shard(origin)
	sh.mu.Lock()
	if s.closed.Load() {
		sh.mu.Unlock()
		return ErrClosed
	}
	now := s.now()
	till := pacing.Add(time.Duration(now), d)
	p := s.paceOf(sh, origin)
	if p.PausedUntil >= till {
		sh.mu.Unlock()
		return nil
	}
	p.Pause(till, pacing.PauseReason(why))
	c := pauseCopy{until: int64(p.PausedUntil), heed: int64(p.HeedUntil), why: p.PauseWhy}
	gen := s.changed(sh, origin)
	sh.mu.Unlock()
	s.notePause(origin, c)
	return s.flushWithin(ctx, gen)
}

// PushBack implements [fleet.Pacer] with the back-off of the contract
// (pacing.State.PushBack): an answer to a request sent no later than the
// current back-off began is of its burst, and changes nothing; otherwise
// the level goes up by one (or starts again at one, if the last back-off
// pause ended more than b.Forgive ago), and the origin is paused for
// b.First × 2^(level-1), at most b.Max, lengthened by up to a tenth at
// random; its requests take turns one at a time until b.Forgive after the
// pause. The back-off and its pause are written to the file before it
// returns; if the write fails, they hold in memory and PushBack returns the
// error with the pause's end.
func (s *Store) PushBack(ctx context.Context, origin string, sent time.Time, b fleet.Backoff) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	jitter := rand.Float64()
	sh := s.shard(origin)
	sh.mu.Lock()
	if s.closed.Load() {
		sh.mu.Unlock()
		return time.Time{}, ErrClosed
	}
	now := s.now()
	p := s.paceOf(sh, origin)
	until, isNew := p.PushBack(time.Duration(now), time.Duration(now)-time.Since(sent), b, jitter)
	if !isNew {
		sh.mu.Unlock()
		return time.Now().Add(max(until-time.Duration(now), 0)), nil
	}
	c := pauseCopy{until: int64(p.PausedUntil), heed: int64(p.HeedUntil), why: p.PauseWhy}
	gen := s.changed(sh, origin)
	sh.mu.Unlock()
	s.notePause(origin, c)
	return time.Now().Add(until - time.Duration(now)), s.flushWithin(ctx, gen)
}

// PausedUntil implements [fleet.PauseChecker], from memory: when origin's
// pause ends, or the zero time.
func (s *Store) PausedUntil(ctx context.Context, origin string) (time.Time, string, error) {
	if err := s.usable(ctx); err != nil {
		return time.Time{}, "", err
	}
	until, why, _ := s.WatchedPause(origin)
	return until, why, nil
}

// pauseCopy is what the copy of the pauses keeps of an origin, in Unix ns
// on the Store's clock: the end of its pause, and until when its requests
// take turns one at a time (the end of the pause, or of a back-off's
// forgiveness); and the pause's reason.
type pauseCopy struct {
	until, heed int64
	why         string
}

// WatchedPause implements [fleet.PauseWatcher]: when origin's pause ends,
// or the zero time, from a copy in memory read without a lock. ok is false
// while origin's requests must take turns one at a time (it is paused, or
// backing off until its back-off is forgiven), so that a Transport asks
// Reserve, which holds them. A Transport calls it for each request to an
// origin with no interval to keep, instead of Reserve: such a request costs
// the Store a map lookup.
func (s *Store) WatchedPause(origin string) (until time.Time, why string, ok bool) {
	m := *s.pauses.Load()
	if len(m) == 0 {
		return time.Time{}, "", true
	}
	c, found := m[origin]
	if !found {
		return time.Time{}, "", true
	}
	now := s.now()
	if c.until > now {
		until, why = time.Now().Add(time.Duration(c.until-now)), c.why
	}
	return until, why, c.heed <= now
}

// notePause puts the pause c of origin in the copy that WatchedPause reads,
// and drops the pauses that have ended.
func (s *Store) notePause(origin string, c pauseCopy) {
	s.pausesMu.Lock()
	defer s.pausesMu.Unlock()
	now := s.now()
	old := *s.pauses.Load()
	m := make(map[string]pauseCopy, len(old)+1)
	for o, u := range old {
		if max(u.until, u.heed) > now {
			m[o] = u
		}
	}
	o := m[origin]
	if o.until > c.until {
		c.until, c.why = o.until, o.why
	}
	m[origin] = pauseCopy{until: c.until, heed: max(o.heed, c.heed), why: c.why}
	s.pauses.Store(&m)
}

// prunePauses drops the pauses that have ended from the copy that
// WatchedPause reads.
func (s *Store) prunePauses() {
	s.pausesMu.Lock()
	defer s.pausesMu.Unlock()
	now := s.now()
	old := *s.pauses.Load()
	m := make(map[string]pauseCopy, len(old))
	for o, u := range old {
		if max(u.until, u.heed) > now {
			m[o] = u
		}
	}
	if len(m) < len(old) {
		s.pauses.Store(&m)
	}
}
