package robots_test

// Politeness as the site sees it, from the outside: every test here uses the
// public API only, under testing/synctest (virtual time), with a fake site
// (a base RoundTripper) that logs when each request arrives and when it is
// answered, so that politeness is judged where the site stands.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/internal/pacing"

	"github.com/f9014239/robots"
)

// ---------------------------------------------------------------------------
// The fake site.

type svVisit struct {
	origin, path, ua  string
	status            int
	arrived, answered time.Time
}

// svSite is a base RoundTripper that plays every origin. It honours its
// request's context while it "works" (unless ignoreCtx), logs each request
// with its arrival and answer, and counts the requests in flight per origin.
type svSite struct {
	robots    map[string]string // origin -> robots.txt body; absent: 404
	robotsHdr map[string]http.Header
	robotsSt  map[string]int // origin -> status of robots.txt (default 200)
	latency   func(origin, path string) time.Duration
	// respond, if set, gives the status, header and body of a page; n is
	// the 1-based count of requests to origin+path so far.
	respond   func(origin, path string, n int) (int, http.Header, io.ReadCloser)
	hang      chan struct{} // path /hang waits for it to close
	ignoreCtx bool          // /hang ignores the request's context

	mu     sync.Mutex
	visits []svVisit
	flying map[string]int
	maxFly map[string]int
	count  map[string]int
}

func (s *svSite) RoundTrip(req *http.Request) (*http.Response, error) {
	origin := req.URL.Scheme + "://" + req.URL.Host
	if req.Host != "" && req.Host != req.URL.Host {
		origin = req.URL.Scheme + "://" + req.Host
	}
	path := req.URL.Path
	arrived := time.Now()
	s.mu.Lock()
	if s.flying == nil {
		s.flying, s.maxFly, s.count = map[string]int{}, map[string]int{}, map[string]int{}
	}
	s.flying[origin]++
	s.maxFly[origin] = max(s.maxFly[origin], s.flying[origin])
	s.count[origin+path]++
	n := s.count[origin+path]
	s.mu.Unlock()
	finish := func(status int) {
		s.mu.Lock()
		s.flying[origin]--
		s.visits = append(s.visits, svVisit{origin, path, req.Header.Get("User-Agent"), status, arrived, time.Now()})
		s.mu.Unlock()
	}
	ctx := req.Context()
	if path == "/hang" && s.hang != nil {
		if s.ignoreCtx {
			<-s.hang
		} else {
			select {
			case <-s.hang:
			case <-ctx.Done():
				finish(0)
				return nil, ctx.Err()
			}
		}
	}
	if s.latency != nil {
		if d := s.latency(origin, path); d > 0 {
			timer := time.NewTimer(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				finish(0)
				return nil, ctx.Err()
			}
		}
	}
	status, hdr, body := 200, http.Header{}, io.ReadCloser(io.NopCloser(strings.NewReader("page")))
	if path == "/robots.txt" {
		b, ok := s.robots[origin]
		if !ok {
			status = 404
		}
		if st, ok := s.robotsSt[origin]; ok {
			status = st
		}
		if h, ok := s.robotsHdr[origin]; ok {
			hdr = h.Clone()
		}
		body = io.NopCloser(strings.NewReader(b))
	} else if s.respond != nil {
		status, hdr, body = s.respond(origin, path, n)
		if hdr == nil {
			hdr = http.Header{}
		}
	}
	finish(status)
	return &http.Response{StatusCode: status, Header: hdr, Body: body, Request: req}, nil
}

// log returns origin's visits, by arrival.
func (s *svSite) log(origin string) []svVisit {
	s.mu.Lock()
	defer s.mu.Unlock()
	var v []svVisit
	for _, x := range s.visits {
		if x.origin == origin {
			v = append(v, x)
		}
	}
	slices.SortStableFunc(v, func(a, b svVisit) int { return a.arrived.Compare(b.arrived) })
	return v
}

func (s *svSite) most(origin string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxFly[origin]
}

// checkSpaced fails t unless origin saw one request at a time, each arriving
// at least delay(v) after the answer to the one before.
func (s *svSite) checkSpaced(t *testing.T, origin string, delay func(v svVisit) time.Duration) {
	t.Helper()
	if m := s.most(origin); m > 1 {
		t.Errorf("%s: %d requests in flight at once, want at most 1", origin, m)
	}
	v := s.log(origin)
	for i := 1; i < len(v); i++ {
		want := delay(v[i])
		if gap := v[i].arrived.Sub(v[i-1].answered); gap < want {
			t.Errorf("%s: %s (%s) arrived %v after the answer to %s (%s), want at least %v",
				origin, v[i].path, v[i].ua, gap, v[i-1].path, v[i-1].ua, want)
		}
	}
}

func svConst(d time.Duration) func(svVisit) time.Duration {
	return func(svVisit) time.Duration { return d }
}

func svBody(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }

// get sends one request through rt and closes its body.
func svGet(ctx context.Context, rt http.RoundTripper, u, ua string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return nil, err
	}
	if ua != "" {
		req.Header.Set("User-Agent", ua)
	}
	resp, err := rt.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	return resp, err
}

// svRetry sends u through tr, retrying at TurnError.RetryAt, until it is sent
// (or a non-TurnError error); it returns the number of refusals.
func svRetry(t *testing.T, ctx context.Context, tr http.RoundTripper, u, ua string) (refusals int, err error) {
	for range 10000 {
		_, err = svGet(ctx, tr, u, ua)
		var te *robots.TurnError
		if !errors.As(err, &te) {
			return refusals, err
		}
		refusals++
		if te.RetryAt.IsZero() {
			t.Errorf("TurnError.RetryAt is zero")
			return refusals, err
		}
		time.Sleep(time.Until(te.RetryAt))
	}
	t.Errorf("%s: still refused after 10000 tries", u)
	return refusals, err
}

// svLogs is a slog.Handler that keeps its records.
type svLogs struct {
	mu   sync.Mutex
	recs []string
}

func (h *svLogs) Enabled(context.Context, slog.Level) bool { return true }
func (h *svLogs) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	h.mu.Lock()
	h.recs = append(h.recs, b.String())
	h.mu.Unlock()
	return nil
}
func (h *svLogs) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *svLogs) WithGroup(string) slog.Handler      { return h }
func (h *svLogs) find(level slog.Level, substr string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.recs {
		if strings.HasPrefix(r, level.String()+" ") && strings.Contains(r, substr) {
			out = append(out, r)
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// The in-memory Pacer (package pacing), shared by the Transports of a fleet.

type svPacer struct {
	pacing.Memory
	once sync.Once
}

// PushBack is the Memory's with no jitter, so that the fleet's pause is
// never longer than the one the Transport keeps in memory, whose RetryAt
// the tests check.
func (p *svPacer) PushBack(ctx context.Context, origin string, sent time.Time, b robots.Backoff) (time.Time, error) {
	p.once.Do(func() { p.Jitter = func() float64 { return 0 } })
	return p.Memory.PushBack(ctx, origin, sent, b)
}

// ---------------------------------------------------------------------------
// Promise 1: one in flight, spaced from the answer.

const svOrigin = "https://a.example"

// TestPoliteBlockingCallers: six blocking callers, a site slower than
// its crawl-delay (and faster, and MinDelay): one request at a time, each a
// delay after the previous answer, robots.txt included.
func TestPoliteBlockingCallers(t *testing.T) {
	for _, c := range []struct {
		name     string
		robots   string
		minDelay time.Duration
		delay    time.Duration
		latency  time.Duration
	}{
		{"slow site", "User-agent: *\nCrawl-delay: 1\n", 0, time.Second, 3 * time.Second},
		{"fast site", "User-agent: *\nCrawl-delay: 2\n", 0, 2 * time.Second, 100 * time.Millisecond},
		{"MinDelay", "User-agent: *\nDisallow: /private\n", 1500 * time.Millisecond, 1500 * time.Millisecond, 2 * time.Second},
		{"MinDelay longer than crawl-delay", "User-agent: *\nCrawl-delay: 1\n", 3 * time.Second, 3 * time.Second, time.Second},
		{"no robots.txt, MinDelay", "", time.Second, time.Second, 700 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				site := &svSite{robots: map[string]string{svOrigin: c.robots},
					latency: func(_, p string) time.Duration { return c.latency }}
				if c.robots == "" {
					site.robots = nil
				}
				tr := &robots.Transport{Base: site, Agent: "ExampleBot", MinDelay: c.minDelay}
				var wg sync.WaitGroup
				for i := range 6 {
					wg.Go(func() {
						for j := range 3 {
							if _, err := svGet(t.Context(), tr, fmt.Sprintf("%s/p%d-%d", svOrigin, i, j), ""); err != nil {
								t.Error(err)
							}
						}
					})
				}
				wg.Wait()
				if n := len(site.log(svOrigin)); n != 19 {
					t.Errorf("%d requests, want 19 (robots.txt and 18 pages)", n)
				}
				site.checkSpaced(t, svOrigin, svConst(c.delay))
			})
		})
	}
}

