package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/redis/go-redis/v9"
)

func TestGetPut(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	ctx := context.Background()
	s := newStore(t, newClient(t, addr))
	s.Prefix = prefix

	const origin = "https://example.com"
	if e, err := s.Get(ctx, origin); e != nil || err != nil {
		t.Fatalf("Get of an empty store = %+v, %v; want nil, nil", e, err)
	}
	now := time.Now()
	want := &fleet.Entry{
		Access:    fleet.AccessSuccess,
		Body:      []byte(disallowPrivate),
		FetchedAt: now,
		Expires:   now.Add(time.Hour),
	}
	if err := s.Put(ctx, origin, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, origin)
	if err != nil {
		t.Fatal(err)
	}
	if !entriesEqual(got, want) {
		t.Errorf("Get = %+v, want %+v", got, want)
	}
	if e, _ := s.Get(ctx, "https://example.org"); e != nil {
		t.Errorf("Get of another origin = %+v, want nil", e)
	}

	// The key lives until Retain after the entry expires.
	ttl, err := s.client.PTTL(ctx, prefix+"entry:{"+origin+"}").Result()
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := DefaultRetain+time.Hour-time.Minute, DefaultRetain+time.Hour; ttl < lo || ttl > hi {
		t.Errorf("key expires in %v, want between %v and %v", ttl, lo, hi)
	}
	s2 := newStore(t, s.client)
	s2.Prefix, s2.Retain = prefix, time.Minute
	expired := *want
	expired.Expires = now.Add(-time.Hour)
	if err := s2.Put(ctx, origin, &expired); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := s.client.PTTL(ctx, prefix+"entry:{"+origin+"}").Result(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("expired entry's key expires in %v, want in at most Retain (1m)", ttl)
	}
	// An expired entry is still returned, for its rules and counts.
	if got, _ := s.Get(ctx, origin); !entriesEqual(got, &expired) {
		t.Errorf("Get of an expired entry = %+v, want %+v", got, &expired)
	}
}

func TestPutTooLarge(t *testing.T) {
	addr := redisAddr(t)
	s := newStore(t, newClient(t, addr))
	s.Prefix, s.MaxEntrySize = testPrefix(t, addr), 100
	ctx := context.Background()
	e := &fleet.Entry{Access: fleet.AccessSuccess, Body: make([]byte, 200), Expires: time.Now().Add(time.Hour)}
	if err := s.Put(ctx, "https://example.com", e); err == nil || !strings.HasPrefix(err.Error(), "redisstore: ") {
		t.Errorf("Put of an entry above MaxEntrySize: %v, want an error", err)
	}
	if e, err := s.Get(ctx, "https://example.com"); e != nil || err != nil {
		t.Errorf("Get = %+v, %v; want nothing stored", e, err)
	}
}

func TestLock(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	ctx := context.Background()
	a, b := newStore(t, newClient(t, addr)), newStore(t, newClient(t, addr))
	a.Prefix, b.Prefix = prefix, prefix
	const origin = "https://example.com"

	unlockA, ok, err := a.TryLock(ctx, origin, time.Minute)
	if !ok || err != nil {
		t.Fatalf("TryLock = %v, %v; want the lock", ok, err)
	}
	if _, ok, err := b.TryLock(ctx, origin, time.Minute); ok || err != nil {
		t.Fatalf("second TryLock = %v, %v; want false, nil", ok, err)
	}
	if unlock, ok, _ := b.TryLock(ctx, "https://example.org", time.Minute); !ok {
		t.Errorf("TryLock of another origin failed")
	} else {
		unlock()
	}
	unlockA()
	unlockB, ok, err := b.TryLock(ctx, origin, time.Minute)
	if !ok || err != nil {
		t.Fatalf("TryLock after unlock = %v, %v; want the lock", ok, err)
	}
	// A second unlock by a former holder must not release b's lock.
	unlockA()
	if _, ok, _ := a.TryLock(ctx, origin, time.Minute); ok {
		t.Errorf("a former holder's unlock released the current holder's lock")
	}
	unlockB()

	// A holder that lives keeps the lock past its ttl, until it unlocks.
	// (The ttl leaves the extensions, every ttl/3, room for a loaded
	// machine.)
	const ttl = time.Second
	unlockA, ok, _ = a.TryLock(ctx, origin, ttl)
	if !ok {
		t.Fatal("TryLock failed")
	}
	for range 5 {
		time.Sleep(ttl / 2)
		if _, ok, _ := b.TryLock(ctx, origin, time.Minute); ok {
			t.Fatal("the lock of a live holder expired before it was released")
		}
	}
	unlockA()

	// A holder that dies (its client closed) blocks the others only until
	// the lock expires.
	deadClient := newClient(t, addr)
	dead := newStore(t, deadClient)
	dead.Prefix = prefix
	if _, ok, _ := dead.TryLock(ctx, origin, ttl); !ok {
		t.Fatal("TryLock failed")
	}
	deadClient.Close()
	died := time.Now()
	deadline := died.Add(10 * time.Second)
	unlockB, err = nil, nil
	for {
		unlockB, ok, err = b.TryLock(ctx, origin, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lock of a holder that died never expired")
		}
		time.Sleep(20 * time.Millisecond)
	}
	unlockB()
	if d := time.Since(died); d > ttl+spacingTolerance {
		t.Errorf("the lock of a holder that died expired %v later, want within its ttl (%v)", d, ttl)
	}
}

