package robots

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots/internal/pacing"
)

// farm is a fake set of servers behind many origins: each origin is served
// from an address (addrOf), and a request reports that address to an
// httptrace GotConn hook as net/http's Transport does. It logs, per
// registrable domain and per address, the requests in flight as the
// servers see them: at each arrival, and the most at once.
type farm struct {
	addrOf  func(origin string) netip.Addr
	latency func(origin, path string) time.Duration // nil: none
	// status answers a page; nil for 200
	status func(origin, path string) int
	// onArrive, if set, is called at each arrival with the address's
	// requests in flight, this one included
	onArrive func(a netip.Addr, inFlight int)
	// groupOf, if set, names the group the farm counts an origin in, in
	// place of its registrable domain
	groupOf func(origin string) string

	mu                sync.Mutex
	domFly, domMost   map[string]int
	addrFly, addrMost map[netip.Addr]int
	sent              int // pages answered
	robots            int // robots.txt answered
}

// conn is the connection a farm reports to GotConn.
type conn struct {
	net.Conn
	remote net.Addr
}

func (c conn) RemoteAddr() net.Addr { return c.remote }

func (f *farm) RoundTrip(req *http.Request) (*http.Response, error) {
	origin := req.URL.Scheme + "://" + req.URL.Host
	a := f.addrOf(origin)
	if tr := httptrace.ContextClientTrace(req.Context()); tr != nil && tr.GotConn != nil {
		tr.GotConn(httptrace.GotConnInfo{Conn: conn{remote: net.TCPAddrFromAddrPort(netip.AddrPortFrom(a, 443))}})
	}
	dom := pacing.RegistrableDomain(origin)
	if f.groupOf != nil {
		dom = f.groupOf(origin)
	}
	f.mu.Lock()
	if f.domFly == nil {
		f.domFly, f.domMost = map[string]int{}, map[string]int{}
		f.addrFly, f.addrMost = map[netip.Addr]int{}, map[netip.Addr]int{}
	}
	f.domFly[dom]++
	f.domMost[dom] = max(f.domMost[dom], f.domFly[dom])
	f.addrFly[a]++
	f.addrMost[a] = max(f.addrMost[a], f.addrFly[a])
	n := f.addrFly[a]
	f.mu.Unlock()
	if f.onArrive != nil {
		f.onArrive(a, n)
	}
	if f.latency != nil {
		time.Sleep(f.latency(origin, req.URL.Path))
	}
	status, body := 200, "page"
	if req.URL.Path == "/robots.txt" {
		body = "User-agent: *\nDisallow: /private\n"
	} else if f.status != nil {
		status = f.status(origin, req.URL.Path)
	}
	f.mu.Lock()
	f.domFly[dom]--
	f.addrFly[a]--
	if req.URL.Path == "/robots.txt" {
		f.robots++
	} else {
		f.sent++
	}
	f.mu.Unlock()
	return &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

func (f *farm) most(dom string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.domMost[dom]
}

func (f *farm) mostAt(a netip.Addr) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addrMost[a]
}

func (f *farm) pages() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sent
}

// crawl sends n pages to each origin, one worker per origin, and returns
// the errors.
func crawl(ctx context.Context, c *http.Client, origins []string, n int) []error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, o := range origins {
		wg.Go(func() {
			for i := range n {
				if err := getCtx(ctx, c, fmt.Sprintf("%s/p%d", o, i)); err != nil {
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

var oneAddr = netip.MustParseAddr("192.0.2.1")

// TestDomainCap: 50 origins of one registrable domain, each paced on its
// own, never have more than DefaultDomainCap requests in flight together,
// robots.txt fetches included, and do have that many; 50 sites under
// github.io, a private public suffix, stay apart.
func TestDomainCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Uint32
		site := &farm{
			// each origin on an address of its own: the domain decides
			addrOf:  func(string) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, byte(n.Add(1) >> 8), byte(n.Load())}) },
			latency: func(string, string) time.Duration { return 200 * time.Millisecond },
		}
		tr := NewTransport(site, "ExampleBot")
		c := &http.Client{Transport: tr}
		var shared, apart []string
		for i := range 50 {
			shared = append(shared, fmt.Sprintf("https://s%d.example.co.uk", i))
			apart = append(apart, fmt.Sprintf("https://s%d.github.io", i))
		}
		if errs := crawl(t.Context(), c, append(shared, apart...), 3); len(errs) > 0 {
			t.Fatal(errs[0])
		}
		if got := site.most("example.co.uk"); got != DefaultDomainCap {
			t.Errorf("example.co.uk: at most %d in flight, want %d (the cap, reached)", got, DefaultDomainCap)
		}
		for _, o := range apart[:3] {
			if got := site.most(pacing.RegistrableDomain(o)); got != 1 {
				t.Errorf("%s: at most %d in flight, want 1 (its own pace)", o, got)
			}
		}
		st := tr.Stats()
		if st.DomainCapWaits == 0 {
			t.Errorf("Stats.DomainCapWaits = 0, want the waits counted")
		}
		if st.FetchUnreachable != 0 {
			t.Errorf("%d robots.txt fetches unreachable, want none: waiting for room is no failure", st.FetchUnreachable)
		}
	})
}

