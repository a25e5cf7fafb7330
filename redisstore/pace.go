package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/f9014239/robots"
)

var _ robots.Pacer = (*Store)(nil)

// paceKey is the key of origin's turns, under which redis_rate keeps its
// GCRA state (redis_rate adds "rate:" before it).
func (s *Store) paceKey(origin string) string  { return s.cfg.prefix + "pace:" + origin }
func (s *Store) pauseKey(origin string) string { return s.cfg.prefix + "pause:" + origin }

// Reserve implements [robots.Pacer] with GCRA (redis_rate, one request per
// every, no burst), shared by every user of the Redis: it waits until
// origin's pause, if any, is over and then for its next turn, and returns a
// wait of zero once it has the turn. It returns at once, with ok false and
// the wait it foresees, when that wait is longer than maxWait from the call.
// If ctx is done while it waits, it returns an error that wraps ctx's error.
func (s *Store) Reserve(ctx context.Context, origin string, every, maxWait time.Duration) (wait time.Duration, ok bool, err error) {
	s.once.Do(s.init)
	start := time.Now()
	limit := redis_rate.Limit{Rate: 1, Burst: 1, Period: every}
	retried := false
	for {
		// A pause holds every turn back until it ends; afterwards the
		// turns are taken one per every again.
		var pause time.Duration
		err := s.do(ctx, "pace", func(ctx context.Context) error {
			var err error
			pause, err = s.client.PTTL(ctx, s.pauseKey(origin)).Result()
			return err
		})
		if err != nil {
			return 0, false, err
		}
		if pause <= 0 && every <= 0 {
			return 0, true, nil
		}
		if pause <= 0 {
			var res *redis_rate.Result
			err := s.do(ctx, "pace", func(ctx context.Context) error {
				var err error
				res, err = s.limiter().Allow(ctx, s.paceKey(origin), limit)
				return err
			})
			var rerr redis.Error
			if errors.As(err, &rerr) && !retried {
				// redis_rate could not read the value under the
				// key: it was not written by redis_rate. Drop it.
				s.log(ctx, slog.LevelWarn, "redisstore: ignoring unreadable pace", "key", "rate:"+s.paceKey(origin), "err", err)
				s.do(ctx, "pace", func(ctx context.Context) error {
					return s.client.Del(ctx, "rate:"+s.paceKey(origin)).Err()
				})
				retried = true
				continue
			}
			if err != nil {
				return 0, false, err
			}
			if res.Allowed > 0 {
				return 0, true, nil
			}
			pause = res.RetryAfter
		}
		if pause > maxWait-time.Since(start) {
			return pause, false, nil
		}
		if err := sleep(ctx, pause); err != nil {
			return 0, false, fmt.Errorf("redisstore: waiting for the turn of %s: %w", origin, err)
		}
	}
}

// Pause implements [robots.Pacer]: it holds back origin's turns, for every
// user of the Redis, until at least until.
func (s *Store) Pause(ctx context.Context, origin string, until time.Time) error {
	s.once.Do(s.init)
	d := time.Until(until)
	if d <= 0 {
		return nil
	}
	return s.do(ctx, "pause", func(ctx context.Context) error {
		return pauseScript.Run(ctx, s.client, []string{s.pauseKey(origin)}, d.Milliseconds()+1).Err()
	})
}

// pauseScript sets a pause of ARGV[1] milliseconds, unless one that ends
// later is set.
var pauseScript = redis.NewScript(`
if redis.call("PTTL", KEYS[1]) < tonumber(ARGV[1]) then
	redis.call("SET", KEYS[1], "1", "PX", ARGV[1])
end
return 0
`)

// limiter returns the Store's redis_rate limiter, made on first use.
func (s *Store) limiter() *redis_rate.Limiter {
	s.limOnce.Do(func() { s.lim = redis_rate.NewLimiter(s.client) })
	return s.lim
}

// sleep waits for d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
