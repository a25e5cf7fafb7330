package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/f9014239/robots"
)

// slowSite is a loopback site slower than its crawl-delay, which records
// when each request arrived and when its answer was written, and the most
// requests it had in flight at once.
type slowSite struct {
	*httptest.Server
	mu      sync.Mutex
	flying  int
	most    int
	visits  []visit // guarded by mu
	latency time.Duration
}

type visit struct{ arrived, answered time.Time }

func newSlowSite(t testing.TB, robotsTxt string, latency time.Duration) *slowSite {
	s := &slowSite{latency: latency}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		s.mu.Lock()
		s.flying++
		s.most = max(s.most, s.flying)
		s.mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, robotsTxt)
		} else {
			time.Sleep(s.latency)
			io.WriteString(w, "page")
		}
		s.mu.Lock()
		s.flying--
		s.visits = append(s.visits, visit{arrived, time.Now()})
		s.mu.Unlock()
	}))
	t.Cleanup(s.Close)
	return s
}

// check fails t unless the site saw one request at a time, each arriving
// at least delay after the answer before it was written.
func (s *slowSite) check(t *testing.T, delay time.Duration) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.most > 1 {
		t.Errorf("%d requests in flight at once, want 1", s.most)
	}
	v := slices.Clone(s.visits)
	slices.SortFunc(v, func(a, b visit) int { return a.arrived.Compare(b.arrived) })
	for i := 1; i < len(v); i++ {
		if gap := v[i].arrived.Sub(v[i-1].answered); gap < delay {
			t.Errorf("request %d arrived %v after the answer before it, want at least %v", i, gap, delay)
		}
	}
}

// TestFleetOneInFlight: two processes, each with its own Store on one Redis
// and several workers, send one request at a time to a site slower than its
// crawl-delay, each a crawl-delay after the previous answer.
func TestFleetOneInFlight(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	s := newSlowSite(t, "User-agent: *\nCrawl-delay: 0.05\n", 80*time.Millisecond)
	fleet := []*process{newProcess(t, addr, prefix, nil), newProcess(t, addr, prefix, nil)}
	var wg sync.WaitGroup
	for w := range 6 {
		p := fleet[w%2]
		wg.Go(func() {
			for i := range 3 {
				if err := get(context.Background(), p.client, fmt.Sprintf("%s/w%d-%d", s.URL, w, i)); err != nil {
					t.Errorf("GET: %v", err)
				}
			}
		})
	}
	wg.Wait()
	s.check(t, 50*time.Millisecond)
	if n := len(s.visits); n != 19 {
		t.Errorf("%d requests reached the site, want robots.txt and 18 pages", n)
	}
}

// TestHeldTurn: a held turn holds the origin until it is released, or for
// its hold; the next turn is spaced from the release, or from the hold's
// end when the holder never releases it (a process killed).
func TestHeldTurn(t *testing.T) {
	addr := redisAddr(t)
	s := newStore(t, newClient(t, addr))
	s.Prefix = testPrefix(t, addr)
	ctx := context.Background()
	const origin = "https://example.com"
	every := 200 * time.Millisecond
	ask := fleet.TurnRequest{Every: every, Known: true, MaxWait: time.Hour, Hold: 400 * time.Millisecond}
	first, err := s.Reserve(ctx, origin, ask)
	if err != nil || !first.OK || first.ID == 0 {
		t.Fatalf("first Reserve = %+v, %v; want a held turn at once", first, err)
	}
	busy, err := s.Reserve(ctx, origin, ask)
	if err != nil || busy.OK || !busy.InFlight {
		t.Fatalf("Reserve while held = %+v, %v; want InFlight", busy, err)
	}
	// A release of another turn changes nothing.
	if err := s.Release(ctx, origin, fleet.Answer{ID: first.ID + 1}); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Reserve(ctx, origin, ask); !r.InFlight {
		t.Errorf("Reserve after a stranger's release = %+v, want still InFlight", r)
	}
	// Released: the next turn is the interval after the release.
	if err := s.Release(ctx, origin, fleet.Answer{ID: first.ID}); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	second, err := s.Reserve(ctx, origin, ask)
	if err != nil || !second.OK {
		t.Fatalf("Reserve after the release = %+v, %v; want the turn", second, err)
	}
	if at := time.Since(released) + second.Wait; at < every-waitTolerance {
		t.Errorf("turn %v after the release, want the interval, %v", at, every)
	}
	// Never released: the next is the interval after the hold's end.
	taken := time.Now().Add(second.Wait)
	time.Sleep(second.Wait + ask.Hold - 50*time.Millisecond)
	if r, _ := s.Reserve(ctx, origin, ask); !r.InFlight {
		t.Errorf("Reserve before the hold ran out = %+v, want InFlight", r)
	}
	time.Sleep(100 * time.Millisecond)
	third, err := s.Reserve(ctx, origin, ask)
	if err != nil || !third.OK {
		t.Fatalf("Reserve after the hold ran out = %+v, %v; want the turn", third, err)
	}
	if at := time.Until(taken) + ask.Hold + every; third.Wait < at-waitTolerance {
		t.Errorf("turn in %v, want the interval after the hold's end (%v)", third.Wait, at)
	}
}

