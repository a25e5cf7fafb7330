package robots

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/jarcoal/httpmock"
)

// vhostServer is a server on 127.0.0.1 that answers as the site its
// requests' Host names: shop.test disallows /private, moved.test redirects
// its robots.txt to a path of its own that does, and the server's own
// address (127.0.0.1:port) allows everything. It logs each request as
// "host path".
type vhostServer struct {
	*httptest.Server
	mu   sync.Mutex
	hits []string
}

func newVhostServer(t *testing.T) *vhostServer {
	v := &vhostServer{}
	v.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := strings.Cut(r.Host, ":")
		v.mu.Lock()
		v.hits = append(v.hits, host+" "+r.URL.Path)
		v.mu.Unlock()
		switch {
		case host == "moved.test" && r.URL.Path == "/robots.txt":
			http.Redirect(w, r, "/real-robots.txt", http.StatusMovedPermanently)
		case host == "moved.test" && r.URL.Path == "/real-robots.txt",
			host == "shop.test" && r.URL.Path == "/robots.txt":
			io.WriteString(w, "User-agent: *\nDisallow: /private\n")
		case r.URL.Path == "/go-private":
			http.Redirect(w, r, "/private", http.StatusFound)
		case r.URL.Path == "/robots.txt":
			io.WriteString(w, "User-agent: *\nAllow: /\n")
		default:
			io.WriteString(w, "page")
		}
	}))
	t.Cleanup(v.Close)
	return v
}

func (v *vhostServer) sent() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.hits...)
}

func (v *vhostServer) reset() {
	v.mu.Lock()
	v.hits = nil
	v.mu.Unlock()
}

// TestVirtualHost: a request to http://127.0.0.1:port/private with Host
// shop.test is decided by shop.test's robots.txt, fetched from the same
// address with the same Host, and cached, stored and paced under the origin
// http://shop.test:port; the address's own robots.txt decides only the
// requests without a Host of their own.
func TestVirtualHost(t *testing.T) {
	srv := newVhostServer(t)
	u, _ := url.Parse(srv.URL)
	port := u.Port()
	store := &fleet.MemoryStore{}
	tr := &Transport{NoDefaultPace: true, Base: srv.Client().Transport, Agent: "ExampleBot", Store: store}
	get := func(path, host string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Host = host
		return tr.RoundTrip(req)
	}

	for _, host := range []string{"shop.test", "shop.test:" + port, "SHOP.test"} {
		srv.reset()
		resp, err := get("/private", host)
		if err == nil {
			resp.Body.Close()
			t.Errorf("Host %s: /private sent, want refused by shop.test's robots.txt", host)
		} else if !errors.Is(err, ErrDisallowed) {
			t.Errorf("Host %s: %v, want ErrDisallowed", host, err)
		}
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/private", nil)
		req.Host = host
		if err := tr.CheckRequest(req); !errors.Is(err, ErrDisallowed) {
			t.Errorf("Host %s: CheckRequest = %v, want ErrDisallowed", host, err)
		}
		resp, err = get("/public", host)
		if err != nil {
			t.Fatalf("Host %s: /public: %v", host, err)
		}
		resp.Body.Close()
		for _, h := range srv.sent() {
			if !strings.HasPrefix(h, "shop.test ") && !strings.HasPrefix(h, "SHOP.test ") {
				t.Errorf("Host %s: sent %q, want every request as shop.test", host, h)
			}
		}
	}
	if n := tr.Stats().FetchSuccess; n != 1 {
		t.Errorf("%d fetches of robots.txt, want 1: shop.test, shop.test:%s and SHOP.test are one origin", n, port)
	}
	if e, _ := store.Get(context.Background(), "http://shop.test:"+port); e == nil || !strings.Contains(string(e.Body), "Disallow: /private") {
		t.Errorf("the fleet.Store's entry of http://shop.test:%s = %+v, want shop.test's robots.txt", port, e)
	}

	// The address itself, with no Host of its own, is another origin.
	resp, err := get("/private", "")
	if err != nil {
		t.Fatalf("no Host: %v, want allowed by 127.0.0.1's robots.txt", err)
	}
	resp.Body.Close()
	if e, _ := store.Get(context.Background(), "http://127.0.0.1:"+port); e == nil {
		t.Error("no fleet.Store entry for the address's own origin")
	}

	// A request for /robots.txt itself is sent as it is, with its Host.
	srv.reset()
	resp, err = get("/robots.txt", "shop.test")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := srv.sent(); len(got) != 1 || got[0] != "shop.test /robots.txt" {
		t.Errorf("sent %q, want shop.test's robots.txt", got)
	}

	// A robots.txt redirected to a path of the same site is fetched with
	// the same Host.
	srv.reset()
	if resp, err := get("/private", "moved.test"); err == nil {
		resp.Body.Close()
		t.Error("Host moved.test: /private sent, want refused by its redirected robots.txt")
	}
	want := []string{"moved.test /robots.txt", "moved.test /real-robots.txt"}
	if got := srv.sent(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("sent %q, want %q", got, want)
	}

	// A redirect that http.Client follows keeps the Host, and is decided
	// by it.
	srv.reset()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/go-private", nil)
	req.Host = "shop.test"
	if resp, err := (&http.Client{Transport: tr}).Do(req); !errors.Is(err, ErrDisallowed) {
		if err == nil {
			resp.Body.Close()
		}
		t.Errorf("redirected to /private: %v, want ErrDisallowed", err)
	}
	if got := srv.sent(); len(got) != 1 || got[0] != "shop.test /go-private" {
		t.Errorf("sent %q, want /go-private only", got)
	}

	// An invalid Host fails, as net/http would refuse to send it.
	if _, err := get("/page", "shop.test:x"); err == nil || errors.Is(err, ErrDisallowed) {
		t.Errorf("Host shop.test:x: %v, want an error", err)
	}
}

