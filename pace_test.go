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

	"github.com/jarcoal/httpmock"
)

func TestCrawlDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		a := pacedOrigin(mock, "User-agent: *\nCrawl-delay: 5\n")
		tr := NewTransport(mock, "ExampleBot")
		client := &http.Client{Transport: tr}
		start := time.Now()
		for i := range 10 {
			wantAllowed(t, client, fmt.Sprintf("https://example.com/page%d", i))
		}
		if d := time.Since(start); d < 45*time.Second {
			t.Errorf("10 requests under Crawl-delay: 5 took %v, want at least 45s", d)
		}
		if g := a.minGap(); g < 5*time.Second {
			t.Errorf("requests %v apart, want at least 5s (robots.txt included)", g)
		}
		if n := a.count(); n != 11 {
			t.Errorf("%d arrivals, want 11", n)
		}
		// The fetch counted as a request: the first page waited too.
		s := tr.Stats()
		if s.TurnWaits != 10 || s.TurnWaitTime != 50*time.Second {
			t.Errorf("TurnWaits=%d TurnWaitTime=%v, want 10 and 50s", s.TurnWaits, s.TurnWaitTime)
		}
	})
}

func TestCrawlDelayConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		a := pacedOrigin(mock, "User-agent: *\nCrawl-delay: 2\n")
		mock.RegisterResponder("GET", "https://other.example/robots.txt", httpmock.NewStringResponder(404, ""))
		client := &http.Client{Transport: noDefaultPace(NewTransport(mock, "ExampleBot"))}
		start := time.Now()
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() { wantAllowed(t, client, fmt.Sprintf("https://example.com/page%d", i)) })
		}
		// Another origin is not slowed down meanwhile.
		time.Sleep(time.Second)
		other := time.Now()
		for range 5 {
			wantAllowed(t, client, "https://other.example/")
		}
		if d := time.Since(other); d != 0 {
			t.Errorf("another origin waited %v, want 0", d)
		}
		wg.Wait()
		if g := a.minGap(); g < 2*time.Second {
			t.Errorf("concurrent requests %v apart, want at least 2s", g)
		}
		if d := time.Since(start); d != 40*time.Second {
			t.Errorf("20 concurrent requests took %v, want 40s", d)
		}
	})
}

func TestCrawlDelayPerAgent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		pacedOrigin(mock, "User-agent: ExampleBot\nDisallow: /x\nCrawl-delay: 1\n\nUser-agent: *\nDisallow: /y\nCrawl-delay: 7\n")
		client := &http.Client{Transport: &Transport{Base: mock}}
		send := func(ua string) time.Duration {
			req, _ := http.NewRequest("GET", "https://example.com/page", nil)
			req.Header.Set("User-Agent", ua)
			start := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return time.Since(start)
		}
		send("ExampleBot/1.0")
		time.Sleep(time.Minute)
		send("ExampleBot/1.0")
		if d := send("ExampleBot/1.0"); d != time.Second {
			t.Errorf("ExampleBot waited %v, want 1s", d)
		}
		if d := send("OtherBot/1.0"); d != 7*time.Second {
			t.Errorf("OtherBot waited %v, want 7s", d)
		}
	})
}

