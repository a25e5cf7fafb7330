package redisstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/redis/go-redis/v9"

	"github.com/f9014239/robots"
)

// The tests in this file drive the Store the way an operator's Redis
// misbehaves: values written under the Store's keys by something else, and
// pauses longer than a day.

// TestLongPauseReachesFleet pauses origins for two days, a hundred years
// and the longest time.Duration from one Store: each pause reaches the copy
// of another Store whole, and Reserve and PausedUntil, which ask Redis, hold
// back the origin's turns for as long.
func TestLongPauseReachesFleet(t *testing.T) {
	stores := newStores(t, 3)
	a, b, c := stores[0], stores[1], stores[2]
	c.Close() // c's copy is never used: it asks Redis
	waitLive(t, b)
	ctx := context.Background()
	for i, d := range []time.Duration{48 * time.Hour, 100 * 365 * 24 * time.Hour, math.MaxInt64} {
		origin := fmt.Sprintf("https://long%d.example", i)
		until := time.Now().Add(d)
		if err := a.Pause(ctx, origin, until, "retry-after"); err != nil {
			t.Fatal(err)
		}
		// A pause ends no earlier than until, less the time between
		// this test reading its clock and Redis reading its own.
		least := until.Add(-waitTolerance)
		if got := waitWatched(t, b, origin, DefaultWatchInterval+DefaultTimeout); got.Before(least) {
			t.Errorf("pause of %v: the copy of another Store ends it %v early", d, until.Sub(got))
		}
		if got, _, err := c.PausedUntil(ctx, origin); err != nil || got.Before(least) {
			t.Errorf("pause of %v: PausedUntil = %v, %v; want no earlier than %v", d, got, err, until)
		}
		wait, ok := reserve(t, c, origin, 0, time.Hour)
		if ok || wait < time.Until(least) {
			t.Errorf("pause of %v: Reserve = %v, %v; want no turn, and a wait of the pause", d, wait, ok)
		}
	}
}

// TestFleetLongRetryAfter: a Retry-After of two days, which a Transport
// whose MaxRetryAfter is longer obeys, holds back the requests of every
// process of the fleet, not only the one that received it.
func TestFleetLongRetryAfter(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	var busy atomic.Bool
	var pages atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/robots.txt":
			w.Write([]byte(disallowPrivate))
		case busy.Load():
			w.Header().Set("Retry-After", strconv.Itoa(int((48 * time.Hour).Seconds())))
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			pages.Add(1)
		}
	}))
	t.Cleanup(srv.Close)
	a, b := newProcess(t, addr, prefix, nil), newProcess(t, addr, prefix, nil)
	ctx := context.Background()
	for _, p := range []*process{a, b} {
		p.tr.MaxRetryAfter = 72 * time.Hour
		if err := get(ctx, p.client, srv.URL+"/page"); err != nil {
			t.Fatal(err)
		}
		waitLive(t, p.store)
	}
	busy.Store(true)
	if err := get(ctx, a.client, srv.URL+"/page"); err != nil {
		t.Fatal(err)
	}
	busy.Store(false)
	sent := pages.Load()
	waitWatched(t, b.store, srv.URL, DefaultWatchInterval+DefaultTimeout)
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := get(rctx, b.client, srv.URL+"/page"); err == nil {
		t.Errorf("process b's request was sent during a two-day pause that process a was told of")
	}
	if n := pages.Load() - sent; n != 0 {
		t.Errorf("the site received %d requests during the pause, want none", n)
	}
}

// foreignValue is a value written under one of the Store's keys by
// something other than a Store.
type foreignValue struct {
	name string
	set  func(ctx context.Context, c redis.UniversalClient, key string) error
}

