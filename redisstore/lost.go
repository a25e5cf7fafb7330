package redisstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/redis/go-redis/v9"
)

// Turns that may have been taken unseen.
//
// A Reserve that gets no answer from Redis (its command timed out, or its
// connection failed) may have taken a turn all the same: the command left,
// and Redis runs it when it lands. Its caller never learns the turn's ID,
// and goes on without it (a Transport paces the origin in its memory), so
// no one would release the turn, and the origin would stay held, across
// the fleet, until the hold ran out. The Store remembers such a turn and
// releases it as never sent (fleet.Answer's Unsent: the hold ends, the next
// turn spaced from the turn's time, nothing learnt of the origin) once it
// tries Redis again: with the next Reserve of the origin, in the same
// command, or on a goroutine that waits for the end of the Cooldown, and
// for Timeout after the failed Reserve, so that a command that was on its
// way has landed before its release. A release of a turn that was never
// taken changes nothing.

const (
	// maxLostTurns bounds the turns a Store remembers: past it, the
	// oldest is forgotten, and its hold runs out by itself.
	maxLostTurns = 1024
	// maxLostWait bounds the time from a lost Reserve to its turn that a
	// Store allows for (a caller's MaxWait may be endless): a turn
	// further away is forgotten before it ends its hold.
	maxLostWait = time.Hour
)

// lostTurn is a turn that a Reserve with no answer may have taken.
type lostTurn struct {
	origin string
	id     uint64    // 0: none
	asked  time.Time // when the Reserve failed
	until  time.Time // when its hold has ended, at the latest
}

// lostTurns is a Store's record of the turns that may have been taken
// unseen, and of the goroutine that releases them.
type lostTurns struct {
	n atomic.Int64 // len(turns), read without mu on the hot path

	mu      sync.Mutex
	turns   []lostTurn // guarded by mu, oldest first
	running bool       // guarded by mu: the flushing goroutine runs
	closed  bool       // guarded by mu: Close was called
	stop    chan struct{}
	done    chan struct{} // closed when the goroutine ends; nil if none ran
}

// put remembers t.
func (l *lostTurns) put(t lostTurn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.turns) >= maxLostTurns {
		l.turns = l.turns[1:]
	}
	l.turns = append(l.turns, t)
	l.n.Store(int64(len(l.turns)))
}

// take returns and forgets a turn of origin that is due (asked at least
// wait ago) and whose hold may not have ended, or a lostTurn with ID 0.
func (l *lostTurns) take(origin string, wait time.Duration) lostTurn {
	if l.n.Load() == 0 {
		return lostTurn{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	for i, t := range l.turns {
		if t.origin == origin && now.Before(t.until) && !now.Before(t.asked.Add(wait)) {
			l.turns = append(l.turns[:i], l.turns[i+1:]...)
			l.n.Store(int64(len(l.turns)))
			return t
		}
	}
	return lostTurn{}
}

// due returns and forgets the turns that may be released at now: asked at
// least wait ago. It drops those whose hold has ended, and returns when
// the first of the others is due (the zero time if none is left).
func (l *lostTurns) due(now time.Time, wait time.Duration) (ts []lostTurn, next time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.turns[:0]
	for _, t := range l.turns {
		switch at := t.asked.Add(wait); {
		case !now.Before(t.until):
		case !now.Before(at):
			ts = append(ts, t)
		default:
			kept = append(kept, t)
			if next.IsZero() || at.Before(next) {
				next = at
			}
		}
	}
	clear(l.turns[len(kept):])
	l.turns = kept
	l.n.Store(int64(len(l.turns)))
	return ts, next
}

// answered reports whether err, returned by a command of the Store, came
// with an answer from Redis (none, or an error reply): the command ran.
func answered(err error) bool {
	var reply redis.Error
	return err == nil || errors.Is(err, redis.Nil) || errors.As(err, &reply)
}

// flushLost starts the goroutine that releases the lost turns, unless it
// runs or the Store is closed.
func (s *Store) flushLost() {
	l := &s.lost
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running || l.closed || len(l.turns) == 0 {
		return
	}
	l.running = true
	if l.stop == nil {
		l.stop = make(chan struct{})
	}
	done := make(chan struct{})
	l.done = done
	go func() {
		defer close(done)
		s.releaseLost()
	}()
}

// releaseLost releases the lost turns as never sent, each when it is due
// and the Store tries Redis, until none is left or the Store is closed.
func (s *Store) releaseLost() {
	l := &s.lost
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-l.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		now := time.Now()
		next := now
		if o := s.outage.Load(); o != nil && now.Before(o.until) {
			next = o.until
		} else {
			ts, due := l.due(now, s.cfg.timeout)
			for i, t := range ts {
				err := s.Release(ctx, t.origin, fleet.Answer{ID: t.id, At: now, Unsent: true})
				if err != nil && !answered(err) {
					// Redis failed again: the rest wait for
					// the end of the Cooldown.
					for _, t := range ts[i:] {
						l.put(t)
					}
					break
				}
			}
			next = due
			if o := s.outage.Load(); o != nil && now.Before(o.until) {
				next = o.until
			}
		}
		l.mu.Lock()
		if ctx.Err() != nil || len(l.turns) == 0 {
			l.running = false
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		if next.IsZero() || !next.After(time.Now()) {
			next = time.Now().Add(s.cfg.timeout)
		}
		timer := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			timer.Stop()
		case <-timer.C:
		}
	}
}

// closeLost stops the goroutine that releases the lost turns, and waits for
// it to end. Turns left are released by the next Reserve of their origin,
// if any; else their holds run out.
func (s *Store) closeLost() {
	l := &s.lost
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		if l.stop != nil {
			close(l.stop)
		}
	}
	done := l.done
	l.mu.Unlock()
	if done != nil {
		<-done
	}
}