// TestPoliteMaxWaitCallersRetryAtAt: callers under MaxWait that retry
// at TurnError.RetryAt keep the same spacing, and each of them is eventually sent.
func TestPoliteMaxWaitCallersRetryAtAt(t *testing.T) {
	for _, lat := range []time.Duration{200 * time.Millisecond, 2500 * time.Millisecond} {
		t.Run(lat.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nCrawl-delay: 1\n"},
					latency: func(_, p string) time.Duration { return lat }}
				tr := &robots.Transport{Base: site, Agent: "ExampleBot", MaxWait: 50 * time.Millisecond}
				var wg sync.WaitGroup
				for i := range 4 {
					wg.Go(func() {
						for j := range 3 {
							if _, err := svRetry(t, t.Context(), tr, fmt.Sprintf("%s/p%d-%d", svOrigin, i, j), ""); err != nil {
								t.Error(err)
							}
						}
					})
				}
				wg.Wait()
				site.checkSpaced(t, svOrigin, svConst(time.Second))
				if st := tr.Stats(); st.NotYet == 0 {
					t.Errorf("Stats.NotYet = 0, want refusals")
				}
			})
		})
	}
}

// TestPoliteCancelledMidWait: callers whose contexts end while they
// wait for the turn, or while their request is in flight, leave the spacing
// intact, and nothing is left holding the origin.
func TestPoliteCancelledMidWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nCrawl-delay: 1\n"},
			latency: func(_, p string) time.Duration { return 1500 * time.Millisecond }}
		tr := &robots.Transport{Base: site, Agent: "ExampleBot"}
		var wg sync.WaitGroup
		for i := range 12 {
			wg.Go(func() {
				// Cancelled at 0.7 s steps: some while waiting, some in flight.
				ctx, cancel := context.WithTimeout(t.Context(), time.Duration(i+1)*700*time.Millisecond)
				defer cancel()
				if i%3 == 0 {
					// a cancel (not a deadline): it cannot be refused early with a TurnError
					ctx2, cancel2 := context.WithCancel(t.Context())
					defer cancel2()
					go func() { time.Sleep(time.Duration(i+1) * 700 * time.Millisecond); cancel2() }()
					ctx = ctx2
				}
				svGet(ctx, tr, fmt.Sprintf("%s/p%d", svOrigin, i), "")
			})
		}
		wg.Wait()
		// Then blocking callers again.
		for i := range 3 {
			wg.Go(func() {
				if _, err := svGet(t.Context(), tr, fmt.Sprintf("%s/after%d", svOrigin, i), ""); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		site.checkSpaced(t, svOrigin, svConst(time.Second))
	})
}

// TestPoliteRedirects: redirects on one origin and to another, and a
// robots.txt that redirects to another origin's robots.txt, while that
// origin is being crawled: each origin sees one request at a time, spaced.
func TestPoliteRedirects(t *testing.T) {
	const a, b, c = "https://a.example", "https://b.example", "https://c.example"
	synctest.Test(t, func(t *testing.T) {
		site := &svSite{
			robots:   map[string]string{a: "User-agent: *\nCrawl-delay: 1\n", b: "User-agent: *\nCrawl-delay: 2\n"},
			robotsSt: map[string]int{c: 301}, robotsHdr: map[string]http.Header{c: {"Location": {b + "/robots.txt"}}},
			latency: func(_, p string) time.Duration { return 1200 * time.Millisecond },
			respond: func(origin, path string, n int) (int, http.Header, io.ReadCloser) {
				switch {
				case strings.HasPrefix(path, "/r1"):
					return 302, http.Header{"Location": {strings.Replace(path, "/r1", "/r2", 1)}}, svBody("")
				case strings.HasPrefix(path, "/r2"):
					return 302, http.Header{"Location": {strings.Replace(path, "/r2", "/r3", 1)}}, svBody("")
				case strings.HasPrefix(path, "/x") && origin == a:
					return 302, http.Header{"Location": {b + path}}, svBody("")
				}
				return 200, nil, svBody("ok")
			},
		}
		tr := &robots.Transport{Base: site, Agent: "ExampleBot"}
		client := &http.Client{Transport: tr}
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				for _, u := range []string{fmt.Sprintf("%s/r1-%d", a, i), fmt.Sprintf("%s/x%d", a, i), fmt.Sprintf("%s/b%d", b, i), fmt.Sprintf("%s/c%d", c, i)} {
					req, _ := http.NewRequestWithContext(t.Context(), "GET", u, nil)
					resp, err := client.Do(req)
					if err != nil {
						t.Error(err)
						continue
					}
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		site.checkSpaced(t, a, svConst(time.Second))
		site.checkSpaced(t, b, svConst(2*time.Second))
		site.checkSpaced(t, c, svConst(2*time.Second))
	})
}

// TestPoliteSeveralTokens: one Transport, requests as two crawlers
// whose groups state different crawl-delays, mixed: one request in flight at
// a time, each at least its own crawler's delay after the previous answer,
// whoever sent it.
func TestPoliteSeveralTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &svSite{robots: map[string]string{svOrigin: "User-agent: FastBot\nCrawl-delay: 1\n\nUser-agent: SlowBot\nCrawl-delay: 3\n"},
			latency: func(_, p string) time.Duration { return 1500 * time.Millisecond }}
		tr := &robots.Transport{Base: site} // Agent from each request's User-Agent
		tr2 := &robots.Transport{Base: site, Agent: "FastBot", Pacer: nil}
		_ = tr2
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Go(func() {
				ua := "FastBot/1.0"
				if i%2 == 1 {
					ua = "SlowBot/2.0"
				}
				for j := range 3 {
					ctx := t.Context()
					if j == 2 {
						// WithAgent with no User-Agent header
						ctx = robots.WithAgent(ctx, strings.Split(ua, "/")[0])
						if _, err := svGet(ctx, tr, fmt.Sprintf("%s/p%d-%d", svOrigin, i, j), ""); err != nil {
							t.Error(err)
						}
						continue
					}
					if _, err := svGet(ctx, tr, fmt.Sprintf("%s/p%d-%d", svOrigin, i, j), ua); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		site.checkSpaced(t, svOrigin, func(v svVisit) time.Duration {
			if strings.HasPrefix(v.ua, "SlowBot") {
				return 3 * time.Second
			}
			return time.Second
		})
	})
}

// TestPoliteFleetStoreAndPacer: two Transports sharing a MemoryStore
// and a Pacer (written from its contract), blocking and MaxWait callers on
// both: the site sees one request at a time, spaced, robots.txt fetched once.
func TestPoliteFleetStoreAndPacer(t *testing.T) {
	for _, lat := range []time.Duration{300 * time.Millisecond, 2 * time.Second} {
		t.Run(lat.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nCrawl-delay: 1\n"},
					latency: func(_, p string) time.Duration { return lat }}
				store, pacer := &fleet.MemoryStore{}, &svPacer{}
				trs := []*robots.Transport{
					{Base: site, Agent: "ExampleBot", Store: store, Pacer: pacer},
					{Base: site, Agent: "ExampleBot", Store: store, Pacer: pacer, MaxWait: 100 * time.Millisecond},
				}
				var wg sync.WaitGroup
				for i := range 8 {
					tr := trs[i%2]
					wg.Go(func() {
						for j := range 3 {
							if _, err := svRetry(t, t.Context(), tr, fmt.Sprintf("%s/p%d-%d", svOrigin, i, j), ""); err != nil {
								t.Error(err)
							}
						}
					})
				}
				wg.Wait()
				site.checkSpaced(t, svOrigin, svConst(time.Second))
				n := 0
				for _, v := range site.log(svOrigin) {
					if v.path == "/robots.txt" {
						n++
					}
				}
				if n != 1 {
					t.Errorf("robots.txt fetched %d times, want 1", n)
				}
			})
		})
	}
}

