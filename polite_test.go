package robots

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/internal/pacing"
)

// siteLog is a base transport that plays origins as a site sees them: each
// request arrives, takes latency to answer, and is logged with its arrival
// and answer times, so that a test judges politeness where the site stands.
type siteLog struct {
	robots  string                                  // the robots.txt of every origin
	latency func(path string) time.Duration         // of each answer; nil for none
	status  func(path string) (int, http.Header)    // of each page; nil for 200
	hang    chan struct{}                           // /hang answers when it is closed
	mu      sync.Mutex                              // guards visits
	visits  map[string][]visit                      // by origin
	onVisit func(origin, path string, inFlight int) // called at each arrival, if set
	flying  map[string]int                          // requests in flight, by origin
	maxFly  map[string]int                          // the most in flight at once, by origin
}

// visit is one request as the site saw it.
type visit struct {
	path              string
	arrived, answered time.Time
}

func (s *siteLog) RoundTrip(req *http.Request) (*http.Response, error) {
	origin := req.URL.Scheme + "://" + req.URL.Host
	arrived := time.Now()
	s.mu.Lock()
	if s.flying == nil {
		s.flying, s.maxFly, s.visits = map[string]int{}, map[string]int{}, map[string][]visit{}
	}
	s.flying[origin]++
	s.maxFly[origin] = max(s.maxFly[origin], s.flying[origin])
	s.mu.Unlock()
	path := req.URL.Path
	if path == "/hang" && s.hang != nil {
		select {
		case <-s.hang:
		case <-req.Context().Done():
		}
	}
	if s.latency != nil {
		time.Sleep(s.latency(path))
	}
	status, hdr, body := 200, http.Header{}, "page"
	if path == "/robots.txt" {
		body = s.robots
	} else if s.status != nil {
		status, hdr = s.status(path)
		if hdr == nil {
			hdr = http.Header{}
		}
	}
	s.mu.Lock()
	s.flying[origin]--
	s.visits[origin] = append(s.visits[origin], visit{path, arrived, time.Now()})
	s.mu.Unlock()
	return &http.Response{StatusCode: status, Header: hdr, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// log returns the visits of origin, by arrival.
func (s *siteLog) log(origin string) []visit {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := slices.Clone(s.visits[origin])
	slices.SortFunc(v, func(a, b visit) int { return a.arrived.Compare(b.arrived) })
	return v
}

// checkSpaced fails t unless origin's site saw one request at a time, each
// arriving at least delay after the answer to the one before.
func (s *siteLog) checkSpaced(t *testing.T, origin string, delay time.Duration) {
	t.Helper()
	s.mu.Lock()
	most := s.maxFly[origin]
	s.mu.Unlock()
	if most > 1 {
		t.Errorf("%s: %d requests in flight at once, want 1", origin, most)
	}
	v := s.log(origin)
	for i := 1; i < len(v); i++ {
		if gap := v[i].arrived.Sub(v[i-1].answered); gap < delay {
			t.Errorf("%s: %s arrived %v after the answer to %s, want at least %v", origin, v[i].path, gap, v[i-1].path, delay)
		}
	}
}

// TestSlowSiteOneInFlight: a site slower than its crawl-delay sees one
// request at a time, each a crawl-delay after the answer to the one before,
// with blocking callers, with MaxWait callers that retry at At, and across
// two Transports sharing a Pacer.
func TestSlowSiteOneInFlight(t *testing.T) {
	const origin = "https://slow.example"
	for _, c := range []struct {
		name    string
		maxWait time.Duration
		fleet   bool
	}{
		{"blocking", 0, false},
		{"MaxWait", 50 * time.Millisecond, false},
		{"fleet", 0, true},
		{"fleet MaxWait", 50 * time.Millisecond, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				site := &siteLog{robots: "User-agent: *\nCrawl-delay: 0.2\n",
					latency: func(string) time.Duration { return 300 * time.Millisecond }}
				pacer := &pacing.Memory{}
				store := &fleet.MemoryStore{}
				var clients []*http.Client
				var trs []*Transport
				for range 2 {
					tr := &Transport{Base: site, Agent: "ExampleBot", MaxWait: c.maxWait}
					if c.fleet {
						tr.Pacer = pacer
						tr.Store = store
					}
					trs = append(trs, tr)
					clients = append(clients, &http.Client{Transport: tr})
					if !c.fleet {
						break
					}
				}
				var wg sync.WaitGroup
				var refusedMu sync.Mutex
				refused := 0
				for w := range 8 {
					client := clients[w%len(clients)]
					wg.Go(func() {
						for i := range 4 {
							u := fmt.Sprintf("%s/w%d-%d", origin, w, i)
							for {
								err := get(client, u)
								var te *TurnError
								if !errors.As(err, &te) {
									if err != nil {
										t.Errorf("GET %s: %v", u, err)
									}
									break
								}
								refusedMu.Lock()
								refused++
								refusedMu.Unlock()
								time.Sleep(time.Until(te.RetryAt))
							}
						}
					})
				}
				wg.Wait()
				site.checkSpaced(t, origin, 200*time.Millisecond)
				if n := len(site.log(origin)); n < 33 {
					t.Errorf("%d requests reached the site, want 32 pages and robots.txt", n)
				}
				t.Logf("%d refusals for now", refused)
			})
		})
	}
}

