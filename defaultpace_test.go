package robots

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/internal/pacing"
)

// TestDefaultPaceZeroConfig: a Transport with no settings, sent 64
// requests by 16 goroutines for a site that states no crawl-delay, keeps
// one request in flight and DefaultPaceDelay after each answer.
func TestDefaultPaceZeroConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const origin = "https://quiet.example"
		site := &siteLog{robots: "User-agent: *\nDisallow: /private\n",
			latency: func(string) time.Duration { return 20 * time.Millisecond }}
		client := &http.Client{Transport: NewTransport(site, "ExampleBot")}
		start := time.Now()
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				for i := range 4 {
					if err := getCtx(t.Context(), client, fmt.Sprintf("%s/g%d/p%d", origin, g, i)); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		site.checkSpaced(t, origin, DefaultPaceDelay)
		if n := len(site.log(origin)); n != 65 {
			t.Errorf("the site saw %d requests, want robots.txt and 64 pages", n)
		}
		if d := time.Since(start); d < 64*DefaultPaceDelay {
			t.Errorf("64 pages in %v, want at least 64 × %v", d, DefaultPaceDelay)
		}
	})
}

// TestDefaultDelaySetting: DefaultDelay sets the default interval; a
// Crawl-delay the site states replaces it, even a shorter one.
func TestDefaultDelaySetting(t *testing.T) {
	for _, c := range []struct {
		robots string
		want   time.Duration
	}{
		{"User-agent: *\nDisallow: /private\n", 3 * time.Second},
		{"User-agent: *\nCrawl-delay: 0.1\n", 100 * time.Millisecond},
	} {
		synctest.Test(t, func(t *testing.T) {
			const origin = "https://quiet.example"
			site := &siteLog{robots: c.robots}
			client := &http.Client{Transport: &Transport{Base: site, Agent: "ExampleBot", DefaultDelay: 3 * time.Second}}
			for i := range 4 {
				wantAllowed(t, client, fmt.Sprintf("%s/p%d", origin, i))
			}
			v := site.log(origin)
			for i := 2; i < len(v); i++ {
				if gap := v[i].arrived.Sub(v[i-1].answered); gap != c.want {
					t.Errorf("%q: gap %v before %s, want %v", c.robots, gap, v[i].path, c.want)
				}
			}
		})
	}
}

// TestAdaptiveSlowingSite: a site that slows from 20 ms to 1.5 s an
// answer gets gaps at least as long as its answers from the first slow
// answer on (within three requests), and its pace comes back to the
// default once it answers fast again.
func TestAdaptiveSlowingSite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const origin = "https://busy.example"
		var n atomic.Int64
		lat := func(i int64) time.Duration {
			if i >= 5 && i < 11 {
				return 1500 * time.Millisecond
			}
			return 20 * time.Millisecond
		}
		site := &siteLog{robots: "User-agent: *\nDisallow: /private\n",
			latency: func(p string) time.Duration {
				if p == "/robots.txt" {
					return 20 * time.Millisecond
				}
				return lat(n.Add(1) - 1)
			}}
		client := &http.Client{Transport: NewTransport(site, "ExampleBot")}
		for i := range 25 {
			wantAllowed(t, client, fmt.Sprintf("%s/p%d", origin, i))
		}
		site.checkSpaced(t, origin, DefaultPaceDelay)
		v := site.log(origin)[1:] // the pages
		for i := 1; i < len(v); i++ {
			took := v[i-1].answered.Sub(v[i-1].arrived)
			gap := v[i].arrived.Sub(v[i-1].answered)
			if took >= time.Second && gap < took {
				t.Errorf("%s arrived %v after an answer that took %v, want at least as long", v[i].path, gap, took)
			}
		}
		last := v[len(v)-1].arrived.Sub(v[len(v)-2].answered)
		if last != DefaultPaceDelay {
			t.Errorf("after the site recovered, the gap is %v, want back to %v", last, DefaultPaceDelay)
		}
	})
}