// TestDomainCapSettings: DomainCap sets the cap, NoDomainCap turns it off,
// and GroupOf replaces the registrable domain.
func TestDomainCapSettings(t *testing.T) {
	origins := []string{"https://a.example.com", "https://b.example.com", "https://c.example.com", "https://d.example.net"}
	for _, c := range []struct {
		name string
		set  func(*Transport)
		want map[string]int // the most in flight by registrable domain
	}{
		{"cap 2", func(tr *Transport) { tr.DomainCap = 2 }, map[string]int{"example.com": 2, "example.net": 1}},
		{"off", func(tr *Transport) { tr.NoDomainCap = true }, map[string]int{"example.com": 3}},
		{"GroupOf", func(tr *Transport) {
			tr.DomainCap = 1
			tr.GroupOf = groupOfTest
		}, map[string]int{"all": 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				site := &farm{addrOf: func(string) netip.Addr { return oneAddr },
					latency: func(string, string) time.Duration { return 500 * time.Millisecond }}
				if c.name == "GroupOf" {
					site.groupOf = groupOfTest
				}
				tr := NewTransport(site, "ExampleBot")
				c.set(tr)
				if errs := crawl(t.Context(), &http.Client{Transport: tr}, origins, 4); len(errs) > 0 {
					t.Fatal(errs[0])
				}
				for dom, want := range c.want {
					if got := site.most(dom); got != want {
						t.Errorf("%s: at most %d in flight, want %d", dom, got, want)
					}
				}
				if c.name == "GroupOf" {
					// "all" and a's own group
					if doms, _ := tr.turns.GroupsKept(); doms != 2 {
						t.Errorf("%d groups, want 2", doms)
					}
				}
			})
		})
	}
}

// groupOfTest puts a.example.com in a group of its own, and the other
// origins, of two registrable domains, in one group: "all".
func groupOfTest(o string) string {
	if strings.HasPrefix(o, "https://a.") {
		return ""
	}
	return "all"
}

