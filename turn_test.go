package robots

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/internal/pacing"

	"github.com/jarcoal/httpmock"
)

// TestGiveBackDuringPause: requests queued behind a Retry-After pause, one of
// them refused at once for its deadline, leave one crawl-delay apart.
func TestGiveBackDuringPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeOrigins{
			robots: func(string) string { return "User-agent: *\nCrawl-delay: 0.5\n" },
			page: func(_, path string) (int, time.Duration) {
				if path == "/busy" {
					return 503, 2 * time.Second
				}
				return 200, 0
			},
		}
		tr := NewTransport(srv, "ExampleBot")
		client := &http.Client{Transport: tr}
		start := time.Now()
		get(client, "https://example.com/busy")
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() { get(client, fmt.Sprintf("https://example.com/a%d", i)) })
		}
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		if err := getCtx(ctx, client, "https://example.com/short"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("short deadline: err = %v, want DeadlineExceeded at once", err)
		}
		cancel()
		// A request that gives its turn back after waiting a while,
		// when it is the latest: the turn (4s) goes to the next request.
		ctx, cancel = context.WithCancel(context.Background())
		wg.Go(func() { getCtx(ctx, client, "https://example.com/late") })
		time.Sleep(time.Second)
		cancel()
		synctest.Wait()
		// A request that gives its turn (4s) back while a later one (c)
		// waits for it: the turn holds the origin, so c was not spaced
		// from it but waits for its answer, and takes the turn given
		// back.
		ctx, cancel = context.WithCancel(context.Background())
		wg.Go(func() { getCtx(ctx, client, "https://example.com/mid") })
		synctest.Wait()
		wg.Go(func() { get(client, "https://example.com/c") })
		synctest.Wait()
		cancel()
		synctest.Wait()
		for i := range 2 {
			wg.Go(func() { get(client, fmt.Sprintf("https://example.com/b%d", i)) })
		}
		wg.Wait()
		srv.check(t, func(string) time.Duration { return 500 * time.Millisecond })
		if n := srv.count("https://example.com:443"); n != 1+1+3+1+2 {
			t.Errorf("%d arrivals, want robots.txt, /busy, 3, c and 2", n)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("the last request left at %v, want 5s (robots.txt at 0, /busy at 0.5s, paused to 2.5s, turns 2.5 to 5s, 4s given back twice and taken again); arrivals %v", d, srv.hits)
		}
	})
}

// TestRobotsTxtFetchTakesItsTurn: a refresh of robots.txt waits a
// crawl-delay after the last page, and for the end of a pause.
func TestRobotsTxtFetchTakesItsTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		busy := false
		srv := &fakeOrigins{
			robots: func(string) string { return "User-agent: *\nCrawl-delay: 1\n" },
			page: func(_, path string) (int, time.Duration) {
				if busy {
					return 503, 3 * time.Second
				}
				return 200, 0
			},
		}
		tr := &Transport{Base: srv, Agent: "ExampleBot", TTL: 1500 * time.Millisecond}
		client := &http.Client{Transport: tr}
		for i := range 4 {
			get(client, fmt.Sprintf("https://example.com/p%d", i))
		}
		busy = true
		get(client, "https://example.com/busy")
		busy = false
		get(client, "https://example.com/after")
		srv.check(t, func(string) time.Duration { return time.Second })
		if got := tr.Stats().FetchSuccess; got < 3 {
			t.Errorf("%d fetches of robots.txt, want refreshes every 1.5s", got)
		}
	})
}