// TestAtIsWhenRetrySucceeds: with a page in flight, a second caller is
// refused with an At estimated from the origin's answer time, and a retry
// at At is sent (with one caller per origin, At is not early).
func TestAtIsWhenRetrySucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &siteLog{robots: "User-agent: *\nCrawl-delay: 0.5\n",
			latency: func(p string) time.Duration {
				if p == "/robots.txt" {
					return 0
				}
				return 400 * time.Millisecond
			}}
		tr := &Transport{NoDefaultPace: true, Base: site, Agent: "ExampleBot", MaxWait: 10 * time.Millisecond}
		client := &http.Client{Transport: tr}
		ctx := WithMaxWait(context.Background(), 0)
		// Two pages, so that the origin's answer time is known.
		for i := range 2 {
			if err := getCtx(ctx, client, fmt.Sprintf("https://example.com/warm%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
		var wg sync.WaitGroup
		start := time.Now()
		wg.Go(func() { get(client, "https://example.com/first") })
		time.Sleep(100 * time.Millisecond)
		err := get(client, "https://example.com/second")
		var te *TurnError
		if !errors.As(err, &te) {
			t.Fatalf("second caller while the first is in flight: %v, want a TurnError", err)
		}
		if te.Reason != ReasonInFlight {
			t.Errorf("Reason = %q, want %q", te.Reason, ReasonInFlight)
		}
		if want := start.Add(900 * time.Millisecond); !te.RetryAt.Equal(want) {
			t.Errorf("At = %v after the first left, want 900ms (its 400ms answer and the 500ms crawl-delay)", te.RetryAt.Sub(start))
		}
		time.Sleep(time.Until(te.RetryAt))
		if err := get(client, "https://example.com/second"); err != nil {
			t.Errorf("retry at At: %v, want sent", err)
		}
		wg.Wait()
		if st := tr.Stats(); st.InFlightWaits == 0 {
			t.Errorf("Stats().InFlightWaits = 0, want the refusal counted")
		}
		site.checkSpaced(t, "https://example.com", 500*time.Millisecond)
	})
}