// TestGroupWaitLimits: a request that waits for room in a group under
// MaxWait, or a deadline, is refused with a TurnError for ReasonDomainCap,
// its RetryAt in the future; NextTurn says it is later than now; a fetch
// of robots.txt that waits for room longer than FetchTimeout is not
// unreachable.
func TestGroupWaitLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := make(chan struct{})
		site := &farm{addrOf: func(string) netip.Addr { return oneAddr },
			latency: func(o, p string) time.Duration {
				if p == "/slow" {
					<-hang
				}
				return 10 * time.Millisecond
			}}
		tr := NewTransport(site, "ExampleBot")
		tr.DomainCap = 1
		var logs syncBuffer
		tr.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c := &http.Client{Transport: tr}
		if err := get(c, "https://b.example.com/first"); err != nil { // b's robots.txt is cached
			t.Fatal(err)
		}
		done := make(chan error)
		go func() { done <- get(c, "https://a.example.com/slow") }()
		time.Sleep(2 * time.Second) // a's robots.txt, then /slow in flight
		synctest.Wait()

		ctx := WithMaxWait(t.Context(), 5*time.Second)
		start := time.Now()
		err := getCtx(ctx, c, "https://b.example.com/page")
		var te *TurnError
		if !errors.As(err, &te) || te.Reason != ReasonDomainCap || !te.RetryAt.After(start) || te.Err != nil {
			t.Errorf("under MaxWait: %v, want a TurnError for %q with RetryAt after now", err, ReasonDomainCap)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("refused after %v, want within MaxWait", d)
		}
		dctx, cancel := context.WithTimeout(t.Context(), time.Second)
		err = getCtx(dctx, c, "https://b.example.com/page")
		cancel()
		if !errors.As(err, &te) || te.Reason != ReasonDomainCap || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("under a deadline: %v, want a TurnError for %q matching DeadlineExceeded", err, ReasonDomainCap)
		}
		if rec := logs.String(); !strings.Contains(rec, `msg="robots: waiting for room" origin=https://b.example.com url=https://b.example.com/page reason=domain-cap group=example.com`) {
			t.Errorf("no debug record of the wait for room that names the group; records:\n%s", rec)
		}
		at, err := tr.NextTurn(t.Context(), mustURL("https://b.example.com/page"))
		if err != nil || !at.After(time.Now()) {
			t.Errorf("NextTurn = %v, %v; want later than now", at, err)
		}

		// c's robots.txt waits for room longer than FetchTimeout.
		fetched := make(chan error)
		go func() { fetched <- get(c, "https://c.example.com/page") }()
		time.Sleep(2 * DefaultFetchTimeout)
		close(hang)
		if err := <-done; err != nil {
			t.Error(err)
		}
		if err := <-fetched; err != nil {
			t.Errorf("after waiting for room: %v, want allowed (robots.txt fetched, not unreachable)", err)
		}
		if st := tr.Stats(); st.FetchUnreachable != 0 || st.DomainCapWaits < 3 {
			t.Errorf("FetchUnreachable %d, DomainCapWaits %d; want 0 and the waits counted", st.FetchUnreachable, st.DomainCapWaits)
		}
	})
}

// TestAddressCapAIMD: 200 origins of as many registrable domains on one
// address start at the address cap, grow it while the address answers
// quickly, and halve it on a 429.
func TestAddressCapAIMD(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr *Transport
		var answered atomic.Int64
		var pushAt atomic.Int64 // the page number that gets a 429; 0 for none
		var mu sync.Mutex
		var early []int // in flight and the cap at the first arrivals, and where over the cap
		var halved atomic.Int32
		site := &farm{
			addrOf:  func(string) netip.Addr { return oneAddr },
			latency: func(string, string) time.Duration { return 200 * time.Millisecond },
			status: func(string, string) int {
				if n := answered.Add(1); n == pushAt.Load() {
					return http.StatusTooManyRequests
				}
				return 200
			},
			onArrive: func(a netip.Addr, n int) {
				limit, _, _ := tr.turns.AddressState(a)
				mu.Lock()
				if len(early) < 4 || n > limit && halved.Load() == 0 {
					early = append(early, n, limit)
				}
				mu.Unlock()
			},
		}
		tr = NewTransport(site, "ExampleBot")
		tr.learnThroughAnyBase()
		c := &http.Client{Transport: tr}
		var origins []string
		for i := range 200 {
			origins = append(origins, fmt.Sprintf("https://site%d.example", i))
		}
		// The robots.txt fetches learn the address of each origin: a
		// first request to an origin, its address unknown, is not
		// capped by it.
		var wg sync.WaitGroup
		for _, o := range origins {
			wg.Go(func() {
				if err := tr.Check(t.Context(), mustURL(o+"/")); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		time.Sleep(2 * time.Second)
		mu.Lock()
		early = early[:0]
		mu.Unlock()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		for _, o := range origins {
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					getCtx(ctx, c, fmt.Sprintf("%s/p%d", o, i))
				}
			})
		}
		time.Sleep(500 * time.Millisecond)
		time.Sleep(30 * time.Second)
		mu.Lock()
		for i := 0; i+1 < len(early); i += 2 {
			if i < 8 && early[i+1] != AddressStartForTest {
				t.Errorf("at the first arrivals the cap is %d, want %d", early[i+1], AddressStartForTest)
			}
			if early[i] > early[i+1] {
				t.Errorf("the address saw %d in flight, over its cap %d", early[i], early[i+1])
			}
		}
		mu.Unlock()
		grown, _, ok := tr.turns.AddressState(oneAddr)
		if !ok || grown <= 2*AddressStartForTest || grown > DefaultAddressCap {
			t.Fatalf("after 30 s of quick answers the cap is %d (kept %v), want grown past %d", grown, ok, 2*AddressStartForTest)
		}
		if st := tr.Stats(); st.AddressHalvings != 0 {
			t.Errorf("%d halvings with quick, good answers; want none", st.AddressHalvings)
		}
		pushAt.Store(answered.Load() + 1)
		for tr.Stats().AddressHalvings == 0 {
			time.Sleep(time.Millisecond)
		}
		halved.Store(1)
		after, _, _ := tr.turns.AddressState(oneAddr)
		time.Sleep(time.Second)
		if h := tr.Stats().AddressHalvings; h != 1 {
			t.Errorf("%d halvings after one 429, want 1", h)
		}
		// It grew by at most one or two while the 429 was answered.
		if after > (grown+2)/2 || after < grown/2 {
			t.Errorf("after a 429 the cap is %d, want half of %d", after, grown)
		}
		t.Logf("200 sites on one address, answers in 200 ms: cap %d after 30 s, %d after a 429", grown, after)
		cancel()
		wg.Wait()
		if st := tr.Stats(); st.AddressCapWaits == 0 {
			t.Error("Stats.AddressCapWaits = 0, want the waits counted")
		}
	})
}