// TestFleetFetchTakesTheFirstTurn: the Transport that fetches robots.txt for a
// fleet takes the fleet's turn before the others can see the entry.
func TestFleetFetchTakesTheFirstTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeOrigins{robots: func(string) string { return "User-agent: *\nCrawl-delay: 1\n" }}
		store := &fleet.MemoryStore{}
		pacer := &pacing.Memory{}
		var wg sync.WaitGroup
		for p := range 3 {
			tr := &Transport{Base: srv, Agent: "ExampleBot", Store: store, Pacer: pacer}
			client := &http.Client{Transport: tr}
			wg.Go(func() {
				for i := range 3 {
					get(client, fmt.Sprintf("https://example.com/%d/%d", p, i))
				}
			})
		}
		wg.Wait()
		srv.check(t, func(string) time.Duration { return time.Second })
		if n := srv.count("https://example.com:443"); n != 10 {
			t.Errorf("%d arrivals, want one robots.txt and 9 pages", n)
		}
	})
	// Another process that reads the entry the moment it is put, while
	// the fetching one still holds the lock, finds the fetch's turn
	// taken: its page leaves a crawl-delay after robots.txt.
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeOrigins{robots: func(string) string { return "User-agent: *\nCrawl-delay: 1\n" }}
		pacer := &pacing.Memory{}
		store := &putHookStore{}
		other := &http.Client{Transport: &Transport{Base: srv, Agent: "ExampleBot", Store: store, Pacer: pacer}}
		store.hook = func() {
			if err := get(other, "https://example.com/other"); err != nil {
				t.Errorf("GET from the other process: %v", err)
			}
		}
		tr := &Transport{Base: srv, Agent: "ExampleBot", Store: store, Pacer: pacer}
		if err := get(&http.Client{Transport: tr}, "https://example.com/page"); err != nil {
			t.Fatal(err)
		}
		srv.check(t, func(string) time.Duration { return time.Second })
		if n := srv.count("https://example.com:443"); n != 3 {
			t.Errorf("%d arrivals, want robots.txt and 2 pages", n)
		}
	})
}

// putHookStore is a MemoryStore that runs hook once, inside the first Put,
// after the entry is stored and before Put returns.
type putHookStore struct {
	fleet.MemoryStore
	hook func()
	once sync.Once
}

func (s *putHookStore) Put(ctx context.Context, origin string, e *fleet.Entry) error {
	err := s.MemoryStore.Put(ctx, origin, e)
	s.once.Do(s.hook)
	return err
}

// TestPacerWaitIsCounted: a Pacer's wait is waited by the Transport, counted
// in Stats, and past the deadline refused at once, the fetch of robots.txt
// included.
func TestPacerWaitIsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeOrigins{robots: func(string) string { return "User-agent: *\nCrawl-delay: 2\n" }}
		pacer := &pacing.Memory{}
		store := &fleet.MemoryStore{}
		other := &Transport{Base: srv, Agent: "ExampleBot", Pacer: pacer, Store: store}
		tr := &Transport{Base: srv, Agent: "ExampleBot", Pacer: pacer, Store: store}
		get(&http.Client{Transport: other}, "https://example.com/x") // fetch at 0, page at 2 s
		ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
		defer cancel()
		start := time.Now()
		if err := getCtx(ctx, &http.Client{Transport: tr}, "https://example.com/y"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want DeadlineExceeded", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("refused after %v, want at once", d)
		}
		synctest.Wait()
		if err := get(&http.Client{Transport: tr}, "https://example.com/z"); err != nil {
			t.Fatal(err)
		}
		if st := tr.Stats(); st.TurnWaits == 0 || st.TurnWaitTime == 0 {
			t.Errorf("Stats = %+v, want the fleet.Pacer's waits counted", st)
		}

		// Another process paused the origin for 2s. A Transport that has
		// no robots.txt for it yet waits for the fetch of robots.txt, which
		// waits for the end of the pause: a request with an 800ms
		// deadline fails at once, and the fetch goes on for the others.
		if err := pacer.Pause(context.Background(), "https://example.com", time.Now().Add(2*time.Second), ReasonRetryAfter); err != nil {
			t.Fatal(err)
		}
		fresh := &Transport{Base: srv, Agent: "ExampleBot", Pacer: pacer}
		ctx, cancel = context.WithTimeout(context.Background(), 800*time.Millisecond)
		defer cancel()
		start = time.Now()
		if err := getCtx(ctx, &http.Client{Transport: fresh}, "https://example.com/w"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("waiting on a fetch past the deadline: err = %v, want DeadlineExceeded", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("waiting on a fetch past the deadline: refused after %v, want at once", d)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if st := fresh.Stats(); st.TurnWaits != 1 || st.TurnWaitTime != 2*time.Second {
			t.Errorf("Stats = %+v, want the fetch's wait of 2s counted", st)
		}
		srv.check(t, func(string) time.Duration { return 2 * time.Second })
	})
}