// TestHeldTurnRunsOut: a request whose Base never answers holds its origin
// for TurnTimeout, not forever; the next leaves the crawl-delay after that.
func TestHeldTurnRunsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &siteLog{robots: "User-agent: *\nCrawl-delay: 1\n", hang: make(chan struct{})}
		defer close(site.hang)
		tr := &Transport{NoDefaultPace: true, Base: site, Agent: "ExampleBot", TurnTimeout: 10 * time.Second}
		client := &http.Client{Transport: tr}
		wantAllowed(t, client, "https://example.com/a")
		go get(client, "https://example.com/hang")
		time.Sleep(time.Second) // /hang leaves a second after /a
		synctest.Wait()
		left := time.Now()
		wantAllowed(t, client, "https://example.com/b")
		if d := time.Since(left); d != 11*time.Second {
			t.Errorf("next request left %v after the one that hangs, want TurnTimeout (10s) and the crawl-delay (1s)", d)
		}
	})
}

// TestPushbackBacksOff: headerless 429s pause the origin 60s, then 120s, 240s, ...
// up to Max; a burst of concurrent answers is one incident; a quiet period
// of Forgive after a pause ends starts the count again.
func TestPushbackBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var pushing bool
		var mu sync.Mutex
		site := &siteLog{robots: "User-agent: *\nDisallow: /private\n",
			latency: func(string) time.Duration { return 100 * time.Millisecond },
			status: func(string) (int, http.Header) {
				mu.Lock()
				defer mu.Unlock()
				if pushing {
					return 429, nil
				}
				return 200, nil
			}}
		b := Backoff{First: time.Minute, Max: 5 * time.Minute, Forgive: time.Hour}
		tr := &Transport{NoDefaultPace: true, Base: site, Agent: "ExampleBot", Backoff: b}
		client := &http.Client{Transport: tr}
		wantAllowed(t, client, "https://example.com/ok") // robots.txt, no interval
		setPushing := func(v bool) { mu.Lock(); pushing = v; mu.Unlock() }
		setPushing(true)
		// A burst: five requests in flight at once, all answered 429.
		var wg sync.WaitGroup
		for i := range 5 {
			wg.Go(func() { get(client, fmt.Sprintf("https://example.com/burst%d", i)) })
		}
		wg.Wait()
		if n := tr.Stats().Backoffs; n != 1 {
			t.Errorf("a burst of 5 answers counted as %d incidents, want 1", n)
		}
		// Each new incident doubles the pause, up to Max.
		for i, want := range []time.Duration{2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute} {
			get(client, fmt.Sprintf("https://example.com/again%d", i)) // waits out the pause, then 429
			var te *TurnError
			err := getCtx(WithMaxWait(context.Background(), time.Millisecond), client, "https://example.com/probe")
			if !errors.As(err, &te) || te.Reason != ReasonBackoff {
				t.Fatalf("request during the back-off: %v, want a TurnError for the back-off", err)
			}
			if d := time.Until(te.RetryAt); d < want-time.Millisecond || d > want+want/10 {
				t.Errorf("incident %d paused for %v, want %v and at most a tenth more", i+2, d, want)
			}
		}
		// Quiet: the origin answers again; after Forgive from the end of
		// the last pause, a new 429 pauses for First again.
		time.Sleep(6 * time.Minute)
		setPushing(false)
		wantAllowed(t, client, "https://example.com/calm")
		time.Sleep(time.Hour)
		setPushing(true)
		get(client, "https://example.com/forgiven")
		var te *TurnError
		err := getCtx(WithMaxWait(context.Background(), time.Millisecond), client, "https://example.com/probe")
		if !errors.As(err, &te) {
			t.Fatalf("request during the back-off: %v, want a TurnError", err)
		}
		if d := time.Until(te.RetryAt); d < time.Minute-time.Millisecond || d > time.Minute+6*time.Second {
			t.Errorf("after the quiet period, paused for %v, want First (1m) again", d)
		}
	})
}