// ---------------------------------------------------------------------------
// Promise 2: a request whose Base never returns holds the origin for
// TurnTimeout at most.

// TestPoliteHangingBaseTurnTimeout: a request that hangs holds the
// origin for TurnTimeout; the next leaves the interval after the hold's end,
// not sooner, not (much) later; alone, in a fleet, and under MaxWait.
func TestPoliteHangingBaseTurnTimeout(t *testing.T) {
	for _, c := range []struct {
		name    string
		fleet   bool
		maxWait time.Duration
	}{{"alone", false, 0}, {"MaxWait", false, 100 * time.Millisecond}, {"fleet", true, 0}, {"fleet MaxWait", true, 100 * time.Millisecond}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const turnTimeout, delay = 5 * time.Second, time.Second
				site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nCrawl-delay: 1\n"},
					hang: make(chan struct{}), ignoreCtx: true}
				pacer, store := &svPacer{}, &fleet.MemoryStore{}
				mk := func() *robots.Transport {
					tr := &robots.Transport{NoDefaultPace: true, Base: site, Agent: "ExampleBot", TurnTimeout: turnTimeout, MaxWait: c.maxWait}
					if c.fleet {
						tr.Pacer, tr.Store = pacer, store
					}
					return tr
				}
				t1 := mk()
				t2 := t1
				if c.fleet {
					t2 = mk()
				}
				for _, tr := range []*robots.Transport{t1, t2} {
					if _, err := svRetry(t, t.Context(), tr, svOrigin+"/warm", ""); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(2 * delay)
				hung := make(chan struct{})
				go func() {
					defer close(hung)
					svGet(context.Background(), t1, svOrigin+"/hang", "")
				}()
				synctest.Wait()
				hangAt := time.Now()
				if _, err := svRetry(t, t.Context(), t2, svOrigin+"/next", ""); err != nil {
					t.Fatal(err)
				}
				v := site.log(svOrigin)
				last := v[len(v)-1]
				if last.path != "/next" {
					t.Fatalf("last visit %s, want /next", last.path)
				}
				got := last.arrived.Sub(hangAt)
				if got < turnTimeout+delay || got > turnTimeout+delay+time.Second {
					t.Errorf("/next arrived %v after /hang left, want %v (TurnTimeout + crawl-delay)", got, turnTimeout+delay)
				}
				close(site.hang)
				<-hung
			})
		})
	}
}

// TestPoliteTurnTimeoutHuge: TurnTimeout set to the longest Duration
// (a user who wants a hung request to hold its origin for ever) must not let
// a second request out while the first is in flight.
func TestPoliteTurnTimeoutHuge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nCrawl-delay: 1\n"},
			latency: func(_, p string) time.Duration {
				if p == "/slow" {
					return 10 * time.Second
				}
				return 0
			}}
		tr := &robots.Transport{Base: site, Agent: "ExampleBot", TurnTimeout: math.MaxInt64}
		if _, err := svGet(t.Context(), tr, svOrigin+"/warm", ""); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		var wg sync.WaitGroup
		wg.Go(func() { svGet(t.Context(), tr, svOrigin+"/slow", "") })
		synctest.Wait()
		wg.Go(func() { svGet(t.Context(), tr, svOrigin+"/next", "") })
		wg.Wait()
		site.checkSpaced(t, svOrigin, svConst(time.Second))
	})
}

// ---------------------------------------------------------------------------
// Promise 3: back-off.

// svStatuses answers pages with the statuses and Retry-After values of seq
// (by request number to any page), then 200.
type svStep struct {
	status int
	ra     string // Retry-After; "" for none
}

func svSeq(seq []svStep) func(string, string, int) (int, http.Header, io.ReadCloser) {
	var mu sync.Mutex
	i := 0
	return func(_, _ string, _ int) (int, http.Header, io.ReadCloser) {
		mu.Lock()
		defer mu.Unlock()
		if i >= len(seq) {
			return 200, nil, svBody("ok")
		}
		s := seq[i]
		i++
		h := http.Header{}
		if s.ra != "" {
			h.Set("Retry-After", s.ra)
		}
		return s.status, h, svBody("busy")
	}
}

// TestPoliteBackoffUnusableRetryAfter: a 429/503 with a Retry-After
// that is absent, zero, negative, malformed or in the past pauses the origin
// for 60 s (up to 66 s): the next request arrives no sooner, and one caller
// retrying at TurnError.RetryAt is sent then with Reason "backoff".
func TestPoliteBackoffUnusableRetryAfter(t *testing.T) {
	for _, ra := range []string{"", "0", "-5", "abc", "Sun, 06 Nov 1994 08:49:37 GMT", "1.5", "10 s", "0x10", " "} {
		for _, status := range []int{429, 503} {
			t.Run(fmt.Sprintf("%d %q", status, ra), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nDisallow: /private\n"},
						respond: svSeq([]svStep{{status, ra}})}
					tr := &robots.Transport{NoDefaultPace: true, Base: site, Agent: "ExampleBot", MaxWait: time.Millisecond}
					resp, err := svGet(t.Context(), tr, svOrigin+"/p1", "")
					if err != nil || resp.StatusCode != status {
						t.Fatalf("got %v, %v", resp, err)
					}
					answered := time.Now()
					_, err = svGet(t.Context(), tr, svOrigin+"/p2", "")
					var te *robots.TurnError
					if !errors.As(err, &te) {
						t.Fatalf("after a %d: %v, want a TurnError", status, err)
					}
					if te.Reason != robots.ReasonBackoff {
						t.Errorf("Reason %q, want %q", te.Reason, robots.ReasonBackoff)
					}
					if d := te.RetryAt.Sub(answered); d < time.Minute || d > 66*time.Second {
						t.Errorf("At is %v after the answer, want 60 s to 66 s", d)
					}
					time.Sleep(time.Until(te.RetryAt))
					if _, err := svGet(t.Context(), tr, svOrigin+"/p3", ""); err != nil {
						t.Errorf("a retry at At: %v", err)
					}
					v := site.log(svOrigin)
					if gap := v[len(v)-1].arrived.Sub(answered); gap < time.Minute {
						t.Errorf("sent %v after the %d, want at least a minute", gap, status)
					}
					if st := tr.Stats(); st.Backoffs != 1 || st.Pauses != 0 {
						t.Errorf("Stats.Backoffs %d, Pauses %d, want 1, 0", st.Backoffs, st.Pauses)
					}
				})
			})
		}
	}
}