// AddressStartForTest is the starting cap of an address.
const AddressStartForTest = pacing.AddressStart

// TestAddressCDN: an address that serves 2,000 sites and answers in 5 ms
// (a CDN's front end) is not starved: its cap grows to what the sites'
// own paces ask, and the crawl sends at least 95% of the pages it sends
// with the address caps off. UncappedPrefixes exempts it altogether.
func TestAddressCDN(t *testing.T) {
	const window = 10 * time.Second
	run := func(sites int, set func(*Transport)) (pages int, st Stats) {
		synctest.Test(t, func(t *testing.T) {
			site := &farm{addrOf: func(string) netip.Addr { return oneAddr },
				latency: func(string, string) time.Duration { return 5 * time.Millisecond }}
			tr := NewTransport(site, "ExampleBot")
			tr.learnThroughAnyBase()
			set(tr)
			c := &http.Client{Transport: tr}
			ctx, cancel := context.WithCancel(t.Context())
			var wg sync.WaitGroup
			for i := range sites {
				wg.Go(func() {
					for j := 0; ctx.Err() == nil; j++ {
						getCtx(ctx, c, fmt.Sprintf("https://s%d.cdn-customer%d.example/p%d", i, i, j))
					}
				})
			}
			time.Sleep(window)
			pages, st = site.pages(), tr.Stats()
			cancel()
			wg.Wait()
		})
		return pages, st
	}
	const sites = 2000
	capped, st := run(sites, func(*Transport) {})
	free, _ := run(sites, func(tr *Transport) { tr.NoAddressCap = true })
	exempt, _ := run(sites, func(tr *Transport) { tr.UncappedPrefixes = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")} })
	t.Logf("%d sites on one address, answers in 5 ms, %v: %d pages capped (%.0f/s), %d with no address cap, %d exempt",
		sites, window, capped, float64(capped)/window.Seconds(), free, exempt)
	if float64(capped) < 0.95*float64(free) {
		t.Errorf("capped: %d pages, want at least 95%% of the %d sent with no address cap", capped, free)
	}
	if float64(exempt) < 0.99*float64(free) {
		t.Errorf("exempt: %d pages, want those sent with no address cap (%d)", exempt, free)
	}
	if st.AddressHalvings != 0 {
		t.Errorf("%d halvings with quick, good answers; want none", st.AddressHalvings)
	}

	// 1,000 sites paced at 50 ms ask for more than the ceiling allows:
	// the cap reaches it, and the crawl keeps DefaultAddressCap in flight.
	fast := func(tr *Transport) { tr.DefaultDelay = 50 * time.Millisecond }
	capped, st = run(1000, fast)
	free, _ = run(1000, func(tr *Transport) { fast(tr); tr.NoAddressCap = true })
	bound := min(free, int(window/(5*time.Millisecond))*DefaultAddressCap)
	t.Logf("1000 sites paced at 50 ms: %d pages capped (%.0f/s), %d with no address cap; the ceiling's bound %d",
		capped, float64(capped)/window.Seconds(), free, bound)
	if float64(capped) < 0.95*float64(bound) {
		t.Errorf("capped: %d pages, want at least 95%% of %d", capped, bound)
	}
	if st.AddressCeilings != 1 || st.AddressHalvings != 0 {
		t.Errorf("the address reached its ceiling %d times, with %d halvings; want 1 and 0", st.AddressCeilings, st.AddressHalvings)
	}
}

// TestGroupsMemoryBounded: 10,000 origins on one address keep one address
// group; origins on addresses that change with every connection
// (round-robin DNS), and 10,000 registrable domains, keep a bounded number
// of groups.
func TestGroupsMemoryBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Uint32
		roundRobin := false
		site := &farm{addrOf: func(string) netip.Addr {
			if roundRobin {
				v := n.Add(1)
				return netip.AddrFrom4([4]byte{10, byte(v >> 16), byte(v >> 8), byte(v)})
			}
			return oneAddr
		}}
		tr := NewTransport(site, "ExampleBot")
		tr.learnThroughAnyBase()
		c := &http.Client{Transport: tr}
		var origins []string
		for i := range 10000 {
			origins = append(origins, fmt.Sprintf("https://o%d.d%d.example", i, i))
		}
		// 100 workers, 100 origins each
		var wg sync.WaitGroup
		for w := range 100 {
			wg.Go(func() {
				for _, o := range origins[w*100 : (w+1)*100] {
					if err := get(c, o+"/p"); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		doms, addrs := tr.turns.GroupsKept()
		if addrs != 1 {
			t.Errorf("10,000 origins on one address: %d address groups, want 1", addrs)
		}
		if doms > 2*4096+200 {
			t.Errorf("10,000 registrable domains: %d domain groups kept, want at most %d", doms, 2*4096+200)
		}
		// Round-robin: every sample, a new address; after AddressTTL,
		// each origin samples again.
		roundRobin = true
		for range 2 {
			time.Sleep(pacing.AddressTTL)
			for w := range 100 {
				wg.Go(func() {
					for _, o := range origins[w*100 : (w+1)*100] {
						if err := get(c, o+"/q"); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		}
		doms, addrs = tr.turns.GroupsKept()
		t.Logf("after 10,000 origins of as many domains, 30,000 requests, 20,000 addresses sampled: %d domain groups, %d address groups kept", doms, addrs)
		if addrs > 2*4096+200 {
			t.Errorf("round-robin addresses: %d address groups kept, want at most %d", addrs, 2*4096+200)
		}
		if addrs < 2 {
			t.Errorf("round-robin addresses: %d address groups kept, want those learned", addrs)
		}
	})
}

// redirector answers http://*/robots.txt with a redirect to the same path
// on https://www.*, and everything else with 200.
type redirector struct{}

func (redirector) RoundTrip(req *http.Request) (*http.Response, error) {
	h := http.Header{}
	if req.URL.Scheme == "http" && req.URL.Path == "/robots.txt" {
		h.Set("Location", "https://www."+req.URL.Host+"/robots.txt")
		return &http.Response{StatusCode: http.StatusMovedPermanently, Header: h, Body: http.NoBody, Request: req}, nil
	}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader("User-agent: *\nDisallow: /x\n")), Request: req}, nil
}

// TestDomainCapRedirect: a fetch of robots.txt redirected to another
// origin of its registrable domain, under a DomainCap of 1, does not wait
// for the room it holds itself.
func TestDomainCapRedirect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := NewTransport(redirector{}, "ExampleBot")
		tr.DomainCap = 1
		c := &http.Client{Transport: tr}
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				if err := get(c, fmt.Sprintf("http://example.com/p%d", i)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if st := tr.Stats(); st.FetchSuccess != 1 {
			t.Errorf("%d fetches of robots.txt succeeded, want 1", st.FetchSuccess)
		}
	})
}

// TestDomainCapWithPacer: through a Pacer, the turns given back for want
// of room are released there, and the cap holds.
func TestDomainCapWithPacer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &farm{addrOf: func(string) netip.Addr { return oneAddr },
			latency: func(string, string) time.Duration { return 300 * time.Millisecond }}
		p := &pacing.Memory{}
		tr := &Transport{Base: site, Agent: "ExampleBot", Pacer: p, DomainCap: 3}
		var origins []string
		for i := range 20 {
			origins = append(origins, fmt.Sprintf("https://s%d.example.org", i))
		}
		if errs := crawl(t.Context(), &http.Client{Transport: tr}, origins, 3); len(errs) > 0 {
			t.Fatal(errs[0])
		}
		if err := tr.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := site.most("example.org"); got != 3 {
			t.Errorf("example.org: at most %d in flight, want 3", got)
		}
		if n := site.pages(); n != 60 {
			t.Errorf("%d pages sent, want 60", n)
		}
	})
}

