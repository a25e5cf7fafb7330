package robots

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// arrival is one request that reached a logServer.
type arrival struct {
	at   time.Time
	path string
	// pause is the Retry-After the answer carried, or 0.
	pause time.Duration
}

// logServer is a base transport that stands for the servers of several
// origins: it logs every request that reaches it, by the origin it reaches
// (scheme, host and port as a number, so that two spellings of one port are
// one server), and answers robots.txt and pages as its fields say.
type logServer struct {
	robots func(origin string) string // robots.txt body of an origin
	// page answers a page: its status and Retry-After (0 for none).
	page func(origin, path string) (int, time.Duration)

	// firstFetches exempts from check the fetches of robots.txt that
	// arrive before any other request to their origin: Transports that
	// share a Pacer but no Store each fetch robots.txt on a first visit
	// without knowing its crawl-delay, and until one of them has taken a
	// turn with it, the Pacer does not know it either.
	firstFetches bool

	mu  sync.Mutex
	log map[string][]arrival
}

// serverOf returns the server that u reaches.
func serverOf(u *http.Request) string {
	host, port, err := net.SplitHostPort(u.URL.Host)
	if err != nil {
		host, port = u.URL.Host, map[string]string{"http": "80", "https": "443"}[u.URL.Scheme]
	}
	n, _ := strconv.Atoi(port)
	return fmt.Sprintf("%s://%s:%d", u.URL.Scheme, host, n)
}

func (s *logServer) RoundTrip(req *http.Request) (*http.Response, error) {
	origin := serverOf(req)
	status, body, pause := 200, "page", time.Duration(0)
	if req.URL.Path == "/robots.txt" {
		body = s.robots(origin)
	} else if s.page != nil {
		status, pause = s.page(origin, req.URL.Path)
	}
	s.mu.Lock()
	if s.log == nil {
		s.log = make(map[string][]arrival)
	}
	s.log[origin] = append(s.log[origin], arrival{time.Now(), req.URL.Path, pause})
	s.mu.Unlock()
	h := http.Header{}
	if pause > 0 {
		h.Set("Retry-After", strconv.Itoa(int(pause/time.Second)))
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// check fails t unless the arrivals at each origin are at least delay(origin)
// apart, and none came during a pause that an answer asked for.
func (s *logServer) check(t *testing.T, delay func(origin string) time.Duration) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for origin, as := range s.log {
		d := delay(origin)
		var pausedUntil time.Time
		first := s.firstFetches
		for i, a := range as {
			first = first && a.path == "/robots.txt"
			if i > 0 && !first {
				if gap := a.at.Sub(as[i-1].at); gap < d {
					t.Errorf("%s: %s and %s arrived %v apart, want at least %v", origin, as[i-1].path, a.path, gap, d)
				}
			}
			if a.at.Before(pausedUntil) {
				t.Errorf("%s: %s arrived %v before the end of a pause", origin, a.path, pausedUntil.Sub(a.at))
			}
			if a.pause > 0 {
				pausedUntil = a.at.Add(a.pause)
			}
		}
	}
}

func (s *logServer) count(origin string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.log[origin])
}

// memPacer is a Pacer shared by several Transports, as the processes of a
// fleet share one, kept in memory. It is written from the Pacer contract
// alone, apart from the Transport's own pace, so that a test through it
// does not share the pace's mistakes.
type memPacer struct {
	epoch time.Time
	mu    sync.Mutex
	last  map[string]memTurn       // the latest turn taken
	pause map[string]time.Duration // since epoch: the end of the pause
}

// memTurn is a turn of a memPacer: when, since its epoch, and the interval
// it keeps.
type memTurn struct{ at, every time.Duration }