// TestPoliteRetryAfterHonoured: a usable Retry-After is honoured (up to
// a day; a cap logs a Warn).
func TestPoliteRetryAfterHonoured(t *testing.T) {
	for _, c := range []struct {
		ra   string
		want time.Duration
		warn bool
	}{
		{"120", 2 * time.Minute, false},
		{"86400", 24 * time.Hour, false},
		{"86401", 24 * time.Hour, true},
		{"172800", 24 * time.Hour, true},
		{"99999999999999999999999", 24 * time.Hour, true},
		{"+90s", 90 * time.Second, false}, // an HTTP date 90 s ahead
	} {
		t.Run(c.ra, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ra := c.ra
				if ra == "+90s" {
					ra = time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
				}
				logs := &svLogs{}
				site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nDisallow: /private\n"},
					respond: svSeq([]svStep{{429, ra}})}
				tr := &robots.Transport{NoDefaultPace: true, Base: site, Agent: "ExampleBot", MaxWait: time.Millisecond, Logger: slog.New(logs)}
				svGet(t.Context(), tr, svOrigin+"/p1", "")
				answered := time.Now()
				_, err := svGet(t.Context(), tr, svOrigin+"/p2", "")
				var te *robots.TurnError
				if !errors.As(err, &te) {
					t.Fatalf("%v, want a TurnError", err)
				}
				if te.Reason != robots.ReasonRetryAfter {
					t.Errorf("Reason %q, want %q", te.Reason, robots.ReasonRetryAfter)
				}
				if d := te.RetryAt.Sub(answered); d < c.want || d > c.want+time.Second {
					t.Errorf("At is %v after the answer, want %v", d, c.want)
				}
				if w := logs.find(slog.LevelWarn, "Retry-After"); (len(w) > 0) != c.warn {
					t.Errorf("Warn records %q, want a warning: %v", w, c.warn)
				}
				time.Sleep(time.Until(te.RetryAt))
				if _, err := svGet(t.Context(), tr, svOrigin+"/p3", ""); err != nil {
					t.Errorf("a retry at At: %v", err)
				}
				if st := tr.Stats(); st.Pauses != 1 || st.Backoffs != 0 {
					t.Errorf("Stats.Pauses %d, Backoffs %d, want 1, 0", st.Pauses, st.Backoffs)
				}
			})
		})
	}
}

// TestPoliteBackoffDoublesAndCaps: each new incident doubles the pause
// (jitter only lengthening, at most a tenth), up to the cap: the default, a
// day, and a Backoff.Max of 5 minutes.
func TestPoliteBackoffDoublesAndCaps(t *testing.T) {
	for _, c := range []struct {
		name string
		bo   robots.Backoff
		max  time.Duration
	}{{"default", robots.Backoff{}, 24 * time.Hour}, {"Max 5m", robots.Backoff{Max: 5 * time.Minute}, 5 * time.Minute}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var seq []svStep
				for range 13 {
					seq = append(seq, svStep{503, ""})
				}
				site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nDisallow: /private\n"}, respond: svSeq(seq)}
				tr := &robots.Transport{Base: site, Agent: "ExampleBot", Backoff: c.bo}
				want := time.Minute
				for i := range 13 {
					svGet(t.Context(), tr, fmt.Sprintf("%s/p%d", svOrigin, i), "")
					if i == 0 {
						continue
					}
					all := site.log(svOrigin)
					var v []svVisit // pages only
					for _, x := range all {
						if x.path != "/robots.txt" {
							v = append(v, x)
						}
					}
					prev := v[len(v)-2].answered
					gap := v[len(v)-1].arrived.Sub(prev)
					if gap < want || gap > want+want/10 {
						t.Errorf("incident %d: next request %v after, want %v to %v", i, gap, want, want+want/10)
					}
					for _, x := range all {
						if x.path == "/robots.txt" && x.arrived.After(prev) && x.arrived.Sub(prev) < want {
							t.Errorf("incident %d: robots.txt fetched %v into the pause of %v", i, x.arrived.Sub(prev), want)
						}
					}
					want = min(2*want, c.max)
				}
				if st := tr.Stats(); st.Backoffs != 13 {
					t.Errorf("Stats.Backoffs %d, want 13", st.Backoffs)
				}
			})
		})
	}
}

// TestPoliteBackoffForgiven: the level starts again an hour after the
// last pause ended, not before.
func TestPoliteBackoffForgiven(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		status := 503
		site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nDisallow: /private\n"},
			respond: func(string, string, int) (int, http.Header, io.ReadCloser) {
				mu.Lock()
				defer mu.Unlock()
				return status, nil, svBody("")
			}}
		set := func(s int) { mu.Lock(); status = s; mu.Unlock() }
		tr := &robots.Transport{NoDefaultPace: true, Base: site, Agent: "ExampleBot", MaxWait: time.Millisecond}
		check := func(name string, want time.Duration) {
			t.Helper()
			set(503)
			svGet(t.Context(), tr, svOrigin+"/"+name, "")
			answered := time.Now()
			_, err := svGet(t.Context(), tr, svOrigin+"/probe", "")
			var te *robots.TurnError
			if !errors.As(err, &te) {
				t.Fatalf("%s: %v, want a TurnError", name, err)
			}
			if d := te.RetryAt.Sub(answered); d < want || d > want+want/10 {
				t.Errorf("%s: paused %v, want %v (+10%%)", name, d, want)
			}
			time.Sleep(time.Until(te.RetryAt)) // the pause ends
			set(200)
		}
		check("first", time.Minute)
		time.Sleep(59 * time.Minute)
		check("within an hour", 2*time.Minute)
		time.Sleep(61 * time.Minute)
		check("after an hour", time.Minute)
	})
}

// TestPoliteBurstIsOneIncident: five requests in flight at once (no
// crawl-delay) all answered 503: one incident, a one-minute pause; then one
// request at a time until forgiven.
func TestPoliteBurstIsOneIncident(t *testing.T) {
	for _, inFleet := range []bool{false, true} {
		t.Run(fmt.Sprint("fleet=", inFleet), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				burst := false
				site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nDisallow: /private\n"},
					latency: func(_, p string) time.Duration { return time.Second },
					respond: func(string, string, int) (int, http.Header, io.ReadCloser) {
						mu.Lock()
						defer mu.Unlock()
						if burst {
							return 503, nil, svBody("")
						}
						return 200, nil, svBody("")
					}}
				pacer := &svPacer{}
				var trs []*robots.Transport
				for range 2 {
					tr := &robots.Transport{NoDefaultPace: true, Base: site, Agent: "ExampleBot"}
					if inFleet {
						tr.Pacer, tr.Store = pacer, &fleet.MemoryStore{}
					}
					trs = append(trs, tr)
				}
				for _, tr := range trs {
					svGet(t.Context(), tr, svOrigin+"/warm", "") // robots.txt
				}
				if !inFleet {
					trs = trs[:1]
				}
				time.Sleep(time.Second)
				mu.Lock()
				burst = true
				mu.Unlock()
				var wg sync.WaitGroup
				for i := range 6 {
					wg.Go(func() { svGet(t.Context(), trs[i%len(trs)], fmt.Sprintf("%s/b%d", svOrigin, i), "") })
				}
				synctest.Wait()
				time.Sleep(10 * time.Millisecond)
				if m := site.most(svOrigin); m < 2 {
					t.Fatalf("the burst: %d in flight, want several", m)
				}
				wg.Wait()
				burstEnd := time.Now()
				mu.Lock()
				burst = false
				mu.Unlock()
				for _, tr := range trs {
					if st := tr.Stats(); st.Backoffs != 1 {
						t.Errorf("Stats.Backoffs %d, want 1 (one incident)", st.Backoffs)
					}
				}
				// After the burst: five concurrent callers again.
				n := len(site.log(svOrigin))
				for i := range 6 {
					wg.Go(func() { svGet(t.Context(), trs[i%len(trs)], fmt.Sprintf("%s/after%d", svOrigin, i), "") })
				}
				wg.Wait()
				v := site.log(svOrigin)[n:]
				if gap := v[0].arrived.Sub(burstEnd); gap < time.Minute || gap > 66*time.Second {
					t.Errorf("first request after the burst %v after it, want 60 s to 66 s (one incident)", gap)
				}
				for i := 1; i < len(v); i++ {
					if v[i].arrived.Before(v[i-1].answered) {
						t.Errorf("during the back-off: %s arrived before the answer to %s", v[i].path, v[i-1].path)
					}
				}
			})
		})
	}
}