// TestVirtualHostDoesNotAllocate: a request whose Host is its URL's host,
// or empty, stays on the hot path without allocations.
func TestVirtualHostDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are counted without the race detector")
	}
	base := benchBase{page: &http.Response{StatusCode: 200, Body: http.NoBody}}
	tr := noDefaultPace(NewTransport(base, "ExampleBot"))
	for _, host := range []string{"", "example.com"} {
		req, _ := http.NewRequest("GET", "https://example.com/page", nil)
		req.Header.Set("User-Agent", "ExampleBot/1.0")
		req.Host = host
		tr.RoundTrip(req)
		if n := testing.AllocsPerRun(100, func() { tr.RoundTrip(req) }); n != 0 {
			t.Errorf("Host %q: %v allocations per allowed request, want 0", host, n)
		}
	}
}

// TestVirtualHostPace: the pace belongs to the authority: requests with Host
// shop.test are spaced by shop.test's crawl-delay, whichever address they
// are sent to, and the address's own origin is paced apart. The Pacer names
// the authority.
func TestVirtualHostPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		sent := map[string][]time.Time{}
		base := rtFunc(func(req *http.Request) (*http.Response, error) {
			host := req.Host
			if host == "" {
				host = req.URL.Host
			}
			mu.Lock()
			sent[host] = append(sent[host], time.Now())
			mu.Unlock()
			body := "User-agent: *\nAllow: /\n"
			if host == "shop.test" {
				body = "User-agent: *\nCrawl-delay: 5\n"
			}
			return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}, nil
		})
		pacer := &namingPacer{}
		tr := &Transport{Base: base, Agent: "ExampleBot", Pacer: pacer}
		for i, addr := range []string{"10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.1:8080"} {
			req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/page", nil)
			req.Host = "shop.test"
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			resp.Body.Close()
			req, _ = http.NewRequest(http.MethodGet, "http://"+addr+"/page", nil)
			if resp, err = tr.RoundTrip(req); err != nil {
				t.Fatalf("request %d to %s itself: %v", i, addr, err)
			}
			resp.Body.Close()
		}
		mu.Lock()
		defer mu.Unlock()
		shop := sent["shop.test"]
		if len(shop) != 4 { // robots.txt and three pages
			t.Fatalf("shop.test got %d requests, want 4", len(shop))
		}
		for i := 1; i < len(shop); i++ {
			if gap := shop[i].Sub(shop[i-1]); gap < 5*time.Second {
				t.Errorf("shop.test requests %d and %d %v apart, want its crawl-delay, 5s", i-1, i, gap)
			}
		}
		for _, name := range pacer.names() {
			if name != "http://shop.test:8080" && name != "http://10.0.0.1:8080" && name != "http://10.0.0.2:8080" {
				t.Errorf("the fleet.Pacer was asked about %q", name)
			}
		}
		if !slices.Contains(pacer.names(), "http://shop.test:8080") {
			t.Errorf("the fleet.Pacer was asked about %q, want http://shop.test:8080 among them", pacer.names())
		}
	})
}

// namingPacer is a Pacer that paces nothing and records the origins it is
// asked about.
type namingPacer struct {
	noHold
	mu  sync.Mutex
	got []string
}