// TestAdaptiveFailuresCountSlow: requests that fail after 4 s (a network
// error, a timeout) space the next by twice that.
func TestAdaptiveFailuresCountSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const origin = "https://failing.example"
		site := &siteLog{robots: "User-agent: *\nDisallow: /private\n"}
		var arrivals []time.Time
		var mu sync.Mutex
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL.Path == "/robots.txt" {
				return site.RoundTrip(req)
			}
			mu.Lock()
			arrivals = append(arrivals, time.Now())
			mu.Unlock()
			time.Sleep(4 * time.Second)
			return nil, errors.New("connection reset")
		})
		client := &http.Client{Transport: NewTransport(base, "ExampleBot")}
		for i := range 3 {
			if err := getCtx(t.Context(), client, fmt.Sprintf("%s/p%d", origin, i)); err == nil {
				t.Fatal("no error from a failing site")
			}
		}
		for i := 1; i < len(arrivals); i++ {
			if gap := arrivals[i].Sub(arrivals[i-1]); gap < 4*time.Second+8*time.Second {
				t.Errorf("request %d left %v after the one before, want its 4 s and twice 4 s after", i, gap)
			}
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestRateLimitPauses: a RateLimit field with r=0 pauses the origin for t
// seconds on any status; with r=n>0 the next request is t/n after the
// answer; Retry-After wins over it on a 429; MaxRetryAfter caps it, with a
// Warn; a malformed field is ignored.
func TestRateLimitPauses(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		hdr    http.Header
		want   time.Duration // the gap after the answer that carried hdr
		reason string
	}{
		{"r=0", 200, http.Header{"Ratelimit": {`"default";r=0;t=30`}}, 30 * time.Second, ReasonRateLimit},
		{"r=0 on a 404", 404, http.Header{"Ratelimit": {`"default";r=0;t=30`}}, 30 * time.Second, ReasonRateLimit},
		{"r=5", 200, http.Header{"Ratelimit": {`"default";r=5;t=20`}}, 4 * time.Second, ReasonRateLimit},
		{"two policies", 200, http.Header{"Ratelimit": {`"a";r=50;t=10, "b";r=1;t=7`}}, 7 * time.Second, ReasonRateLimit},
		{"Retry-After wins", 429, http.Header{"Ratelimit": {`"default";r=0;t=60`}, "Retry-After": {"5"}}, 5 * time.Second, ReasonRetryAfter},
		{"429 with RateLimit", 429, http.Header{"Ratelimit": {`"default";r=0;t=9`}}, 9 * time.Second, ReasonRateLimit},
		{"capped", 200, http.Header{"Ratelimit": {`"default";r=0;t=999999`}}, time.Hour, ReasonRateLimit},
		{"malformed", 200, http.Header{"Ratelimit": {`"default";r=-1;t=30`}}, DefaultPaceDelay, ReasonDefaultPace},
		{"huge", 200, http.Header{"Ratelimit": {strings.Repeat(`"p";r=0;t=1, `, 6000) + `"p";r=0;t=1`}}, DefaultPaceDelay, ReasonDefaultPace},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const origin = "https://limited.example"
				site := &siteLog{robots: "User-agent: *\nDisallow: /private\n",
					status: func(p string) (int, http.Header) {
						if p == "/p1" {
							return c.status, c.hdr
						}
						return 200, nil
					}}
				logs := &lockedBuf{}
				tr := &Transport{Base: site, Agent: "ExampleBot", MaxRetryAfter: time.Hour, Logger: slog.New(slog.NewTextHandler(logs, nil))}
				client := &http.Client{Transport: tr}
				wantAllowed(t, client, origin+"/p0")
				getCtx(t.Context(), client, origin+"/p1")
				err := getCtx(WithMaxWait(t.Context(), time.Millisecond), client, origin+"/p2")
				var te *TurnError
				if !errors.As(err, &te) || te.Reason != c.reason {
					t.Errorf("a request at once: %v, want a TurnError for %q", err, c.reason)
				}
				wantAllowed(t, client, origin+"/p2")
				v := site.log(origin)
				if gap := v[3].arrived.Sub(v[2].answered); gap < c.want || gap > c.want+c.want/10 {
					t.Errorf("gap %v after the answer, want %v", gap, c.want)
				}
				if c.name == "capped" && !strings.Contains(logs.String(), "level=WARN msg=\"robots: RateLimit capped at MaxRetryAfter\"") {
					t.Errorf("no Warn of the cap: %s", logs.String())
				}
				if st := tr.Stats(); c.reason == ReasonRateLimit && st.RateLimits != 1 {
					t.Errorf("Stats.RateLimits %d, want 1", st.RateLimits)
				}
			})
		})
	}
}

