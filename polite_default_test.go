package robots_test

// Black-box tests of the default pace, as a user meets it: a Transport
// made with no settings (or with NoDefaultPace) in front of fake sites that
// log when each request arrived and when its answer began, judged where the
// site stands, in fake time under testing/synctest.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots"
)

// paceSite is a base transport that stands for one site: it answers
// robots.txt with robots and each page as page says, and logs every
// request as the site sees it.
type paceSite struct {
	robots string
	// page returns how long the n-th page request (from 1) takes to
	// answer, its status and its header; nil: at once, 200, no header.
	// A latency of hang never answers: the request waits for its context.
	page func(n int) (latency time.Duration, status int, hdr http.Header)

	mu          sync.Mutex
	visits      []paceVisit // in order of answer
	pages       int
	inFlight    int
	maxInFlight int
}

// hang is a page latency that never ends.
const hang = time.Duration(1<<63 - 1)

// paceVisit is one request as the site saw it.
type paceVisit struct {
	path         string
	n            int // its number among the page requests, from 1; 0 for robots.txt
	at, answered time.Time
	latency      time.Duration // answered − at
	status       int           // 0: never answered
}

func (s *paceSite) RoundTrip(req *http.Request) (*http.Response, error) {
	at := time.Now()
	isPage := req.URL.Path != "/robots.txt"
	s.mu.Lock()
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
	n := 0
	if isPage {
		s.pages++
		n = s.pages
	}
	s.mu.Unlock()
	lat, status, hdr, body := time.Duration(0), 200, http.Header{}, "page"
	switch {
	case !isPage:
		body = s.robots
	case s.page != nil:
		lat, status, hdr = s.page(n)
		if hdr == nil {
			hdr = http.Header{}
		}
	}
	var err error
	if lat > 0 {
		var timeout <-chan time.Time
		if lat != hang {
			tm := time.NewTimer(lat)
			defer tm.Stop()
			timeout = tm.C
		}
		select {
		case <-timeout:
		case <-req.Context().Done():
			err = req.Context().Err()
		}
	}
	answered := time.Now()
	s.mu.Lock()
	s.inFlight--
	v := paceVisit{path: req.URL.Path, n: n, at: at, answered: answered, latency: answered.Sub(at), status: status}
	if err != nil {
		v.status = 0
	}
	s.visits = append(s.visits, v)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &http.Response{StatusCode: status, Header: hdr, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: req}, nil
}

// log returns the requests the site saw, in order of arrival.
func (s *paceSite) log() []paceVisit {
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := append([]paceVisit(nil), s.visits...)
	for i := 1; i < len(vs); i++ { // insertion sort by arrival: the log is short
		for j := i; j > 0 && vs[j].at.Before(vs[j-1].at); j-- {
			vs[j], vs[j-1] = vs[j-1], vs[j]
		}
	}
	return vs
}

// spacing returns, for each request after the first, how long after the
// latest answer to the requests before it it arrived (negative: before
// that answer, two in flight), and the request that answer was to.
func spacing(vs []paceVisit) (gaps []time.Duration, after []paceVisit) {
	var latest paceVisit
	for i, v := range vs {
		if i > 0 {
			gaps = append(gaps, v.at.Sub(latest.answered))
			after = append(after, latest)
		}
		if i == 0 || v.answered.After(latest.answered) {
			latest = v
		}
	}
	return gaps, after
}

// checkSpaced fails t unless every request to s arrived at least want(v)
// after the answer to v, the latest answer before it, and no two were in
// flight at once.
func checkSpaced(t *testing.T, s *paceSite, want func(v paceVisit) time.Duration) {
	t.Helper()
	vs := s.log()
	gaps, after := spacing(vs)
	for i, g := range gaps {
		if w := want(after[i]); g < w {
			t.Errorf("%s (page %d) arrived %v after the answer to %s (page %d, answered in %v), want at least %v",
				vs[i+1].path, vs[i+1].n, g, after[i].path, after[i].n, after[i].latency, w)
		}
	}
	if s.maxInFlight > 1 {
		t.Errorf("%d requests in flight at once, want 1", s.maxInFlight)
	}
}

// crawl sends pages GETs of https://example.com/page/... through c from
// goroutines goroutines, each its share in turn, each with two days to
// wait for its turn, and returns the errors.
func crawl(c *http.Client, goroutines, pages int) []error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := g; i < pages; i += goroutines {
				ctx, cancel := context.WithTimeout(context.Background(), 48*time.Hour)
				err := fetch(ctx, c, fmt.Sprintf("https://example.com/page/%d", i))
				cancel()
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return errs
}