// TestPoliteFleetBackoffOneAtATime: "Until a back-off is forgiven,
// the origin gets one request at a time", and a Pacer shares the back-offs
// "so that the site sees one request at a time from all of them". T1 meets a
// 503 (no crawl-delay); after the pause, requests through T2 (which shares
// the Pacer, written from its contract, and the Store) must still go one at
// a time.
func TestPoliteFleetBackoffOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		fail := false
		site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nDisallow: /private\n"},
			latency: func(_, p string) time.Duration { return time.Second },
			respond: func(string, string, int) (int, http.Header, io.ReadCloser) {
				mu.Lock()
				defer mu.Unlock()
				if fail {
					return 503, nil, svBody("")
				}
				return 200, nil, svBody("")
			}}
		pacer, store := &svPacer{}, &fleet.MemoryStore{}
		t1 := &robots.Transport{Base: site, Agent: "ExampleBot", Pacer: pacer, Store: store}
		t2 := &robots.Transport{Base: site, Agent: "ExampleBot", Pacer: pacer, Store: store}
		svGet(t.Context(), t1, svOrigin+"/warm1", "")
		svGet(t.Context(), t2, svOrigin+"/warm2", "")
		mu.Lock()
		fail = true
		mu.Unlock()
		svGet(t.Context(), t1, svOrigin+"/503", "")
		mu.Lock()
		fail = false
		mu.Unlock()
		pushedBack := time.Now()
		time.Sleep(2 * time.Minute) // the pause ends; forgiven only in an hour
		n := len(site.log(svOrigin))
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() { svGet(t.Context(), t2, fmt.Sprintf("%s/t2-%d", svOrigin, i), "") })
		}
		wg.Wait()
		v := site.log(svOrigin)[n:]
		for i := 1; i < len(v); i++ {
			if v[i].arrived.Before(v[i-1].answered) {
				t.Errorf("%v after the 503, during its back-off: %s arrived before the answer to %s (in flight together)",
					v[i].arrived.Sub(pushedBack), v[i].path, v[i-1].path)
			}
		}
	})
}

// TestPoliteHugeBody429: a 429 whose body never ends is not read by the
// Transport: RoundTrip returns, the origin is backed off.
func TestPoliteHugeBody429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var read atomic.Int64
		site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nDisallow: /private\n"},
			respond: func(string, string, int) (int, http.Header, io.ReadCloser) {
				return 429, nil, io.NopCloser(svEndless{&read})
			}}
		tr := &robots.Transport{Base: site, Agent: "ExampleBot"}
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err := tr.RoundTrip(must(http.NewRequest("GET", svOrigin+"/p", nil)))
			if err != nil {
				t.Error(err)
				return
			}
			io.CopyN(io.Discard, resp.Body, 1<<20)
			resp.Body.Close()
		}()
		<-done
		if n := read.Load(); n > 1<<20 {
			t.Errorf("the Transport read %d bytes of the 429's body", n-1<<20)
		}
		if st := tr.Stats(); st.Backoffs != 1 {
			t.Errorf("Stats.Backoffs %d, want 1", st.Backoffs)
		}
	})
}

type svEndless struct{ n *atomic.Int64 }

func (e svEndless) Read(p []byte) (int, error) {
	e.n.Add(int64(len(p)))
	return len(p), nil
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// ---------------------------------------------------------------------------
// Promise 4: TurnError.RetryAt with one caller.

// TestPoliteOneCallerRetryAtAtIsSent: one caller under MaxWait, with
// varying answer times; every retry at At is sent, and Reason says why.
func TestPoliteOneCallerRetryAtAtIsSent(t *testing.T) {
	for _, inFleet := range []bool{false, true} {
		t.Run(fmt.Sprint("fleet=", inFleet), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lat := []time.Duration{0, 3 * time.Second, 100 * time.Millisecond, 1500 * time.Millisecond, 7 * time.Second}
				var i atomic.Int64
				site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nCrawl-delay: 2\n"},
					latency: func(_, p string) time.Duration { return lat[int(i.Add(1))%len(lat)] },
					respond: svSeq([]svStep{{200, ""}, {200, ""}, {503, ""}, {200, ""}, {429, "30"}, {200, ""}})}
				tr := &robots.Transport{NoDefaultPace: true, Base: site, Agent: "ExampleBot", MaxWait: 10 * time.Millisecond}
				if inFleet {
					tr.Pacer, tr.Store = &svPacer{}, &fleet.MemoryStore{}
				}
				reasons := map[string]int{}
				for j := range 10 {
					u := fmt.Sprintf("%s/p%d", svOrigin, j)
					_, err := svGet(t.Context(), tr, u, "")
					var te *robots.TurnError
					if errors.As(err, &te) && te.Reason == robots.ReasonRobotsTxt {
						// documented: At is a 100 ms poll while the fetch's end is unknown
						if _, err := svRetry(t, t.Context(), tr, u, ""); err != nil {
							t.Error(err)
						}
					} else if errors.As(err, &te) {
						reasons[te.Reason]++
						time.Sleep(time.Until(te.RetryAt))
						_, err = svGet(t.Context(), tr, u, "")
						if errors.As(err, &te) {
							t.Errorf("%s: a retry at At (%s) refused again: %v", u, te.Reason, err)
						}
					} else if err != nil {
						t.Errorf("%s: %v", u, err)
					}
				}
				for _, r := range []string{robots.ReasonCrawlDelay, robots.ReasonBackoff, robots.ReasonRetryAfter} {
					if reasons[r] == 0 {
						t.Errorf("no refusal for %q: %v", r, reasons)
					}
				}
				site.checkSpaced(t, svOrigin, svConst(2*time.Second))
			})
		})
	}
}

// ---------------------------------------------------------------------------
// Promise 5: MaxWait bounds RoundTrip even when a Pacer hangs; NextTurn is
// not counted; Origin and CrawlDelay wait for a slow fetch.

// svFaultPacer wraps svPacer with faults per method.
type svFaultPacer struct {
	svPacer
	hangReserve, hangRelease, hangPushBack, hangPause bool
	errReserve, errRelease                            bool
	calls                                             atomic.Int64
}

func (p *svFaultPacer) Reserve(ctx context.Context, origin string, r fleet.TurnRequest) (fleet.Turn, error) {
	p.calls.Add(1)
	if p.hangReserve {
		<-ctx.Done()
		return fleet.Turn{}, ctx.Err()
	}
	if p.errReserve {
		return fleet.Turn{}, errors.New("pacer down")
	}
	return p.svPacer.Reserve(ctx, origin, r)
}

func (p *svFaultPacer) Release(ctx context.Context, origin string, a fleet.Answer) error {
	if p.hangRelease {
		// answered in the shared state, but the call itself hangs
		p.svPacer.Release(ctx, origin, a)
		<-ctx.Done()
		return ctx.Err()
	}
	if p.errRelease {
		return errors.New("pacer down")
	}
	return p.svPacer.Release(ctx, origin, a)
}

func (p *svFaultPacer) PushBack(ctx context.Context, origin string, sent time.Time, b robots.Backoff) (time.Time, error) {
	if p.hangPushBack {
		p.svPacer.PushBack(ctx, origin, sent, b)
		<-ctx.Done()
		return time.Time{}, ctx.Err()
	}
	return p.svPacer.PushBack(ctx, origin, sent, b)
}

func (p *svFaultPacer) Pause(ctx context.Context, origin string, until time.Time, why string) error {
	if p.hangPause {
		p.svPacer.Pause(ctx, origin, until, why)
		<-ctx.Done()
		return ctx.Err()
	}
	return p.svPacer.Pause(ctx, origin, until, why)
}

// svSlowPacer is svPacer whose Reserve takes lag to answer (a Redis a
// little slow), honouring its context.
type svSlowPacer struct {
	svPacer
	lag      time.Duration
	reserves atomic.Int64
}