func TestCrawlDelaySettings(t *testing.T) {
	cases := []struct {
		name   string
		robots string
		tr     *Transport
		want   time.Duration // between two requests
	}{
		{"no delay", "User-agent: *\nDisallow: /private\n", &Transport{NoDefaultPace: true}, 0},
		{"zero delay", "User-agent: *\nCrawl-delay: 0\n", &Transport{NoDefaultPace: true}, 0},
		{"fractional", "User-agent: *\nCrawl-delay: 0.5\n", &Transport{NoDefaultPace: true}, 500 * time.Millisecond},
		{"an hour, honoured by default", "User-agent: *\nCrawl-delay: 3600\n", &Transport{NoDefaultPace: true}, time.Hour},
		{"capped by default", "User-agent: *\nCrawl-delay: 172800\n", &Transport{NoDefaultPace: true}, DefaultMaxCrawlDelay},
		{"capped", "User-agent: *\nCrawl-delay: 60\n", &Transport{NoDefaultPace: true, MaxCrawlDelay: 10 * time.Second}, 10 * time.Second},
		{"ignored", "User-agent: *\nCrawl-delay: 5\n", &Transport{NoDefaultPace: true, IgnoreCrawlDelay: true}, 0},
		{"min delay, none stated", "User-agent: *\nDisallow: /private\n", &Transport{NoDefaultPace: true, MinDelay: 2 * time.Second}, 2 * time.Second},
		{"min delay, shorter stated", "User-agent: *\nCrawl-delay: 1\n", &Transport{NoDefaultPace: true, MinDelay: 2 * time.Second}, 2 * time.Second},
		{"min delay, longer stated", "User-agent: *\nCrawl-delay: 3\n", &Transport{NoDefaultPace: true, MinDelay: 2 * time.Second}, 3 * time.Second},
		{"min delay, ignored", "User-agent: *\nCrawl-delay: 3\n", &Transport{NoDefaultPace: true, MinDelay: 2 * time.Second, IgnoreCrawlDelay: true}, 2 * time.Second},
		{"min delay, unavailable", "", &Transport{NoDefaultPace: true, MinDelay: 2 * time.Second}, 2 * time.Second},
		{"default pace, none stated", "User-agent: *\nDisallow: /private\n", &Transport{}, DefaultPaceDelay},
		{"default pace, zero stated", "User-agent: *\nCrawl-delay: 0\n", &Transport{}, 0},
		{"default pace, shorter stated", "User-agent: *\nCrawl-delay: 0.5\n", &Transport{}, 500 * time.Millisecond},
		{"default pace, ignored", "User-agent: *\nCrawl-delay: 5\n", &Transport{IgnoreCrawlDelay: true}, DefaultPaceDelay},
		{"default pace, unavailable", "", &Transport{}, DefaultPaceDelay},
		{"default pace, set", "User-agent: *\nDisallow: /private\n", &Transport{DefaultDelay: 3 * time.Second}, 3 * time.Second},
		{"default pace, under MinDelay", "", &Transport{DefaultDelay: time.Second, MinDelay: 2 * time.Second}, 2 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mock := newMock()
				if c.robots == "" {
					mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(404, ""))
				} else {
					pacedOrigin(mock, c.robots)
				}
				// A TTL longer than the longest delay: no fetch between.
				tr := &Transport{Base: mock, Agent: "ExampleBot", IgnoreCrawlDelay: c.tr.IgnoreCrawlDelay,
					MaxCrawlDelay: c.tr.MaxCrawlDelay, MinDelay: c.tr.MinDelay, TTL: 7 * 24 * time.Hour,
					NoDefaultPace: c.tr.NoDefaultPace, DefaultDelay: c.tr.DefaultDelay}
				client := &http.Client{Transport: tr}
				wantAllowed(t, client, "https://example.com/page1")
				start := time.Now()
				wantAllowed(t, client, "https://example.com/page2")
				if d := time.Since(start); d != c.want {
					t.Errorf("second request waited %v, want %v", d, c.want)
				}
			})
		})
	}
}

// fakePacer is a Pacer that records its calls and asks for fixed waits.
type fakePacer struct {
	noHold
	mu       sync.Mutex
	reserves []string
	pauses   []string
	wait     time.Duration
	err      error
}

func (p *fakePacer) Reserve(ctx context.Context, origin string, tr fleet.TurnRequest) (fleet.Turn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := fmt.Sprintf("%s every=%v", origin, tr.Every)
	if !tr.Known {
		r += ", rules unknown"
	}
	p.reserves = append(p.reserves, r)
	if p.err != nil {
		return fleet.Turn{}, p.err
	}
	return fleet.Turn{Wait: p.wait, OK: p.wait < tr.MaxWait}, nil
}

func (p *fakePacer) Pause(ctx context.Context, origin string, until time.Time, why string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pauses = append(p.pauses, fmt.Sprintf("%s until=%s", origin, until.Format(time.TimeOnly)))
	return p.err
}