func fetch(ctx context.Context, c *http.Client, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// defaultDelay is the default pace a Transport with no settings keeps.
const defaultDelay = time.Second

func at(d time.Duration) func(paceVisit) time.Duration {
	return func(paceVisit) time.Duration { return d }
}

// TestDefaultPaceZeroConfig: with no settings, 16 goroutines sending 4
// requests each to a site that states nothing and answers at once keep one
// request in flight, each the default pace after the answer to the one
// before, robots.txt included.
func TestDefaultPaceZeroConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &paceSite{robots: "User-agent: *\nDisallow: /private\n"}
		c := &http.Client{Transport: robots.NewTransport(site, "ExampleBot")}
		start := time.Now()
		if errs := crawl(c, 16, 64); len(errs) > 0 {
			t.Fatalf("%d errors, the first %v", len(errs), errs[0])
		}
		vs := site.log()
		if len(vs) != 65 {
			t.Fatalf("the site saw %d requests, want 65 (robots.txt and 64 pages)", len(vs))
		}
		checkSpaced(t, site, at(defaultDelay))
		if took := time.Since(start); took < 64*defaultDelay {
			t.Errorf("64 pages took %v, want at least %v", took, 64*defaultDelay)
		}
	})
}

// TestDefaultPaceSlowSite: a site that slows from 20 ms to 1.5 s an answer
// gets its next request at least twice its response time after each slow
// answer, from the first; when it recovers, the gaps come down gradually,
// then back to the default pace.
func TestDefaultPaceSlowSite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		latency := func(n int) time.Duration {
			if 6 <= n && n <= 12 {
				return 1500 * time.Millisecond
			}
			return 20 * time.Millisecond
		}
		site := &paceSite{page: func(n int) (time.Duration, int, http.Header) { return latency(n), 200, nil }}
		c := &http.Client{Transport: robots.NewTransport(site, "ExampleBot")}
		if errs := crawl(c, 4, 40); len(errs) > 0 {
			t.Fatalf("%d errors, the first %v", len(errs), errs[0])
		}
		checkSpaced(t, site, func(v paceVisit) time.Duration {
			if v.n >= 6 && v.n <= 12 {
				return 2 * v.latency // the estimate rises at once
			}
			return defaultDelay
		})
		vs := site.log()
		gaps, after := spacing(vs)
		for i, g := range gaps {
			switch n := after[i].n; {
			case n == 13:
				// the first fast answer brings the estimate a quarter of
				// the way down: 1.5 s − (1.5 s − 20 ms)/4 = 1.13 s
				if g < 2*1130*time.Millisecond {
					t.Errorf("after the first fast answer: a gap of %v, want the estimate to fall gradually (at least 2.26 s)", g)
				}
			case n >= 35:
				if g > defaultDelay+50*time.Millisecond {
					t.Errorf("after page %d, long after the site recovered: a gap of %v, want the default pace back (%v)", n, g, defaultDelay)
				}
			}
		}
	})
}

// TestDefaultPaceRateLimit: a RateLimit field whose quota is spent pauses
// the origin for t, on any status; one whose quota runs low spreads the
// rest over t; Retry-After wins where both are present.
func TestDefaultPaceRateLimit(t *testing.T) {
	cases := []struct {
		name   string
		status int
		hdr    http.Header
		want   time.Duration // the least gap after the answer that carried it
		before time.Duration // if set, the gap is shorter: the pause is not longer than asked
	}{
		{"r=0", 200, http.Header{"Ratelimit": {`"default";r=0;t=30`}}, 30 * time.Second, 0},
		{"r=0 on a 404", 404, http.Header{"Ratelimit": {`"default";r=0;t=30`}}, 30 * time.Second, 0},
		{"r=4 spreads", 200, http.Header{"Ratelimit": {`"default";r=4;t=20`}}, 5 * time.Second, 0},
		{"several policies", 200, http.Header{"Ratelimit": {`"permin";r=50;t=50, "perhour";r=0;t=600`}}, 600 * time.Second, 0},
		{"policy window for a missing t", 200, http.Header{"Ratelimit": {`"default";r=0`}, "Ratelimit-Policy": {`"default";q=100;w=45`}}, 45 * time.Second, 0},
		{"Retry-After wins", 429, http.Header{"Ratelimit": {`"default";r=0;t=300`}, "Retry-After": {"7"}}, 7 * time.Second, 300 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				site := &paceSite{page: func(n int) (time.Duration, int, http.Header) {
					if n == 3 {
						return 0, c.status, c.hdr
					}
					return 0, 200, nil
				}}
				c2 := &http.Client{Transport: robots.NewTransport(site, "ExampleBot")}
				crawl(c2, 2, 6)
				checkSpaced(t, site, func(v paceVisit) time.Duration {
					if v.n == 3 {
						return c.want
					}
					return defaultDelay
				})
				if c.before > 0 {
					gaps, after := spacing(site.log())
					for i, g := range gaps {
						if after[i].n == 3 && g >= c.before {
							t.Errorf("a gap of %v after the answer with both fields, want Retry-After's %v", g, c.want)
						}
					}
				}
			})
		})
	}
}