// TestRequestRatePaces: robots.txt's Request-rate paces the origin at T/n,
// the longer of it and Crawl-delay wins, and Origin shows it.
func TestRequestRatePaces(t *testing.T) {
	for _, c := range []struct {
		robots string
		want   time.Duration
		reason string
	}{
		{"User-agent: *\nRequest-rate: 1/5s\n", 5 * time.Second, ReasonRequestRate},
		{"User-agent: *\nRequest-rate: 6/1m\nCrawl-delay: 2\n", 10 * time.Second, ReasonRequestRate},
		{"User-agent: *\nRequest-rate: 1/1s\nCrawl-delay: 2\n", 2 * time.Second, ReasonCrawlDelay},
		{"User-agent: *\nRequest-rate: 1/0s\n", DefaultPaceDelay, ReasonDefaultPace}, // malformed: none stated
	} {
		synctest.Test(t, func(t *testing.T) {
			const origin = "https://rated.example"
			site := &siteLog{robots: c.robots}
			tr := NewTransport(site, "ExampleBot")
			client := &http.Client{Transport: tr}
			for i := range 3 {
				wantAllowed(t, client, fmt.Sprintf("%s/p%d", origin, i))
			}
			err := getCtx(WithMaxWait(t.Context(), time.Millisecond), client, origin+"/p3")
			var te *TurnError
			if c.want > 0 && (!errors.As(err, &te) || te.Reason != c.reason) {
				t.Errorf("%q: a request at once: %v, want a TurnError for %q", c.robots, err, c.reason)
			}
			site.checkSpaced(t, origin, c.want)
			o, err := tr.Origin(t.Context(), mustURL(origin+"/"))
			if err != nil {
				t.Fatal(err)
			}
			rr, _ := o.File.Group("ExampleBot").RequestRate()
			if o.RequestRate != rr {
				t.Errorf("Origin.RequestRate %v, want %v", o.RequestRate, rr)
			}
			want := c.want
			if c.reason == ReasonDefaultPace {
				want = 0 // none stated
			}
			if d, _ := tr.CrawlDelay(t.Context(), mustURL(origin+"/")); d != want {
				t.Errorf("CrawlDelay %v, want %v", d, want)
			}
		})
	}
}

// TestNoDefaultPaceAsBefore: with NoDefaultPace, an origin that states no
// delay takes no turn: 16 goroutines have requests in flight at once and
// are done in the time of their answers; a stated Crawl-delay still paces.
func TestNoDefaultPaceAsBefore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const origin = "https://quiet.example"
		site := &siteLog{robots: "User-agent: *\nDisallow: /private\n",
			latency: func(string) time.Duration { return 20 * time.Millisecond }}
		tr := &Transport{Base: site, Agent: "ExampleBot", NoDefaultPace: true}
		client := &http.Client{Transport: tr}
		start := time.Now()
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				for i := range 4 {
					wantAllowed(t, client, fmt.Sprintf("%s/g%d/p%d", origin, g, i))
				}
			})
		}
		wg.Wait()
		if d := time.Since(start); d > time.Second {
			t.Errorf("64 requests took %v with NoDefaultPace", d)
		}
		site.mu.Lock()
		most := site.maxFly[origin]
		site.mu.Unlock()
		if most < 2 {
			t.Errorf("%d in flight at most with NoDefaultPace, want many", most)
		}
		if st := tr.Stats(); st.TurnWaits != 0 {
			t.Errorf("Stats.TurnWaits %d with NoDefaultPace", st.TurnWaits)
		}
	})
}

