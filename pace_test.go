package robots

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"
)

// arrivals records when each request reached a mock origin.
type arrivals struct {
	mu    sync.Mutex
	times []time.Time
}

func (a *arrivals) record(r httpmock.Responder) httpmock.Responder {
	return func(req *http.Request) (*http.Response, error) {
		a.mu.Lock()
		a.times = append(a.times, time.Now())
		a.mu.Unlock()
		return r(req)
	}
}

// minGap returns the shortest time between two recorded arrivals.
func (a *arrivals) minGap() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	gap := time.Duration(1<<63 - 1)
	for i := 1; i < len(a.times); i++ {
		gap = min(gap, a.times[i].Sub(a.times[i-1]))
	}
	return gap
}

func (a *arrivals) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.times)
}

// pacedOrigin registers robots.txt and pages of https://example.com on mock,
// recording the arrival of every request, robots.txt included.
func pacedOrigin(mock *httpmock.MockTransport, robots string) *arrivals {
	a := &arrivals{}
	mock.RegisterResponder("GET", exampleRobots, a.record(httpmock.NewStringResponder(200, robots)))
	mock.RegisterRegexpResponder("GET", mustRegexp(`^https://example\.com/page`), a.record(httpmock.NewStringResponder(200, "page")))
	return a
}

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
		if s.PaceWaits != 10 || s.PaceWait != 50*time.Second {
			t.Errorf("PaceWaits=%d PaceWait=%v, want 10 and 50s", s.PaceWaits, s.PaceWait)
		}
	})
}

func TestCrawlDelayConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		a := pacedOrigin(mock, "User-agent: *\nCrawl-delay: 2\n")
		mock.RegisterResponder("GET", "https://other.example/robots.txt", httpmock.NewStringResponder(404, ""))
		client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}
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
		{"no delay", "User-agent: *\nDisallow: /private\n", &Transport{}, 0},
		{"zero delay", "User-agent: *\nCrawl-delay: 0\n", &Transport{}, 0},
		{"fractional", "User-agent: *\nCrawl-delay: 0.5\n", &Transport{}, 500 * time.Millisecond},
		{"capped by default", "User-agent: *\nCrawl-delay: 3600\n", &Transport{}, DefaultMaxCrawlDelay},
		{"capped", "User-agent: *\nCrawl-delay: 60\n", &Transport{MaxCrawlDelay: 10 * time.Second}, 10 * time.Second},
		{"ignored", "User-agent: *\nCrawl-delay: 5\n", &Transport{IgnoreCrawlDelay: true}, 0},
		{"min delay, none stated", "User-agent: *\nDisallow: /private\n", &Transport{MinDelay: 2 * time.Second}, 2 * time.Second},
		{"min delay, shorter stated", "User-agent: *\nCrawl-delay: 1\n", &Transport{MinDelay: 2 * time.Second}, 2 * time.Second},
		{"min delay, longer stated", "User-agent: *\nCrawl-delay: 3\n", &Transport{MinDelay: 2 * time.Second}, 3 * time.Second},
		{"min delay, ignored", "User-agent: *\nCrawl-delay: 3\n", &Transport{MinDelay: 2 * time.Second, IgnoreCrawlDelay: true}, 2 * time.Second},
		{"min delay, unavailable", "", &Transport{MinDelay: 2 * time.Second}, 2 * time.Second},
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
				tr := &Transport{Base: mock, Agent: "ExampleBot", IgnoreCrawlDelay: c.tr.IgnoreCrawlDelay,
					MaxCrawlDelay: c.tr.MaxCrawlDelay, MinDelay: c.tr.MinDelay}
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

func TestPaceDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		a := pacedOrigin(mock, "User-agent: *\nCrawl-delay: 10\n")
		tr := NewTransport(mock, "ExampleBot")
		client := &http.Client{Transport: tr}
		if err := tr.Check(context.Background(), mustURL("https://example.com/")); err != nil {
			t.Fatal(err)
		}
		// The next turn is 10 s after the fetch of robots.txt.

		// A deadline before the turn fails at once, and takes no turn.
		ctx, cancel := context.WithTimeout(context.Background(), 9*time.Second)
		defer cancel()
		start := time.Now()
		err := getCtx(ctx, client, "https://example.com/page1")
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrDisallowed) {
			t.Errorf("err = %v, want context.DeadlineExceeded", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("returned after %v, want at once", d)
		}

		// A deadline after the turn waits for it.
		ctx2, cancel2 := context.WithTimeout(context.Background(), 11*time.Second)
		defer cancel2()
		if err := getCtx(ctx2, client, "https://example.com/page2"); err != nil {
			t.Errorf("err = %v, want the request sent at its turn", err)
		}
		if d := time.Since(start); d != 10*time.Second {
			t.Errorf("sent after %v, want 10s", d)
		}

		// Canceling while waiting gives up with context.Canceled.
		ctx3, cancel3 := context.WithCancel(context.Background())
		go func() {
			time.Sleep(3 * time.Second)
			cancel3()
		}()
		start = time.Now()
		if err := getCtx(ctx3, client, "https://example.com/page3"); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("gave up after %v, want 3s", d)
		}
		if n := a.count(); n != 2 {
			t.Errorf("%d arrivals, want robots.txt and page2 only", n)
		}
	})
}

func TestRetryAfterPauses(t *testing.T) {
	cases := []struct {
		name       string
		status     int
		retryAfter string
		tr         *Transport
		want       time.Duration // wait of the next request
	}{
		{"503 seconds", 503, "60", &Transport{}, time.Minute},
		{"429 seconds", 429, "30", &Transport{}, 30 * time.Second},
		{"429 date", 429, "Sat, 01 Jan 2000 00:02:00 GMT", &Transport{}, 2 * time.Minute},
		{"capped by default", 503, "86400", &Transport{}, DefaultMaxRetryAfter},
		{"capped", 503, "86400", &Transport{MaxRetryAfter: time.Minute}, time.Minute},
		{"ignored", 503, "60", &Transport{IgnoreRetryAfter: true}, 0},
		{"500 is not a request to wait", 500, "60", &Transport{}, 0},
		{"no header", 503, "", &Transport{}, 0},
		{"malformed", 503, "soon", &Transport{}, 0},
		{"past int64 seconds", 503, "9223372036854775808", &Transport{}, DefaultMaxRetryAfter},
		{"20 digits", 429, "99999999999999999999", &Transport{MaxRetryAfter: time.Minute}, time.Minute},
		{"negative past int64", 503, "-9223372036854775809", &Transport{}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mock := newMock()
				mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, ""))
				mock.RegisterResponder("GET", "https://example.com/busy", httpmock.NewStringResponder(c.status, "").
					HeaderSet(http.Header{"Retry-After": {c.retryAfter}}))
				tr := &Transport{Base: mock, Agent: "ExampleBot", IgnoreRetryAfter: c.tr.IgnoreRetryAfter, MaxRetryAfter: c.tr.MaxRetryAfter}
				client := &http.Client{Transport: tr}
				wantAllowed(t, client, "https://example.com/busy") // the clock starts at 2000-01-01 00:00:00 UTC
				start := time.Now()
				wantAllowed(t, client, "https://example.com/next")
				if d := time.Since(start); d != c.want {
					t.Errorf("next request waited %v, want %v", d, c.want)
				}
				if want := uint64(btoi(c.want > 0)); tr.Stats().Pauses != want {
					t.Errorf("Pauses = %d, want %d", tr.Stats().Pauses, want)
				}
			})
		})
	}
}