func (p *svSlowPacer) Reserve(ctx context.Context, origin string, r fleet.TurnRequest) (fleet.Turn, error) {
	p.reserves.Add(1)
	if p.lag > 0 {
		timer := time.NewTimer(p.lag)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return fleet.Turn{}, ctx.Err()
		}
	}
	return p.svPacer.Reserve(ctx, origin, r)
}

// svCheckerPacer is a Pacer that is also a PauseChecker whose PausedUntil
// hangs until its context is done.
type svCheckerPacer struct{ svPacer }

func (p *svCheckerPacer) PausedUntil(ctx context.Context, origin string) (time.Time, string, error) {
	<-ctx.Done()
	return time.Time{}, "", ctx.Err()
}

// TestPoliteMaxWaitBoundsHangingReserve: a Pacer whose Reserve hangs
// holds a MaxWait request no longer than MaxWait (then the turn is taken in
// memory, and the spacing still holds).
func TestPoliteMaxWaitBoundsHangingReserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const maxWait = 300 * time.Millisecond
		site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nCrawl-delay: 1\n"}}
		p := &svFaultPacer{hangReserve: true}
		tr := &robots.Transport{Base: site, Agent: "ExampleBot", Pacer: p, MaxWait: maxWait}
		// The first request's fetch of robots.txt has no MaxWait (2 s bound).
		svRetry(t, t.Context(), tr, svOrigin+"/warm", "")
		for i := range 5 {
			start := time.Now()
			_, err := svGet(t.Context(), tr, fmt.Sprintf("%s/p%d", svOrigin, i), "")
			if d := time.Since(start); d > maxWait {
				t.Errorf("RoundTrip took %v with a hanging Reserve, want at most MaxWait %v (err %v)", d, maxWait, err)
			}
			time.Sleep(time.Second)
		}
		site.checkSpaced(t, svOrigin, svConst(time.Second))
	})
}

// TestPoliteMaxWaitBoundsHangingRelease: a Pacer whose Reserve answers
// but whose Release hangs (mid-turn) must not hold RoundTrip past MaxWait
// plus the answer time.
func TestPoliteMaxWaitBoundsHangingRelease(t *testing.T) {
	for _, c := range []struct {
		name string
		p    *svFaultPacer
		st   int
	}{
		{"Release hangs", &svFaultPacer{hangRelease: true}, 200},
		{"PushBack hangs on a 503", &svFaultPacer{hangPushBack: true}, 503},
		{"Pause hangs on a 429 Retry-After", &svFaultPacer{hangPause: true}, 429},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const maxWait = 300 * time.Millisecond
				site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nCrawl-delay: 1\n"},
					respond: func(string, string, int) (int, http.Header, io.ReadCloser) {
						h := http.Header{}
						if c.st == 429 {
							h.Set("Retry-After", "5")
						}
						return c.st, h, svBody("")
					}}
				tr := &robots.Transport{Base: site, Agent: "ExampleBot", Pacer: c.p, MaxWait: maxWait}
				// robots.txt first (its fetch has no MaxWait)
				if _, err := tr.Origin(t.Context(), must(url.Parse(svOrigin))); err != nil {
					t.Fatal(err)
				}
				time.Sleep(5 * time.Second)
				start := time.Now()
				_, err := svGet(t.Context(), tr, svOrigin+"/p", "")
				if d := time.Since(start); d > maxWait {
					t.Errorf("RoundTrip (the Base answering at once) took %v, want at most MaxWait %v (err %v)", d, maxWait, err)
				}
				time.Sleep(time.Hour) // let the Transport's own goroutines end (time stops when this one returns)
			})
		})
	}
}

// TestPolitePauseCheckerHangs: a Pacer that is a PauseChecker whose
// PausedUntil hangs must not hang RoundTrip ("the Transport bounds each call
// by 2 seconds, and by MaxWait"). PausedUntil is asked when the Pacer made
// the request wait: here, a turn another Transport of the fleet took.
func TestPolitePauseCheckerHangs(t *testing.T) {
	for _, maxWait := range []time.Duration{0, 3 * time.Second} {
		t.Run(fmt.Sprint("MaxWait=", maxWait), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nCrawl-delay: 1\n"}}
				pacer, store := &svCheckerPacer{}, &fleet.MemoryStore{}
				t1 := &robots.Transport{Base: site, Agent: "ExampleBot", Pacer: pacer, Store: store, MaxWait: maxWait}
				t2 := &robots.Transport{Base: site, Agent: "ExampleBot", Pacer: pacer, Store: store, MaxWait: maxWait}
				u := must(url.Parse(svOrigin))
				t1.Origin(t.Context(), u)
				t2.Origin(t.Context(), u)
				time.Sleep(5 * time.Second)
				if _, err := svGet(t.Context(), t1, svOrigin+"/p1", ""); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				done := make(chan time.Duration, 1)
				go func() {
					start := time.Now()
					svGet(ctx, t2, svOrigin+"/p2", "") // the Pacer says wait 1 s; then PausedUntil
					done <- time.Since(start)
				}()
				select {
				case d := <-done:
					if d > time.Second+2*time.Second {
						t.Errorf("RoundTrip took %v: the 1 s wait, then PausedUntil bounded by 2 s at most", d)
					}
				case <-time.After(time.Hour):
					t.Errorf("RoundTrip still waiting after an hour: PausedUntil is called without a bound")
					cancel()
					<-done
				}
			})
		})
	}
}

// TestPoliteSlowPacerUnderMaxWait: in a fleet, T1's request is in
// flight (its answer takes 10 s); T2's request under MaxWait 20 ms asks the
// shared Pacer, which takes 30 ms to answer. The Pacer call is cut short by
// MaxWait: T2's memory knows nothing of T1's turn, so T2's request is
// refused for now, not sent while T1's is in flight (on a real Redis, when
// the Reserve round trip outlasts what is left of MaxWait: see
// redisstore/politeness_test.go).
func TestPoliteSlowPacerUnderMaxWait(t *testing.T) {
	for _, lag := range []time.Duration{30 * time.Millisecond} {
		t.Run(lag.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nCrawl-delay: 1\n"},
					latency: func(_, p string) time.Duration {
						if p == "/slow" {
							return 10 * time.Second
						}
						return 0
					}}
				pacer, store := &svSlowPacer{lag: lag}, &fleet.MemoryStore{}
				t1 := &robots.Transport{Base: site, Agent: "ExampleBot", Pacer: pacer, Store: store}
				t2 := &robots.Transport{Base: site, Agent: "ExampleBot", Pacer: pacer, Store: store, MaxWait: 20 * time.Millisecond}
				u := must(url.Parse(svOrigin))
				t1.Origin(t.Context(), u)
				t2.Origin(t.Context(), u)
				time.Sleep(2 * time.Second)
				var wg sync.WaitGroup
				wg.Go(func() { svGet(t.Context(), t1, svOrigin+"/slow", "") })
				time.Sleep(time.Second)
				// Retry at At, as a worker pool does, for a while.
				for i := range 5 {
					_, err := svGet(t.Context(), t2, fmt.Sprintf("%s/t2-%d", svOrigin, i), "")
					var te *robots.TurnError
					if errors.As(err, &te) {
						time.Sleep(max(time.Until(te.RetryAt), 15*time.Millisecond))
					}
				}
				wg.Wait()
				site.checkSpaced(t, svOrigin, svConst(time.Second))
			})
		})
	}
}