// TestFleetFetchesOncePerLifetime runs several Transports, each with its
// own in-memory cache, Redis client and connections, as the processes of a
// fleet, all at once against the same sites: between them they fetch each
// robots.txt once per lifetime.
func TestFleetFetchesOncePerLifetime(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	const (
		procs      = 4
		goroutines = 16
		ttl        = 3 * time.Second
	)
	sites := []*site{newSite(t, disallowPrivate), newSite(t, disallowPrivate), newSite(t, disallowPrivate)}
	fleet := make([]*process, procs)
	for i := range fleet {
		fleet[i] = newProcess(t, addr, prefix, nil)
		fleet[i].tr.TTL = ttl
		// The fetches of robots.txt are counted, not the pace: 64
		// requests a site at the default pace would outlast the lifetime.
		fleet[i].tr.NoDefaultPace = true
	}
	round := func() {
		var wg sync.WaitGroup
		for _, p := range fleet {
			for g := range goroutines {
				wg.Go(func() {
					for i := range sites {
						checkVerdicts(t, p.client, sites[(g+i)%len(sites)].URL)
					}
				})
			}
		}
		wg.Wait()
	}

	start := time.Now()
	round()
	if time.Since(start) > ttl/2 {
		// Not a speed requirement: the count below assumes the round
		// ended well within one lifetime.
		t.Skipf("first round took %v, too close to the lifetime (%v) to count fetches", time.Since(start), ttl)
	}
	for i, s := range sites {
		if n := s.fetches.Load(); n != 1 {
			t.Errorf("site %d: robots.txt fetched %d times by %d Transports, want 1", i, n, procs)
		}
	}
	var fetched, storeHits uint64
	for _, p := range fleet {
		st := p.tr.Stats()
		fetched += st.FetchSuccess
		storeHits += st.StoreHits
	}
	if fetched != uint64(len(sites)) || storeHits != uint64((procs-1)*len(sites)) {
		t.Errorf("fleet stats: %d fetches and %d store hits, want %d and %d", fetched, storeHits, len(sites), (procs-1)*len(sites))
	}

	// After the lifetime, the fleet fetches each robots.txt once more.
	time.Sleep(time.Until(start.Add(ttl + 100*time.Millisecond)))
	round()
	for i, s := range sites {
		if n := s.fetches.Load(); n != 2 {
			t.Errorf("site %d: robots.txt fetched %d times over two lifetimes, want 2", i, n)
		}
	}
}

// TestLockHolderDies takes the fetch lock of an origin and never releases
// it, as a process that dies while fetching would: another Transport waits
// for the lock to expire, then fetches holding it.
func TestLockHolderDies(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	s := newSite(t, disallowPrivate)
	p := newProcess(t, addr, prefix, nil)
	p.tr.FetchTimeout = 5 * time.Second

	deadClient := newClient(t, addr)
	dead := newStore(t, deadClient)
	dead.Prefix = prefix
	if _, ok, err := dead.TryLock(context.Background(), s.origin(), 500*time.Millisecond); !ok {
		t.Fatalf("TryLock = %v, %v", ok, err)
	}
	deadClient.Close() // the process dies, and its extensions with it
	var heldDuringFetch bool
	s.onFetch = func() {
		n, _ := p.store.client.Exists(context.Background(), prefix+"lock:{"+s.origin()+"}").Result()
		heldDuringFetch = n == 1
	}
	checkVerdicts(t, p.client, s.URL)
	if n := s.fetches.Load(); n != 1 {
		t.Fatalf("robots.txt fetched %d times, want 1", n)
	}
	if !heldDuringFetch {
		t.Errorf("the Transport fetched without the lock; want it to take over the expired lock")
	}
	if n, _ := p.store.client.Exists(context.Background(), prefix+"lock:{"+s.origin()+"}").Result(); n != 0 {
		t.Errorf("lock still held after the fetch")
	}
}

// TestRedisDown points the fleet's Store at a port where nothing listens:
// requests keep flowing with the right verdicts, and the failure is logged.
func TestRedisDown(t *testing.T) {
	testRedisFailure(t, closedAddr(t))
}

