package robots_test

// More black-box attacks on the default pace: rate hints on robots.txt
// itself and under NoDefaultPace with requests in flight, failures as slow
// answers, MaxWait's reason, a cap's Warn, and origins kept apart.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots"
)

// TestRateLimitOnRobotsTxt: a RateLimit field on the answer to robots.txt
// pauses the origin like one on a page: the first page waits for it.
func TestRateLimitOnRobotsTxt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &paceSite{}
		base := rtFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := site.RoundTrip(req)
			if err == nil && req.URL.Path == "/robots.txt" {
				resp.Header.Set("RateLimit", `"default";r=0;t=20`)
			}
			return resp, err
		})
		c := &http.Client{Transport: robots.NewTransport(base, "ExampleBot")}
		crawl(c, 2, 3)
		checkSpaced(t, site, func(v paceVisit) time.Duration {
			if v.path == "/robots.txt" {
				return 20 * time.Second
			}
			return defaultDelay
		})
	})
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestRateLimitWithRequestsInFlight: with NoDefaultPace, 16 requests are in
// flight at once; the first answer says the quota is spent for 30 s: no
// request arrives after that answer and before 30 s have passed.
func TestRateLimitWithRequestsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &paceSite{page: func(n int) (time.Duration, int, http.Header) {
			if n == 1 {
				return 50 * time.Millisecond, 200, http.Header{"Ratelimit": {`"default";r=0;t=30`}}
			}
			return 100 * time.Millisecond, 200, nil
		}}
		c := &http.Client{Transport: &robots.Transport{Base: site, Agent: "ExampleBot", NoDefaultPace: true}}
		crawl(c, 16, 48)
		var paused paceVisit
		for _, v := range site.log() {
			if v.n == 1 {
				paused = v
			}
		}
		for _, v := range site.log() {
			if v.at.After(paused.answered) && v.at.Before(paused.answered.Add(30*time.Second)) {
				t.Errorf("page %d arrived %v after the answer that paused the origin for 30s", v.n, v.at.Sub(paused.answered))
			}
		}
		if site.maxInFlight < 2 {
			t.Errorf("%d in flight at most; want NoDefaultPace to send them together", site.maxInFlight)
		}
	})
}

// TestFailuresAreSlowAnswers: a request that fails with a network error
// after 2 s counts as an answer of at least 2 s: the next request comes at
// least twice that after the failure.
func TestFailuresAreSlowAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &paceSite{}
		var mu sync.Mutex
		var failedAt time.Time
		n := 0
		base := rtFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL.Path != "/robots.txt" {
				mu.Lock()
				n++
				k := n
				mu.Unlock()
				if k == 2 {
					time.Sleep(2 * time.Second)
					mu.Lock()
					failedAt = time.Now()
					mu.Unlock()
					return nil, errors.New("connection reset by peer")
				}
			}
			return site.RoundTrip(req)
		})
		c := &http.Client{Transport: robots.NewTransport(base, "ExampleBot")}
		crawl(c, 2, 4)
		for _, v := range site.log() {
			if v.path != "/robots.txt" && v.at.After(failedAt.Add(-time.Nanosecond)) && v.at.Before(failedAt.Add(4*time.Second)) {
				t.Errorf("%s arrived %v after a request failed in 2 s, want at least 4s", v.path, v.at.Sub(failedAt))
			}
		}
	})
}

// TestMaxWaitReasons: with MaxWait, a request refused for now says why, and
// its RetryAt is no sooner than the site asked.
func TestMaxWaitReasons(t *testing.T) {
	for _, c := range []struct {
		robots  string
		latency time.Duration
		hdr     http.Header
		reason  string
		wait    time.Duration
	}{
		{"", 0, nil, robots.ReasonDefaultPace, defaultDelay},
		{"User-agent: *\nRequest-rate: 1/7s\n", 0, nil, robots.ReasonRequestRate, 7 * time.Second},
		{"", 0, http.Header{"Ratelimit": {`"default";r=0;t=40`}}, robots.ReasonRateLimit, 40 * time.Second},
		{"", 0, http.Header{"Ratelimit": {`"default";r=2;t=40`}}, robots.ReasonRateLimit, 20 * time.Second},
		{"User-agent: *\nCrawl-delay: 2\n", 3 * time.Second, nil, robots.ReasonSlowAnswers, 6 * time.Second},
	} {
		t.Run(c.reason, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				site := &paceSite{robots: c.robots, page: func(int) (time.Duration, int, http.Header) { return c.latency, 200, c.hdr }}
				cl := &http.Client{Transport: &robots.Transport{Base: site, Agent: "ExampleBot", MaxWait: 100 * time.Millisecond}}
				// A page, sent again at each RetryAt until it goes.
				for tries := 0; ; tries++ {
					err := fetch(context.Background(), cl, "https://example.com/page/first")
					if err == nil {
						break
					}
					te, ok := errors.AsType[*robots.TurnError](err)
					if !ok || tries == 5 {
						t.Fatalf("the first page: %v", err)
					}
					time.Sleep(time.Until(te.RetryAt))
				}
				last := site.log()[len(site.log())-1]
				err := fetch(context.Background(), cl, "https://example.com/page/next")
				te, ok := errors.AsType[*robots.TurnError](err)
				if !ok {
					t.Fatalf("a request at once after an answer: %v, want a *TurnError", err)
				}
				if te.Reason != c.reason {
					t.Errorf("Reason %q, want %q", te.Reason, c.reason)
				}
				if te.RetryAt.Before(last.answered.Add(c.wait)) {
					t.Errorf("RetryAt %v after the last answer, want at least %v", te.RetryAt.Sub(last.answered), c.wait)
				}
			})
		})
	}
}