// TestDefaultPaceReasons: a refusal under MaxWait names the default pace,
// then the adaptive delay once the site is slow.
func TestDefaultPaceReasons(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const origin = "https://quiet.example"
		var slow atomic.Bool
		site := &siteLog{robots: "User-agent: *\nDisallow: /private\n",
			latency: func(p string) time.Duration {
				if slow.Load() && p != "/robots.txt" {
					return 2 * time.Second
				}
				return 0
			}}
		tr := &Transport{Base: site, Agent: "ExampleBot"}
		client := &http.Client{Transport: tr}
		reason := func() string {
			err := getCtx(WithMaxWait(context.Background(), time.Millisecond), client, origin+"/x")
			var te *TurnError
			if !errors.As(err, &te) {
				t.Fatalf("no TurnError: %v", err)
			}
			return te.Reason
		}
		wantAllowed(t, client, origin+"/a")
		if r := reason(); r != ReasonDefaultPace {
			t.Errorf("reason %q, want %q", r, ReasonDefaultPace)
		}
		time.Sleep(DefaultPaceDelay)
		slow.Store(true)
		wantAllowed(t, client, origin+"/b")
		if r := reason(); r != ReasonSlowAnswers {
			t.Errorf("reason %q after a 2 s answer, want %q", r, ReasonSlowAnswers)
		}
		if st := tr.Stats(); st.SlowWaits == 0 || st.DefaultPaceWaits == 0 {
			t.Errorf("Stats %+v: no refusal counted by reason", st)
		}
	})
}

// lockedBuf is a buffer that several goroutines may write at once.
type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDefaultPaceFleetFaults: with the default pace through a Pacer that
// fails mid-crawl (errors, then back), 4 goroutines of a Transport still
// give the site one request in flight and the default spacing.
func TestDefaultPaceFleetFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const origin = "https://fleet.example"
		site := &siteLog{robots: "User-agent: *\nDisallow: /private\n",
			latency: func(string) time.Duration { return 30 * time.Millisecond }}
		p := &atkPacer{}
		client := &http.Client{Transport: &Transport{Base: site, Agent: "ExampleBot", Pacer: p}}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 6 {
					if g == 0 && i == 2 {
						p.down.Store(true)
					}
					if g == 0 && i == 4 {
						p.down.Store(false)
					}
					getCtx(t.Context(), client, fmt.Sprintf("%s/g%d/p%d", origin, g, i))
				}
			})
		}
		wg.Wait()
		if n := len(site.log(origin)); n != 25 {
			t.Errorf("the site saw %d requests, want robots.txt and 24 pages", n)
		}
		site.checkSpaced(t, origin, DefaultPaceDelay)
	})
}

// TestDefaultPaceHangingBase: a request that never answers holds its
// origin for TurnTimeout, and the hold counts as an answer that slow: the
// next request leaves at least twice TurnTimeout after the hold's end.
func TestDefaultPaceHangingBase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const origin = "https://hang.example"
		site := &siteLog{robots: "User-agent: *\nDisallow: /private\n", hang: make(chan struct{})}
		tr := &Transport{Base: site, Agent: "ExampleBot", TurnTimeout: 10 * time.Second}
		client := &http.Client{Transport: tr}
		ctx, cancel := context.WithCancel(t.Context())
		go getCtx(ctx, client, origin+"/hang")
		time.Sleep(2 * time.Second) // robots.txt, 1 s, then /hang leaves
		synctest.Wait()
		start := time.Now()
		wantAllowed(t, client, origin+"/next")
		v := site.log(origin)
		left := v[len(v)-1].arrived
		if d := left.Sub(start); d < 8*time.Second+20*time.Second {
			t.Errorf("the next request left %v after, want the hold's end and twice TurnTimeout", d)
		}
		cancel()
		close(site.hang)
	})
}