// TestRobotsTxtHugeRetryAfterPauses: a Retry-After on robots.txt's own 503
// that is past int64 seconds pauses the origin for MaxRetryAfter, as a
// shorter one does.
func TestRobotsTxtHugeRetryAfterPauses(t *testing.T) {
	for _, ra := range []string{"9223372036854775808", "99999999999999999999"} {
		t.Run(ra, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mock := newMock()
				mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(503, "").
					HeaderSet(http.Header{"Retry-After": {ra}}))
				tr := &Transport{Base: mock, Agent: "ExampleBot", MaxRetryAfter: time.Minute}
				client := &http.Client{Transport: tr}
				wantRefused(t, client, "https://example.com/page")
				if n := tr.Stats().Pauses; n != 1 {
					t.Errorf("Pauses = %d, want 1", n)
				}
				start := time.Now()
				resp, err := client.Get(exampleRobots) // not checked, but paced
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if d := time.Since(start); d != time.Minute {
					t.Errorf("robots.txt requested again after %v, want the pause of 1m", d)
				}
			})
		})
	}
}

func TestRetryAfterThenCrawlDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		a := pacedOrigin(mock, "User-agent: *\nCrawl-delay: 2\n")
		mock.RegisterResponder("GET", "https://example.com/busy", httpmock.NewStringResponder(503, "").
			HeaderSet(http.Header{"Retry-After": {"60"}}))
		client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}
		wantAllowed(t, client, "https://example.com/busy")
		paused := time.Now()
		var wg sync.WaitGroup
		for i := range 5 {
			wg.Go(func() { wantAllowed(t, client, fmt.Sprintf("https://example.com/page%d", i)) })
		}
		wg.Wait()
		// The requests held back leave one per crawl-delay after the pause.
		a.mu.Lock()
		defer a.mu.Unlock()
		pages := a.times[1:] // after robots.txt
		if len(pages) != 5 || pages[0].Sub(paused) != time.Minute {
			t.Fatalf("pages at %v, want the first 60s after the 503", pages)
		}
		for i := 1; i < len(pages); i++ {
			if g := pages[i].Sub(pages[i-1]); g != 2*time.Second {
				t.Errorf("pages %d and %d %v apart, want 2s", i-1, i, g)
			}
		}
	})
}

// fakePacer is a Pacer that records its calls and asks for fixed waits.
type fakePacer struct {
	mu       sync.Mutex
	reserves []string
	pauses   []string
	wait     time.Duration
	err      error
}

func (p *fakePacer) Reserve(ctx context.Context, origin string, every, maxWait time.Duration) (time.Duration, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reserves = append(p.reserves, fmt.Sprintf("%s every=%v", origin, every))
	if p.err != nil {
		return 0, false, p.err
	}
	return p.wait, p.wait < maxWait, nil
}

func (p *fakePacer) Pause(ctx context.Context, origin string, until time.Time) error {
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
		client := &http.Client{Transport: &Transport{Base: mock, Agent: "ExampleBot", Pacer: p}}
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
			"https://example.com every=-1ns",
			"https://example.com every=3s",
			"https://fast.example every=-1ns",
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
			t.Errorf("waited %v with a failing Pacer, want the 90s left of the pause", d)
		}
	})
}

func mustRegexp(s string) *regexp.Regexp { return regexp.MustCompile(s) }

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// TestPaceKeepsInterval: the in-memory pace follows the Pacer contract. Each
// turn keeps its interval; the next is spaced by the larger of its own and
// the latest turn's; a turn of unknown rules hands the latest interval on,
// one with a known interval of zero does not; a give-back restores the
// interval with the turn.
func TestPaceKeepsInterval(t *testing.T) {
	const s = time.Second
	p := new(pace)
	steps := []struct {
		every, want time.Duration // want: the turn, on the pace's clock
	}{
		{s, 0},                        // first turn, keeps 1s
		{0, s},                        // spaced by the latest's 1s; keeps 0
		{0, s},                        // the latest kept 0
		{2 * s, 3 * s},                // keeps 2s
		{unknownEvery(0), 5 * s},      // spaced by 2s; hands 2s on
		{unknownEvery(0), 7 * s},      // and again
		{unknownEvery(3 * s), 10 * s}, // its own floor, 3s, is larger; keeps 3s
		{0, 13 * s},                   // known, no delay: spaced by 3s, keeps 0
		{unknownEvery(0), 13*s + time.Nanosecond},
	}
	for i, st := range steps {
		wait, ok, _ := p.reserve(0, st.every, time.Hour)
		if !ok || wait != st.want {
			t.Errorf("turn %d (every %v) at %v, %v; want %v", i, st.every, wait, ok, st.want)
		}
	}
	// A give-back of the latest turn restores the interval it replaced.
	q := new(pace)
	q.reserve(0, 2*s, time.Hour)
	_, _, tk := q.reserve(0, 0, time.Hour) // at 2s, keeps 0
	tk.giveBack()
	if wait, _, _ := q.reserve(0, 0, time.Hour); wait != 2*s {
		t.Errorf("turn after a give-back at %v, want 2s: the 2s interval restored", wait)
	}
}

