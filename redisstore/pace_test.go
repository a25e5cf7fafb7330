package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// spacingTolerance is how much closer than their interval two turns may
// seem: the time between Redis handing out a turn and the caller noting it,
// which a loaded machine (CI, the race detector) can stretch.
const spacingTolerance = 200 * time.Millisecond

// checkSpacing fails t unless the sorted times are at least every apart,
// less spacingTolerance.
func checkSpacing(t *testing.T, times []time.Time, every time.Duration) {
	t.Helper()
	slices.SortFunc(times, time.Time.Compare)
	for i := 1; i < len(times); i++ {
		if d := times[i].Sub(times[i-1]); d < every-spacingTolerance {
			t.Errorf("turns %d and %d are %v apart, want at least %v", i-1, i, d, every)
		}
	}
}

// waitTolerance is how far a wait that Reserve returns may be from the one
// a test computes from its own clock: the time between the test reading its
// clock and Redis reading its own, which a loaded machine can stretch.
const waitTolerance = 100 * time.Millisecond

// forever is a maxWait that every wait is within.
const forever = time.Duration(math.MaxInt64)

// newStores returns n Stores on one prefix, each with a client of its own,
// as n processes of a fleet have.
func newStores(t *testing.T, n int) []*Store {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	stores := make([]*Store, n)
	for i := range stores {
		stores[i] = newStore(t, newClient(t, addr))
		stores[i].Prefix = prefix
	}
	return stores
}

// reserve calls s.Reserve and fails t on an error. A negative every asks
// for a turn with rules unknown, spaced by -every.
func reserve(t *testing.T, s *Store, origin string, every, maxWait time.Duration) (time.Duration, bool) {
	t.Helper()
	iv, known := every, true
	if every < 0 {
		iv, known = -every, false
	}
	wait, ok, err := reserveArgs(s, context.Background(), origin, iv, known, maxWait)
	if err != nil {
		t.Fatalf("Reserve(%s, %v, %v): %v", origin, every, maxWait, err)
	}
	return wait, ok
}

// checkWait fails t unless wait is want, within waitTolerance.
func checkWait(t *testing.T, what string, wait, want time.Duration) {
	t.Helper()
	if wait < want-waitTolerance || wait > want+waitTolerance {
		t.Errorf("%s: wait %v, want %v", what, wait, want)
	}
}

// TestReserveWaits takes turns back to back: Reserve returns at once, with
// waits that grow by every, and another origin has turns of its own.
func TestReserveWaits(t *testing.T) {
	s := newStores(t, 1)[0]
	const every = 300 * time.Millisecond
	start := time.Now()
	for i := range 5 {
		wait, ok := reserve(t, s, "https://example.com", every, forever)
		if !ok {
			t.Fatalf("turn %d not taken", i)
		}
		// The next free turn moves by every exactly: the wait is
		// i*every less the time since the first turn was taken.
		want := time.Duration(i) * every
		if wait > want || wait < want-time.Since(start)-time.Millisecond {
			t.Errorf("turn %d: wait %v, want %v less at most %v", i, wait, want, time.Since(start))
		}
	}
	if elapsed := time.Since(start); elapsed > every {
		t.Errorf("5 reservations took %v: Reserve must not wait", elapsed)
	}
	if wait, ok := reserve(t, s, "https://example.org", every, 0); wait != 0 || !ok {
		t.Errorf("Reserve of another origin = %v, %v; want its turn at once", wait, ok)
	}
	// A caller past its deadline still has a turn that is due now.
	if wait, ok := reserve(t, s, "https://example.net", every, -time.Second); wait != 0 || !ok {
		t.Errorf("Reserve of a free origin with a negative maxWait = %v, %v; want the turn at once", wait, ok)
	}
}