// TestDefaultPaceRequestRate: robots.txt's Request-rate paces the origin
// at T/n after each answer, the longer of it and Crawl-delay; a stated
// rate is the floor instead of the default pace.
func TestDefaultPaceRequestRate(t *testing.T) {
	for _, c := range []struct {
		robots string
		want   time.Duration
	}{
		{"User-agent: *\nRequest-rate: 1/5s\n", 5 * time.Second},
		{"User-agent: *\nRequest-rate: 30/1m\n", 2 * time.Second},
		{"User-agent: *\nRequest-rate: 1/5\nCrawl-delay: 2\n", 5 * time.Second},
		{"User-agent: *\nRequest-rate: 1/1\nCrawl-delay: 3\n", 3 * time.Second},
		{"User-agent: *\nRequest-rate: 4/1s\n", 250 * time.Millisecond},
	} {
		t.Run(c.robots, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				site := &paceSite{robots: c.robots}
				cl := &http.Client{Transport: robots.NewTransport(site, "ExampleBot")}
				crawl(cl, 4, 8)
				checkSpaced(t, site, at(c.want))
				gaps, _ := spacing(site.log())
				if g := gaps[len(gaps)-1]; g > c.want+time.Millisecond {
					t.Errorf("a gap of %v, want the stated %v (the site's own rate, not the default)", g, c.want)
				}
			})
		})
	}
}

// TestNoDefaultPace: the opt-out puts any number of requests in flight to
// a site that states nothing, as before, and keeps Crawl-delay, the
// back-off and RateLimit.
func TestNoDefaultPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &paceSite{page: func(int) (time.Duration, int, http.Header) { return 100 * time.Millisecond, 200, nil }}
		c := &http.Client{Transport: &robots.Transport{Base: site, Agent: "ExampleBot", NoDefaultPace: true}}
		start := time.Now()
		crawl(c, 16, 64)
		if site.maxInFlight != 16 {
			t.Errorf("%d requests in flight at once, want 16", site.maxInFlight)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("64 pages from 16 goroutines took %v, want 4 rounds of 100 ms", took)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		site := &paceSite{robots: "User-agent: *\nCrawl-delay: 2\n"}
		c := &http.Client{Transport: &robots.Transport{Base: site, Agent: "ExampleBot", NoDefaultPace: true}}
		crawl(c, 16, 16)
		checkSpaced(t, site, at(2*time.Second))
	})
	synctest.Test(t, func(t *testing.T) {
		site := &paceSite{page: func(n int) (time.Duration, int, http.Header) {
			switch n {
			case 2:
				return 0, 429, nil
			case 5:
				return 0, 200, http.Header{"Ratelimit": {`"default";r=0;t=40`}}
			}
			return 0, 200, nil
		}}
		c := &http.Client{Transport: &robots.Transport{Base: site, Agent: "ExampleBot", NoDefaultPace: true}}
		crawl(c, 1, 8)
		gaps, after := spacing(site.log())
		for i, g := range gaps {
			if n := after[i].n; n == 2 && g < robots.DefaultBackoffFirst || n == 5 && g < 40*time.Second {
				t.Errorf("after page %d: a gap of %v, want its pause", n, g)
			}
		}
	})
}