// wantNotYet fails t unless err is a *TurnError for ErrNotYet whose At is
// at, and returns it.
func wantNotYet(t *testing.T, err error, at time.Time) *TurnError {
	t.Helper()
	te, ok := errors.AsType[*TurnError](err)
	if !ok || !errors.Is(err, ErrNotYet) {
		t.Fatalf("err = %v, want a *TurnError for ErrNotYet", err)
	}
	if !te.At.Equal(at) {
		t.Errorf("At = %v, want %v (%v from now)", te.At, at, time.Until(at))
	}
	return te
}

// TestMaxWaitRefusesNow: a request whose turn is further than MaxWait away
// returns at once with the time of the turn, takes no turn, and a retry at
// that time leaves then and not before.
func TestMaxWaitRefusesNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		a := pacedOrigin(mock, "User-agent: *\nCrawl-delay: 10\n")
		tr := &Transport{Base: mock, Agent: "ExampleBot", MaxWait: time.Second}
		client := &http.Client{Transport: tr}
		start := time.Now()
		// robots.txt is fetched at once; the page's turn is 10 s after it.
		wantNotYet(t, get(client, "https://example.com/page0"), start.Add(10*time.Second))
		if d := time.Since(start); d != 0 {
			t.Errorf("refused after %v, want at once", d)
		}
		// The refused request kept no turn: the next one is refused
		// with the same time, not 10 s later.
		te := wantNotYet(t, get(client, "https://example.com/page1"), start.Add(10*time.Second))
		if errors.Is(te, context.DeadlineExceeded) || te.Origin != "https://example.com" {
			t.Errorf("TurnError %+v, want one for https://example.com that is not a deadline's", te)
		}
		// A retry 2 s before At is refused again; one within MaxWait
		// of At waits, and leaves at At.
		time.Sleep(time.Until(te.At) - 2*time.Second)
		wantNotYet(t, get(client, "https://example.com/page0"), te.At)
		time.Sleep(1500 * time.Millisecond)
		wantAllowed(t, client, "https://example.com/page0")
		wantNotYet(t, get(client, "https://example.com/page1"), te.At.Add(10*time.Second))
		a.mu.Lock()
		defer a.mu.Unlock()
		if len(a.times) != 2 || !a.times[0].Equal(start) || !a.times[1].Equal(te.At) {
			t.Errorf("arrivals at %v, want robots.txt at %v and the page at %v", a.times, start, te.At)
		}
		if st := tr.Stats(); st.NotYet != 4 || st.PaceWaits != 1 || st.PaceWait != time.Second/2 {
			t.Errorf("NotYet = %d, PaceWaits = %d, PaceWait = %v; want 4, 1 and 0.5s", st.NotYet, st.PaceWaits, st.PaceWait)
		}
	})
}