// TestReserveKeepsInterval: each turn keeps its interval. A caller with no
// interval, after a turn taken with one, waits it out; a caller that says it
// does not know the origin's rules (a negative interval) hands it on to the
// next, and one that knows it asks for no delay does not. A value written
// by an earlier version (a time alone) is read as a turn with no interval.
func TestReserveKeepsInterval(t *testing.T) {
	stores := newStores(t, 2)
	a, b := stores[0], stores[1]
	const origin = "https://example.com"
	if _, ok := reserve(t, a, origin, time.Second, forever); !ok {
		t.Fatal("first turn not taken")
	}
	wait, ok := reserve(t, b, origin, 0, forever)
	if !ok {
		t.Fatal("turn with every 0 not taken")
	}
	checkWait(t, "every 0 after a turn with every 1s", wait, time.Second)
	// That turn kept no interval: the next one with none is due with it.
	wait, _ = reserve(t, b, origin, 0, forever)
	checkWait(t, "every 0 after a turn with every 0", wait, time.Second)

	const other = "https://example.org"
	reserve(t, a, other, time.Second, forever)
	for i := 1; i <= 2; i++ {
		// Unknown rules: each turn is a second after the previous
		// one, and keeps that second for the next.
		wait, _ = reserve(t, b, other, -time.Nanosecond, forever)
		checkWait(t, fmt.Sprintf("unknown rules, turn %d", i), wait, time.Duration(i)*time.Second)
	}
	wait, _ = reserve(t, b, other, 0, forever)
	checkWait(t, "every 0 after unknown rules", wait, 3*time.Second)
	// A caller that knows the delay is gone hands nothing on.
	wait, _ = reserve(t, b, other, 0, forever)
	checkWait(t, "every 0 after every 0", wait, 3*time.Second)

	// A turn written as a time alone, as earlier versions do.
	const old = "https://example.net"
	ctx := context.Background()
	b.once.Do(b.init)
	now, err := b.client.Eval(ctx, `local t = redis.call("TIME") return tonumber(t[1]) * 1000000 + tonumber(t[2])`, []string{b.paceKey(old)}).Int64()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.client.Set(ctx, b.paceKey(old), strconv.FormatInt(now+500000, 10), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	wait, _ = reserve(t, b, old, -time.Nanosecond, forever)
	checkWait(t, "unknown rules after a turn of an earlier version", wait, 500*time.Millisecond)
	wait, _ = reserve(t, b, old, 200*time.Millisecond, forever)
	checkWait(t, "every 200ms after it", wait, 700*time.Millisecond)
	v, err := b.client.Get(ctx, b.paceKey(old)).Result()
	if err != nil || !strings.HasSuffix(v, ":200000") {
		t.Errorf("pace key holds %q (%v), want the time and the interval 200000µs", v, err)
	}
}

// TestReserveMaxWait has callers that cannot wait for the next turn: they
// take none, and the next caller that can wait gets the turn they were told
// of.
func TestReserveMaxWait(t *testing.T) {
	stores := newStores(t, 2)
	a, b := stores[0], stores[1]
	const origin = "https://example.com"
	if wait, ok := reserve(t, a, origin, time.Hour, 0); wait != 0 || !ok {
		t.Fatalf("first Reserve = %v, %v; want the turn at once", wait, ok)
	}
	for _, s := range []*Store{a, b, a} {
		wait, ok := reserve(t, s, origin, time.Hour, time.Second)
		if ok {
			t.Fatalf("Reserve with a turn an hour away and a maxWait of 1s took it (wait %v)", wait)
		}
		checkWait(t, "Reserve past maxWait", wait, time.Hour)
	}
	for i, s := range []*Store{b, a} {
		wait, ok := reserve(t, s, origin, time.Hour, forever)
		if !ok {
			t.Fatalf("Reserve with no bound on the wait: no turn (wait %v)", wait)
		}
		checkWait(t, fmt.Sprintf("turn %d after the refusals", i+1), wait, time.Duration(i+1)*time.Hour)
	}
}

// TestPause pauses an origin from one Store and reserves its turns from
// another: the pause delays every turn, even without a crawl-delay, a
// shorter pause does not shorten it, and the turns it held back are spaced
// by every from its end.
func TestPause(t *testing.T) {
	stores := newStores(t, 2)
	a, b := stores[0], stores[1]
	ctx := context.Background()
	const origin = "https://example.com"

	until := time.Now().Add(2 * time.Second)
	if err := a.Pause(ctx, origin, until, "retry-after"); err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{10 * time.Millisecond, -time.Second} {
		if err := b.Pause(ctx, origin, time.Now().Add(d), "retry-after"); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		wait, ok := reserve(t, b, origin, 0, 100*time.Millisecond)
		if ok {
			t.Fatalf("Reserve in a pause, past maxWait, took the turn (wait %v)", wait)
		}
		checkWait(t, "Reserve in a pause, past maxWait", wait, time.Until(until))
	}
	// Without a crawl-delay, every turn is the end of the pause.
	for range 2 {
		wait, ok := reserve(t, b, origin, 0, forever)
		if !ok {
			t.Fatal("Reserve in a pause: no turn")
		}
		checkWait(t, "Reserve in a pause", wait, time.Until(until))
	}

	// With one, the turns are every apart from the latest turn on: the
	// turns just taken at the end of the pause.
	const every = 300 * time.Millisecond
	for i, s := range []*Store{a, b, a, b} {
		wait, ok := reserve(t, s, origin, every, forever)
		if !ok {
			t.Fatalf("turn %d after the pause not taken", i)
		}
		checkWait(t, fmt.Sprintf("turn %d after the pause", i), wait, time.Until(until)+time.Duration(i+1)*every)
	}

	// A longer pause, from either Store, extends it.
	until = time.Now().Add(5 * time.Second)
	if err := b.Pause(ctx, origin, until, "retry-after"); err != nil {
		t.Fatal(err)
	}
	wait, _ := reserve(t, a, origin, 0, 0)
	checkWait(t, "Reserve in an extended pause", wait, time.Until(until))
}

// TestReserveFleet has two Stores, on two clients as two processes have,
// reserve turns of one origin at once, some with a maxWait too short for
// most turns: the turns taken are every apart, and leave no gaps for the
// ones refused. A turn's time is when its caller got the answer, plus the
// wait: what a caller would wait for.
func TestReserveFleet(t *testing.T) {
	stores := newStores(t, 2)
	const every = 500 * time.Millisecond
	var mu sync.Mutex
	var turns []time.Time // guarded by mu
	var wg sync.WaitGroup
	for i := range 16 {
		s := stores[i%2]
		maxWait := forever
		if i%4 == 3 {
			maxWait = every
		}
		wg.Go(func() {
			for range 3 {
				wait, ok, err := reserveArgs(s, context.Background(), "https://example.com", every, true, maxWait)
				at := time.Now().Add(wait)
				if err != nil {
					t.Errorf("Reserve: %v", err)
					return
				}
				if !ok {
					if wait <= maxWait {
						t.Errorf("Reserve refused a wait of %v with a maxWait of %v", wait, maxWait)
					}
					continue
				}
				mu.Lock()
				turns = append(turns, at)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(turns) < 36 {
		t.Fatalf("%d turns taken, want at least the 36 of the callers that wait for them", len(turns))
	}
	checkSpacing(t, turns, every)
	want := time.Duration(len(turns)-1) * every
	if span := turns[len(turns)-1].Sub(turns[0]); span < want-spacingTolerance || span > want+spacingTolerance {
		t.Errorf("%d turns span %v, want %v: no gaps", len(turns), span, want)
	}
}

// commandCounter is a redis.Hook that counts the commands a client sends.
type commandCounter struct{ n atomic.Int64 }

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// serverCounts returns the number of commands the Redis server (every
// master of a cluster) has run, those that scripts call included, and of
// scripts it has run.
func serverCounts(t *testing.T, admin redis.UniversalClient) (commands, scripts int64) {
	t.Helper()
	st := serverStats(t, admin)
	return st["total_commands_processed"], st["cmdstat_eval"] + st["cmdstat_evalsha"]
}

// serverStats returns the counters of INFO stats and the calls of INFO
// commandstats (by "cmdstat_" and the command's name) of the Redis server,
// summed over the masters of a cluster.
func serverStats(t *testing.T, admin redis.UniversalClient) map[string]int64 {
	t.Helper()
	st := map[string]int64{}
	err := eachNode(context.Background(), admin, func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "stats", "commandstats").Result()
		if err != nil {
			return err
		}
		for line := range strings.Lines(info) {
			name, val, _ := strings.Cut(strings.TrimSpace(line), ":")
			if strings.HasPrefix(name, "cmdstat_") {
				val, _, _ = strings.Cut(strings.TrimPrefix(val, "calls="), ",")
			}
			if n, err := strconv.ParseInt(val, 10, 64); err == nil {
				st[name] += n
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// nodes returns the number of masters of admin: 1 if it is not a cluster.
func nodes(t *testing.T, admin redis.UniversalClient) int64 {
	var n int64
	eachNode(context.Background(), admin, func(context.Context, *redis.Client) error { n++; return nil })
	return n
}

// TestReserveCommands counts the Redis commands that Reserve costs: one for
// each request, paced or not, in a pause or not, taking its turn or not.
func TestReserveCommands(t *testing.T) {
	addr := redisAddr(t)
	s := newStore(t, newClient(t, addr))
	s.Prefix = testPrefix(t, addr)
	var sent commandCounter
	s.client.AddHook(&sent)
	admin := newClient(t, addr)
	const n = 50
	for _, c := range []struct {
		name    string
		origin  string
		every   time.Duration
		maxWait time.Duration
		pause   bool
	}{
		{"unpaced", "https://a.example", 0, forever, false},
		{"paced", "https://b.example", time.Second, forever, false},
		{"paced past maxWait", "https://c.example", time.Hour, time.Second, false},
		{"unpaced in a pause", "https://d.example", 0, forever, true},
		{"paced in a pause", "https://e.example", time.Second, forever, true},
	} {
		if c.pause {
			if err := s.Pause(context.Background(), c.origin, time.Now().Add(time.Hour), "retry-after"); err != nil {
				t.Fatal(err)
			}
		}
		reserve(t, s, c.origin, c.every, forever) // connects, loads the script
		before, sent0 := sent.n.Load(), int64(0)
		cmds0, scripts0 := serverCounts(t, admin)
		for range n {
			reserve(t, s, c.origin, c.every, c.maxWait)
		}
		cmds1, scripts1 := serverCounts(t, admin)
		sent0 = sent.n.Load() - before
		// The first INFO counts in the second's total, on each node.
		inner := cmds1 - cmds0 - nodes(t, admin) - (scripts1 - scripts0)
		t.Logf("%s: %d Reserve, %d commands sent, %d scripts run, %d commands called by them",
			c.name, n, sent0, scripts1-scripts0, inner)
		if sent0 > n {
			t.Errorf("%s: %d Reserve sent %d commands, want at most %d", c.name, n, sent0, n)
		}
		if scripts1-scripts0 > n {
			t.Errorf("%s: %d Reserve ran %d scripts, want at most %d", c.name, n, scripts1-scripts0, n)
		}
	}
}

// TestReserveCanceled reserves with a done context: Reserve fails with the
// context's error, and does not take Redis for down.
func TestReserveCanceled(t *testing.T) {
	s := newStores(t, 1)[0]
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := reserveArgs(s, ctx, "https://example.com", time.Second, true, forever); !errors.Is(err, context.Canceled) {
		t.Errorf("Reserve with a canceled context: %v, want context.Canceled", err)
	}
	if s.outage.Load() != nil {
		t.Errorf("a canceled Reserve started the cooldown")
	}
}

// TestUnreadablePace puts values that are not times, and values of other
// types, where the turns and the pause of an origin are kept: they are
// logged, deleted and replaced.
func TestUnreadablePace(t *testing.T) {
	addr := redisAddr(t)
	log := &logRecorder{}
	s := newStore(t, newClient(t, addr))
	s.Prefix, s.Logger = testPrefix(t, addr), slog.New(log)
	ctx := context.Background()
	const origin = "https://example.com"
	s.once.Do(s.init)
	for _, key := range []string{s.paceKey(origin), s.pauseKey(origin)} {
		for _, set := range []func() error{
			func() error { return s.client.Set(ctx, key, "not a time", 0).Err() },
			func() error { return s.client.Set(ctx, key, "inf", 0).Err() },
			func() error { return s.client.HSet(ctx, key, "a", "b").Err() },
		} {
			if err := set(); err != nil {
				t.Fatal(err)
			}
			if wait, ok := reserve(t, s, origin, time.Hour, 0); wait != 0 || !ok {
				t.Errorf("Reserve over an unreadable %s = %v, %v; want the turn at once", key, wait, ok)
			}
			if _, ok := reserve(t, s, origin, time.Hour, 0); ok {
				t.Errorf("second Reserve took a turn; want none for an hour")
			}
			s.client.Del(ctx, s.paceKey(origin), s.pauseKey(origin))
		}
	}
	if n := log.count(slog.LevelWarn, "redisstore: ignoring unreadable pace"); n != 6 {
		t.Errorf("%d warnings of an unreadable pace, want 6", n)
	}
	if s.outage.Load() != nil {
		t.Errorf("an unreadable value started the cooldown")
	}
}

// TestKeysExpire checks that the keys of an origin's pace and pause expire
// soon after they stop mattering (the latest turn a minute after it, since
// a later caller's interval may be up to that), and share a hash slot of a
// Redis Cluster.
func TestKeysExpire(t *testing.T) {
	s := newStores(t, 1)[0]
	ctx := context.Background()
	const origin = "https://example.com"
	reserve(t, s, origin, 2*time.Second, forever)
	if err := s.Pause(ctx, origin, time.Now().Add(3*time.Second), "retry-after"); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]time.Duration{s.paceKey(origin): time.Minute, s.pauseKey(origin): 3 * time.Second} {
		ttl, err := s.client.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl < want-100*time.Millisecond || ttl > want+2*time.Second {
			t.Errorf("PTTL %s = %v, want a little more than %v", key, ttl, want)
		}
	}
	// A Redis Cluster hashes only the hash tag of a key that has one: the
	// text between its first "{" and the next "}".
	tag := func(key string) string {
		_, after, ok := strings.Cut(key, "{")
		tag, _, ok2 := strings.Cut(after, "}")
		if !ok || !ok2 || tag == "" {
			return "no hash tag in " + key
		}
		return tag
	}
	if a, b := tag(s.paceKey(origin)), tag(s.pauseKey(origin)); a != origin || b != origin {
		t.Errorf("hash tags of the pace and pause keys = %q, %q; want %q, so that they share a hash slot", a, b, origin)
	}
}

// TestFleetCrawlDelay has several Transports, each with its own in-memory
// pace, send requests to one origin at once: the origin receives them
// spaced by its crawl-delay, robots.txt included.
func TestFleetCrawlDelay(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	s := newSite(t, "User-agent: *\nCrawl-delay: 1\nDisallow: /private\n")
	fleet := []*process{newProcess(t, addr, prefix, nil), newProcess(t, addr, prefix, nil), newProcess(t, addr, prefix, nil)}
	var wg sync.WaitGroup
	for i := range 4 {
		p := fleet[i%len(fleet)]
		wg.Go(func() {
			if err := get(context.Background(), p.client, fmt.Sprintf("%s/page%d", s.URL, i)); err != nil {
				t.Errorf("GET page%d: %v", i, err)
			}
		})
	}
	wg.Wait()
	arrived := s.arrived()
	if len(arrived) != 5 {
		t.Fatalf("%d requests arrived, want robots.txt and 4 pages", len(arrived))
	}
	checkSpacing(t, arrived, time.Second)

	// A request that cannot have its turn before its deadline fails at
	// once, and is not sent.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, _, err := reserveArgs(fleet[0].store, context.Background(), s.origin(), time.Second, true, 0); err != nil {
		t.Fatal(err)
	}
	if err := get(ctx, fleet[1].client, s.URL+"/late"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("GET with a turn past its deadline: %v, want context.DeadlineExceeded", err)
	}
	if n := len(s.arrived()); n != 5 {
		t.Errorf("%d requests arrived, want the late one not sent", n)
	}
}

// TestFleetPacerWithoutStore has the processes of a fleet share the pace
// in Redis but not the cache of robots.txt: each fetches robots.txt itself,
// not knowing the crawl-delay when it does, and yet every request, those
// fetches included, arrives a crawl-delay after the one before it.
func TestFleetPacerWithoutStore(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	s := newSite(t, "User-agent: *\nCrawl-delay: 1\n")
	fleet := []*process{newProcess(t, addr, prefix, nil), newProcess(t, addr, prefix, nil), newProcess(t, addr, prefix, nil)}
	for _, p := range fleet {
		p.tr.Store = nil
	}
	if err := get(context.Background(), fleet[0].client, s.URL+"/first"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i, p := range fleet[1:] {
		wg.Go(func() {
			if err := get(context.Background(), p.client, fmt.Sprintf("%s/page%d", s.URL, i)); err != nil {
				t.Errorf("GET page%d: %v", i, err)
			}
		})
	}
	wg.Wait()
	arrived := s.arrived()
	if len(arrived) != 6 {
		t.Fatalf("%d requests arrived, want robots.txt and a page from each of 3 processes", len(arrived))
	}
	checkSpacing(t, arrived, time.Second)
}

// TestTransportWaits has a Transport wait for turns that another process of
// the fleet holds: the Transport does the waiting and counts it, and a
// request whose turn comes after its deadline fails at once.
func TestTransportWaits(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	s := newSite(t, disallowPrivate)
	p := newProcess(t, addr, prefix, nil)
	other := newStore(t, newClient(t, addr))
	other.Prefix = prefix
	checkVerdicts(t, p.client, s.URL) // caches robots.txt; no crawl-delay
	before := p.tr.Stats()

	// Another process paused the origin for 2s: a request with a
	// deadline 800ms away fails at once, and is not sent.
	until := time.Now().Add(2 * time.Second)
	if err := other.Pause(context.Background(), s.origin(), until, "retry-after"); err != nil {
		t.Fatal(err)
	}
	// A pause set by another process reaches this one through its copy of
	// the pauses, within the documented bound (WatchInterval + Timeout);
	// on a loopback Redis it takes well under a millisecond.
	waitWatched(t, p.store, s.origin(), DefaultWatchInterval+DefaultTimeout)
	sent := len(s.arrived())
	ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := get(ctx, p.client, s.URL+"/late"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("GET with its turn past its deadline: %v, want context.DeadlineExceeded", err)
	}
	if elapsed := time.Since(start); elapsed > 200*time.Millisecond {
		t.Errorf("GET with its turn past its deadline failed after %v, want at once", elapsed)
	}
	if n := len(s.arrived()); n != sent {
		t.Errorf("%d requests arrived, want the late one not sent", n-sent)
	}

	// Without a deadline, it waits for the end of the pause.
	want := time.Until(until)
	if err := get(context.Background(), p.client, s.URL+"/page"); err != nil {
		t.Fatal(err)
	}
	if arrived := s.arrived(); arrived[len(arrived)-1].Before(until.Add(-waitTolerance)) {
		t.Errorf("GET in a pause sent at %v, before the pause ended at %v", arrived[len(arrived)-1], until)
	}
	st := p.tr.Stats()
	if n := st.TurnWaits - before.TurnWaits; n != 1 {
		t.Errorf("Stats.TurnWaits grew by %d, want 1", n)
	}
	if d := st.TurnWaitTime - before.TurnWaitTime; d < want-waitTolerance || d > want+waitTolerance {
		t.Errorf("Stats.TurnWaitTime grew by %v, want %v", d, want)
	}
}
