package robots

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/jarcoal/httpmock"
)

// hostCounter counts requests by Host header and path.
type hostCounter struct {
	mu sync.Mutex
	n  map[string]int // guarded by mu: "host path" → requests
}

func (c *hostCounter) add(host, path string) {
	c.mu.Lock()
	c.n[host+" "+path]++
	c.mu.Unlock()
}

func (c *hostCounter) get(host, path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[host+" "+path]
}

// TestLoadManyOrigins sends thousands of concurrent requests over hundreds of
// origins whose robots.txt is slow to answer, all to one loopback server
// that tells the origins apart by their Host header. Each origin's
// robots.txt is fetched exactly once, every verdict is right, no disallowed
// request reaches the server, and the memory held afterwards is small.
func TestLoadManyOrigins(t *testing.T) {
	const (
		origins   = 400
		perOrigin = 10 // half /private (disallowed), half /public
		slow      = 100 * time.Millisecond
	)
	counts := &hostCounter{n: map[string]int{}}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		counts.add(r.Host, r.URL.Path)
		if r.URL.Path == "/robots.txt" {
			select {
			case <-time.After(slow):
			case <-r.Context().Done():
				return
			}
			io.WriteString(w, "User-agent: *\nDisallow: /private\n")
			return
		}
		io.WriteString(w, "page")
	}))
	defer ts.Close()
	ts.Config.ErrorLog = quietLog()

	hosts := map[string]string{}
	for i := range origins {
		hosts[fmt.Sprintf("o%d.test:80", i)] = ts.Listener.Addr().String()
	}
	base := loopbackBase(hosts, nil)
	base.MaxConnsPerHost = 2 // bounds the sockets: 2 per origin
	tr := faultTransport(t, base)
	tr.FetchTimeout = 30 * time.Second // slow is not a fault here

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	round := func() {
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, origins*perOrigin)
		for i := range origins {
			for j := range perOrigin {
				path := "/public/" + fmt.Sprint(j)
				if j%2 == 0 {
					path = "/private/" + fmt.Sprint(j)
				}
				u := fmt.Sprintf("http://o%d.test%s", i, path)
				wg.Go(func() {
					<-start
					if err := loadGet(tr, u); err != nil {
						errs <- err
					}
				})
			}
		}
		close(start)
		wg.Wait()
		close(errs)
		n := 0
		for err := range errs {
			if n++; n <= 5 {
				t.Error(err)
			}
		}
		if n > 5 {
			t.Errorf("… and %d more wrong verdicts", n-5)
		}
	}
	round()
	round() // from the cache

	for i := range origins {
		h := fmt.Sprintf("o%d.test", i)
		if n := counts.get(h, "/robots.txt"); n != 1 {
			t.Errorf("%s/robots.txt fetched %d times, want 1", h, n)
		}
		for j := range perOrigin {
			p := fmt.Sprintf("/public/%d", j)
			want := 2
			if j%2 == 0 {
				p, want = fmt.Sprintf("/private/%d", j), 0
			}
			if n := counts.get(h, p); n != want {
				t.Errorf("%s%s reached the server %d times, want %d", h, p, n, want)
			}
		}
	}
	st := tr.Stats()
	const total = 2 * origins * perOrigin
	if st.FetchSuccess != origins || st.CacheHits+st.LoadWaits != total || st.Refused != total/2 {
		t.Errorf("Stats = %+v, want %d fetches, %d requests, %d refused", st, origins, total, total/2)
	}

	base.CloseIdleConnections()
	ts.Close() // its connections' buffers are not the Transport's
	runtime.GC()
	runtime.GC() // and again, to empty the sync.Pools of net/http and io
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d requests over %d origins: %d robots.txt fetches, %d hits, %d misses; heap held afterwards %+d KiB",
		total, origins, st.FetchSuccess, st.CacheHits, st.LoadWaits, held>>10)
	if held > 8<<20 {
		t.Errorf("%d MiB held for %d origins", held>>20, origins)
	}
	runtime.KeepAlive(tr)
}