// TestMaxWaitWithinWaits: a turn MaxWait away or nearer is waited for, as
// without MaxWait; WithMaxWait sets it for one request either way, and a
// negative MaxWait is zero (wait however long).
func TestMaxWaitWithinWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		a := pacedOrigin(mock, "User-agent: *\nCrawl-delay: 3\n")
		tr := &Transport{Base: mock, Agent: "ExampleBot", MaxWait: 3 * time.Second}
		client := &http.Client{Transport: tr}
		start := time.Now()
		wantAllowed(t, client, "https://example.com/page0") // robots.txt at 0, the page 3 s later: exactly MaxWait
		wantAllowed(t, client, "https://example.com/page1")
		if d := time.Since(start); d != 6*time.Second {
			t.Errorf("took %v, want 6s", d)
		}
		now := time.Now()
		short := WithMaxWait(context.Background(), time.Second)
		wantNotYet(t, getCtx(short, client, "https://example.com/page2"), now.Add(3*time.Second))
		// Two requests that wait whatever MaxWait says: the second's
		// turn is 6 s away.
		long := WithMaxWait(context.Background(), -time.Second)
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() {
				if err := getCtx(long, client, fmt.Sprintf("https://example.com/page%d", 3+i)); err != nil {
					t.Errorf("WithMaxWait(-1s): %v, want sent", err)
				}
			})
		}
		wg.Wait()
		if d := time.Since(now); d != 6*time.Second {
			t.Errorf("took %v, want 6s", d)
		}
		if n := len(a.times); n != 5 {
			t.Errorf("%d arrivals, want 5", n)
		}

		mock2 := newMock()
		pacedOrigin(mock2, "User-agent: *\nCrawl-delay: 3\n")
		neg := &http.Client{Transport: &Transport{Base: mock2, Agent: "ExampleBot", MaxWait: -time.Hour}}
		now = time.Now()
		wantAllowed(t, neg, "https://example.com/page0")
		wantAllowed(t, neg, "https://example.com/page1")
		if d := time.Since(now); d != 6*time.Second {
			t.Errorf("negative MaxWait: took %v, want 6s (it waits)", d)
		}
	})
}

// TestMaxWaitFetchInFlight: a request that needs a fetch of robots.txt still
// in flight after MaxWait is refused then, with At a poll interval away; the
// fetch goes on, and a retry after it is decided by what it found.
func TestMaxWaitFetchInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		var fetches atomic.Int32
		mock.RegisterResponder("GET", exampleRobots, func(req *http.Request) (*http.Response, error) {
			fetches.Add(1)
			time.Sleep(3 * time.Second) // a slow site
			return httpmock.NewStringResponse(200, "User-agent: *\nDisallow: /private\n"), nil
		})
		tr := &Transport{Base: mock, Agent: "ExampleBot", MaxWait: time.Second}
		client := &http.Client{Transport: tr}
		start := time.Now()
		te := wantNotYet(t, get(client, "https://example.com/page"), start.Add(time.Second+fetchPoll))
		if d := time.Since(start); d != time.Second {
			t.Errorf("refused after %v, want MaxWait", d)
		}
		// Those that come back wait for the same fetch.
		time.Sleep(time.Until(te.At))
		now := time.Now()
		wantNotYet(t, get(client, "https://example.com/page"), now.Add(time.Second+fetchPoll))
		wantAllowed(t, client, "https://example.com/page") // at 3 s the fetch ends
		wantRefused(t, client, "https://example.com/private")
		if n := fetches.Load(); n != 1 {
			t.Errorf("robots.txt fetched %d times, want 1", n)
		}
	})
}