// TestPaceEdgeValues: RateLimit and Request-rate values that are
// malformed or extreme give the documented pace, never a panic and never
// a request sooner than the default.
func TestPaceEdgeValues(t *testing.T) {
	for _, c := range []struct {
		robots string
		hdr    string
		min    time.Duration // the least gap after the answer that carried hdr
	}{
		{"Request-rate: 0/0\n", "", DefaultPaceDelay},
		{"Request-rate: 5/\n", "", DefaultPaceDelay},
		{"Request-rate: 1/5x\n", "", DefaultPaceDelay},
		{"Request-rate: 1e308/1s\n", "", time.Nanosecond},
		{"Request-rate: 1/1e308s\n", "", DefaultMaxCrawlDelay},
		{"", `"p";r=0`, DefaultPaceDelay},
		{"", `"p";r=0;t=1e30`, DefaultPaceDelay},
		{"", `"p";r=0;t=999999999999999`, DefaultMaxRetryAfter},
		{"", `"p";t=5`, DefaultPaceDelay},
		{"", `"p";r=1;t=0`, DefaultPaceDelay},
		{"", `garbage(((`, DefaultPaceDelay},
	} {
		synctest.Test(t, func(t *testing.T) {
			const origin = "https://edge.example"
			site := &siteLog{robots: "User-agent: *\n" + c.robots + "Disallow: /private\n",
				status: func(p string) (int, http.Header) {
					if p == "/p1" && c.hdr != "" {
						return 200, http.Header{"Ratelimit": {c.hdr}}
					}
					return 200, nil
				}}
			tr := NewTransport(site, "ExampleBot")
			client := &http.Client{Transport: tr}
			for i := range 3 {
				ctx := WithMaxWait(t.Context(), 48*time.Hour)
				if err := getCtx(ctx, client, fmt.Sprintf("%s/p%d", origin, i)); err != nil {
					var te *TurnError
					if !errors.As(err, &te) {
						t.Errorf("%q %q: %v", c.robots, c.hdr, err)
					}
				}
			}
			v := site.log(origin)
			if len(v) == 4 {
				if gap := v[3].arrived.Sub(v[2].answered); gap < c.min {
					t.Errorf("%q %q: gap %v, want at least %v", c.robots, c.hdr, gap, c.min)
				}
			}
		})
	}
}

// TestNextTurnCountsNothing: NextTurn sends nothing, so it counts nothing
// in Stats (beside the fetch of robots.txt it may make) and records no
// refusal; the request that follows counts once.
func TestNextTurnCountsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const origin = "https://probe.example"
		site := &siteLog{robots: "User-agent: *\nDisallow: /private\n"}
		logs := &lockedBuf{}
		tr := &Transport{Base: site, Agent: "ExampleBot", Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
		client := &http.Client{Transport: tr}
		for _, p := range []string{"/private", "/page", "/page"} {
			tr.NextTurn(t.Context(), mustURL(origin+p))
		}
		st := tr.Stats()
		if st.FetchSuccess != 1 {
			t.Errorf("Stats.FetchSuccess %d, want the 1 fetch", st.FetchSuccess)
		}
		st.FetchSuccess = 0
		if st != (Stats{}) {
			t.Errorf("Stats after NextTurn alone: %+v, want nothing counted", st)
		}
		if strings.Contains(logs.String(), "robots: refused") {
			t.Errorf("NextTurn recorded a refusal:\n%s", logs.String())
		}
		getCtx(t.Context(), client, origin+"/private")
		if st := tr.Stats(); st.RefusedRule != 1 || st.Refused != 1 {
			t.Errorf("Stats after one refused request: %+v, want it counted once", st)
		}
		if n := strings.Count(logs.String(), "robots: refused"); n != 1 {
			t.Errorf("%d refusal records for one request, want 1", n)
		}
	})
}

// TestDefaultPaceFleet: two Transports sharing a Pacer, with no settings,
// keep the default pace fleet-wide: one request in flight at the site and
// DefaultPaceDelay after each answer, whichever Transport sends it; a
// slow answer lengthens the fleet's gaps through the Pacer's estimate.
func TestDefaultPaceFleet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const origin = "https://fleet.example"
		var n atomic.Int64
		site := &siteLog{robots: "User-agent: *\nDisallow: /private\n",
			latency: func(p string) time.Duration {
				if p != "/robots.txt" && n.Add(1) == 5 {
					return 2 * time.Second
				}
				return 20 * time.Millisecond
			}}
		p := &pacing.Memory{}
		store := &fleet.MemoryStore{}
		var wg sync.WaitGroup
		for i := range 2 {
			tr := &Transport{Base: site, Agent: "ExampleBot", Pacer: p, Store: store}
			client := &http.Client{Transport: tr}
			for g := range 4 {
				wg.Go(func() {
					for j := range 3 {
						wantAllowed(t, client, fmt.Sprintf("%s/t%d/g%d/p%d", origin, i, g, j))
					}
				})
			}
		}
		wg.Wait()
		site.checkSpaced(t, origin, DefaultPaceDelay)
		v := site.log(origin)
		for i := 1; i < len(v); i++ {
			if took := v[i-1].answered.Sub(v[i-1].arrived); took >= time.Second {
				if gap := v[i].arrived.Sub(v[i-1].answered); gap < 2*took {
					t.Errorf("%v after a %v answer, want twice that", gap, took)
				}
			}
		}
	})
}