// TestBackoffOneAtATime: an origin with no crawl-delay gets one request at a
// time while it is backing off, until the back-off is forgiven.
func TestBackoffOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var first sync.Once
		site := &siteLog{robots: "",
			latency: func(string) time.Duration { return 100 * time.Millisecond },
			status: func(p string) (int, http.Header) {
				code := 200
				if p == "/push" {
					first.Do(func() { code = 503 })
				}
				return code, nil
			}}
		tr := &Transport{NoDefaultPace: true, Base: site, Agent: "ExampleBot"}
		client := &http.Client{Transport: tr}
		get(client, "https://example.com/push")
		time.Sleep(DefaultBackoffFirst + DefaultBackoffFirst/10)
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Go(func() { wantAllowed(t, client, fmt.Sprintf("https://example.com/p%d", i)) })
		}
		wg.Wait()
		site.checkSpaced(t, "https://example.com", 0)
		// Forgiven: requests go out together again.
		time.Sleep(DefaultBackoffForgive)
		site.mu.Lock()
		site.maxFly = map[string]int{}
		site.mu.Unlock()
		for i := range 6 {
			wg.Go(func() { wantAllowed(t, client, fmt.Sprintf("https://example.com/q%d", i)) })
		}
		wg.Wait()
		site.mu.Lock()
		most := site.maxFly["https://example.com"]
		site.mu.Unlock()
		if most != 6 {
			t.Errorf("after the back-off was forgiven, %d in flight at once, want 6", most)
		}
	})
}

// TestBackoffInFleet: the back-off's level is kept in the Pacer: a second
// Transport's incident doubles the first one's pause.
func TestBackoffInFleet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &siteLog{robots: "", status: func(string) (int, http.Header) { return 429, nil }}
		pacer := &pacing.Memory{}
		a := &Transport{Base: site, Agent: "ExampleBot", Pacer: pacer}
		b := &Transport{Base: site, Agent: "ExampleBot", Pacer: pacer}
		get(&http.Client{Transport: a}, "https://example.com/a")
		time.Sleep(2 * time.Minute) // the first pause is over
		get(&http.Client{Transport: b}, "https://example.com/b")
		var te *TurnError
		err := getCtx(WithMaxWait(context.Background(), time.Millisecond), &http.Client{Transport: a}, "https://example.com/probe")
		if !errors.As(err, &te) {
			t.Fatalf("request during the fleet's back-off: %v, want a TurnError", err)
		}
		if d := time.Until(te.RetryAt); d < 2*time.Minute-time.Millisecond {
			t.Errorf("the second incident, met by another Transport, paused for %v, want 2m (the fleet's second)", d)
		}
	})
}

// hangPacer is a Pacer whose every call waits for its context.
type hangPacer struct{ noHold }

func (hangPacer) Reserve(ctx context.Context, _ string, _ fleet.TurnRequest) (fleet.Turn, error) {
	<-ctx.Done()
	return fleet.Turn{}, ctx.Err()
}
func (hangPacer) Pause(ctx context.Context, _ string, _ time.Time, _ string) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestMaxWaitBoundsHangingPacer: a Pacer that hangs holds a request no
// longer than MaxWait: it is refused for now (ReasonPacer), as the memory
// knows nothing of the fleet's requests in flight, until the Pacer has
// answered nothing for 2 s; then turns are taken in memory, as when it errs.
func TestMaxWaitBoundsHangingPacer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &siteLog{robots: "User-agent: *\nCrawl-delay: 1\n"}
		tr := &Transport{Base: site, Agent: "ExampleBot", Pacer: hangPacer{}, MaxWait: 50 * time.Millisecond,
			Store: &fleet.MemoryStore{}}
		client := &http.Client{Transport: tr}
		get(client, "https://example.com/first") // robots.txt: waits for the Pacer's 2s
		time.Sleep(5 * time.Second)
		var refused, sent int
		start := time.Now()
		for time.Since(start) < 4*time.Second {
			t0 := time.Now()
			err := get(client, "https://example.com/page")
			if d := time.Since(t0); d > 50*time.Millisecond {
				t.Errorf("request held %v by a hanging fleet.Pacer, want at most MaxWait (50ms)", d)
			}
			var te *TurnError
			switch {
			case err == nil:
				sent++
			case errors.As(err, &te) && te.Reason == ReasonPacer:
				refused++
				if sent > 0 {
					t.Errorf("refused for the fleet.Pacer after a turn was taken in memory")
				}
			case errors.As(err, &te):
			default:
				t.Fatalf("GET: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if refused == 0 || sent == 0 {
			t.Errorf("%d refused for the fleet.Pacer, %d sent; want refusals for 2s, then turns in memory", refused, sent)
		}
		site.checkSpaced(t, "https://example.com", time.Second)
	})
}

