package redisstore

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestOperatorFaultsHold drives Redis as an operator's may misbehave, in
// ways the Store withstands: a Redis out of memory that refuses writes
// (maxmemory, noeviction), FLUSHALL while a fetch lock is held, and the
// Store's connections killed (CLIENT KILL). Every verdict stays right, and
// a former holder's unlock leaves the lock that another took alone.
func TestOperatorFaultsHold(t *testing.T) {
	addr := redisAddr(t)
	admin := newClient(t, addr)
	ctx := context.Background()
	all := func(args ...any) {
		t.Helper()
		if err := eachNode(ctx, admin, func(ctx context.Context, c *redis.Client) error { return c.Do(ctx, args...).Err() }); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("out of memory", func(t *testing.T) {
		log := &logRecorder{}
		p := newProcess(t, addr, testPrefix(t, addr), slog.New(log))
		s := newSite(t, disallowPrivate)
		all("CONFIG", "SET", "maxmemory-policy", "noeviction")
		all("CONFIG", "SET", "maxmemory", "1")
		t.Cleanup(func() { all("CONFIG", "SET", "maxmemory", "0") })
		checkVerdicts(t, p.client, s.URL)
		if err := p.store.Pause(ctx, s.origin(), time.Now().Add(time.Second), "retry-after"); err == nil {
			t.Errorf("Pause on a Redis out of memory succeeded")
		}
		if s.fetches.Load() != 1 {
			t.Errorf("robots.txt fetched %d times, want 1", s.fetches.Load())
		}
		t.Logf("%d records logged", log.count(slog.LevelDebug, ""))
	})
	t.Run("flushall while locked", func(t *testing.T) {
		prefix := testPrefix(t, addr)
		a, b := newProcess(t, addr, prefix, nil), newProcess(t, addr, prefix, nil)
		unlock, ok, err := a.store.TryLock(ctx, "x", 300*time.Millisecond)
		if !ok || err != nil {
			t.Fatal(ok, err)
		}
		all("FLUSHALL")
		u, ok, _ := b.store.TryLock(ctx, "x", time.Minute)
		if !ok {
			t.Fatal("lock not free after FLUSHALL")
		}
		defer u()
		time.Sleep(400 * time.Millisecond) // a's extensions find the lock lost
		unlock()
		if _, ok, _ := a.store.TryLock(ctx, "x", time.Minute); ok {
			t.Errorf("the former holder's unlock released the lock taken after FLUSHALL")
		}
	})
	t.Run("client kill", func(t *testing.T) {
		p := newProcess(t, addr, testPrefix(t, addr), nil)
		s := newSite(t, "User-agent: *\nCrawl-delay: 0.05\nDisallow: /private\n")
		checkVerdicts(t, p.client, s.URL)
		all("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
		all("CLIENT", "KILL", "TYPE", "pubsub")
		checkVerdicts(t, p.client, s.URL)
		if s.fetches.Load() != 1 {
			t.Errorf("robots.txt fetched %d times, want 1", s.fetches.Load())
		}
	})
}