func TestPacer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		pacedOrigin(mock, "User-agent: *\nCrawl-delay: 3\n")
		mock.RegisterResponder("GET", "https://example.com/busy", httpmock.NewStringResponder(429, "").
			HeaderSet(http.Header{"Retry-After": {"90"}}))
		mock.RegisterResponder("GET", "https://fast.example/robots.txt", httpmock.NewStringResponder(404, ""))
		p := &fakePacer{wait: 4 * time.Second}
		client := &http.Client{Transport: &Transport{NoDefaultPace: true, Base: mock, Agent: "ExampleBot", Pacer: p}}
		start := time.Now()
		wantAllowed(t, client, "https://example.com/page")
		// The Pacer's answer comes on top of what the process knows
		// itself: the page waits out its 3s crawl-delay after the fetch
		// in memory, and then asks the Pacer, which says 4s more (a
		// Pacer that counts from its own turns would say 0).
		if d := time.Since(start); d != 11*time.Second {
			t.Errorf("waited %v, want the pacer's 4s for the fetch of robots.txt, then 3s of crawl-delay and the pacer's 4s for the page", d)
		}
		wantAllowed(t, client, "https://fast.example/")
		wantAllowed(t, client, "https://example.com/busy") // at 23 s

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := getCtx(ctx, client, "https://example.com/page"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want context.DeadlineExceeded", err)
		}
		want := []string{
			// The fetch of robots.txt takes a turn; its negative
			// interval tells the Pacer that no delay is known yet.
			"https://example.com every=0s, rules unknown",
			"https://example.com every=3s",
			"https://fast.example every=0s, rules unknown",
			"https://fast.example every=0s", // a Pacer is asked for every request
			"https://example.com every=3s",
			// The request with a deadline 1s away: the process
			// knows of the pause, and refuses it without a call.
		}
		if fmt.Sprint(p.reserves) != fmt.Sprint(want) {
			t.Errorf("Reserve calls\n%q\nwant\n%q", p.reserves, want)
		}
		if want := []string{"https://example.com until=00:01:53"}; fmt.Sprint(p.pauses) != fmt.Sprint(want) {
			t.Errorf("Pause calls %q, want %q", p.pauses, want)
		}

		// A failing Pacer does not stop the crawl, and the pause that
		// the Transport saw itself still holds in memory: the request
		// leaves when it ends, 90 s after the 429.
		p.err = errors.New("pacer down")
		start = time.Now()
		wantAllowed(t, client, "https://example.com/page")
		if d := time.Since(start); d != 90*time.Second {
			t.Errorf("waited %v with a failing fleet.Pacer, want the 90s left of the pause", d)
		}
	})
}

// downWatcher is a Pacer whose Reserve fails (a store in its cooldown) and
// whose copy of the fleet's pauses holds one.
type downWatcher struct {
	noHold
	until time.Time
}

func (p *downWatcher) Reserve(context.Context, string, fleet.TurnRequest) (fleet.Turn, error) {
	return fleet.Turn{}, errors.New("pacer down")
}
func (p *downWatcher) Pause(context.Context, string, time.Time, string) error {
	return errors.New("pacer down")
}
func (p *downWatcher) WatchedPause(string) (time.Time, string, bool) {
	return p.until, "retry-after", true
}

// TestWatchedPauseHoldsWhenPacerFails: a pause in the Pacer's copy of the
// fleet's pauses holds a request back even when Reserve fails and the
// Transport paces in memory.
func TestWatchedPauseHoldsWhenPacerFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		a := pacedOrigin(mock, "User-agent: *\n")
		p := &downWatcher{}
		client := &http.Client{Transport: &Transport{Base: mock, Agent: "ExampleBot", Pacer: p}}
		wantAllowed(t, client, "https://example.com/page0")
		p.until = time.Now().Add(time.Minute)
		wantAllowed(t, client, "https://example.com/page1")
		a.mu.Lock()
		defer a.mu.Unlock()
		if len(a.times) != 3 || !a.times[2].Equal(p.until) {
			t.Errorf("arrivals %v, want the second page at the pause's end %v", a.times, p.until)
		}
	})
}