var foreignValues = []foreignValue{
	{"string", func(ctx context.Context, c redis.UniversalClient, key string) error {
		return c.Set(ctx, key, "foreign", 0).Err()
	}},
	{"string with an expiry", func(ctx context.Context, c redis.UniversalClient, key string) error {
		return c.Set(ctx, key, "foreign", time.Hour).Err()
	}},
	{"token without an expiry", func(ctx context.Context, c redis.UniversalClient, key string) error {
		return c.Set(ctx, key, "ABCDEFGHIJKLMNOPQRSTUVWXYZ", 0).Err()
	}},
	{"time without an expiry", func(ctx context.Context, c redis.UniversalClient, key string) error {
		// A time a day from now on the Redis server's clock, in
		// microseconds, as the pace and pause keys hold.
		now, err := c.Eval(ctx, `local t = redis.call("TIME") return tonumber(t[1]) * 1000000 + tonumber(t[2])`, []string{key}).Int64()
		if err != nil {
			return err
		}
		return c.Set(ctx, key, strconv.FormatInt(now+(24*time.Hour).Microseconds(), 10), 0).Err()
	}},
	{"hash", func(ctx context.Context, c redis.UniversalClient, key string) error {
		return c.HSet(ctx, key, "a", "b").Err()
	}},
	{"hash with an expiry", func(ctx context.Context, c redis.UniversalClient, key string) error {
		if err := c.HSet(ctx, key, "a", "b").Err(); err != nil {
			return err
		}
		return c.Expire(ctx, key, time.Hour).Err()
	}},
	{"list", func(ctx context.Context, c redis.UniversalClient, key string) error {
		return c.RPush(ctx, key, "a", "b").Err()
	}},
	{"sorted set", func(ctx context.Context, c redis.UniversalClient, key string) error {
		return c.ZAdd(ctx, key, redis.Z{Score: 1, Member: "a"}).Err()
	}},
}

// TestForeignValues writes a foreign value under each key that a Store
// writes, and checks that what the key is for still works across the fleet
// at once: the value is logged and overwritten, and Redis is not taken for
// down. A sorted set is what the pauses key holds: under it, it is checked
// for a sorted set of foreign members.
func TestForeignValues(t *testing.T) {
	addr := redisAddr(t)
	const origin = "https://example.com"
	for _, key := range []struct {
		name  string
		key   func(s *Store) string
		check func(t *testing.T, a, b *Store)
	}{
		{"entry", func(s *Store) string { return s.entryKey(origin) }, checkEntryWorks},
		{"lock", func(s *Store) string { return s.lockKey(origin) }, checkLockWorks},
		{"pace", func(s *Store) string { return s.paceKey(origin) }, checkPaceWorks},
		{"pause", func(s *Store) string { return s.pauseKey(origin) }, checkPauseWorks},
		{"pauses", func(s *Store) string { return s.pausesKey() }, checkPauseWorks},
	} {
		for _, v := range foreignValues {
			t.Run(key.name+"/"+v.name, func(t *testing.T) {
				prefix := testPrefix(t, addr)
				log := &logRecorder{}
				admin := newClient(t, addr)
				stores := make([]*Store, 2)
				for i := range stores {
					stores[i] = newStore(t, newClient(t, addr))
					stores[i].Prefix, stores[i].Logger = prefix, slog.New(log)
					stores[i].once.Do(stores[i].init)
				}
				if err := v.set(context.Background(), admin, key.key(stores[0])); err != nil {
					t.Fatal(err)
				}
				key.check(t, stores[0], stores[1])
				if n := log.count(slog.LevelWarn, "redisstore: "); n == 0 && !(key.name == "pauses" && v.name == "sorted set") {
					t.Errorf("the foreign value was not logged")
				}
				for _, s := range stores {
					if s.outage.Load() != nil {
						t.Errorf("a foreign value started the cooldown")
					}
				}
			})
		}
	}
}

// checkEntryWorks: b's Get returns an error for the foreign value, and the
// entry that a puts over it is found.
func checkEntryWorks(t *testing.T, a, b *Store) {
	ctx := context.Background()
	if e, err := b.Get(ctx, "https://example.com"); e != nil || !errors.Is(err, ErrUnreadable) ||
		!strings.Contains(err.Error(), b.entryKey("https://example.com")) {
		t.Errorf("Get = %+v, %v; want no entry and an error that matches ErrUnreadable and names the key", e, err)
	}
	e := &fleet.Entry{Access: fleet.AccessSuccess, Body: []byte(disallowPrivate), FetchedAt: time.Now(), Expires: time.Now().Add(time.Hour)}
	if err := a.Put(ctx, "https://example.com", e); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctx, "https://example.com"); err != nil || got == nil || string(got.Body) != disallowPrivate {
		t.Errorf("Get after Put = %+v, %v; want the entry put", got, err)
	}
}

// checkLockWorks: a takes the lock at once, b cannot take it until a
// releases it, and then can.
func checkLockWorks(t *testing.T, a, b *Store) {
	ctx := context.Background()
	unlock, ok, err := a.TryLock(ctx, "https://example.com", time.Minute)
	if !ok || err != nil {
		t.Fatalf("TryLock over a foreign value = %v, %v; want the lock", ok, err)
	}
	if _, ok, err := b.TryLock(ctx, "https://example.com", time.Minute); ok || err != nil {
		t.Errorf("TryLock while another Store holds the lock = %v, %v; want false, nil", ok, err)
	}
	unlock()
	unlock, ok, err = b.TryLock(ctx, "https://example.com", time.Minute)
	if !ok || err != nil {
		t.Fatalf("TryLock after unlock = %v, %v; want the lock", ok, err)
	}
	unlock()
}