// TestMaxWaitFetchWaitsForPause: a fetch of robots.txt that must wait for the
// end of a pause refuses the requests that need it at once, with At when it
// will be sent; the fetch itself waits, and is sent then.
func TestMaxWaitFetchWaitsForPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		var robotsAt []time.Time
		mock.RegisterResponder("GET", exampleRobots, func(req *http.Request) (*http.Response, error) {
			robotsAt = append(robotsAt, time.Now())
			return httpmock.NewStringResponse(200, "User-agent: *\nAllow: /\n"), nil
		})
		mock.RegisterResponder("GET", "https://example.com/busy", httpmock.NewStringResponder(503, "").
			HeaderSet(http.Header{"Retry-After": {"60"}}))
		tr := &Transport{Base: mock, Agent: "ExampleBot", MaxWait: time.Second, TTL: time.Second}
		client := &http.Client{Transport: tr}
		wantAllowed(t, client, "https://example.com/busy") // pauses the origin for 60 s
		paused := time.Now()
		time.Sleep(2 * time.Second) // robots.txt expires
		// The pause holds back the fetch of robots.txt too.
		wantNotYet(t, get(client, "https://example.com/page"), paused.Add(time.Minute))
		ctx, cancel := context.WithTimeout(WithMaxWait(context.Background(), 20*time.Second), 10*time.Second)
		defer cancel()
		te := wantNotYet(t, getCtx(ctx, client, "https://example.com/page"), paused.Add(time.Minute))
		if !errors.Is(te, context.DeadlineExceeded) {
			t.Errorf("%v: want a deadline's TurnError, since the deadline comes before the MaxWait of WithMaxWait", te)
		}
		time.Sleep(time.Until(te.At))
		wantAllowed(t, client, "https://example.com/page")
		if len(robotsAt) != 2 || !robotsAt[1].Equal(te.At) {
			t.Errorf("robots.txt fetched at %v, want again at the pause's end %v", robotsAt, te.At)
		}
	})
}

// TestMaxWaitPause: during a pause, a request is refused with At at its end.
func TestMaxWaitPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		a := pacedOrigin(mock, "User-agent: *\n")
		mock.RegisterResponder("GET", "https://example.com/busy", httpmock.NewStringResponder(429, "").
			HeaderSet(http.Header{"Retry-After": {"30"}}))
		tr := &Transport{Base: mock, Agent: "ExampleBot", MaxWait: time.Second}
		client := &http.Client{Transport: tr}
		wantAllowed(t, client, "https://example.com/busy")
		end := time.Now().Add(30 * time.Second)
		for range 3 {
			wantNotYet(t, get(client, "https://example.com/page"), end)
			time.Sleep(10 * time.Second)
		}
		wantAllowed(t, client, "https://example.com/page")
		a.mu.Lock()
		defer a.mu.Unlock()
		if n := len(a.times); n != 2 || !a.times[1].Equal(end) {
			t.Errorf("arrivals %v, want robots.txt and the page at %v", a.times, end)
		}
	})
}

// TestDeadlineTurnError: without MaxWait, a turn past the deadline is refused
// as before (context.DeadlineExceeded), as a TurnError that says when.
func TestDeadlineTurnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		pacedOrigin(mock, "User-agent: *\nCrawl-delay: 5\n")
		client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}
		wantAllowed(t, client, "https://example.com/page0")
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := getCtx(ctx, client, "https://example.com/page1")
		te := wantNotYet(t, err, time.Now().Add(5*time.Second))
		if !errors.Is(err, context.DeadlineExceeded) || te.Err != context.DeadlineExceeded {
			t.Errorf("err = %v, want it to match context.DeadlineExceeded", err)
		}
	})
}

// TestNextTurn: NextTurn says when a request could leave, fetching robots.txt
// first, and takes no turn.
func TestNextTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		a := pacedOrigin(mock, "User-agent: *\nCrawl-delay: 4\nDisallow: /private\n")
		tr := NewTransport(mock, "ExampleBot")
		client := &http.Client{Transport: tr}
		ctx := context.Background()
		start := time.Now()
		at, err := tr.NextTurn(ctx, mustURL("https://example.com/page"))
		if err != nil || !at.Equal(start.Add(4*time.Second)) {
			t.Errorf("NextTurn = %v, %v; want 4 s after the fetch of robots.txt", at, err)
		}
		if at2, _ := tr.NextTurn(ctx, mustURL("https://example.com/page")); !at2.Equal(at) {
			t.Errorf("NextTurn again = %v, want %v: NextTurn takes no turn", at2, at)
		}
		if _, err := tr.NextTurn(ctx, mustURL("https://example.com/private")); !errors.Is(err, ErrDisallowed) {
			t.Errorf("NextTurn of a disallowed URL: %v, want ErrDisallowed", err)
		}
		wantAllowed(t, client, "https://example.com/page")
		if !time.Now().Equal(at) {
			t.Errorf("sent at %v, want %v", time.Now(), at)
		}
		if at, _ := tr.NextTurn(ctx, mustURL("https://fast.example/")); !at.Equal(time.Now()) {
			t.Errorf("NextTurn of an origin with no delay = %v, want now", at)
		}
		if len(a.times) != 2 {
			t.Errorf("%d requests to example.com, want robots.txt and the page", len(a.times))
		}
	})
}