// TestPolitePacerInFlightPollsBackOff: a blocking request of T2 waits for
// T1's request held in the shared Pacer (its Base hangs for TurnTimeout, 5 s;
// crawl-delay 1 s). Once the interval after the held turn has passed, the
// Pacer's estimate is "now": T2 asks it again less and less often, not every
// millisecond until the hold ends.
func TestPolitePacerInFlightPollsBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nCrawl-delay: 1\n"}, hang: make(chan struct{}), ignoreCtx: true}
		pacer, store := &svSlowPacer{}, &fleet.MemoryStore{}
		t1 := &robots.Transport{Base: site, Agent: "ExampleBot", Pacer: pacer, Store: store, TurnTimeout: 5 * time.Second}
		t2 := &robots.Transport{Base: site, Agent: "ExampleBot", Pacer: pacer, Store: store, TurnTimeout: 5 * time.Second}
		u := must(url.Parse(svOrigin))
		t1.Origin(t.Context(), u)
		t2.Origin(t.Context(), u)
		time.Sleep(2 * time.Second)
		var wg sync.WaitGroup
		wg.Go(func() { svGet(t.Context(), t1, svOrigin+"/hang", "") })
		synctest.Wait()
		before := pacer.reserves.Load()
		if _, err := svGet(t.Context(), t2, svOrigin+"/next", ""); err != nil {
			t.Fatal(err)
		}
		if n := pacer.reserves.Load() - before; n > 50 {
			t.Errorf("%d calls of fleet.Pacer.Reserve while waiting 5 s for a held turn, want a few (polls every ~%v)", n, 5*time.Second/time.Duration(n))
		}
		close(site.hang)
		wg.Wait()
	})
}

// TestPoliteNextTurnNotCounted: NextTurn refuses nothing in the Stats,
// whatever holds the origin.
func TestPoliteNextTurnNotCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nCrawl-delay: 5\n"},
			latency: func(_, p string) time.Duration {
				if p == "/robots.txt" {
					return 3 * time.Second
				}
				return 2 * time.Second
			}}
		tr := &robots.Transport{Base: site, Agent: "ExampleBot", MaxWait: 10 * time.Millisecond}
		u := must(url.Parse(svOrigin + "/p"))
		before := tr.Stats()
		// A fetch in flight, a request in flight, a crawl-delay.
		if _, err := tr.NextTurn(t.Context(), u); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() { svGet(robots.WithMaxWait(t.Context(), 0), tr, svOrigin+"/p0", "") })
		for range 40 {
			if _, err := tr.NextTurn(t.Context(), u); err != nil {
				t.Fatal(err)
			}
			time.Sleep(250 * time.Millisecond)
		}
		wg.Wait()
		after := tr.Stats()
		if after.NotYet != before.NotYet || after.InFlightWaits != before.InFlightWaits {
			t.Errorf("NextTurn counted: NotYet %d→%d, InFlightWaits %d→%d", before.NotYet, after.NotYet, before.InFlightWaits, after.InFlightWaits)
		}
	})
}

// TestPoliteOriginWaitsForSlowFetch: Origin and CrawlDelay wait for a
// slow robots.txt whatever MaxWait (and WithMaxWait), and for a fetch that
// waits for its turn behind a Retry-After pause.
func TestPoliteOriginWaitsForSlowFetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &svSite{robots: map[string]string{svOrigin: "User-agent: ExampleBot\nCrawl-delay: 4\n"},
			latency: func(_, p string) time.Duration {
				if p == "/robots.txt" {
					return 20 * time.Second
				}
				return 0
			},
			respond: svSeq([]svStep{{429, "600"}})}
		tr := &robots.Transport{Base: site, Agent: "ExampleBot", MaxWait: time.Millisecond}
		tr.CloseIdleConnections() // initialises tr: see TestPoliteCrawlDelayFirstCallRace
		u := must(url.Parse(svOrigin + "/p"))
		ctx := robots.WithMaxWait(t.Context(), time.Millisecond)
		var wg sync.WaitGroup
		wg.Go(func() {
			o, err := tr.Origin(ctx, u)
			if err != nil || o.Access != fleet.AccessSuccess {
				t.Errorf("Origin: %v, %v", o, err)
			}
		})
		wg.Go(func() {
			d, err := tr.CrawlDelay(ctx, u)
			if err != nil || d != 4*time.Second {
				t.Errorf("CrawlDelay: %v, %v", d, err)
			}
		})
		wg.Wait()
		// A 429 with Retry-After 600 pauses the origin; then Forget and ask again.
		svRetry(t, t.Context(), tr, u.String(), "")
		tr.Forget(u)
		start := time.Now()
		d, err := tr.CrawlDelay(ctx, u)
		if err != nil || d != 4*time.Second {
			t.Errorf("CrawlDelay after Forget: %v, %v", d, err)
		}
		if took := time.Since(start); took < 9*time.Minute {
			t.Errorf("CrawlDelay returned after %v: the fetch did not wait for the pause", took)
		}
		site.checkSpaced(t, svOrigin, svConst(0))
	})
}

// TestPoliteCrawlDelayFirstCallRace: CrawlDelay as the first call on a
// Transport, concurrent with Origin (or any other method), is safe:
// every method sets the Transport's settings up before it reads them (a
// data race under -race otherwise).
func TestPoliteCrawlDelayFirstCallRace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nCrawl-delay: 3\n"}}
		tr := &robots.Transport{Base: site, Agent: "ExampleBot"}
		u := must(url.Parse(svOrigin))
		var wg sync.WaitGroup
		wg.Go(func() { tr.Origin(t.Context(), u) })
		wg.Go(func() {
			if d, err := tr.CrawlDelay(t.Context(), u); err != nil || d != 3*time.Second {
				t.Errorf("CrawlDelay: %v, %v", d, err)
			}
		})
		wg.Wait()
	})
}

// ---------------------------------------------------------------------------
// Promise 6: bad input.

// TestPoliteCrawlDelayExtreme: Crawl-delay 1e308 (and 30 digits) is
// capped at a day with a Warn record; NaN, -5, 10s, Inf are not delays.
func TestPoliteCrawlDelayExtreme(t *testing.T) {
	for _, c := range []struct {
		v    string
		want time.Duration
		warn bool
	}{
		{"1e308", 24 * time.Hour, true},
		{"999999999999999999999999999999", 24 * time.Hour, true},
		{"1e3", 1000 * time.Second, false},
		{"NaN", 0, false},
		{"-5", 0, false},
		{"10s", 0, false},
		{"Inf", 0, false},
		{"1e-400", 0, false},
		{"", 0, false},
	} {
		t.Run(c.v, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				logs := &svLogs{}
				site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nCrawl-delay: " + c.v + "\n"}}
				tr := &robots.Transport{NoDefaultPace: true, Base: site, Agent: "ExampleBot", MaxWait: time.Millisecond, Logger: slog.New(logs)}
				if _, err := tr.Origin(t.Context(), must(url.Parse(svOrigin))); err != nil {
					t.Fatal(err)
				}
				answered := time.Now()
				_, err := svGet(t.Context(), tr, svOrigin+"/p1", "")
				if c.want == 0 && err == nil {
					_, err = svGet(t.Context(), tr, svOrigin+"/p2", "")
				}
				var te *robots.TurnError
				if c.want == 0 {
					if err != nil {
						t.Errorf("Crawl-delay %q: %v, want sent", c.v, err)
					}
				} else if !errors.As(err, &te) || te.RetryAt.Sub(answered) < c.want {
					t.Errorf("Crawl-delay %q: %v, want a TurnError at least %v on", c.v, err, c.want)
				}
				if w := logs.find(slog.LevelWarn, "Crawl-delay"); (len(w) > 0) != c.warn {
					t.Errorf("Warn records %q, want a warning: %v", w, c.warn)
				}
			})
		})
	}
}