// TestAddressLearnedFromConnections: through a real *http.Transport, two
// origins on 127.0.0.1 are found to share it; through a proxy, or a Base
// that is not an *http.Transport, no address is learned.
func TestAddressLearnedFromConnections(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "User-agent: *\nDisallow: /x\n") })
	a, b := httptest.NewServer(h), httptest.NewServer(h)
	defer a.Close()
	defer b.Close()
	loop := netip.MustParseAddr("127.0.0.1")

	tr := NewTransport(a.Client().Transport, "ExampleBot")
	tr.DefaultDelay = time.Millisecond
	c := &http.Client{Transport: tr}
	for _, u := range []string{a.URL + "/p", b.URL + "/p"} {
		if err := get(c, u); err != nil {
			t.Fatal(err)
		}
	}
	// (The cap may have halved if the machine stalled an answer.)
	if limit, fly, ok := tr.turns.AddressState(loop); !ok || limit > AddressStartForTest || fly != 0 {
		t.Errorf("127.0.0.1: cap %d, %d in flight, kept %v; want at most %d, 0, true", limit, fly, ok, AddressStartForTest)
	}
	tr.CloseIdleConnections()

	proxied := &http.Transport{Proxy: http.ProxyURL(mustURL(a.URL))} // a answers as a proxy would
	tp := NewTransport(proxied, "ExampleBot")
	tp.DefaultDelay = time.Millisecond
	if err := get(&http.Client{Transport: tp}, "http://far.example/p"); err != nil {
		t.Fatal(err)
	}
	if _, n := tp.turns.GroupsKept(); n != 0 {
		t.Errorf("through a proxy: %d address groups, want none", n)
	}
	proxied.CloseIdleConnections()

	wrapped := NewTransport(rtFunc(a.Client().Transport.RoundTrip), "ExampleBot")
	wrapped.DefaultDelay = time.Millisecond
	for _, u := range []string{a.URL + "/p", b.URL + "/p"} {
		if err := get(&http.Client{Transport: wrapped}, u); err != nil {
			t.Fatal(err)
		}
	}
	if _, n := wrapped.turns.GroupsKept(); n != 0 {
		t.Errorf("through a Base that is not an *http.Transport: %d address groups, want none", n)
	}
	a.Client().Transport.(*http.Transport).CloseIdleConnections()
}