// TestRateLimitCapWarns: a RateLimit pause longer than MaxRetryAfter is cut
// to it, with a Warn that says so.
func TestRateLimitCapWarns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs strings.Builder
		var mu sync.Mutex
		h := slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logs}, &slog.HandlerOptions{Level: slog.LevelWarn})
		site := &paceSite{page: func(n int) (time.Duration, int, http.Header) {
			if n == 1 {
				return 0, 200, http.Header{"Ratelimit": {`"default";r=0;t=3600`}}
			}
			return 0, 200, nil
		}}
		c := &http.Client{Transport: &robots.Transport{Base: site, Agent: "ExampleBot", MaxRetryAfter: time.Minute, Logger: slog.New(h)}}
		crawl(c, 1, 2)
		checkSpaced(t, site, func(v paceVisit) time.Duration {
			if v.n == 1 {
				return time.Minute
			}
			return defaultDelay
		})
		mu.Lock()
		defer mu.Unlock()
		if !strings.Contains(logs.String(), "level=WARN") {
			t.Errorf("no Warn for a RateLimit pause cut from 1h to 1m; logs: %s", logs.String())
		}
	})
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestDefaultPacePerOrigin: the default pace keeps each origin apart: two
// sites crawled at once take the time of one.
func TestDefaultPacePerOrigin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &paceSite{}, &paceSite{}
		base := rtFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL.Host == "a.example" {
				return a.RoundTrip(req)
			}
			return b.RoundTrip(req)
		})
		c := &http.Client{Transport: robots.NewTransport(base, "ExampleBot")}
		start := time.Now()
		var wg sync.WaitGroup
		for _, host := range []string{"a.example", "b.example"} {
			wg.Go(func() {
				for i := range 5 {
					if err := fetch(context.Background(), c, fmt.Sprintf("https://%s/%d", host, i)); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		checkSpaced(t, a, at(defaultDelay))
		checkSpaced(t, b, at(defaultDelay))
		if took := time.Since(start); took != 5*defaultDelay {
			t.Errorf("two sites of 5 pages each took %v, want %v: one's pace does not hold the other", took, 5*defaultDelay)
		}
	})
}

// TestStatedDelayIsTheFloor: a stated Crawl-delay shorter than the default
// pace is the floor instead of it; the site has spoken.
func TestStatedDelayIsTheFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &paceSite{robots: "User-agent: *\nCrawl-delay: 0.1\n"}
		c := &http.Client{Transport: robots.NewTransport(site, "ExampleBot")}
		crawl(c, 4, 10)
		checkSpaced(t, site, at(100*time.Millisecond))
		gaps, _ := spacing(site.log())
		for _, g := range gaps {
			if g != 100*time.Millisecond {
				t.Errorf("a gap of %v, want the stated 100ms", g)
			}
		}
	})
}

// TestRateLimitOnRedirect: a redirect whose answer says the quota is spent
// pauses the origin: the client's next hop to it waits for the reset.
func TestRateLimitOnRedirect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &paceSite{page: func(n int) (time.Duration, int, http.Header) {
			if n == 1 {
				return 0, http.StatusFound, http.Header{"Location": {"/moved"}, "Ratelimit": {`"default";r=0;t=15`}}
			}
			return 0, 200, nil
		}}
		c := &http.Client{Transport: robots.NewTransport(site, "ExampleBot")}
		if err := fetch(context.Background(), c, "https://example.com/page"); err != nil {
			t.Fatal(err)
		}
		checkSpaced(t, site, func(v paceVisit) time.Duration {
			if v.n == 1 {
				return 15 * time.Second
			}
			return defaultDelay
		})
		if vs := site.log(); len(vs) != 3 || vs[2].path != "/moved" {
			t.Errorf("the site saw %d requests, want robots.txt, /page, /moved", len(vs))
		}
	})
}