// TestConcurrentFailures fails commands from many goroutines at once, with
// no Cooldown to keep them from Redis: under the race detector, the record of
// the outage that each publishes is complete before another reads it, and
// the failure is logged once.
func TestConcurrentFailures(t *testing.T) {
	log := &logRecorder{}
	s := newStore(t, newClient(t, newBlackHole(t).addr()))
	s.Timeout, s.Cooldown, s.Logger = 5*time.Millisecond, time.Nanosecond, slog.New(log)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				if _, err := s.Get(context.Background(), "https://example.com"); err == nil {
					t.Error("Get on a Redis that never answers succeeded")
				}
			}
		})
	}
	wg.Wait()
	if n := log.count(slog.LevelWarn, "redisstore: redis failed"); n != 1 {
		t.Errorf("the outage was logged %d times, want once", n)
	}
}

// TestRedisSlow points the Store at a server that accepts connections but
// never answers: each command gives up after Timeout, and requests keep
// flowing with the right verdicts.
func TestRedisSlow(t *testing.T) {
	testRedisFailure(t, newBlackHole(t).addr())
}

func testRedisFailure(t *testing.T, addr string) {
	log := &logRecorder{}
	logger := slog.New(log)
	p := newProcess(t, addr, "robots-test:", logger)
	p.store.Timeout = 200 * time.Millisecond
	sites := []*site{newSite(t, disallowPrivate), newSite(t, disallowPrivate)}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for _, s := range sites {
				checkVerdicts(t, p.client, s.URL)
			}
		})
	}
	wg.Wait()
	for i, s := range sites {
		if n := s.fetches.Load(); n != 1 {
			t.Errorf("site %d: robots.txt fetched %d times, want 1 (the in-process single flight)", i, n)
		}
	}
	if n := log.count(slog.LevelWarn, "redisstore: redis failed"); n != 1 {
		t.Errorf("%d warnings that redis failed, want 1", n)
	}
	if n := log.count(slog.LevelWarn, "robots: store"); n == 0 {
		t.Errorf("the Transport logged no store error")
	}
	// The Transport paces the origin itself.
	paced := newSite(t, "User-agent: *\nCrawl-delay: 1\n")
	for i := range 3 {
		if err := get(context.Background(), p.client, fmt.Sprintf("%s/page%d", paced.URL, i)); err != nil {
			t.Errorf("GET page%d: %v", i, err)
		}
	}
	checkSpacing(t, paced.arrived(), time.Second)

	// In the Cooldown, the Store answers at once without trying Redis.
	if _, err := p.store.Get(context.Background(), sites[0].origin()); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Get during the cooldown: %v, want ErrUnavailable", err)
	}
}

// TestRedisRecovers checks that a Store tries Redis again after its
// Cooldown, and uses it when it answers.
func TestRedisRecovers(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	log := &logRecorder{}
	// A Store on a client that fails until it may reach Redis.
	var down atomic.Bool
	down.Store(true)
	closed := closedAddr(t)
	dialer := func(ctx context.Context, network, a string) (conn net.Conn, err error) {
		if down.Load() {
			a = closed
		}
		var d net.Dialer
		return d.DialContext(ctx, network, a)
	}
	var client redis.UniversalClient
	if seeds, ok := strings.CutPrefix(addr, clusterTarget); ok {
		client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(seeds, ","),
			ContextTimeoutEnabled: true, MaxRetries: -1, MaxRedirects: -1, Dialer: dialer})
	} else {
		client = redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1, Dialer: dialer})
	}
	t.Cleanup(func() { client.Close() })
	s := newStore(t, client)
	s.Prefix, s.Cooldown, s.Logger = prefix, 100*time.Millisecond, slog.New(log)
	ctx := context.Background()
	e := &fleet.Entry{Access: fleet.AccessUnavailable, Expires: time.Now().Add(time.Hour)}
	if err := s.Put(ctx, "https://example.com", e); err == nil || errors.Is(err, ErrUnavailable) {
		t.Fatalf("Put with redis down: %v, want the dial error", err)
	}
	if err := s.Put(ctx, "https://example.com", e); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Put in the cooldown: %v, want ErrUnavailable", err)
	}
	down.Store(false)
	time.Sleep(150 * time.Millisecond)
	if err := s.Put(ctx, "https://example.com", e); err != nil {
		t.Fatalf("Put after the cooldown, redis up: %v", err)
	}
	if got, err := s.Get(ctx, "https://example.com"); err != nil || !entriesEqual(got, e) {
		t.Errorf("Get = %+v, %v; want %+v", got, err, e)
	}
	if n := log.count(slog.LevelInfo, "redisstore: redis is back"); n != 1 {
		t.Errorf("%d records that redis is back, want 1", n)
	}
}