func (p *namingPacer) Reserve(_ context.Context, origin string, _ fleet.TurnRequest) (fleet.Turn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, origin)
	return fleet.Turn{OK: true}, errors.New("namingPacer: pace in memory")
}

func (p *namingPacer) Pause(context.Context, string, time.Time, string) error { return nil }

func (p *namingPacer) names() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.got)
}

func TestInvalidHost(t *testing.T) {
	mock := newMock()
	client := &http.Client{Transport: noDefaultPace(NewTransport(mock, "ExampleBot"))}
	err := get(client, "https://a\uFFFDb.example/x")
	if err == nil || errors.Is(err, ErrDisallowed) || !strings.Contains(err.Error(), "robots: invalid host") {
		t.Errorf("err = %v, want an invalid host error", err)
	}
	if n := mock.GetTotalCallCount(); n != 0 {
		t.Errorf("%d requests sent, want 0", n)
	}
}

func TestOrigins(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", "http://www.xn--exmple-cua.com/robots.txt", httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /idn\n"))
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /tls\n"))
	mock.RegisterResponder("GET", "http://example.com/robots.txt", httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /plain\n"))
	mock.RegisterResponder("GET", "https://example.com:8443/robots.txt", httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /port\n"))
	mock.RegisterResponder("GET", "http://127.0.0.1/robots.txt", httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /v4\n"))
	mock.RegisterResponder("GET", "http://[::1]:8080/robots.txt", httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /v6\n"))
	mock.RegisterResponder("GET", "https://shop.example.com/robots.txt", httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /shop\n"))
	client := &http.Client{Transport: noDefaultPace(NewTransport(mock, "ExampleBot"))}

	for _, c := range []struct {
		url     string
		allowed bool
	}{
		{"http://www.exämple.com/idn", false},
		{"http://WWW.EXÄMPLE.COM/idn", false},
		{"http://www.xn--exmple-cua.com/idn", false},
		{"http://www.xn--exmple-cua.com:80/idn", false},
		{"http://www.exämple.com/tls", true},
		{"https://example.com/tls", false},
		{"https://EXAMPLE.com:443/tls", false},
		{"HTTPS://example.com/tls", false},
		{"https://example.com/plain", true},
		{"http://example.com/plain", false},
		{"http://example.com:80/plain", false},
		{"http://example.com/tls", true},
		{"https://example.com:8443/port", false},
		{"https://example.com:8443/tls", true},
		{"http://127.0.0.1/v4", false},
		{"http://127.0.0.1:80/v4", false},
		{"http://127.0.0.1/plain", true},
		{"http://[::1]:8080/v6", false},
		{"http://[::1]:8080/v4", true},
		{"https://shop.example.com/shop", false},
		{"https://shop.example.com/tls", true},
	} {
		err := get(client, c.url)
		if got := err == nil; got != c.allowed {
			t.Errorf("GET %s: %v, want allowed=%v", c.url, err, c.allowed)
		}
	}
	for _, u := range []string{
		"http://www.xn--exmple-cua.com/robots.txt", exampleRobots, "http://example.com/robots.txt",
		"https://example.com:8443/robots.txt", "http://127.0.0.1/robots.txt", "http://[::1]:8080/robots.txt",
	} {
		if n := calls(mock, u); n != 1 {
			t.Errorf("%s fetched %d times, want 1", u, n)
		}
	}
}

func TestOriginKey(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://example.com/x", "https://example.com"},
		{"https://Example.COM:443/x", "https://example.com"},
		{"https://example.com:/x", "https://example.com"},
		{"http://example.com:443/x", "http://example.com:443"},
		{"ftp://example.com:21/x", "ftp://example.com"},
		{"http://www.exämple.com/", "http://www.xn--exmple-cua.com"},
		{"http://www.exämple.com:8080/", "http://www.xn--exmple-cua.com:8080"},
		{"http://[::1]/", "http://[::1]"},
		{"http://[::1]:80/", "http://[::1]"},
		{"http://[2001:DB8::1]:8080/", "http://[2001:db8::1]:8080"},
		{"http://user:pass@example.com/", "http://example.com"},
		{"http://[fe80::1%25en0]:8080/", "http://[fe80::1%25en0]:8080"},
	} {
		u, err := url.Parse(c.in)
		if err != nil {
			t.Fatal(err)
		}
		k, err := keyOf(u)
		if err != nil || k.String() != c.want {
			t.Errorf("keyOf(%s) = %s, %v; want %s", c.in, k, err, c.want)
		}
	}
	// An IPv6 zone that url.Parse takes but no origin string can name
	// again: raw non-ASCII bytes, a space, a sub-delim.
	for _, in := range []string{"/relative", "http:///path", "http://a\uFFFDb.example/",
		"http://[::%25\x96]/", "https://[fe80::1%25\xc3\xa4]:8080/", "http://[::%25a%20b]/", "http://[::%25a!b]/"} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if k, err := keyOf(u); err == nil {
			t.Errorf("keyOf(%s) = %s, want an error", in, k)
		}
	}
	// A URL built by hand may hold a host url.Parse would refuse.
	if k, err := keyOf(&url.URL{Scheme: "http", Host: "x::", Path: "/"}); err == nil {
		t.Errorf("keyOf(host x::) = %s, want an error", k)
	}
}

// TestIPv6SpellingsAreOneOrigin guards against this: "An origin is a scheme,
// host and port", and the README says spellings are folded into one origin.
// [::1] and [0:0:0:0:0:0:0:1] are one host (the URL standard serialises IPv6
// hosts canonically), but get two robots.txt fetches and two paces.
func TestIPv6SpellingsAreOneOrigin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeOrigins{handle: func(req *http.Request) (int, http.Header, string) {
			return 200, nil, "User-agent: *\nCrawl-delay: 5\n"
		}}
		tr := NewTransport(srv, "ExampleBot")
		client := &http.Client{Transport: tr}
		for _, u := range []string{"http://[::1]:8080/a", "http://[0:0:0:0:0:0:0:1]:8080/b", "http://[0::0001]:8080/c"} {
			if err := atkGet(context.Background(), client, u, nil); err != nil {
				t.Fatalf("GET %s: %v", u, err)
			}
		}
		if n := tr.Stats().FetchSuccess; n != 1 {
			t.Errorf("%d fetches of robots.txt for one host, want 1", n)
		}
		// Compare by address, as the server sees it.
		srv.mu.Lock()
		var times []time.Time
		for _, h := range srv.hits {
			times = append(times, h.at)
		}
		srv.mu.Unlock()
		for i := 1; i < len(times); i++ {
			if d := times[i].Sub(times[i-1]); d < 5*time.Second {
				t.Errorf("requests %d and %d to [::1]:8080 only %v apart, want 5s", i-1, i, d)
			}
		}
	})
}