// loadGet sends GET u through tr and checks its verdict: paths under
// /private are refused by their rule, the others sent.
func loadGet(tr *Transport, u string) error {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := tr.RoundTrip(req)
	private := strings.Contains(u, "/private")
	if err != nil {
		if de, ok := errors.AsType[*DisallowedError](err); private && ok && de.Rule == "Disallow: /private" {
			return nil
		}
		return fmt.Errorf("GET %s: %v", u, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if private {
		return fmt.Errorf("GET %s: sent, want refused", u)
	}
	return nil
}

// cannedBase is an in-process base transport: robots.txt disallows
// /private, and every other request is answered 200 with an empty body.
type cannedBase struct{}

const cannedRobots = "User-agent: *\nDisallow: /private\nAllow: /private/ok\n\nUser-agent: OtherBot\nDisallow: /\n"

func (cannedBase) RoundTrip(req *http.Request) (*http.Response, error) {
	var body io.ReadCloser = http.NoBody
	var n int64
	if req.URL.Path == "/robots.txt" {
		body, n = io.NopCloser(strings.NewReader(cannedRobots)), int64(len(cannedRobots))
	}
	return &http.Response{StatusCode: 200, Body: body, ContentLength: n, Request: req, Header: http.Header{}}, nil
}

// TestLoadMillionOrigins sends one request to each of a million distinct
// origins through an in-process base. The cache stays within MaxOrigins
// (entries counted through Stats, and in the shards), and the heap it holds
// stays bounded by the origins it keeps, not by those it has seen.
func TestLoadMillionOrigins(t *testing.T) {
	longTest(t)
	// A miss costs a fetch, a parse and an eviction: 20-50 µs on two busy
	// cores, and several times that under the race detector. The short
	// and race runs send a tenth as many, still ten times the bound.
	origins := 1_000_000
	if raceEnabled || testing.Short() {
		origins = 100_000
	}
	const bound = DefaultMaxOrigins
	tr := faultTransport(t, &http.Transport{}) // idle base, for the leak check
	tr.Base = cannedBase{}
	tr.FetchTimeout = 30 * time.Second // slow is not a fault here: a loaded machine can stall a fetch past the fault suite's 500 ms

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak uint64

	workers := 4 * runtime.GOMAXPROCS(0)
	const batch = 1 << 14
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	ctx := context.Background()
	for range workers {
		wg.Go(func() {
			for {
				next.Lock()
				lo := i
				i += batch
				next.Unlock()
				if lo >= origins {
					return
				}
				for k := lo; k < min(lo+batch, origins); k++ {
					u := fmt.Sprintf("http://o%d.example/private/x", k)
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
					_, err := tr.RoundTrip(req)
					if de, ok := errors.AsType[*DisallowedError](err); !ok || de.Rule != "Disallow: /private" {
						errs <- fmt.Errorf("GET %s: %v, want refused by Disallow: /private", u, err)
						return
					}
				}
			}
		})
	}
	began := time.Now()
	// Sample the live heap while the work runs.
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapAlloc)
			}
		}
	}()
	wg.Wait()
	elapsed := time.Since(began)
	close(done)
	<-sampled
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	st := tr.Stats()
	kept := st.LoadWaits - st.Evictions // every origin was added once, on a miss
	if st.LoadWaits != uint64(origins) || st.FetchSuccess != uint64(origins) || kept > bound {
		t.Errorf("Stats = %+v: %d origins kept, want %d misses and fetches, at most %d kept", st, kept, origins, bound)
	}
	n := 0
	for i := range tr.cache.shards {
		sh := &tr.cache.shards[i]
		sh.mu.Lock()
		if m := sh.m.Load(); m != nil && len(*m) != len(sh.ring) {
			t.Errorf("shard %d: %d in its map, %d in its ring", i, len(*m), len(sh.ring))
		}
		n += len(sh.ring)
		sh.mu.Unlock()
	}
	// A site evicted before its load began is added again for the same
	// request (one load per origin at a time): that adds an origin with no
	// new miss, so the cache may hold more than Stats' misses less evictions,
	// never fewer.
	if n > bound || uint64(n) < kept {
		t.Errorf("%d origins in the cache, Stats say at most %d, bound %d", n, kept, bound)
	}

	runtime.GC()
	runtime.GC() // twice, to empty the sync.Pools
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d origins in %v", origins, elapsed.Round(time.Millisecond))
	t.Logf("%d origins, %d kept (bound %d): heap held %d KiB (%d B per kept origin), peak live heap %d MiB, %d GCs",
		origins, n, bound, held>>10, held/int64(max(n, 1)), peak>>20, after.NumGC-before.NumGC)
	if held > 64<<20 {
		t.Errorf("%d MiB held by a cache bounded to %d origins", held>>20, bound)
	}

	// An evicted origin is fetched again when it is used again.
	req, _ := http.NewRequest(http.MethodGet, "http://o0.example/private/ok", nil)
	if _, err := tr.RoundTrip(req); err != nil {
		t.Errorf("GET o0.example/private/ok: %v", err)
	}
	if got := tr.Stats().FetchSuccess; got != uint64(origins)+1 {
		t.Errorf("%d fetches after reusing an evicted origin, want %d", got, origins+1)
	}
	runtime.KeepAlive(tr)
}