// TestNextTurnSendsNothingCountsNothing: NextTurn is not counted in NotYet,
// even while robots.txt is being fetched.
func TestNextTurnSendsNothingCountsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &siteLog{robots: "User-agent: *\nCrawl-delay: 1\n",
			latency: func(p string) time.Duration {
				if p == "/robots.txt" {
					return 3 * time.Second
				}
				return 0
			}}
		tr := &Transport{Base: site, Agent: "ExampleBot", MaxWait: 100 * time.Millisecond}
		u, _ := url.Parse("https://example.com/page")
		for range 5 {
			if _, err := tr.NextTurn(context.Background(), u); err != nil {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if n := tr.Stats().NotYet; n != 0 {
			t.Errorf("NotYet = %d after NextTurn calls only, want 0", n)
		}
		synctest.Wait()
		time.Sleep(5 * time.Second)
	})
}

// TestInspectWaitsForFetch: Origin and CrawlDelay wait for a slow fetch of
// robots.txt, whatever the Transport's MaxWait.
func TestInspectWaitsForFetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &siteLog{robots: "User-agent: *\nCrawl-delay: 2\n",
			latency: func(string) time.Duration { return 3 * time.Second }}
		tr := &Transport{Base: site, Agent: "ExampleBot", MaxWait: 100 * time.Millisecond}
		u, _ := url.Parse("https://example.com/page")
		d, err := tr.CrawlDelay(context.Background(), u)
		if err != nil || d != 2*time.Second {
			t.Errorf("CrawlDelay = %v, %v; want 2s", d, err)
		}
		tr2 := &Transport{Base: site, Agent: "ExampleBot", MaxWait: 100 * time.Millisecond}
		o, err := tr2.Origin(context.Background(), u)
		if err != nil || o.Access != fleet.AccessSuccess {
			t.Errorf("Origin = %v, %v; want the fetched file", o, err)
		}
	})
}

// TestCapsAreLogged: a Retry-After or Crawl-delay beyond the caps is
// shortened with a Warn record naming the origin, the ask and the cap.
func TestCapsAreLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &siteLog{robots: "User-agent: *\nCrawl-delay: 1e308\n",
			status: func(string) (int, http.Header) {
				return 429, http.Header{"Retry-After": {"999999999999"}}
			}}
		var buf bytes.Buffer
		tr := &Transport{Base: site, Agent: "ExampleBot", MaxWait: time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(&buf, nil))}
		get(&http.Client{Transport: tr}, "https://example.com/page")
		out := buf.String()
		for _, want := range []string{
			`msg="robots: Crawl-delay capped at MaxCrawlDelay" origin=https://example.com asked=2562047h47m16.854775807s kept=24h0m0s`,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("no record %s in\n%s", want, out)
			}
		}
		// The Retry-After: on a page sent by a Transport with a shorter
		// crawl-delay cap.
		buf.Reset()
		tr2 := &Transport{Base: site, Agent: "ExampleBot", MaxCrawlDelay: time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(&buf, nil))}
		get(&http.Client{Transport: tr2}, "https://example.com/page")
		if want := `msg="robots: Retry-After capped at MaxRetryAfter" origin=https://example.com asked=2562047h47m16s kept=24h0m0s`; !strings.Contains(buf.String(), want) {
			t.Errorf("no record %s in\n%s", want, buf.String())
		}
	})
}