// checkPaceWorks: a takes the turn at once, and b's turn is an hour later.
func checkPaceWorks(t *testing.T, a, b *Store) {
	if wait, ok := reserve(t, a, "https://example.com", time.Hour, 0); wait != 0 || !ok {
		t.Errorf("Reserve over a foreign value = %v, %v; want the turn at once", wait, ok)
	}
	wait, ok := reserve(t, b, "https://example.com", time.Hour, 0)
	if ok {
		t.Errorf("second Reserve took a turn; want none for an hour")
	}
	checkLongWait(t, "second Reserve", wait, time.Hour)
}

// checkLongWait fails t unless wait is want within 1% of want: for waits
// of an hour, that tells a turn or a pause that holds from one that does
// not, however long a loaded machine takes between the commands (the
// 100 ms of checkWait did not always suffice).
func checkLongWait(t *testing.T, what string, wait, want time.Duration) {
	t.Helper()
	if tol := want / 100; wait < want-tol || wait > want+tol {
		t.Errorf("%s: wait %v, want %v within %v", what, wait, want, tol)
	}
}

// checkPauseWorks: a pause that a sets holds back b's turns, and reaches
// b's copy, and the copy of a Store that starts watching after it.
func checkPauseWorks(t *testing.T, a, b *Store) {
	ctx := context.Background()
	waitLive(t, b)
	until := time.Now().Add(time.Hour)
	if err := a.Pause(ctx, "https://example.com", until, "retry-after"); err != nil {
		t.Fatalf("Pause over a foreign value: %v", err)
	}
	wait, ok := reserve(t, b, "https://example.com", 0, 0)
	if ok {
		t.Errorf("Reserve in a pause took a turn")
	}
	checkLongWait(t, "Reserve in a pause", wait, time.Until(until))
	waitWatched(t, b, "https://example.com", DefaultWatchInterval+DefaultTimeout)
	late := newStore(t, newClient(t, redisAddr(t)))
	late.Prefix = a.Prefix
	waitLive(t, late)
	if got, _, _ := late.WatchedPause("https://example.com"); got.IsZero() {
		t.Error("a Store that started watching after the pause does not see it")
	}
}

// TestForeignPausesKeyBeforeWatch: a foreign value under the pauses key
// before any Store watches does not keep the copies of the pauses from
// being used.
func TestForeignPausesKeyBeforeWatch(t *testing.T) {
	addr := redisAddr(t)
	for _, v := range foreignValues {
		t.Run(v.name, func(t *testing.T) {
			log := &logRecorder{}
			s := newStore(t, newClient(t, addr))
			s.Prefix, s.Logger = testPrefix(t, addr), slog.New(log)
			s.once.Do(s.init)
			if err := v.set(context.Background(), newClient(t, addr), s.pausesKey()); err != nil {
				t.Fatal(err)
			}
			waitLive(t, s)
		})
	}
}

// TestForeignLockNoStall: a foreign value with no expiry under an origin's
// lock key does not hold back the loads of that origin: a request with a
// deadline far shorter than FetchTimeout gets its verdict, from robots.txt
// fetched once.
func TestForeignLockNoStall(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	log := &logRecorder{}
	s := newSite(t, disallowPrivate)
	p := newProcess(t, addr, prefix, slog.New(log))
	admin := newClient(t, addr)
	ctx := context.Background()
	if err := admin.Set(ctx, prefix+"lock:{"+s.origin()+"}", "foo", 0).Err(); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, robots.DefaultFetchTimeout/6)
	defer cancel()
	if err := get(rctx, p.client, s.URL+"/private"); !errors.Is(err, robots.ErrDisallowed) {
		t.Errorf("GET /private with a foreign lock: %v, want ErrDisallowed", err)
	}
	if n := s.fetches.Load(); n != 1 {
		t.Errorf("robots.txt fetched %d times, want 1", n)
	}
	if n := log.count(slog.LevelWarn, "redisstore: "); n == 0 {
		t.Errorf("the foreign lock was not logged")
	}
}