// TestFailingPacerPacesInMemory checks that when the Pacer fails, the
// Transport still spaces the requests to an origin by its crawl-delay.
func TestFailingPacerPacesInMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		a := pacedOrigin(mock, "User-agent: *\nCrawl-delay: 3\n")
		p := &fakePacer{err: errors.New("pacer down")}
		var log strings.Builder
		logger := slog.New(slog.NewTextHandler(&log, nil))
		client := &http.Client{Transport: &Transport{Base: mock, Agent: "ExampleBot", Pacer: p, Logger: logger}}
		for i := range 4 {
			wantAllowed(t, client, fmt.Sprintf("https://example.com/page%d", i))
		}
		// Once a minute at most, not once a request.
		if n := strings.Count(log.String(), "pacer failed"); n != 1 {
			t.Errorf("%d records of the fleet.Pacer failing in 4 requests, want 1:\n%s", n, log.String())
		}
		time.Sleep(time.Minute)
		wantAllowed(t, client, "https://example.com/page4")
		if n := strings.Count(log.String(), "pacer failed"); n != 2 {
			t.Errorf("%d records of the fleet.Pacer failing, want 2 after a minute", n)
		}
		if g := a.minGap(); g < 3*time.Second {
			t.Errorf("requests %v apart with a failing fleet.Pacer, want at least 3s (robots.txt included)", g)
		}
		if n := a.count(); n != 6 {
			t.Errorf("%d arrivals, want 6", n)
		}
	})
}

// ctxPacer is a Pacer that waits for its context to be done, if it can be.
type ctxPacer struct{ noHold }

func (ctxPacer) Reserve(ctx context.Context, _ string, _ fleet.TurnRequest) (fleet.Turn, error) {
	if ctx.Done() == nil {
		return fleet.Turn{OK: true}, nil
	}
	<-ctx.Done()
	return fleet.Turn{}, ctx.Err()
}

func (ctxPacer) Pause(context.Context, string, time.Time, string) error { return nil }

// TestPacerErrorAfterContextDone checks that a request whose context ends
// while the Pacer waits is not sent.
func TestPacerErrorAfterContextDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nCrawl-delay: 3\n"))
		client := &http.Client{Transport: &Transport{Base: mock, Agent: "ExampleBot", Pacer: ctxPacer{}}}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := getCtx(ctx, client, "https://example.com/page"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want context.DeadlineExceeded", err)
		}
		if n := calls(mock, "https://example.com/page"); n != 0 {
			t.Errorf("page sent %d times after its context ended, want 0", n)
		}
		time.Sleep(storeTimeout) // the load's Reserve gives up
		synctest.Wait()
	})
}

// watchPacer is an atkPacer that is a PauseWatcher, whose copy of the
// pauses the test sets, and that counts its Reserve calls.
type watchPacer struct {
	atkPacer
	reserves atomic.Int32
	stale    atomic.Bool
	mu       sync.Mutex
	watched  map[string]time.Time // guarded by mu
}

func (p *watchPacer) Reserve(ctx context.Context, origin string, r fleet.TurnRequest) (fleet.Turn, error) {
	p.reserves.Add(1)
	return p.atkPacer.Reserve(ctx, origin, r)
}

func (p *watchPacer) WatchedPause(origin string) (time.Time, string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.watched[origin], ReasonRetryAfter, !p.stale.Load()
}