// BenchmarkNotYetRetry is a frontier that ignores At and retries at once: each
// try is refused, sends nothing, and allocates only its error.
func BenchmarkNotYetRetry(b *testing.B) {
	mock := newMock()
	a := pacedOrigin(mock, "User-agent: *\nCrawl-delay: 30\n")
	tr := &Transport{Base: mock, Agent: "ExampleBot", MaxWait: time.Millisecond}
	req, _ := http.NewRequest("GET", "https://example.com/page", nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, ErrNotYet) {
		b.Fatalf("err = %v, want ErrNotYet", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tr.RoundTrip(req); err == nil {
			b.Fatal("sent")
		}
	}
	b.StopTimer()
	if n := len(a.times); n != 1 {
		b.Fatalf("%d requests sent, want robots.txt only", n)
	}
}

// downWatcher is a Pacer whose Reserve fails (a store in its cooldown) and
// whose copy of the fleet's pauses holds one.
type downWatcher struct{ until time.Time }

func (p *downWatcher) Reserve(context.Context, string, time.Duration, time.Duration) (time.Duration, bool, error) {
	return 0, false, errors.New("pacer down")
}
func (p *downWatcher) Pause(context.Context, string, time.Time) error {
	return errors.New("pacer down")
}
func (p *downWatcher) WatchedPause(string) (time.Time, bool) { return p.until, true }

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

// TestSpacedFromDeparture: the request after a fetch of robots.txt is spaced
// from the fetch's answer, and a request that left after its turn (it woke
// late) spaces the next from when it left.
func TestSpacedFromDeparture(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		var robotsAt time.Time
		mock.RegisterResponder("GET", exampleRobots, func(*http.Request) (*http.Response, error) {
			robotsAt = time.Now()
			time.Sleep(time.Second) // a slow answer
			return httpmock.NewStringResponse(200, "User-agent: *\nCrawl-delay: 2\n"), nil
		})
		var pageAt []time.Time
		mock.RegisterResponder("GET", "https://example.com/page", func(*http.Request) (*http.Response, error) {
			pageAt = append(pageAt, time.Now())
			time.Sleep(500 * time.Millisecond) // a slow page
			return httpmock.NewStringResponse(200, ""), nil
		})
		client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}
		wantAllowed(t, client, "https://example.com/page")
		wantAllowed(t, client, "https://example.com/page")
		if d := pageAt[0].Sub(robotsAt); d != 3*time.Second {
			t.Errorf("the page left %v after robots.txt, want the 1s its answer took and the 2s crawl-delay", d)
		}
		if d := pageAt[1].Sub(pageAt[0]); d != 2500*time.Millisecond {
			t.Errorf("the second page left %v after the first, want the 0.5s its answer took and the 2s crawl-delay", d)
		}
	})

	var p pace
	p.reserve(0, 2*time.Second, time.Hour)
	_, _, tk := p.reserve(0, 2*time.Second, time.Hour) // at 2s
	p.departed(tk.at, 2500*time.Millisecond)           // left at 2.5s
	if wait, _, _ := p.reserve(2500*time.Millisecond, 2*time.Second, time.Hour); wait != 2*time.Second {
		t.Errorf("next turn %v after a request that left late, want 2s after it left", wait)
	}
}
