package boltstore

import (
	"context"
	"hash/maphash"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/f9014239/robots"
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

// pace is the state of one origin, as redisstore keeps it in Redis: the
// latest turn and the interval it keeps, the turn that holds the origin,
// the pause, and the back-off. Times are Unix ns on the Store's clock (see
// Store.now); a part is gone once the time it is kept until has passed,
// as a key of redisstore's expires.
type pace struct {
	// the latest turn (the end of its hold while it holds the origin, its
	// answer once released), the interval it keeps, and until when it is
	// kept: lastKeep or its interval after it
	last, lastEvery, lastUntil int64
	// the turn that holds the origin, if heldUntil has not passed: its
	// ID, its time, and the end of its hold
	heldID            uint64
	heldAt, heldUntil int64
	pauseUntil        int64
	// the back-off: its level, when its latest pause began and ends, and
	// until when it is kept (its forgiveness, and backoffMargin)
	boLevel, boStart, boEnd, boUntil int64
}

// idle reports whether p can no longer hold a turn back at now or later:
// then the Store forgets it.
func (p *pace) idle(now int64) bool {
	return p.lastUntil <= now && p.heldUntil <= now && p.pauseUntil <= now && p.boUntil <= now
}

// addSat returns t+d, or the largest time if that overflows.
func addSat(t int64, d time.Duration) int64 {
	if d > 0 && t > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	return t + int64(d)
}

// changed notes that the pace of origin, in sh, has changed: it is
// written by the next flush. The caller holds sh.mu.
func (s *Store) changed(sh *shard, origin string) uint64 {
	sh.dirty[origin] = struct{}{}
	return s.gen.Add(1)
}

// Reserve implements [fleet.Pacer], in memory, with redisstore's rules:
// it takes origin's next turn, at least the larger of r.Every and the
// latest turn's interval after the latest turn (after its answer once
// released, after its hold's end if never released), and not before
// origin's pause ends, and returns how long to wait for it, without
// waiting. A turn that keeps an interval holds the origin, when r.Hold is
// positive, until Release or r.Hold after it: meanwhile Reserve takes no
// turn and returns InFlight, with the wait until the interval after the
// held turn. When r.Known is false, the turn keeps the larger of r.Every
// and the latest turn's interval. When the wait is longer than r.MaxWait,
// it takes no turn and returns the wait.
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
	ask := int64(max(r.Every, 0))
	if !r.Known {
		ask = max(ask, 1) // a turn with the rules unknown keeps an interval
	}
	sh := s.shard(origin)
	sh.mu.Lock()
	if s.closed.Load() {
		sh.mu.Unlock()
		return fleet.Turn{}, ErrClosed
	}
	now := s.now()
	p := sh.m[origin]
	if p == nil {
		p = &pace{}
	}
	turn := max(now, p.pauseUntil)
	var last, lastEvery int64
	has := p.lastUntil > now
	if has {
		last, lastEvery = p.last, p.lastEvery
	}
	if p.heldUntil > now {
		// In flight: a turn may be free once it is answered, which
		// cannot be before the interval after it left.
		free := max(p.heldAt+max(ask, lastEvery), turn) - now
		sh.mu.Unlock()
		return fleet.Turn{Wait: time.Duration(max(free, 0)), InFlight: true}, nil
	}
	keep := ask
	gap := max(ask, lastEvery)
	if gap > 0 && s.floor > 0 && (!has || last < s.floor) {
		// After an unclean exit: a turn that a crash lost (see Open).
		last, has = s.floor, true
	}
	if has {
		turn = max(turn, addSat(last, time.Duration(gap)))
		if !r.Known {
			keep = max(keep, lastEvery)
		}
	}
	wait := turn - now
	if wait > 0 && wait > int64(max(r.MaxWait, 0)) {
		sh.mu.Unlock()
		return fleet.Turn{Wait: time.Duration(wait)}, nil
	}
	var id uint64
	recorded := turn
	// An origin backing off is held one request at a time until its
	// back-off is forgiven, as in redisstore.
	backingOff := p.boLevel > 0 && now < p.boUntil-backoffMargin
	if r.Hold > 0 && (keep > 0 || backingOff) {
		recorded = addSat(turn, r.Hold)
		id = r.ID
		if id == 0 {
			id = uint64(turn)
		}
		p.heldID, p.heldAt, p.heldUntil = id, turn, recorded
	}
	p.last, p.lastEvery = recorded, keep
	p.lastUntil = addSat(recorded, time.Duration(max(lastKeep, keep)))
	sh.m[origin] = p
	g := s.changed(sh, origin)
	sh.mu.Unlock()
	if now > s.lease.Load() && now >= s.retryAt.Load() {
		// A failure is logged; the turn holds in memory.
		s.flushWithin(ctx, g)
	}
	return fleet.Turn{Wait: time.Duration(wait), OK: true, ID: id}, nil
}