// TestPauseWatcherSkipsReserve checks that a Transport whose Pacer is a
// PauseWatcher does not call Reserve for requests with no interval to an
// origin that the copy says is not paused, and does call it (and waits)
// when the copy holds a pause, when the copy may be stale, and when the
// origin has a crawl-delay.
func TestPauseWatcherSkipsReserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n"))
		mock.RegisterResponder("GET", "https://slow.example/robots.txt", httpmock.NewStringResponder(200, "User-agent: *\nCrawl-delay: 1\n"))
		p := &watchPacer{atkPacer: atkPacer{}, watched: map[string]time.Time{}}
		client := &http.Client{Transport: &Transport{NoDefaultPace: true, Base: mock, Agent: "ExampleBot", Pacer: p}}
		for range 10 {
			wantAllowed(t, client, "https://example.com/page")
		}
		if n := p.reserves.Load(); n != 1 {
			t.Errorf("%d Reserve calls for a robots.txt fetch and 10 requests with no interval, want 1 (the fetch)", n)
		}

		// A pause in the copy (set by another process): the request
		// asks the Pacer, which holds it back until the pause ends.
		until := time.Now().Add(3 * time.Second)
		p.mu.Lock()
		p.watched["https://example.com"] = until
		p.mu.Unlock()
		p.Pause(context.Background(), "https://example.com", until, ReasonRetryAfter)
		p.reserves.Store(0)
		wantAllowed(t, client, "https://example.com/page")
		if n := p.reserves.Load(); n == 0 {
			t.Error("no Reserve call for an origin paused in the copy")
		}
		if now := time.Now(); now.Before(until) {
			t.Errorf("request sent %v before the end of the watched pause", until.Sub(now))
		}

		// Once the pause has ended, no call again.
		p.reserves.Store(0)
		wantAllowed(t, client, "https://example.com/page")
		if n := p.reserves.Load(); n != 0 {
			t.Errorf("%d Reserve calls after the watched pause ended, want 0", n)
		}

		// A stale copy is not trusted.
		p.stale.Store(true)
		for range 3 {
			wantAllowed(t, client, "https://example.com/page")
		}
		if n := p.reserves.Load(); n != 3 {
			t.Errorf("%d Reserve calls for 3 requests while the copy is stale, want 3", n)
		}
		p.stale.Store(false)

		// An origin with a crawl-delay takes a turn per request.
		p.reserves.Store(0)
		for range 3 {
			wantAllowed(t, client, "https://slow.example/page")
		}
		if n := p.reserves.Load(); n != 4 {
			t.Errorf("%d Reserve calls for a robots.txt fetch and 3 paced requests, want 4", n)
		}
	})
}

// atkPacer is a correct Pacer kept in memory that can be made to fail.
type atkPacer struct {
	pacing.Memory
	down atomic.Bool
}

var errPacerDown = errors.New("pacer down")

func (p *atkPacer) Reserve(ctx context.Context, origin string, r fleet.TurnRequest) (fleet.Turn, error) {
	if p.down.Load() {
		return fleet.Turn{}, errPacerDown
	}
	return p.Memory.Reserve(ctx, origin, r)
}

func (p *atkPacer) Release(ctx context.Context, origin string, a fleet.Answer) error {
	if p.down.Load() {
		return errPacerDown
	}
	return p.Memory.Release(ctx, origin, a)
}

func (p *atkPacer) PushBack(ctx context.Context, origin string, sent time.Time, b Backoff) (time.Time, error) {
	if p.down.Load() {
		return time.Time{}, errPacerDown
	}
	return p.Memory.PushBack(ctx, origin, sent, b)
}

func (p *atkPacer) Pause(ctx context.Context, origin string, until time.Time, why string) error {
	if p.down.Load() {
		return errPacerDown
	}
	return p.Memory.Pause(ctx, origin, until, why)
}

func (p *atkPacer) PausedUntil(ctx context.Context, origin string) (time.Time, string, error) {
	if p.down.Load() {
		return time.Time{}, "", errPacerDown
	}
	return p.Memory.PausedUntil(ctx, origin)
}

// TestPacerOutageKeepsOwnTurns guards against this: "If [the Pacer] returns
// an error, the Transport ... paces the origin itself for that request, as if
// it had no Pacer". Turns taken through the Pacer are not recorded in memory,
// so the first request after the Pacer goes down leaves at once, a fraction
// of the crawl-delay after the last one (a Redis blip in a fleet).
func TestPacerOutageKeepsOwnTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeOrigins{handle: func(req *http.Request) (int, http.Header, string) {
			return 200, nil, "User-agent: *\nCrawl-delay: 10\n"
		}}
		p := &atkPacer{}
		client := &http.Client{Transport: &Transport{Base: srv, Agent: "ExampleBot", Pacer: p}}
		for i := range 3 {
			atkGet(context.Background(), client, fmt.Sprintf("https://example.com/up%d", i), nil)
		}
		time.Sleep(time.Second)
		p.down.Store(true)
		for i := range 2 {
			atkGet(context.Background(), client, fmt.Sprintf("https://example.com/down%d", i), nil)
		}
		srv.minGap(t, "https://example.com:443", 10*time.Second)
	})
}