// TestPortSpellings: a port is a number, and an explicit default port is no
// port: one origin, one robots.txt, one pace.
func TestPortSpellings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeOrigins{robots: func(string) string { return "User-agent: *\nCrawl-delay: 2\n" }}
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

// FuzzOriginKey checks the origin key of URLs with arbitrary schemes and
// hosts: no panic; a key is lower-case ASCII and non-empty; and the origin a
// key names, parsed again, has that key, so that a Store's origin strings
// round-trip.
func FuzzOriginKey(f *testing.F) {
	for _, s := range []struct{ scheme, host string }{
		{"https", "example.com"}, {"HTTPS", "Example.COM:443"}, {"http", "example.com:80"},
		{"http", "example.com:8080"}, {"https", "www.exämple.com"}, {"https", "WWW.XN--EXMPLE-CUA.COM"},
		{"http", "[::1]:80"}, {"http", "[::1]"}, {"http", "[fe80::1%25en0]:8080"}, {"ftp", "x:21"},
		{"http", ":80"}, {"http", "[]"}, {"https", "ä:"}, {"https", "xn--"}, {"http", "a..b"},
		{"https", "ÄÖÜ.example:8443"}, {"http", "x::"}, {"http", "\u200d.example"}, {"http", "ß.example"},
	} {
		f.Add(s.scheme, s.host)
	}
	f.Fuzz(func(t *testing.T, scheme, host string) {
		// Requests carry parsed URLs: keyOf sees the hosts url.Parse
		// accepts.
		in, err := url.Parse(scheme + "://" + host + "/")
		if err != nil || in.Scheme == "" || in.Opaque != "" {
			return
		}
		k, err := keyOf(in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "robots: ") {
				t.Fatalf("error %q without the package prefix", err)
			}
			return
		}
		if k.host == "" || k.scheme == "" || !isASCII(k.host) || hasUpper(k.host) || hasUpper(k.scheme) {
			t.Fatalf("keyOf(%q, %q) = %q", scheme, host, k)
		}
		u, err := url.Parse(k.String() + "/robots.txt")
		if err != nil || u.Host == "" || u.Scheme != k.scheme {
			return // not a URL: its fetch fails, and the origin is refused
		}
		// A degenerate host ("::") may name no origin once written out;
		// its fetch then fails and the origin is refused. Any other must
		// name the same origin again.
		if k2, err := keyOf(u); err == nil && k2 != k {
			t.Fatalf("keyOf(%q, %q) = %q, but the key of %q is %q (%v)", scheme, host, k, u, k2, err)
		}
	})
}