// TestDefaultPaceBadHints: malformed rate hints are ignored, the default
// pace still holds, and a huge one asks for the longest pause, capped by
// MaxRetryAfter; none gives a request sooner than the site asked, or a
// panic.
func TestDefaultPaceBadHints(t *testing.T) {
	big := strings.Repeat(`"p";r=0;t=5, `, 64<<10/13) + `"p";r=0;t=5`
	for _, c := range []struct {
		name string
		hdr  http.Header
		want time.Duration
	}{
		{"r=-1", http.Header{"Ratelimit": {`"default";r=-1;t=30`}}, defaultDelay},
		{"t=1e30", http.Header{"Ratelimit": {`"default";r=0;t=1e30`}}, defaultDelay},
		{"missing t", http.Header{"Ratelimit": {`"default";r=0`}}, defaultDelay},
		{"several, one bad", http.Header{"Ratelimit": {`"a";r=-1;t=900, "b";r=0;t=12`}}, 12 * time.Second},
		{"64 KiB", http.Header{"Ratelimit": {big}}, defaultDelay},
		{"t at the largest Integer", http.Header{"Ratelimit": {`"default";r=0;t=999999999999999`}}, robots.DefaultMaxRetryAfter},
		{"string r", http.Header{"Ratelimit": {`"default";r="0";t=30`}}, defaultDelay},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				site := &paceSite{page: func(n int) (time.Duration, int, http.Header) {
					if n == 2 {
						return 0, 200, c.hdr
					}
					return 0, 200, nil
				}}
				cl := &http.Client{Transport: robots.NewTransport(site, "ExampleBot")}
				crawl(cl, 2, 4)
				checkSpaced(t, site, func(v paceVisit) time.Duration {
					if v.n == 2 {
						return c.want
					}
					return defaultDelay
				})
			})
		})
	}
	for _, c := range []struct {
		rate string
		want time.Duration
	}{
		{"0/0", defaultDelay}, // not a rate: the default pace
		{"1/0s", defaultDelay},
		{"5/", defaultDelay},
		{"1/5x", defaultDelay},
		{"1e308/1s", 0},           // a stated rate of about none: one in flight all the same
		{"1/1e308s", time.Minute}, // the longest, capped by MaxCrawlDelay: set to a minute
	} {
		t.Run("Request-rate "+c.rate, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				site := &paceSite{robots: "User-agent: *\nRequest-rate: " + c.rate + "\n"}
				cl := &http.Client{Transport: &robots.Transport{Base: site, Agent: "ExampleBot", MaxCrawlDelay: time.Minute}}
				crawl(cl, 4, 6)
				checkSpaced(t, site, at(c.want))
			})
		})
	}
}

// TestDefaultPaceSiteNeverAnswers: a site that never answers holds its
// origin until TurnTimeout; the next request comes no sooner than that,
// and its hold counts as a slow answer: twice it more.
func TestDefaultPaceSiteNeverAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &paceSite{page: func(n int) (time.Duration, int, http.Header) {
			if n == 1 {
				return hang, 0, nil
			}
			return 0, 200, nil
		}}
		c := &http.Client{Transport: robots.NewTransport(site, "ExampleBot")}
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				fetch(ctx, c, fmt.Sprintf("https://example.com/page/%d", i))
			})
			time.Sleep(time.Millisecond) // the first is the one that hangs
		}
		wg.Wait()
		vs := site.log()
		if len(vs) != 4 {
			t.Fatalf("the site saw %d requests, want 4", len(vs))
		}
		first := vs[1]
		if first.n != 1 {
			t.Fatalf("the first page request is page %d", first.n)
		}
		want := robots.DefaultTurnTimeout + 2*robots.DefaultTurnTimeout
		if g := vs[2].at.Sub(first.at); g < want {
			t.Errorf("the request after one that never answered came %v after it, want at least %v (its hold, then twice it)", g, want)
		}
		if g := vs[3].at.Sub(vs[2].answered); g < defaultDelay {
			t.Errorf("then a gap of %v, want at least %v", g, defaultDelay)
		}
	})
}

// TestDefaultPaceSkewedClock: a site whose clock is an hour behind ours
// asks, with a Retry-After date, for a pause of 30 s from its Date: the
// next request comes no sooner than 30 s after that answer (a date in the
// past by our clock is no usable Retry-After, and the back-off pauses
// longer). One an hour ahead asks for an hour and 30 s by ours: at least
// 30 s all the same. (A jump of the machine's own clock cannot be played
// in a synctest bubble; the Transport's turns run on the monotonic clock.)
func TestDefaultPaceSkewedClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &paceSite{page: func(n int) (time.Duration, int, http.Header) {
			if n == 2 {
				siteNow := time.Now().Add(-time.Hour)
				return 0, 503, http.Header{
					"Date":        {siteNow.UTC().Format(http.TimeFormat)},
					"Retry-After": {siteNow.Add(30 * time.Second).UTC().Format(http.TimeFormat)},
				}
			}
			return 0, 200, nil
		}}
		c := &http.Client{Transport: robots.NewTransport(site, "ExampleBot")}
		crawl(c, 1, 4)
		checkSpaced(t, site, func(v paceVisit) time.Duration {
			if v.n == 2 {
				return 30 * time.Second
			}
			return defaultDelay
		})
	})
	synctest.Test(t, func(t *testing.T) {
		site := &paceSite{page: func(n int) (time.Duration, int, http.Header) {
			if n == 2 {
				siteNow := time.Now().Add(time.Hour)
				return 0, 429, http.Header{
					"Date":        {siteNow.UTC().Format(http.TimeFormat)},
					"Retry-After": {siteNow.Add(30 * time.Second).UTC().Format(http.TimeFormat)},
				}
			}
			return 0, 200, nil
		}}
		c := &http.Client{Transport: robots.NewTransport(site, "ExampleBot")}
		crawl(c, 1, 4)
		checkSpaced(t, site, func(v paceVisit) time.Duration {
			if v.n == 2 {
				return 30 * time.Second
			}
			return defaultDelay
		})
	})
}