// TestPolitenessProperty drives random mixes of pauses, deadlines, requests
// abandoned while they wait (which give their turns back), refreshes, evictions, port spellings and Transports sharing a
// Pacer and a Store, and checks that the arrivals at each origin are one
// crawl-delay apart and never inside a pause.
func TestPolitenessProperty(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { politenessRun(t, seed) })
		})
	}
}

func politenessRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	delays := map[string]time.Duration{}
	hosts := []string{"a.example", "b.example", "c.example"}
	for _, h := range hosts {
		delays["http://"+h+":80"] = time.Duration(1+rng.IntN(4)) * 250 * time.Millisecond
	}
	var mu sync.Mutex
	pauseRate := rng.Float64() * 0.3
	srv := &fakeOrigins{
		robots: func(origin string) string {
			return fmt.Sprintf("User-agent: *\nCrawl-delay: %g\nDisallow: /no\n", delays[origin].Seconds())
		},
		page: func(origin, path string) (int, time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			if rng.Float64() < pauseRate {
				return []int{429, 503}[rng.IntN(2)], time.Duration(1+rng.IntN(3)) * time.Second
			}
			return 200, 0
		},
	}
	nt := 1 + rng.IntN(3)
	var store fleet.Store
	var pacer fleet.Pacer
	switch {
	case nt > 1 && rng.IntN(2) == 0:
		// Transports that share a Pacer but no Store: each fetches
		// robots.txt on its own, not knowing the crawl-delay that the
		// others' turns keep.
		pacer = &pacing.Memory{}
		srv.firstFetches = true
	case nt > 1 || rng.IntN(2) == 0:
		store, pacer = &fleet.MemoryStore{}, &pacing.Memory{}
	}
	var clients []*http.Client
	for range nt {
		tr := &Transport{NoDefaultPace: true, Base: srv, Agent: "ExampleBot", Store: store, Pacer: pacer,
			TTL: time.Duration(1+rng.IntN(4)) * time.Second}
		if rng.IntN(2) == 0 {
			tr.MaxOrigins = 1
		}
		clients = append(clients, &http.Client{Transport: tr})
	}
	spell := []string{"", ":80", ":080", ":0080"}
	var wg sync.WaitGroup
	for w := range 2 + rng.IntN(5) {
		mu.Lock()
		c := clients[rng.IntN(len(clients))]
		n := 3 + rng.IntN(6)
		mu.Unlock()
		wg.Go(func() {
			for i := range n {
				mu.Lock()
				u := fmt.Sprintf("http://%s%s/w%d/%d", hosts[rng.IntN(len(hosts))], spell[rng.IntN(len(spell))], w, i)
				// A deadline is refused at once if the turn is past
				// it; a cancellation gives a turn taken back.
				var timeout, abandon time.Duration
				switch rng.IntN(6) {
				case 0, 1:
					timeout = time.Duration(rng.IntN(3000)) * time.Millisecond
				case 2:
					abandon = time.Duration(rng.IntN(3000)) * time.Millisecond
				}
				sleep := time.Duration(rng.IntN(1500)) * time.Millisecond
				mu.Unlock()
				ctx, cancel := context.WithCancel(context.Background())
				if timeout > 0 {
					cancel()
					ctx, cancel = context.WithTimeout(context.Background(), timeout)
				}
				stop := func() bool { return false }
				if abandon > 0 {
					stop = time.AfterFunc(abandon, cancel).Stop
				}
				getCtx(ctx, c, u)
				stop()
				cancel()
				time.Sleep(sleep)
			}
		})
	}
	wg.Wait()
	// Loads that requests gave up on still take their turn and finish.
	time.Sleep(time.Hour)
	srv.check(t, func(origin string) time.Duration { return delays[origin] })
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

// pushback in a test's table: the wait of the back-off's first pause.
const pushback = -1