func (p *memPacer) Reserve(ctx context.Context, origin string, every, maxWait time.Duration) (time.Duration, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Since(p.epoch)
	at := max(now, p.pause[origin])
	ask, keep := every, every
	if every < 0 { // the caller does not know the origin's rules
		ask, keep = -every, -every
	}
	last, ok := p.last[origin]
	if ok {
		at = max(at, last.at+max(ask, last.every))
		if every < 0 {
			keep = max(keep, last.every)
		}
	}
	if wait := at - now; wait > 0 && wait >= maxWait {
		return wait, false, nil
	}
	if p.last == nil {
		p.last = make(map[string]memTurn)
	}
	p.last[origin] = memTurn{at, keep}
	return at - now, true, nil
}

func (p *memPacer) Pause(ctx context.Context, origin string, until time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pause == nil {
		p.pause = make(map[string]time.Duration)
	}
	p.pause[origin] = max(p.pause[origin], until.Sub(p.epoch))
	return nil
}

func (p *memPacer) PausedUntil(ctx context.Context, origin string) (time.Time, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if u, ok := p.pause[origin]; ok {
		return p.epoch.Add(u), nil
	}
	return time.Time{}, nil
}

// TestGiveBackDuringPause: requests queued behind a Retry-After pause, one of
// them refused at once for its deadline, leave one crawl-delay apart.
func TestGiveBackDuringPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &logServer{
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
		// A request that gives its turn (4s) back when a later one (c,
		// 4.5s) was spaced from it: that turn stays taken, since
		// handing it out again would put the next request at c's.
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
		if d := time.Since(start); d != 5500*time.Millisecond {
			t.Errorf("the last request left at %v, want 5.5s (robots.txt at 0, /busy at 0.5s, paused to 2.5s, turns 2.5 to 5.5s but 4s given back twice); arrivals %v", d, srv.log)
		}
	})
}

// TestRobotsTxtFetchTakesItsTurn: a refresh of robots.txt waits a
// crawl-delay after the last page, and for the end of a pause.
func TestRobotsTxtFetchTakesItsTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		busy := false
		srv := &logServer{
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

// TestEvictionKeepsThePace: an origin dropped from a cache of one comes back
// with its pace.
func TestEvictionKeepsThePace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &logServer{robots: func(string) string { return "User-agent: *\nCrawl-delay: 1\n" }}
		tr := &Transport{Base: srv, Agent: "ExampleBot", MaxOrigins: 1}
		client := &http.Client{Transport: tr}
		var wg sync.WaitGroup
		for _, host := range []string{"a.example", "b.example"} {
			wg.Go(func() {
				for i := range 5 {
					get(client, fmt.Sprintf("https://%s/%d", host, i))
				}
			})
		}
		wg.Wait()
		srv.check(t, func(string) time.Duration { return time.Second })
		if tr.Stats().Evictions == 0 {
			t.Error("no eviction: the test does not test what it says")
		}
	})
}

// TestEvictedBeforeLoad: a site evicted between a request's lookup and the
// start of its load is not loaded; the request waits for the origin's
// current site, so that one origin has one load, and one fetch of
// robots.txt, at a time.
func TestEvictedBeforeLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &logServer{robots: func(string) string { return "User-agent: *\nCrawl-delay: 1\n" }}
		tr := &Transport{Base: srv, Agent: "ExampleBot", MaxOrigins: 1}
		client := &http.Client{Transport: tr}
		var wg sync.WaitGroup
		first := true
		tr.onMiss(func(k originKey) {
			if k.host != "c.example" || !first {
				return
			}
			first = false
			// Between the lookup of c and its load: a.example evicts
			// c's site, and another request for c adds a new one.
			if err := get(client, "https://a.example/x"); err != nil {
				t.Errorf("GET a.example: %v", err)
			}
			wg.Go(func() {
				if err := get(client, "https://c.example/y"); err != nil {
					t.Errorf("GET c.example/y: %v", err)
				}
			})
		})
		if err := get(client, "https://c.example/x"); err != nil {
			t.Errorf("GET c.example/x: %v", err)
		}
		wg.Wait()
		srv.check(t, func(string) time.Duration { return time.Second })
		if n := srv.count("https://c.example:443"); n != 3 {
			t.Errorf("%d arrivals at c.example, want robots.txt once and 2 pages: %v", n, srv.log["https://c.example:443"])
		}
	})
}

