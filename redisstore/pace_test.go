package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"testing"
	"time"
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

// TestReserveSpacing has three Stores, on three clients, take turns of one
// origin at once: the turns they get are spaced by the interval.
func TestReserveSpacing(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	const every = 600 * time.Millisecond
	var mu sync.Mutex
	var turns []time.Time
	var wg sync.WaitGroup
	for range 3 {
		s := New(newClient(t, addr))
		s.Prefix = prefix
		for range 2 {
			wg.Go(func() {
				wait, ok, err := s.Reserve(context.Background(), "https://example.com", every, math.MaxInt64)
				if err != nil || !ok || wait != 0 {
					t.Errorf("Reserve = %v, %v, %v; want 0, true, nil", wait, ok, err)
					return
				}
				mu.Lock()
				turns = append(turns, time.Now())
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	if len(turns) != 6 {
		t.Fatalf("%d turns, want 6", len(turns))
	}
	checkSpacing(t, turns, every)

	// Another origin has turns of its own.
	s := New(newClient(t, addr))
	s.Prefix = prefix
	if wait, ok, err := s.Reserve(context.Background(), "https://example.org", every, 0); wait != 0 || !ok || err != nil {
		t.Errorf("Reserve of another origin = %v, %v, %v; want its turn at once", wait, ok, err)
	}
}

func TestReserveDeadline(t *testing.T) {
	addr := redisAddr(t)
	s := New(newClient(t, addr))
	s.Prefix = testPrefix(t, addr)
	ctx := context.Background()
	const origin = "https://example.com"
	if _, ok, err := s.Reserve(ctx, origin, time.Hour, 0); !ok || err != nil {
		t.Fatalf("first Reserve = %v, %v; want the turn", ok, err)
	}
	// The next turn is an hour away: past a maxWait of a second, Reserve
	// returns at once, saying how far.
	wait, ok, err := s.Reserve(ctx, origin, time.Hour, time.Second)
	if ok || err != nil || wait < 59*time.Minute || wait > time.Hour {
		t.Errorf("Reserve past maxWait = %v, %v, %v; want about 1h, false, nil", wait, ok, err)
	}
	// A caller whose context ends while it waits gets its error.
	s2 := New(s.client)
	s2.Prefix = s.Prefix
	if _, ok, _ := s2.Reserve(ctx, "https://example.net", 300*time.Millisecond, 0); !ok {
		t.Fatal("Reserve failed")
	}
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, _, err := s2.Reserve(cctx, "https://example.net", 300*time.Millisecond, math.MaxInt64); !errors.Is(err, context.Canceled) {
		t.Errorf("Reserve canceled while waiting: %v, want context.Canceled", err)
	}
}

func TestPause(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	a, b := New(newClient(t, addr)), New(newClient(t, addr))
	a.Prefix, b.Prefix = prefix, prefix
	ctx := context.Background()
	const origin = "https://example.com"

	until := time.Now().Add(400 * time.Millisecond)
	if err := a.Pause(ctx, origin, until); err != nil {
		t.Fatal(err)
	}
	// A shorter pause does not shorten it.
	if err := a.Pause(ctx, origin, time.Now().Add(10*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	// The pause holds back the turns of every user of the Redis, even
	// without a crawl-delay.
	if wait, ok, err := b.Reserve(ctx, origin, 0, 100*time.Millisecond); ok || err != nil || wait < 300*time.Millisecond {
		t.Errorf("Reserve in a pause, past maxWait = %v, %v, %v; want about 400ms, false, nil", wait, ok, err)
	}
	if _, ok, err := b.Reserve(ctx, origin, 0, math.MaxInt64); !ok || err != nil {
		t.Fatalf("Reserve = %v, %v; want the turn after the pause", ok, err)
	}
	if now := time.Now(); now.Before(until.Add(-spacingTolerance)) {
		t.Errorf("turn at %v before the pause ended, %v", now, until)
	}

	// After a pause, the turns held back leave one per interval.
	const every = 600 * time.Millisecond
	if err := a.Pause(ctx, origin, time.Now().Add(200*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var turns []time.Time
	var wg sync.WaitGroup
	for _, s := range []*Store{a, b, a, b} {
		wg.Go(func() {
			if _, ok, err := s.Reserve(ctx, origin, every, math.MaxInt64); !ok || err != nil {
				t.Errorf("Reserve = %v, %v", ok, err)
			}
			mu.Lock()
			turns = append(turns, time.Now())
			mu.Unlock()
		})
	}
	wg.Wait()
	checkSpacing(t, turns, every)
}

// TestUnreadablePace puts a value that redis_rate cannot read where the
// turns of an origin are kept: it is logged and replaced.
func TestUnreadablePace(t *testing.T) {
	addr := redisAddr(t)
	log := &logRecorder{}
	s := New(newClient(t, addr))
	s.Prefix, s.Logger = testPrefix(t, addr), slog.New(log)
	ctx := context.Background()
	const origin = "https://example.com"
	s.once.Do(s.init)
	for _, set := range []func() error{
		func() error { return s.client.Set(ctx, "rate:"+s.paceKey(origin), "not a time", 0).Err() },
		func() error { return s.client.HSet(ctx, "rate:"+s.paceKey(origin), "a", "b").Err() },
	} {
		if err := set(); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.Reserve(ctx, origin, time.Hour, 0); !ok || err != nil {
			t.Errorf("Reserve over an unreadable value = %v, %v; want the turn", ok, err)
		}
		if _, ok, err := s.Reserve(ctx, origin, time.Hour, 0); ok || err != nil {
			t.Errorf("second Reserve = %v, %v; want no turn for an hour", ok, err)
		}
		s.client.Del(ctx, "rate:"+s.paceKey(origin))
	}
	if n := log.count(slog.LevelWarn, "redisstore: ignoring unreadable pace"); n != 2 {
		t.Errorf("%d warnings of an unreadable pace, want 2", n)
	}
	if s.outage.Load() != nil {
		t.Errorf("an unreadable value started the cooldown")
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
	if _, _, err := fleet[0].store.Reserve(context.Background(), s.origin(), time.Second, 0); err != nil {
		t.Fatal(err)
	}
	if err := get(ctx, fleet[1].client, s.URL+"/late"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("GET with a turn past its deadline: %v, want context.DeadlineExceeded", err)
	}
	if n := len(s.arrived()); n != 5 {
		t.Errorf("%d requests arrived, want the late one not sent", n)
	}
}