// Release implements [fleet.Pacer]: it ends the hold of the turn a.ID of
// origin, if it still holds it, and spaces the next turn from now. It does
// no I/O: the next flush writes it.
func (s *Store) Release(ctx context.Context, origin string, a fleet.Answer) error {
	id := a.ID
	if id == 0 {
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
	now := s.now()
	p := sh.m[origin]
	if p == nil || p.heldID != id || p.heldUntil <= now {
		return nil
	}
	lastEvery := int64(0)
	if p.lastUntil > now {
		lastEvery = p.lastEvery
	}
	p.heldID, p.heldAt, p.heldUntil = 0, 0, 0
	p.last, p.lastEvery = now, lastEvery
	p.lastUntil = now + max(lastKeep, lastEvery)
	s.changed(sh, origin)
	return nil
}

// Pause implements [fleet.Pacer]: it holds back origin's turns until at
// least until, and writes the pause to the file before it returns (pauses
// are rare). If the write fails, the pause holds in memory and Pause
// returns the error.
func (s *Store) Pause(ctx context.Context, origin string, until time.Time) error {
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
	till := addSat(s.now(), d)
	p := sh.m[origin]
	if p == nil {
		p = &pace{}
		sh.m[origin] = p
	}
	if p.pauseUntil >= till {
		sh.mu.Unlock()
		return nil
	}
	p.pauseUntil = till
	g := s.changed(sh, origin)
	sh.mu.Unlock()
	s.notePause(origin, till)
	return s.flushWithin(ctx, g)
}

// PushBack implements [fleet.Pacer], with redisstore's rules: an answer to
// a request sent before the current back-off began is of its burst, and
// changes nothing; otherwise the level goes up by one (or starts again at
// one, if the last back-off pause ended more than b.Forgive ago), and the
// origin is paused for b.First × 2^(level-1), at most b.Max, lengthened by
// up to a tenth at random. The back-off and its pause are written to the
// file before it returns; if the write fails, they hold in memory and
// PushBack returns the error with the pause's end.
func (s *Store) PushBack(ctx context.Context, origin string, sent time.Time, b robots.Backoff) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	sh := s.shard(origin)
	sh.mu.Lock()
	if s.closed.Load() {
		sh.mu.Unlock()
		return time.Time{}, ErrClosed
	}
	now := s.now()
	sentAt := now - int64(time.Since(sent))
	p := sh.m[origin]
	if p == nil {
		p = &pace{}
		sh.m[origin] = p
	}
	if p.boUntil <= now {
		p.boLevel = 0 // forgotten, as redisstore's key expires
	}
	if p.boLevel > 0 && sentAt < p.boStart {
		left := max(p.boEnd-now, 0)
		sh.mu.Unlock()
		return time.Now().Add(time.Duration(left)), nil
	}
	if p.boLevel > 0 && now > addSat(p.boEnd, b.Forgive) {
		p.boLevel = 0
	}
	p.boLevel++
	d := backoffPause(b, p.boLevel, rand.Float64())
	p.boStart, p.boEnd = now, addSat(now, d)
	p.boUntil = addSat(addSat(p.boEnd, b.Forgive), time.Duration(backoffMargin))
	p.pauseUntil = max(p.pauseUntil, p.boEnd)
	till := p.pauseUntil
	g := s.changed(sh, origin)
	sh.mu.Unlock()
	s.notePause(origin, till)
	return time.Now().Add(d), s.flushWithin(ctx, g)
}

// backoffPause returns the pause of the back-off b at level (1 for the
// first incident), with the random fraction jitter in [0, 1) of its tenth
// added.
func backoffPause(b robots.Backoff, level int64, jitter float64) time.Duration {
	d := max(b.First, 0)
	for i := int64(1); i < level && d < b.Max; i++ {
		if d > math.MaxInt64/2 {
			d = b.Max
			break
		}
		d *= 2
	}
	d = min(d, max(b.Max, b.First))
	return d + time.Duration(float64(d)/10*jitter)
}

// PausedUntil implements [fleet.PauseChecker], from memory: when origin's
// pause ends, or the zero time.
func (s *Store) PausedUntil(ctx context.Context, origin string) (time.Time, error) {
	if err := s.usable(ctx); err != nil {
		return time.Time{}, err
	}
	until, _ := s.WatchedPause(origin)
	return until, nil
}

// WatchedPause implements [fleet.PauseWatcher]: when origin's pause ends,
// or the zero time, from a copy in memory read without a lock; ok is always
// true. A Transport calls it for each request to an origin with no interval
// to keep, instead of Reserve: such a request costs the Store a map lookup.
func (s *Store) WatchedPause(origin string) (until time.Time, ok bool) {
	m := *s.pauses.Load()
	if len(m) == 0 {
		return time.Time{}, true
	}
	u, found := m[origin]
	if !found {
		return time.Time{}, true
	}
	now := s.now()
	if u <= now {
		return time.Time{}, true
	}
	return time.Now().Add(time.Duration(u - now)), true
}

// notePause puts the pause of origin until until (on the Store's clock) in
// the copy that WatchedPause reads, and drops the pauses that have ended.
func (s *Store) notePause(origin string, until int64) {
	s.pausesMu.Lock()
	defer s.pausesMu.Unlock()
	now := s.now()
	old := *s.pauses.Load()
	m := make(map[string]int64, len(old)+1)
	for o, u := range old {
		if u > now {
			m[o] = u
		}
	}
	if until > m[origin] {
		m[origin] = until
	}
	s.pauses.Store(&m)
}

// prunePauses drops the pauses that have ended from the copy that
// WatchedPause reads.
func (s *Store) prunePauses() {
	s.pausesMu.Lock()
	defer s.pausesMu.Unlock()
	now := s.now()
	old := *s.pauses.Load()
	m := make(map[string]int64, len(old))
	for o, u := range old {
		if u > now {
			m[o] = u
		}
	}
	if len(m) < len(old) {
		s.pauses.Store(&m)
	}
}