// TestPoliteOverflowCaps: the longest Duration as a cap or a back-off
// (a user's "no cap") must never turn a long wait into none. A warm-up
// request first, so that the Transport's clock is past its first second.
func TestPoliteOverflowCaps(t *testing.T) {
	for _, c := range []struct {
		name   string
		robots string
		tr     func() *robots.Transport
		step   svStep
	}{
		{"MaxCrawlDelay max, Crawl-delay 1e308", "User-agent: *\nCrawl-delay: 1e308\n", func() *robots.Transport { return &robots.Transport{NoDefaultPace: true, MaxCrawlDelay: math.MaxInt64} }, svStep{200, ""}},
		{"MaxRetryAfter max, Retry-After huge", "User-agent: *\n", func() *robots.Transport { return &robots.Transport{NoDefaultPace: true, MaxRetryAfter: math.MaxInt64} }, svStep{429, "99999999999999999999"}},
		{"Backoff.First max", "User-agent: *\n", func() *robots.Transport {
			return &robots.Transport{NoDefaultPace: true, Backoff: robots.Backoff{First: math.MaxInt64}}
		}, svStep{503, ""}},
		{"Backoff.First 1<<62 (control)", "User-agent: *\n", func() *robots.Transport {
			return &robots.Transport{NoDefaultPace: true, Backoff: robots.Backoff{First: 1 << 62}}
		}, svStep{503, ""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				site := &svSite{robots: map[string]string{svOrigin: c.robots},
					latency: func(_, p string) time.Duration {
						if p == "/robots.txt" {
							return 2 * time.Second
						}
						return 0
					},
					respond: svSeq([]svStep{c.step})}
				tr := c.tr()
				tr.Base, tr.Agent, tr.MaxWait = site, "ExampleBot", time.Millisecond
				time.Sleep(5 * time.Second) // the Transport's clock is not at its start
				if _, err := tr.Origin(t.Context(), must(url.Parse(svOrigin))); err != nil {
					t.Fatal(err)
				}
				if c.step.status == 200 {
					// the first page after robots.txt must wait the delay
					_, err := svGet(t.Context(), tr, svOrigin+"/p1", "")
					var te *robots.TurnError
					if !errors.As(err, &te) {
						t.Fatalf("the first page: %v, want a TurnError (a wait of years)", err)
					}
					if d := time.Until(te.RetryAt); d < 100*365*24*time.Hour {
						t.Errorf("At in %v, want years", d)
					}
					return
				}
				if _, err := svGet(robots.WithMaxWait(t.Context(), 0), tr, svOrigin+"/p1", ""); err != nil {
					t.Fatal(err)
				}
				_, err := svGet(t.Context(), tr, svOrigin+"/p2", "")
				var te *robots.TurnError
				if !errors.As(err, &te) {
					t.Fatalf("the request after a %d: %v, want a TurnError (a wait of years)", c.step.status, err)
				}
				if d := time.Until(te.RetryAt); d < 100*365*24*time.Hour {
					t.Errorf("At in %v, want years", d)
				}
			})
		})
	}
}

// TestPoliteCrawlDelayAtLeastTTLNoStarving: a crawl-delay at least as long
// as the life of robots.txt (a site's Cache-Control max-age of 60 s with a
// Crawl-delay of 120; or Crawl-delay 1e308, capped at a day = DefaultTTL).
// A copy lasts at least two crawl-delays, so a page follows each fetch of
// robots.txt: one caller under MaxWait that retries at TurnError.RetryAt gets a
// page sent after each fetch, and a retry refused again at most once per
// fetch (the one whose turn the fetch took).
func TestPoliteCrawlDelayAtLeastTTLNoStarving(t *testing.T) {
	for _, c := range []struct {
		name   string
		robots string
		hdr    http.Header
	}{
		{"max-age 60, Crawl-delay 120", "User-agent: *\nCrawl-delay: 120\n", http.Header{"Cache-Control": {"max-age=60"}}},
		{"Crawl-delay 1e308", "User-agent: *\nCrawl-delay: 1e308\n", nil},
		{"Crawl-delay 86400", "User-agent: *\nCrawl-delay: 86400\n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				site := &svSite{robots: map[string]string{svOrigin: c.robots}, robotsHdr: map[string]http.Header{svOrigin: c.hdr}}
				tr := &robots.Transport{Base: site, Agent: "ExampleBot", MaxWait: time.Second}
				var sent, refusedAgain int
				for range 5 {
					_, err := svGet(t.Context(), tr, svOrigin+"/page", "")
					var te *robots.TurnError
					if !errors.As(err, &te) {
						sent++
						continue
					}
					time.Sleep(time.Until(te.RetryAt))
					_, err = svGet(t.Context(), tr, svOrigin+"/page", "")
					if errors.As(err, &te) {
						refusedAgain++
					} else {
						sent++
					}
				}
				pages, fetches := 0, 0
				for _, v := range site.log(svOrigin) {
					if v.path != "/robots.txt" {
						pages++
					} else {
						fetches++
					}
				}
				if sent == 0 || pages < fetches || refusedAgain >= fetches {
					t.Errorf("%d retries at TurnError.RetryAt refused again, %d pages sent; the site saw %d fetches of robots.txt and %d pages; want a page after each fetch, and fewer refusals at At than fetches",
						refusedAgain, sent, fetches, pages)
				}
			})
		})
	}
}

// TestPolitePacerErrors: a Pacer that fails (Reserve, or Release after
// a good Reserve) leaves the spacing to memory: still one in flight, spaced;
// no hang, and later than asked is fine.
func TestPolitePacerErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		p    *svFaultPacer
	}{
		{"Reserve fails", &svFaultPacer{errReserve: true}},
		{"Release fails", &svFaultPacer{errRelease: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nCrawl-delay: 1\n"},
					latency: func(_, p string) time.Duration { return 1500 * time.Millisecond }}
				tr := &robots.Transport{Base: site, Agent: "ExampleBot", Pacer: c.p, TurnTimeout: 10 * time.Second}
				var wg sync.WaitGroup
				for i := range 4 {
					wg.Go(func() {
						for j := range 2 {
							if _, err := svGet(t.Context(), tr, fmt.Sprintf("%s/p%d-%d", svOrigin, i, j), ""); err != nil {
								t.Error(err)
							}
						}
					})
				}
				wg.Wait()
				site.checkSpaced(t, svOrigin, svConst(time.Second))
			})
		})
	}
}

// TestPoliteForgetAndEvictionKeepPace: Forget while a request is in
// flight, and eviction of the origin (MaxOrigins 1, another origin
// requested meanwhile), keep its pace: the refetch of robots.txt and the
// next page wait for the answer plus the delay.
func TestPoliteForgetAndEvictionKeepPace(t *testing.T) {
	const b = "https://b.example"
	for _, how := range []string{"Forget", "evict"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\nCrawl-delay: 2\n", b: "User-agent: *\n"},
					latency: func(_, p string) time.Duration { return 3 * time.Second }}
				tr := &robots.Transport{Base: site, Agent: "ExampleBot", MaxOrigins: 1}
				var wg sync.WaitGroup
				for i := range 3 {
					wg.Go(func() { svGet(t.Context(), tr, fmt.Sprintf("%s/p%d", svOrigin, i), "") })
					time.Sleep(500 * time.Millisecond)
					if how == "Forget" {
						tr.Forget(must(url.Parse(svOrigin)))
					} else {
						svGet(t.Context(), tr, fmt.Sprintf("%s/b%d", b, i), "")
					}
				}
				wg.Wait()
				site.checkSpaced(t, svOrigin, svConst(2*time.Second))
			})
		})
	}
}

// TestPoliteRobotsTxtRetryAfterPauses: a robots.txt answered 503 with
// Retry-After: 600 pauses the origin: nothing, robots.txt included, is sent
// for 10 minutes.
func TestPoliteRobotsTxtRetryAfterPauses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &svSite{robots: map[string]string{svOrigin: "User-agent: *\n"},
			robotsSt: map[string]int{svOrigin: 503}, robotsHdr: map[string]http.Header{svOrigin: {"Retry-After": {"600"}}}}
		tr := &robots.Transport{Base: site, Agent: "ExampleBot"}
		for i := range 20 {
			svGet(t.Context(), tr, fmt.Sprintf("%s/p%d", svOrigin, i), "")
			time.Sleep(time.Minute)
		}
		v := site.log(svOrigin)
		for i := 1; i < len(v); i++ {
			if gap := v[i].arrived.Sub(v[i-1].answered); gap < 10*time.Minute {
				t.Errorf("%s arrived %v after a 503 with Retry-After: 600", v[i].path, gap)
			}
		}
		if len(v) < 2 {
			t.Errorf("%d requests in 20 minutes", len(v))
		}
	})
}