// TestOriginOf: OriginOf gives the name the Transport gives an origin,
// whatever the spelling of its URL, and a request's Host names the origin
// its URL would with that host.
func TestOriginOf(t *testing.T) {
	base := rtFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 404, Body: http.NoBody, Request: req}, nil
	})
	tr := &Transport{Base: base, Agent: "ExampleBot"}
	for _, c := range []struct{ url, host, want string }{
		{"http://bücher.example/a", "", "http://xn--bcher-kva.example"},
		{"http://BÜCHER.Example:8080/a", "", "http://xn--bcher-kva.example:8080"},
		{"http://xn--bcher-kva.example/", "", "http://xn--bcher-kva.example"},
		{"HTTP://Example.COM/a?q#f", "", "http://example.com"},
		{"http://user:pw@example.com/", "", "http://example.com"},
		{"http://example.com:80/", "", "http://example.com"},
		{"http://example.com:080/", "", "http://example.com"},
		{"http://example.com:0080/", "", "http://example.com"},
		{"http://example.com:/", "", "http://example.com"},
		{"https://example.com:443/", "", "https://example.com"},
		{"https://example.com:80/", "", "https://example.com:80"},
		{"http://example.com:08080/", "", "http://example.com:8080"},
		{"http://[0:0::1]/", "", "http://[::1]"},
		{"http://[0:0:0:0:0:0:0:1]:80/", "", "http://[::1]"},
		{"http://[2001:DB8::0:1]:8443/", "", "http://[2001:db8::1]:8443"},
		{"http://[fe80::1%25en0]/", "", "http://[fe80::1%25en0]"},
		{"http://example.com./", "", "http://example.com."},
		{"http://Bücher.Example.:81/", "", "http://xn--bcher-kva.example.:81"},
		// The Request.Host route: the origin is the Host's, with the
		// URL's scheme, and the URL's port if the Host has none.
		{"http://10.0.0.1/p", "shop.test", "http://shop.test"},
		{"http://10.0.0.1:8080/p", "Shop.Test", "http://shop.test:8080"},
		{"http://10.0.0.1:8080/p", "shop.test:080", "http://shop.test"},
		{"https://10.0.0.1/p", "bücher.example", "https://xn--bcher-kva.example"},
		{"http://[::1]:81/p", "[0::1]", "http://[::1]:81"},
		{"http://example.com/p", "EXAMPLE.com:80", "http://example.com"},
	} {
		u := mustURL(c.url)
		if c.host == "" {
			got, err := OriginOf(u)
			if got != c.want || err != nil {
				t.Errorf("OriginOf(%s) = %q, %v; want %q", c.url, got, err, c.want)
			}
			o, err := tr.Origin(context.Background(), u)
			if err != nil || o.Name != got {
				t.Errorf("the Transport names %s %v (%v), OriginOf %q", c.url, o, err, got)
			}
			continue
		}
		k, _, err := authorityOf(u, c.host)
		if err != nil || k.String() != c.want {
			t.Errorf("the Transport names %s with Host %s %q, %v; want %q", c.url, c.host, k, err, c.want)
		}
		a := &url.URL{Scheme: u.Scheme, Host: c.host}
		if a.Port() == "" && u.Port() != "" {
			a.Host += ":" + u.Port()
		}
		if got, err := OriginOf(a); got != c.want || err != nil {
			t.Errorf("OriginOf(%s with Host %s) = %q, %v; want %q", c.url, c.host, got, err, c.want)
		}
	}
	u := mustURL("https://www.example.com:8443/a?q")
	if n := testing.AllocsPerRun(100, func() { OriginOf(u) }); n > 1 {
		t.Errorf("OriginOf allocates %v times, want 1 (its string)", n)
	}
	for _, u := range []*url.URL{{Path: "/a"}, {Scheme: "http", Path: "/a"}, mustURL("http://:80/"),
		mustURL("http://h:65536/"), mustURL("http://[::%25a!b]/"), {Scheme: "http", Host: "x::"}} {
		if got, err := OriginOf(u); err == nil || got != "" || !strings.HasPrefix(err.Error(), "robots: ") {
			t.Errorf("OriginOf(%s) = %q, %v; want a robots: error", u, got, err)
		}
	}
}