// TestAddressCapRefusal: a request waiting for room at its address under
// MaxWait is refused with a TurnError for ReasonAddressCap.
func TestAddressCapRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := make(chan struct{})
		site := &farm{addrOf: func(string) netip.Addr { return oneAddr },
			latency: func(o, p string) time.Duration {
				if p == "/slow" {
					<-hang
				}
				return 10 * time.Millisecond
			}}
		tr := NewTransport(site, "ExampleBot")
		tr.learnThroughAnyBase()
		tr.NoDomainCap = true
		tr.AddressCap = 1
		c := &http.Client{Transport: tr}
		for _, u := range []string{"https://a.example/first", "https://b.example/first"} {
			if err := get(c, u); err != nil { // robots.txt learns the address
				t.Fatal(err)
			}
		}
		done := make(chan error)
		go func() { done <- get(c, "https://a.example/slow") }()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		err := getCtx(WithMaxWait(t.Context(), time.Second), c, "https://b.example/page")
		var te *TurnError
		if !errors.As(err, &te) || te.Reason != ReasonAddressCap {
			t.Errorf("under MaxWait: %v, want a TurnError for %q", err, ReasonAddressCap)
		}
		close(hang)
		if err := <-done; err != nil {
			t.Error(err)
		}
		if err := get(c, "https://b.example/page"); err != nil {
			t.Errorf("once the address has room: %v", err)
		}
		if st := tr.Stats(); st.AddressCapWaits != 1 {
			t.Errorf("Stats.AddressCapWaits = %d, want 1", st.AddressCapWaits)
		}
	})
}