// TestCacheKeepsRecentOrigins crawls a frontier that moves on: each origin
// gets one page, then a second page after the next 100 origins have had
// their first. With room for 1,000 origins, the second page finds its
// origin cached, but for a few: the cache evicts the sites unused the
// longest, not the ones it has just added. (While the cache first fills,
// the hand's first round finds every older site used, and may take new
// ones.)
func TestCacheKeepsRecentOrigins(t *testing.T) {
	base := &countingBase{fetches: map[string]int{}}
	tr := &Transport{NoDefaultPace: true, Base: base, Agent: "LoadBot", MaxOrigins: 1000}
	get := func(i int) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://o%d.example/private/ok", i), nil)
		if _, err := tr.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
	}
	const origins, lag, warm = 20_000, 100, 2000
	for i := range origins + lag {
		if i < origins {
			get(i)
		}
		if i >= lag {
			get(i - lag)
		}
	}
	again := 0
	for i := warm; i < origins; i++ {
		if base.fetches[fmt.Sprintf("o%d.example", i)] > 1 {
			again++
		}
	}
	// The hand's sweeps are not LRU: allow one in a hundred.
	if again > (origins-warm)/100 {
		t.Errorf("%d of %d origins fetched robots.txt again for their second page: the cache evicted origins it had just added", again, origins-warm)
	}
	t.Logf("%d of %d origins fetched robots.txt again for their second page", again, origins-warm)
}

// countingBase is cannedBase, counting the robots.txt fetches of each host.
type countingBase struct {
	mu      sync.Mutex
	fetches map[string]int
}

func (b *countingBase) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path == "/robots.txt" {
		b.mu.Lock()
		b.fetches[req.URL.Host]++
		b.mu.Unlock()
	}
	return cannedBase{}.RoundTrip(req)
}

// TestCacheKeepsHotOriginUnderMaxBytes: eviction by bytes keeps the origins
// used recently, as eviction by count does. With room for a few dozen
// origins, one origin used every other request among 2,000 used once is
// fetched once, whichever bound evicts.
func TestCacheKeepsHotOriginUnderMaxBytes(t *testing.T) {
	for _, c := range []struct {
		name string
		tr   *Transport
	}{
		{"MaxBytes", &Transport{NoDefaultPace: true, Agent: "LoadBot", MaxBytes: 64 << 10}},
		{"MaxOrigins", &Transport{NoDefaultPace: true, Agent: "LoadBot", MaxOrigins: 64}},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := &countingBase{fetches: map[string]int{}}
			tr := c.tr
			tr.Base = base
			get := func(host string) {
				t.Helper()
				req, _ := http.NewRequest(http.MethodGet, "http://"+host+"/private/ok", nil)
				if _, err := tr.RoundTrip(req); err != nil {
					t.Fatal(err)
				}
			}
			const origins = 2000
			for i := range origins {
				get("hot.example")
				get(fmt.Sprintf("o%d.example", i))
			}
			if n := base.fetches["hot.example"]; n != 1 {
				t.Errorf("the origin used every other request fetched robots.txt %d times, want 1", n)
			}
			if ev := tr.Stats().Evictions; ev < origins-100 {
				t.Errorf("%d evictions, want the cache bounded", ev)
			}
			if held := tr.cache.bytes.Load(); tr.MaxBytes != 0 && held > tr.MaxBytes {
				t.Errorf("the cache holds %d bytes, over MaxBytes", held)
			}
		})
	}
}