// TestUnreadableValues puts values that are not entries of this format
// where the Store keeps an origin's entry: for each, Get returns an error
// that matches ErrUnreadable and names the key, which the Store's Logger
// and the Transport's record and the Transport's Stats count, and the fetch
// that follows overwrites it.
func TestUnreadableValues(t *testing.T) {
	addr := redisAddr(t)
	valid := encode(&fleet.Entry{Access: fleet.AccessSuccess, Body: []byte("User-agent: *\nDisallow: /\n"), Expires: time.Now().Add(time.Hour)})
	for _, c := range []struct {
		name string
		set  func(ctx context.Context, c redis.UniversalClient, key string) error
	}{
		{"foreign string", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.Set(ctx, key, `{"allow":"everything"}`, 0).Err()
		}},
		{"cut short", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.Set(ctx, key, valid[:len(valid)-3], 0).Err()
		}},
		{"later version", func(ctx context.Context, c redis.UniversalClient, key string) error {
			v := append([]byte(nil), valid...)
			v[len(magic)-1]++
			return c.Set(ctx, key, v, 0).Err()
		}},
		{"too large", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.Set(ctx, key, string(valid)+strings.Repeat("#", DefaultMaxEntrySize), 0).Err()
		}},
		{"list", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.RPush(ctx, key, "a", "b").Err()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix := testPrefix(t, addr)
			log := &logRecorder{}
			s := newSite(t, disallowPrivate)
			p := newProcess(t, addr, prefix, slog.New(log))
			ctx := context.Background()
			key := prefix + "entry:{" + s.origin() + "}"
			if err := c.set(ctx, p.store.client, key); err != nil {
				t.Fatal(err)
			}
			if e, err := p.store.Get(ctx, s.origin()); e != nil || !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), key) {
				t.Errorf("Get = %+v, %v; want an error that matches ErrUnreadable and names %s", e, err, key)
			}
			checkVerdicts(t, p.client, s.URL)
			if n := s.fetches.Load(); n != 1 {
				t.Errorf("robots.txt fetched %d times, want 1", n)
			}
			if n := log.count(slog.LevelWarn, "redisstore: unreadable entry"); n == 0 {
				t.Errorf("the Store did not log the unreadable value")
			}
			if n := log.count(slog.LevelInfo, "robots: store get failed"); n == 0 {
				t.Errorf("the Transport did not log the unreadable value")
			}
			if n := p.tr.Stats().StoreErrors; n == 0 {
				t.Errorf("Stats.StoreErrors = 0, want the unreadable value counted")
			}
			if p.store.outage.Load() != nil {
				t.Errorf("an unreadable value started the cooldown")
			}
			e, err := p.store.Get(ctx, s.origin())
			if err != nil || e == nil || string(e.Body) != disallowPrivate {
				t.Errorf("after the fetch, Get = %+v, %v; want the fetched entry", e, err)
			}
		})
	}
}

func TestNoClient(t *testing.T) {
	var s Store
	if _, err := s.Get(context.Background(), "https://example.com"); err == nil {
		t.Errorf("Get on a Store without a client succeeded")
	}
	if _, ok, err := s.TryLock(context.Background(), "https://example.com", time.Second); ok || err == nil {
		t.Errorf("TryLock on a Store without a client = %v, %v; want an error", ok, err)
	}
}

func entriesEqual(a, b *fleet.Entry) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Access == b.Access && string(a.Body) == string(b.Body) &&
		a.FetchedAt.Equal(b.FetchedAt) && a.Expires.Equal(b.Expires) &&
		a.UnreachableSince.Equal(b.UnreachableSince) && a.Failures == b.Failures && a.Error == b.Error &&
		a.ETag == b.ETag && a.LastModified == b.LastModified
}

// TestPrefixWithBrace checks that a Prefix that would change the hash slots
// of the keys is refused by every method, before any command.
func TestPrefixWithBrace(t *testing.T) {
	s := newStore(t, newClient(t, closedAddr(t)))
	s.Prefix = "crawl{1}:"
	ctx := context.Background()
	if _, err := s.Get(ctx, "https://example.com"); err == nil || errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "Prefix") {
		t.Errorf("Get with a Prefix holding a brace: %v, want an error about the Prefix", err)
	}
	if _, ok, err := reserveArgs(s, ctx, "https://example.com", time.Second, true, time.Second); ok || err == nil {
		t.Errorf("Reserve with a Prefix holding a brace = %v, %v; want an error", ok, err)
	}
	if _, _, ok := s.WatchedPause("https://example.com"); ok {
		t.Error("WatchedPause with a Prefix holding a brace says its copy is live")
	}
}