// TestOwnLockNotBroken: a lock as a Store takes it (a token with an
// expiry), whose holder died, is not taken before it expires, however long
// its ttl.
func TestOwnLockNotBroken(t *testing.T) {
	addr := redisAddr(t)
	s := newStore(t, newClient(t, addr))
	s.Prefix = testPrefix(t, addr)
	s.once.Do(s.init)
	ctx := context.Background()
	const origin = "https://example.com"
	if err := newClient(t, addr).Set(ctx, s.lockKey(origin), rand.Text(), time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, ok, err := s.TryLock(ctx, origin, time.Minute); ok || err != nil {
			t.Fatalf("TryLock of a lock held by a Store = %v, %v; want false, nil", ok, err)
		}
	}
}

// TestReserveRefusedLeavesKeys: a Reserve refused by maxWait, whatever its
// interval, leaves the origin's keys as they were, value and expiry: the
// next turn is spaced from the last one taken, not from the refused ones.
func TestReserveRefusedLeavesKeys(t *testing.T) {
	s := newStores(t, 1)[0]
	ctx := context.Background()
	const origin = "https://example.com"
	if _, ok := reserve(t, s, origin, time.Hour, 0); !ok {
		t.Fatal("first turn not taken")
	}
	if err := s.Pause(ctx, origin, time.Now().Add(time.Minute), "retry-after"); err != nil {
		t.Fatal(err)
	}
	type state struct {
		val string
		ttl time.Duration
	}
	read := func() []state {
		var st []state
		for _, key := range []string{s.paceKey(origin), s.pauseKey(origin)} {
			v, err := s.client.Get(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			ttl, err := s.client.PTTL(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			st = append(st, state{v, ttl})
		}
		return st
	}
	before := read()
	for _, every := range []time.Duration{0, time.Hour, 2 * time.Hour, -3 * time.Hour, -time.Nanosecond} {
		if wait, ok := reserve(t, s, origin, every, 30*time.Minute); ok {
			t.Fatalf("Reserve(%v) with a turn an hour away took it (wait %v)", every, wait)
		}
	}
	after := read()
	for i := range before {
		if after[i].val != before[i].val || after[i].ttl > before[i].ttl {
			t.Errorf("key %d after refused Reserves: %q, expiring in %v; want %q, expiring in at most %v",
				i, after[i].val, after[i].ttl, before[i].val, before[i].ttl)
		}
	}
	wait, ok := reserve(t, s, origin, time.Hour, forever)
	if !ok {
		t.Fatal("Reserve with no bound on the wait took no turn")
	}
	checkLongWait(t, "turn after the refused ones", wait, time.Hour)
}

// TestForeignPauseMessages publishes messages on a Store's channel of
// pauses as something other than a Store might: those whose length is not a
// positive, finite number are logged and ignored, and a length past the
// longest time.Duration is a pause of that long. The copy stays live.
func TestForeignPauseMessages(t *testing.T) {
	addr := redisAddr(t)
	log := &logRecorder{}
	s := newStore(t, newClient(t, addr))
	s.Prefix, s.Logger = testPrefix(t, addr), slog.New(log)
	waitLive(t, s)
	admin := newClient(t, addr)
	ctx := context.Background()
	bad := []string{"NaN", "nan", "Inf", "+Inf", "-Inf", "1e400", "-5", "0", "abc", ""}
	for i, v := range bad {
		if err := admin.Publish(ctx, s.pausesChannel(), fmt.Sprintf("https://bad%d.example %s", i, v)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.Publish(ctx, s.pausesChannel(), "https://huge.example 1e30").Err(); err != nil {
		t.Fatal(err)
	}
	if got := waitWatched(t, s, "https://huge.example", DefaultWatchInterval+DefaultTimeout); got.Before(time.Now().Add(200 * 365 * 24 * time.Hour)) {
		t.Errorf("a pause of 1e30µs ends at %v in the copy, want the longest Duration from now", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for log.count(slog.LevelWarn, "redisstore: ignoring unreadable pause message") < len(bad) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := log.count(slog.LevelWarn, "redisstore: ignoring unreadable pause message"); n != len(bad) {
		t.Errorf("%d messages logged as unreadable, want %d", n, len(bad))
	}
	for i, v := range bad {
		until, _, ok := s.WatchedPause(fmt.Sprintf("https://bad%d.example", i))
		if !ok {
			t.Fatalf("the copy stopped being live")
		}
		if !until.IsZero() {
			t.Errorf("message of length %q: paused until %v, want not paused", v, until)
		}
	}
}