func TestMaxOrigins(t *testing.T) {
	mock := newMock()
	for _, h := range []string{"a", "b", "c"} {
		mock.RegisterResponder("GET", "https://"+h+".example/robots.txt", httpmock.NewStringResponder(200, ""))
	}
	tr := &Transport{NoDefaultPace: true, Base: mock, Agent: "ExampleBot", MaxOrigins: 2}
	client := &http.Client{Transport: tr}
	fetches := func(host string) int { return calls(mock, "https://"+host+"/robots.txt") }
	wantAllowed(t, client, "https://a.example/")
	wantAllowed(t, client, "https://b.example/")
	wantAllowed(t, client, "https://a.example/") // a is used again; b is not
	wantAllowed(t, client, "https://c.example/") // evicts b
	wantAllowed(t, client, "https://a.example/")
	wantAllowed(t, client, "https://c.example/")
	if fetches("a.example") != 1 || fetches("c.example") != 1 || fetches("b.example") != 1 {
		t.Errorf("fetches a=%d b=%d c=%d, want 1 each", fetches("a.example"), fetches("b.example"), fetches("c.example"))
	}
	wantAllowed(t, client, "https://b.example/")
	if n := fetches("b.example"); n != 2 {
		t.Errorf("b fetched %d times, want 2 after its eviction", n)
	}
	if s := tr.Stats(); s.Evictions != 2 {
		t.Errorf("Evictions = %d, want 2", s.Evictions)
	}

	// Many origins stay within the bound.
	tr = &Transport{NoDefaultPace: true, Base: mock, Agent: "ExampleBot", MaxOrigins: 1000}
	client = &http.Client{Transport: tr}
	for i := range 5000 {
		wantAllowed(t, client, fmt.Sprintf("https://h%d.example/", i))
	}
	n := 0
	for i := range tr.cache.shards {
		if m := tr.cache.shards[i].m.Load(); m != nil {
			n += len(*m)
		}
	}
	if n > 1000 || n < 900 {
		t.Errorf("%d origins cached, want at most 1000 (and not far below)", n)
	}
}

// TestEvictionKeepsThePace: an origin dropped from a cache of one comes back
// with its pace.
func TestEvictionKeepsThePace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeOrigins{robots: func(string) string { return "User-agent: *\nCrawl-delay: 1\n" }}
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

// TestEvictionKeepsPerAgentPace guards against this: "The pace of a dropped
// origin is kept while it can still hold a request back." Whether it can is
// judged by the Transport's own Agent's crawl-delay; a request decided under
// another token (User-Agent of a zero Transport, or WithAgent) with a longer
// delay loses its pace when MaxOrigins drops the origin.
func TestEvictionKeepsPerAgentPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeOrigins{handle: func(req *http.Request) (int, http.Header, string) {
			if req.URL.Host == "b.example" {
				return 200, nil, "" // no delay: b's requests take no time
			}
			return 200, nil, "User-agent: slowbot\nCrawl-delay: 10\n"
		}}
		tr := &Transport{Base: srv, MaxOrigins: 1}
		client := &http.Client{Transport: tr}
		hdr := http.Header{"User-Agent": {"SlowBot/2.0"}}
		for i := range 3 {
			atkGet(context.Background(), client, fmt.Sprintf("https://a.example/p%d", i), hdr)
			atkGet(context.Background(), client, fmt.Sprintf("https://b.example/p%d", i), hdr)
		}
		if tr.Stats().Evictions == 0 {
			t.Fatal("no eviction: the test does not test what it says")
		}
		srv.minGap(t, "https://a.example:443", 10*time.Second)
	})
}

// TestCachedBodyDropped checks that, without a Store, a cached origin keeps
// only the parsed form of its robots.txt, not the body beside it, and that
// with a Store the entry it is given still has the body.
func TestCachedBodyDropped(t *testing.T) {
	const body = "User-agent: *\nDisallow: /private\n"
	for _, withStore := range []bool{false, true} {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, body))
		tr := noDefaultPace(NewTransport(mock, "ExampleBot"))
		store := &fleet.MemoryStore{}
		if withStore {
			tr.Store = store
		}
		ctx := context.Background()
		u := mustURL("https://example.com/private/x")
		if err := tr.Check(ctx, u); !errors.Is(err, ErrDisallowed) {
			t.Fatalf("store %v: Check = %v, want ErrDisallowed", withStore, err)
		}
		k, _ := keyOf(u)
		st := tr.cache.shard(k).get(k).cur.Load()
		if got := st.entry.Body != nil; got != withStore {
			t.Errorf("store %v: cached entry keeps its body: %v", withStore, got)
		}
		if withStore {
			if e, _ := store.Get(ctx, "https://example.com"); e == nil || string(e.Body) != body {
				t.Errorf("the fleet.Store's entry = %+v, want the body", e)
			}
		}
	}
}

// TestEvictionsHostRoute: origins dropped on the Request.Host route are
// counted too: with MaxOrigins 1, three virtual hosts evict two.
func TestEvictionsHostRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &siteLog{robots: "User-agent: *\nDisallow: /private\n"}
		tr := &Transport{Base: site, Agent: "ExampleBot", MaxOrigins: 1}
		for _, h := range []string{"a.example", "b.example", "c.example"} {
			req, _ := http.NewRequest("GET", "https://203.0.113.7/page", nil)
			req.Host = h
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		if n := tr.Stats().Evictions; n != 2 {
			t.Errorf("Stats.Evictions %d, want 2", n)
		}
	})
}