// TestPortSpellings: a port is a number, and an explicit default port is no
// port: one origin, one robots.txt, one pace.
func TestPortSpellings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &logServer{robots: func(string) string { return "User-agent: *\nCrawl-delay: 2\n" }}
		tr := NewTransport(srv, "ExampleBot")
		client := &http.Client{Transport: tr}
		for _, u := range []string{
			"http://h.example:8080/a", "http://h.example:08080/b", "http://h.example:0008080/c",
			"http://h.example/d", "http://h.example:80/e", "http://h.example:080/f", "http://H.example:0080/g",
		} {
			if err := get(client, u); err != nil {
				t.Errorf("GET %s: %v", u, err)
			}
		}
		srv.check(t, func(string) time.Duration { return 2 * time.Second })
		if got := tr.Stats().FetchSuccess; got != 2 {
			t.Errorf("%d fetches of robots.txt, want 2 (ports 8080 and 80)", got)
		}
	})
	for _, in := range []string{"http://h:65536/", "http://h:99999999999999999999/"} {
		if k, err := keyOf(mustURL(in)); err == nil {
			t.Errorf("keyOf(%s) = %v, want an error", in, k)
		}
	}
}

// TestFleetFetchTakesTheFirstTurn: the Transport that fetches robots.txt for a
// fleet takes the fleet's turn before the others can see the entry.
func TestFleetFetchTakesTheFirstTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &logServer{robots: func(string) string { return "User-agent: *\nCrawl-delay: 1\n" }}
		store := &MemoryStore{}
		pacer := &memPacer{epoch: time.Now()}
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
		srv := &logServer{robots: func(string) string { return "User-agent: *\nCrawl-delay: 1\n" }}
		pacer := &memPacer{epoch: time.Now()}
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
	MemoryStore
	hook func()
	once sync.Once
}

func (s *putHookStore) Put(ctx context.Context, origin string, e *Entry) error {
	err := s.MemoryStore.Put(ctx, origin, e)
	s.once.Do(s.hook)
	return err
}

// TestPacerWaitIsCounted: a Pacer's wait is waited by the Transport, counted
// in Stats, and past the deadline refused at once, the fetch of robots.txt
// included.
func TestPacerWaitIsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &logServer{robots: func(string) string { return "User-agent: *\nCrawl-delay: 2\n" }}
		pacer := &memPacer{epoch: time.Now()}
		store := &MemoryStore{}
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
		if st := tr.Stats(); st.PaceWaits == 0 || st.PaceWait == 0 {
			t.Errorf("Stats = %+v, want the Pacer's waits counted", st)
		}

		// Another process paused the origin for 2s. A Transport that has
		// no robots.txt for it yet waits for the fetch of robots.txt, which
		// waits for the end of the pause: a request with an 800ms
		// deadline fails at once, and the fetch goes on for the others.
		if err := pacer.Pause(context.Background(), "https://example.com", time.Now().Add(2*time.Second)); err != nil {
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
		if st := fresh.Stats(); st.PaceWaits != 1 || st.PaceWait != 2*time.Second {
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
	srv := &logServer{
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
	var store Store
	var pacer Pacer
	switch {
	case nt > 1 && rng.IntN(2) == 0:
		// Transports that share a Pacer but no Store: each fetches
		// robots.txt on its own, not knowing the crawl-delay that the
		// others' turns keep.
		pacer = &memPacer{epoch: time.Now()}
		srv.firstFetches = true
	case nt > 1 || rng.IntN(2) == 0:
		store, pacer = &MemoryStore{}, &memPacer{epoch: time.Now()}
	}
	var clients []*http.Client
	for range nt {
		tr := &Transport{Base: srv, Agent: "ExampleBot", Store: store, Pacer: pacer,
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