// TestRateLimitSpreadKeepsTheDefault: a quota spread thinner than the
// default pace does not shorten it.
func TestRateLimitSpreadKeepsTheDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &paceSite{page: func(int) (time.Duration, int, http.Header) {
			return 0, 200, http.Header{"Ratelimit": {`"default";r=1000;t=1`}}
		}}
		c := &http.Client{Transport: robots.NewTransport(site, "ExampleBot")}
		crawl(c, 4, 8)
		checkSpaced(t, site, at(defaultDelay))
	})
}

// TestAnswerAfterTurnTimeout: a site that answers after 70 s, longer than
// TurnTimeout (a minute), has answered in 70 s: the estimate rises to it
// at once, and the next request comes no sooner than twice that after the
// answer. A hold that ran out is not the answer's time.
func TestAnswerAfterTurnTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &paceSite{page: func(n int) (time.Duration, int, http.Header) {
			if n == 1 {
				return 70 * time.Second, 200, nil
			}
			return 0, 200, nil
		}}
		c := &http.Client{Transport: robots.NewTransport(site, "ExampleBot")}
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				fetch(ctx, c, fmt.Sprintf("https://example.com/page/%d", i))
			})
			time.Sleep(time.Millisecond)
		}
		wg.Wait()
		checkSpaced(t, site, func(v paceVisit) time.Duration {
			if v.n == 1 {
				return 2 * v.latency
			}
			return defaultDelay
		})
	})
}

// TestOriginShowsRequestRate: Origin shows the Request-rate a site states,
// beside its Crawl-delay.
func TestOriginShowsRequestRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &paceSite{robots: "User-agent: ExampleBot\nRequest-rate: 3/1m\nCrawl-delay: 5\nDisallow: /private\n\nUser-agent: *\nRequest-rate: 1/1h\n"}
		tr := robots.NewTransport(site, "ExampleBot")
		o, err := tr.Origin(context.Background(), &url.URL{Scheme: "https", Host: "example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if o.RequestRate != 20*time.Second || o.CrawlDelay != 5*time.Second {
			t.Errorf("Origin: RequestRate %v, CrawlDelay %v; want 20s, 5s", o.RequestRate, o.CrawlDelay)
		}
	})
}

// TestDefaultPaceSurvivesEviction: with room for two origins in memory, a
// crawl of six round-robin evicts each between its requests; the default
// pace and the adaptive delay of each still hold.
func TestDefaultPaceSurvivesEviction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sites := map[string]*paceSite{}
		for i := range 6 {
			lat := time.Duration(0)
			if i%2 == 1 {
				lat = 800 * time.Millisecond // twice it is longer than the default pace
			}
			sites[fmt.Sprintf("s%d.example", i)] = &paceSite{page: func(int) (time.Duration, int, http.Header) { return lat, 200, nil }}
		}
		base := rtFunc(func(req *http.Request) (*http.Response, error) { return sites[req.URL.Host].RoundTrip(req) })
		c := &http.Client{Transport: &robots.Transport{Base: base, Agent: "ExampleBot", MaxOrigins: 2}}
		var wg sync.WaitGroup
		for g := range 3 {
			wg.Go(func() {
				for i := range 24 {
					host := fmt.Sprintf("s%d.example", (i+g)%6)
					if err := fetch(context.Background(), c, fmt.Sprintf("https://%s/%d-%d", host, g, i)); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		for host, s := range sites {
			if len(s.log()) < 13 {
				t.Errorf("%s saw %d requests, want robots.txt and 12 pages at least", host, len(s.log()))
			}
			checkSpaced(t, s, func(v paceVisit) time.Duration {
				if v.path != "/robots.txt" && v.latency > 0 {
					return 2 * v.latency
				}
				return defaultDelay
			})
		}
	})
}

// TestDefaultPaceRobotsTxtFaults: a site whose robots.txt is 404 (all
// allowed) is paced all the same; one whose robots.txt answers 503 gets
// its refetches of robots.txt no faster than the default pace, however
// many requests ask.
func TestDefaultPaceRobotsTxtFaults(t *testing.T) {
	for _, status := range []int{404, 503} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				site := &paceSite{}
				base := rtFunc(func(req *http.Request) (*http.Response, error) {
					resp, err := site.RoundTrip(req)
					if err == nil && req.URL.Path == "/robots.txt" {
						resp.StatusCode = status
					}
					return resp, err
				})
				c := &http.Client{Transport: robots.NewTransport(base, "ExampleBot")}
				start := time.Now()
				var wg sync.WaitGroup
				for g := range 8 {
					wg.Go(func() {
						for i := 0; time.Since(start) < 10*time.Minute; i++ {
							ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
							fetch(ctx, c, fmt.Sprintf("https://example.com/%d-%d", g, i))
							cancel()
							time.Sleep(time.Second)
						}
					})
				}
				wg.Wait()
				if len(site.log()) < 2 {
					t.Fatalf("the site saw %d requests", len(site.log()))
				}
				checkSpaced(t, site, at(defaultDelay))
			})
		})
	}
}