func TestRetryAfterPauses(t *testing.T) {
	cases := []struct {
		name       string
		status     int
		retryAfter string
		tr         *Transport
		want       time.Duration // wait of the next request; pushback: the least
	}{
		{"503 seconds", 503, "60", &Transport{NoDefaultPace: true}, time.Minute},
		{"429 seconds", 429, "30", &Transport{NoDefaultPace: true}, 30 * time.Second},
		{"429 date", 429, "Sat, 01 Jan 2000 00:02:00 GMT", &Transport{NoDefaultPace: true}, 2 * time.Minute},
		{"an hour, honoured by default", 429, "3600", &Transport{NoDefaultPace: true}, time.Hour},
		{"capped by default", 503, "172800", &Transport{NoDefaultPace: true}, DefaultMaxRetryAfter},
		{"capped", 503, "86400", &Transport{NoDefaultPace: true, MaxRetryAfter: time.Minute}, time.Minute},
		{"ignored: pushback", 503, "600", &Transport{NoDefaultPace: true, IgnoreRetryAfter: true}, pushback},
		{"500 is not a request to wait", 500, "60", &Transport{NoDefaultPace: true}, 0},
		{"no header: pushback", 503, "", &Transport{NoDefaultPace: true}, pushback},
		{"429, no header: pushback", 429, "", &Transport{NoDefaultPace: true}, pushback},
		{"no header, pushback ignored", 429, "", &Transport{NoDefaultPace: true, IgnoreBackoff: true}, 0},
		{"no header, pushback set", 429, "", &Transport{NoDefaultPace: true, Backoff: Backoff{First: 10 * time.Second}}, 10 * time.Second},
		{"zero: pushback", 503, "0", &Transport{NoDefaultPace: true}, pushback},
		{"in the past: pushback", 429, "Fri, 31 Dec 1999 23:00:00 GMT", &Transport{NoDefaultPace: true}, pushback},
		{"malformed: pushback", 503, "soon", &Transport{NoDefaultPace: true}, pushback},
		{"past int64 seconds", 503, "9223372036854775808", &Transport{NoDefaultPace: true}, DefaultMaxRetryAfter},
		{"20 digits", 429, "99999999999999999999", &Transport{NoDefaultPace: true, MaxRetryAfter: time.Minute}, time.Minute},
		{"negative past int64: pushback", 503, "-9223372036854775809", &Transport{NoDefaultPace: true}, pushback},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mock := newMock()
				mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, ""))
				mock.RegisterResponder("GET", "https://example.com/busy", httpmock.NewStringResponder(c.status, "").
					HeaderSet(http.Header{"Retry-After": {c.retryAfter}}))
				tr := &Transport{NoDefaultPace: true, Base: mock, Agent: "ExampleBot", IgnoreRetryAfter: c.tr.IgnoreRetryAfter, MaxRetryAfter: c.tr.MaxRetryAfter,
					IgnoreBackoff: c.tr.IgnoreBackoff, Backoff: c.tr.Backoff}
				client := &http.Client{Transport: tr}
				wantAllowed(t, client, "https://example.com/busy") // the clock starts at 2000-01-01 00:00:00 UTC
				start := time.Now()
				wantAllowed(t, client, "https://example.com/next")
				d := time.Since(start)
				isBackoff := c.want == pushback || c.tr.Backoff.First > 0
				least := c.want
				if c.want == pushback {
					least = DefaultBackoffFirst
				}
				switch {
				case isBackoff && (d < least || d > least+least/10):
					t.Errorf("next request waited %v, want a back-off of %v and up to a tenth more", d, least)
				case !isBackoff && d != c.want:
					t.Errorf("next request waited %v, want %v", d, c.want)
				}
				st := tr.Stats()
				if want := uint64(btoi(c.want > 0 && !isBackoff)); st.Pauses != want {
					t.Errorf("Pauses = %d, want %d", st.Pauses, want)
				}
				if want := uint64(btoi(isBackoff)); st.Backoffs != want {
					t.Errorf("Backoffs = %d, want %d", st.Backoffs, want)
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

// wantNotYet fails t unless err is a *TurnError for ErrNotYet whose At is
// at, and returns it.
func wantNotYet(t *testing.T, err error, at time.Time) *TurnError {
	t.Helper()
	te, ok := errors.AsType[*TurnError](err)
	if !ok || !errors.Is(err, ErrNotYet) {
		t.Fatalf("err = %v, want a *TurnError for ErrNotYet", err)
	}
	if !te.RetryAt.Equal(at) {
		t.Errorf("At = %v, want %v (%v from now)", te.RetryAt, at, time.Until(at))
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
		time.Sleep(time.Until(te.RetryAt) - 2*time.Second)
		wantNotYet(t, get(client, "https://example.com/page0"), te.RetryAt)
		time.Sleep(1500 * time.Millisecond)
		wantAllowed(t, client, "https://example.com/page0")
		wantNotYet(t, get(client, "https://example.com/page1"), te.RetryAt.Add(10*time.Second))
		a.mu.Lock()
		defer a.mu.Unlock()
		if len(a.times) != 2 || !a.times[0].Equal(start) || !a.times[1].Equal(te.RetryAt) {
			t.Errorf("arrivals at %v, want robots.txt at %v and the page at %v", a.times, start, te.RetryAt)
		}
		if st := tr.Stats(); st.NotYet != 4 || st.TurnWaits != 1 || st.TurnWaitTime != time.Second/2 {
			t.Errorf("NotYet = %d, TurnWaits = %d, TurnWaitTime = %v; want 4, 1 and 0.5s", st.NotYet, st.TurnWaits, st.TurnWaitTime)
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
		tr := &Transport{NoDefaultPace: true, Base: mock, Agent: "ExampleBot", MaxWait: time.Second}
		client := &http.Client{Transport: tr}
		start := time.Now()
		te := wantNotYet(t, get(client, "https://example.com/page"), start.Add(time.Second+fetchPoll))
		if d := time.Since(start); d != time.Second {
			t.Errorf("refused after %v, want MaxWait", d)
		}
		// Those that come back wait for the same fetch.
		time.Sleep(time.Until(te.RetryAt))
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
		time.Sleep(time.Until(te.RetryAt))
		wantAllowed(t, client, "https://example.com/page")
		if len(robotsAt) != 2 || !robotsAt[1].Equal(te.RetryAt) {
			t.Errorf("robots.txt fetched at %v, want again at the pause's end %v", robotsAt, te.RetryAt)
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
		tr := noDefaultPace(NewTransport(mock, "ExampleBot"))
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
	tr := &Transport{NoDefaultPace: true, Base: mock, Agent: "ExampleBot", MaxWait: time.Millisecond}
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

	var p pacing.State
	r := pacing.Request{Every: 2 * time.Second, Known: true, MaxWait: time.Hour}
	p.Reserve(0, r)
	tk := p.Reserve(0, r).Turn          // at 2s
	p.Settle(2500*time.Millisecond, tk) // left at 2.5s
	if g := p.Reserve(2500*time.Millisecond, r); g.Wait != 2*time.Second {
		t.Errorf("next turn %v after a request that left late, want 2s after it left", g.Wait)
	}
}

// TestUserRobotsTxtRequestTakesTurnOnFirstVisit guards against this: MinDelay
// is "the least time between two requests to one origin", and the crawler's
// own requests for /robots.txt are sent "in their origin's turn". On an
// origin not yet known, a user's GET /robots.txt takes no turn at all: two of
// them, and the Transport's own fetch of robots.txt after them, leave at the
// same instant.
func TestUserRobotsTxtRequestTakesTurnOnFirstVisit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeOrigins{}
		client := &http.Client{Transport: &Transport{Base: srv, Agent: "ExampleBot", MinDelay: 5 * time.Second}}
		for _, u := range []string{"https://example.com/robots.txt", "https://example.com/robots.txt", "https://example.com/page"} {
			if err := atkGet(context.Background(), client, u, nil); err != nil {
				t.Fatalf("GET %s: %v", u, err)
			}
		}
		if n := srv.minGap(t, "https://example.com:443", 5*time.Second); n != 4 {
			t.Errorf("%d requests reached the origin, want 4", n)
		}
	})
}

// TestRobotsTxtRetryAfterPausesOrigin guards against this: "a 429 or 503
// response whose Retry-After header asks for a wait pauses its origin for
// that long: no request goes to it meanwhile". When the refresh of robots.txt
// answers 503 with Retry-After and a good copy is cached, the copy is obeyed
// (right) but the origin is not paused: pages keep going out during the pause
// the server asked for.
func TestRobotsTxtRetryAfterPausesOrigin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var overloaded atomic.Bool
		var pauseFrom time.Time
		srv := &fakeOrigins{handle: func(req *http.Request) (int, http.Header, string) {
			if req.URL.Path != "/robots.txt" {
				return 200, nil, "page"
			}
			if overloaded.Load() {
				return 503, http.Header{"Retry-After": {"120"}}, ""
			}
			return 200, nil, "User-agent: *\nAllow: /\n"
		}}
		client := &http.Client{Transport: &Transport{Base: srv, Agent: "ExampleBot", TTL: time.Minute}}
		atkGet(context.Background(), client, "https://example.com/a", nil)
		time.Sleep(time.Minute)
		overloaded.Store(true)
		pauseFrom = time.Now()
		// This request makes the refresh; the server says 503, come back
		// in 120 s. Then the page itself, and the next ones, go anyway.
		for i := range 3 {
			atkGet(context.Background(), client, fmt.Sprintf("https://example.com/b%d", i), nil)
			time.Sleep(10 * time.Second)
		}
		srv.mu.Lock()
		defer srv.mu.Unlock()
		for _, h := range srv.hits {
			if !h.at.Before(pauseFrom) && h.uri != "/robots.txt" && h.at.Sub(pauseFrom) < 120*time.Second {
				t.Errorf("%s sent %v after robots.txt answered 503 Retry-After: 120", h.uri, h.at.Sub(pauseFrom))
			}
		}
	})
}