// TestPushBackLevels: the back-off's level is kept in Redis: it doubles at
// each new incident up to Max, an answer of the current burst changes
// nothing (nor does one sent within a second of it, in a fleet), and a quiet
// Forgive after the pause ends starts again.
func TestPushBackLevels(t *testing.T) {
	addr := redisAddr(t)
	newS := func() *Store {
		s := newStore(t, newClient(t, addr))
		s.Prefix = testPrefix(t, addr)
		return s
	}
	a := newS()
	b := newS()
	b.Prefix = a.Prefix // another process of the fleet
	ctx := context.Background()
	const origin = "https://example.com"
	bo := robots.Backoff{First: 100 * time.Millisecond, Max: 300 * time.Millisecond, Forgive: 2 * time.Second}
	pause := func(s *Store, sent time.Time) time.Duration {
		t.Helper()
		until, err := s.PushBack(ctx, origin, sent, bo)
		if err != nil {
			t.Fatal(err)
		}
		return time.Until(until)
	}
	within := func(what string, d, want time.Duration) {
		t.Helper()
		if d < want-waitTolerance || d > want+want/10+waitTolerance {
			t.Errorf("%s: paused %v, want %v and up to a tenth more", what, d, want)
		}
	}
	sent := time.Now()
	within("first incident", pause(a, sent), 100*time.Millisecond)
	within("same burst, other process", pause(b, sent), 100*time.Millisecond)
	if r, _, _ := reserveArgs(b, ctx, origin, 0, true, 0); r < 50*time.Millisecond {
		t.Errorf("Reserve during the back-off: wait %v, want the pause", r)
	}
	// Past the second in which a request may be of the burst.
	time.Sleep(1100 * time.Millisecond)
	within("second incident", pause(b, time.Now()), 200*time.Millisecond)
	time.Sleep(1100 * time.Millisecond)
	within("third incident, capped", pause(a, time.Now()), 300*time.Millisecond)
	time.Sleep(340*time.Millisecond + bo.Forgive + 100*time.Millisecond)
	within("after a quiet Forgive", pause(a, time.Now()), 100*time.Millisecond)
}

// TestInFlightReason: a request held back while another process of the
// fleet has one in flight is refused for "in-flight", as in memory and on
// boltstore after a restart.
func TestInFlightReason(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			io.WriteString(w, "User-agent: *\nCrawl-delay: 0.5\n")
		case "/hang":
			arrived <- struct{}{}
			<-release
		}
	}))
	defer srv.Close()
	a, b := newProcess(t, addr, prefix, nil), newProcess(t, addr, prefix, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		get(context.Background(), a.client, srv.URL+"/hang")
	}()
	select {
	case <-arrived:
	case <-done:
		t.Fatal("the request to /hang did not reach the site")
	}
	ctx := robots.WithMaxWait(context.Background(), 300*time.Millisecond)
	err := get(ctx, b.client, srv.URL+"/page")
	var te *robots.TurnError
	if !errors.As(err, &te) || te.Reason != robots.ReasonInFlight {
		t.Errorf("a request while another process has one in flight: %v; want a TurnError for %q", err, robots.ReasonInFlight)
	}
	close(release)
	<-done
}

// TestFleetDefaultPace: two processes with Transports of zero config on one
// Redis keep the default pace for a site that states no delay, fleet-wide:
// one request at a time, each at least the default delay (1 s) after the
// answer to the one before, whichever process sends it.
func TestFleetDefaultPace(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	s := newSlowSite(t, "User-agent: *\nDisallow: /private\n", 10*time.Millisecond)
	procs := []*process{newProcess(t, addr, prefix, nil), newProcess(t, addr, prefix, nil)}
	var wg sync.WaitGroup
	for w := range 4 {
		p := procs[w%2]
		wg.Go(func() {
			if err := get(context.Background(), p.client, fmt.Sprintf("%s/w%d", s.URL, w)); err != nil {
				t.Errorf("GET: %v", err)
			}
		})
	}
	wg.Wait()
	s.check(t, robots.DefaultPaceDelay)
	if n := len(s.visits); n != 5 {
		t.Errorf("%d requests reached the site, want robots.txt and 4 pages", n)
	}
}

// TestFleetAdaptiveDelay: the adaptive delay is the fleet's. Two processes
// on one Redis take turns at a site that answers in 300 ms: after each
// answer the next request, from either process, waits at least twice the
// time that answer took, though each process saw only every other one.
func TestFleetAdaptiveDelay(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	const latency = 300 * time.Millisecond
	s := newSlowSite(t, "User-agent: *\nDisallow: /private\n", latency)
	procs := []*process{newProcess(t, addr, prefix, nil), newProcess(t, addr, prefix, nil)}
	for _, p := range procs {
		p.tr.DefaultDelay = 10 * time.Millisecond // the adaptive delay, not the default, spaces the pages
	}
	for i := range 4 {
		if err := get(context.Background(), procs[i%2].client, fmt.Sprintf("%s/page%d", s.URL, i)); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := slices.Clone(s.visits)
	slices.SortFunc(v, func(a, b visit) int { return a.arrived.Compare(b.arrived) })
	if len(v) != 5 || s.most != 1 {
		t.Fatalf("%d requests, at most %d in flight; want robots.txt and 4 pages, one at a time", len(v), s.most)
	}
	for i := 2; i < len(v); i++ { // v[0] is robots.txt, v[1] the first page
		took := v[i-1].answered.Sub(v[i-1].arrived)
		if gap := v[i].arrived.Sub(v[i-1].answered); gap < 2*took {
			t.Errorf("page %d arrived %v after the answer to the one before, which took %v; want at least twice that", i-1, gap, took)
		}
	}
}