// TestRefreshSpacedByPerRequestAgentDelay guards against this: a robots.txt
// refresh is "a request to its origin like any other", spaced by the
// crawl-delay. With a per-request agent (WithAgent) whose group states a
// crawl-delay that the Transport's own Agent does not have, the refresh is
// spaced by the Transport's Agent's delay (none) and leaves right after a
// page.
func TestRefreshSpacedByPerRequestAgentDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeOrigins{handle: func(req *http.Request) (int, http.Header, string) {
			return 200, nil, "User-agent: slowbot\nCrawl-delay: 10\nAllow: /\n\nUser-agent: *\nAllow: /\n"
		}}
		client := &http.Client{Transport: &Transport{Base: srv, Agent: "FastBot", TTL: time.Minute}}
		ctx := WithAgent(context.Background(), "SlowBot")
		for i := range 9 {
			if err := atkGet(ctx, client, fmt.Sprintf("https://example.com/p%d", i), nil); err != nil {
				t.Fatal(err)
			}
		}
		srv.minGap(t, "https://example.com:443", 10*time.Second)
	})
}

// TestRefreshSpacedByUserAgentDelayInZeroTransport guards against this: the
// same with the zero Transport, whose token comes from each request's
// User-Agent: the robots.txt refresh is spaced by the "*" group's delay, not
// the crawler's.
func TestRefreshSpacedByUserAgentDelayInZeroTransport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeOrigins{handle: func(req *http.Request) (int, http.Header, string) {
			return 200, nil, "User-agent: slowbot\nCrawl-delay: 10\n"
		}}
		client := &http.Client{Transport: &Transport{Base: srv, TTL: time.Minute}}
		hdr := http.Header{"User-Agent": {"SlowBot/2.0"}}
		for i := range 9 {
			if err := atkGet(context.Background(), client, fmt.Sprintf("https://example.com/p%d", i), hdr); err != nil {
				t.Fatal(err)
			}
		}
		srv.minGap(t, "https://example.com:443", 10*time.Second)
	})
}
