package robots

// Adversarial tests: each one that fails shows a promise of the package
// (README, doc comments) that does not hold. Tests marked "regression guard"
// pass today and pin down a promise that is easy to break.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// atkHit is one request that reached an atkServer.
type atkHit struct {
	at     time.Time
	server string // scheme://host:port, the port as a number
	uri    string // the request-URI as it goes on the wire
	ua     string
}

// atkServer is a base transport standing for the servers of every origin. It
// logs each request, by the server it reaches, and answers with handle.
type atkServer struct {
	handle func(req *http.Request) (status int, hdr http.Header, body string)

	mu   sync.Mutex
	hits []atkHit
}

func atkServerOf(req *http.Request) string {
	host, port, err := net.SplitHostPort(req.URL.Host)
	if err != nil {
		host, port = req.URL.Host, map[string]string{"http": "80", "https": "443"}[req.URL.Scheme]
	}
	n, _ := strconv.Atoi(port)
	return fmt.Sprintf("%s://%s:%d", req.URL.Scheme, strings.ToLower(host), n)
}

func (s *atkServer) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.hits = append(s.hits, atkHit{time.Now(), atkServerOf(req), req.URL.RequestURI(), req.Header.Get("User-Agent")})
	s.mu.Unlock()
	status, hdr, body := 200, http.Header{}, "page"
	if s.handle != nil {
		status, hdr, body = s.handle(req)
		if hdr == nil {
			hdr = http.Header{}
		}
	}
	return &http.Response{StatusCode: status, Header: hdr, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: req}, nil
}

// minGap fails t unless the requests that reached each server are at least
// delay apart, and returns how many reached server.
func (s *atkServer) minGap(t *testing.T, server string, delay time.Duration) int {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var prev *atkHit
	n := 0
	for i := range s.hits {
		h := &s.hits[i]
		if h.server != server {
			continue
		}
		n++
		if prev != nil && h.at.Sub(prev.at) < delay {
			t.Errorf("%s: %s then %s only %v apart, want at least %v", server, prev.uri, h.uri, h.at.Sub(prev.at), delay)
		}
		prev = h
	}
	return n
}

func atkGet(ctx context.Context, c *http.Client, u string, hdr http.Header) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// atkPacer is a correct Pacer kept in memory that can be made to fail.
type atkPacer struct {
	epoch time.Time
	down  atomic.Bool
	mu    sync.Mutex
	paces map[string]*pace
}

func (p *atkPacer) pace(origin string) *pace {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paces == nil {
		p.paces = map[string]*pace{}
	}
	if p.paces[origin] == nil {
		p.paces[origin] = new(pace)
	}
	return p.paces[origin]
}

func (p *atkPacer) Reserve(ctx context.Context, origin string, every, maxWait time.Duration) (time.Duration, bool, error) {
	if p.down.Load() {
		return 0, false, errors.New("pacer down")
	}
	wait, ok, _ := p.pace(origin).reserve(time.Since(p.epoch), every, maxWait)
	return wait, ok, nil
}

func (p *atkPacer) Pause(ctx context.Context, origin string, until time.Time) error {
	if p.down.Load() {
		return errors.New("pacer down")
	}
	p.pace(origin).pause(until.Sub(p.epoch))
	return nil
}

// TestAttackUserRobotsTxtFirstVisitUnpaced: MinDelay is "the least time
// between two requests to one origin", and the crawler's own requests for
// /robots.txt are sent "in their origin's turn". On an origin not yet known,
// a user's GET /robots.txt takes no turn at all: two of them, and the
// Transport's own fetch of robots.txt after them, leave at the same instant.
func TestAttackUserRobotsTxtFirstVisitUnpaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &atkServer{}
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

// TestAttackRobotsTxtRetryAfterIgnored: "a 429 or 503 response whose
// Retry-After header asks for a wait pauses its origin for that long: no
// request goes to it meanwhile". When the refresh of robots.txt answers 503
// with Retry-After and a good copy is cached, the copy is obeyed (right) but
// the origin is not paused: pages keep going out during the pause the server
// asked for.
func TestAttackRobotsTxtRetryAfterIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var overloaded atomic.Bool
		var pauseFrom time.Time
		srv := &atkServer{handle: func(req *http.Request) (int, http.Header, string) {
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

// TestAttackRefreshIgnoresPerAgentCrawlDelay: a robots.txt refresh is "a
// request to its origin like any other", spaced by the crawl-delay. With a
// per-request agent (WithAgent) whose group states a crawl-delay that the
// Transport's own Agent does not have, the refresh is spaced by the
// Transport's Agent's delay (none) and leaves right after a page.
func TestAttackRefreshIgnoresPerAgentCrawlDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &atkServer{handle: func(req *http.Request) (int, http.Header, string) {
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

// TestAttackZeroTransportRefreshIgnoresUserAgentCrawlDelay: the same with the
// zero Transport, whose token comes from each request's User-Agent: the
// robots.txt refresh is spaced by the "*" group's delay, not the crawler's.
func TestAttackZeroTransportRefreshIgnoresUserAgentCrawlDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &atkServer{handle: func(req *http.Request) (int, http.Header, string) {
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

// TestAttackEvictionForgetsPerAgentPace: "The pace of a dropped origin is
// kept while it can still hold a request back." Whether it can is judged by
// the Transport's own Agent's crawl-delay; a request decided under another
// token (User-Agent of a zero Transport, or WithAgent) with a longer delay
// loses its pace when MaxOrigins drops the origin.
func TestAttackEvictionForgetsPerAgentPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &atkServer{handle: func(req *http.Request) (int, http.Header, string) {
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

// TestAttackPacerOutageForgetsOwnTurns: "If [the Pacer] returns an error,
// the Transport ... paces the origin itself for that request, as if it had
// no Pacer". Turns taken through the Pacer are not recorded in memory, so
// the first request after the Pacer goes down leaves at once, a fraction of
// the crawl-delay after the last one (a Redis blip in a fleet).
func TestAttackPacerOutageForgetsOwnTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &atkServer{handle: func(req *http.Request) (int, http.Header, string) {
			return 200, nil, "User-agent: *\nCrawl-delay: 10\n"
		}}
		p := &atkPacer{epoch: time.Now()}
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

// TestAttackOpaqueURLBypassesCheck: "Every request is checked". A request
// whose URL has Path "/robots.txt" passes without a check, but net/http
// sends URL.Opaque as the request-URI when it is set: a disallowed path goes
// out unchecked. (target() reads Opaque for the check; RoundTrip's
// /robots.txt shortcut does not.)
func TestAttackOpaqueURLBypassesCheck(t *testing.T) {
	var got []string
	var mu sync.Mutex
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.RequestURI)
		mu.Unlock()
		if r.URL.Path == "/robots.txt" && r.RequestURI == "/robots.txt" {
			io.WriteString(w, "User-agent: *\nDisallow: /private\n")
			return
		}
		io.WriteString(w, "secret")
	}))
	defer ts.Close()
	base := ts.Client().Transport
	tr := NewTransport(base, "ExampleBot")
	host := strings.TrimPrefix(ts.URL, "http://")
	u := &url.URL{Scheme: "http", Host: host, Opaque: "/private/secret", Path: "/robots.txt"}
	if err := tr.Check(context.Background(), &url.URL{Scheme: "http", Host: host, Path: "/private/secret"}); !errors.Is(err, ErrDisallowed) {
		t.Fatalf("Check(/private/secret) = %v, want ErrDisallowed", err)
	}
	req := &http.Request{Method: "GET", URL: u, Header: http.Header{}, Host: host}
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range got {
		if strings.HasPrefix(p, "/private") {
			t.Errorf("the server received %s, which robots.txt disallows (err = %v)", p, err)
		}
	}
}

// TestAttackIPv6Spellings: "An origin is a scheme, host and port", and the
// README says spellings are folded into one origin. [::1] and
// [0:0:0:0:0:0:0:1] are one host (the URL standard serialises IPv6 hosts
// canonically), but get two robots.txt fetches and two paces.
func TestAttackIPv6Spellings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &atkServer{handle: func(req *http.Request) (int, http.Header, string) {
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

// TestAttackRobotsTxtRedirectHopUnpaced: robots.txt of http://example.com
// commonly redirects to https://example.com/robots.txt. That hop is a
// request to the https origin, which the crawler is already pacing by its
// crawl-delay, but it takes no turn there.
func TestAttackRobotsTxtRedirectHopUnpaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &atkServer{handle: func(req *http.Request) (int, http.Header, string) {
			if req.URL.Scheme == "http" {
				return 301, http.Header{"Location": {"https://example.com" + req.URL.RequestURI()}}, ""
			}
			if req.URL.Path == "/robots.txt" {
				return 200, nil, "User-agent: *\nCrawl-delay: 10\n"
			}
			return 200, nil, "page"
		}}
		client := &http.Client{
			Transport:     NewTransport(srv, "ExampleBot"),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		atkGet(context.Background(), client, "https://example.com/a", nil)
		atkGet(context.Background(), client, "https://example.com/b", nil) // at 10 s
		time.Sleep(time.Second)
		// A link to the http origin: its robots.txt redirects to https.
		atkGet(context.Background(), client, "http://example.com/c", nil)
		srv.minGap(t, "https://example.com:443", 10*time.Second)
	})
}

// TestAttackTraceHooksNotFired is a regression guard: "A fetch ... carries
// none of its [request's] context's values (its httptrace hooks, for one)",
// both when the request can be canceled (the fetch runs on its own
// goroutine) and when it cannot (the fetch runs on the caller's).
func TestAttackTraceHooksNotFired(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: *\nAllow: /\n")
			return
		}
		io.WriteString(w, "page")
	}))
	defer ts.Close()
	for _, cancelable := range []bool{false, true} {
		var mu sync.Mutex
		var wrote []string
		trace := &httptrace.ClientTrace{GetConn: func(hostPort string) {
			mu.Lock()
			wrote = append(wrote, hostPort)
			mu.Unlock()
		}}
		ctx := httptrace.WithClientTrace(context.Background(), trace)
		if cancelable {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
		}
		base := &http.Transport{}
		defer base.CloseIdleConnections()
		client := &http.Client{Transport: NewTransport(base, "ExampleBot")}
		if err := atkGet(ctx, client, ts.URL+"/page", nil); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if len(wrote) != 1 {
			t.Errorf("cancelable=%v: GetConn fired %d times, want once (the page, not robots.txt)", cancelable, len(wrote))
		}
		mu.Unlock()
	}
}

// TestAttackDefaultTransportNoRecursion is a regression guard: a Transport
// installed as http.DefaultTransport, literal or from NewTransport, sends
// through net/http's own transport, and obeys its token's group.
func TestAttackDefaultTransportNoRecursion(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: mybot\nDisallow: /private\n")
			return
		}
		io.WriteString(w, "page")
	}))
	defer ts.Close()
	old := http.DefaultTransport
	defer func() { http.DefaultTransport = old }()
	for _, mk := range []func() http.RoundTripper{
		func() http.RoundTripper { return NewTransport(nil, "MyBot/1.0") },
		func() http.RoundTripper { return &Transport{Agent: "MyBot/1.0"} },
	} {
		http.DefaultTransport = mk()
		c := &http.Client{Timeout: 5 * time.Second}
		if err := atkGet(context.Background(), c, ts.URL+"/private/x", nil); !errors.Is(err, ErrDisallowed) {
			t.Errorf("GET /private/x through http.DefaultTransport: %v, want ErrDisallowed", err)
		}
		if err := atkGet(context.Background(), c, ts.URL+"/ok", nil); err != nil {
			t.Errorf("GET /ok: %v", err)
		}
		http.DefaultTransport = old
	}
}

// TestAttackMisuse is a regression guard for the misuse promises: an Agent
// naming no token; ftp URLs; unreachable refusals; the caller's request not
// modified; Check agreeing with RoundTrip.
func TestAttackMisuse(t *testing.T) {
	func() {
		defer func() {
			if recover() == nil {
				t.Error("NewTransport(nil, \"/1.0\") did not panic")
			}
		}()
		NewTransport(nil, "/1.0")
	}()
	srv := &atkServer{handle: func(req *http.Request) (int, http.Header, string) {
		if req.URL.Host == "down.example" {
			return 503, nil, ""
		}
		return 200, nil, "User-agent: examplebot\nDisallow: /x\n"
	}}
	bad := &http.Client{Transport: &Transport{Base: srv, Agent: "(bot)"}}
	if err := atkGet(context.Background(), bad, "https://example.com/y", nil); err == nil || errors.Is(err, ErrDisallowed) {
		t.Errorf("Agent (bot): err = %v, want a misuse error", err)
	}
	tr := NewTransport(srv, "ExampleBot/1.0")
	c := &http.Client{Transport: tr}
	if err := atkGet(context.Background(), c, "ftp://example.com/y", nil); err == nil || errors.Is(err, ErrDisallowed) {
		t.Errorf("ftp: err = %v, want a non-ErrDisallowed error", err)
	}
	err := atkGet(context.Background(), c, "https://down.example/y", nil)
	de, _ := errors.AsType[*DisallowedError](err)
	if !errors.Is(err, ErrDisallowed) || !errors.Is(err, ErrUnreachable) || de == nil || de.RetryAt.IsZero() {
		t.Errorf("unreachable: err = %v, want ErrDisallowed, ErrUnreachable and a RetryAt", err)
	}
	req, _ := http.NewRequest("GET", "https://example.com/y", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, ok := req.Header["User-Agent"]; ok {
		t.Error("the caller's request was given a User-Agent")
	}
	srv.mu.Lock()
	if ua := srv.hits[len(srv.hits)-1].ua; ua != "ExampleBot/1.0" {
		t.Errorf("request left with User-Agent %q, want ExampleBot/1.0", ua)
	}
	srv.mu.Unlock()
	for _, p := range []string{"/x", "/x/y", "/y", "/robots.txt"} {
		u, _ := url.Parse("https://example.com" + p)
		cerr := tr.Check(context.Background(), u)
		req, _ := http.NewRequest("GET", u.String(), nil)
		resp, rerr := tr.RoundTrip(req)
		if rerr == nil {
			resp.Body.Close()
		}
		if errors.Is(cerr, ErrDisallowed) != errors.Is(rerr, ErrDisallowed) {
			t.Errorf("%s: Check = %v, RoundTrip = %v", p, cerr, rerr)
		}
	}
}

// TestAttackStoreBodyPastMaxBodySize: MaxBodySize is "how many bytes of a
// robots.txt body are read and parsed", and MaxBytes "bounds the bytes the
// cache holds". In a fleet where one Transport allows larger files (a bigger
// MaxBodySize) and shares a MemoryStore, another Transport takes its entries
// whole: it obeys rules past its own limit and holds far more than its
// MaxBytes (each state is kept even when it alone exceeds the budget).
func TestAttackStoreBodyPastMaxBodySize(t *testing.T) {
	var b strings.Builder
	b.WriteString("User-agent: *\n")
	for j := 0; b.Len() < 2<<20; j++ {
		fmt.Fprintf(&b, "Disallow: /%x\n", j)
	}
	b.WriteString("Disallow: /late\n") // past 500 KiB
	body := b.String()
	srv := &atkServer{handle: func(req *http.Request) (int, http.Header, string) {
		if req.URL.Path == "/robots.txt" {
			return 200, nil, body
		}
		return 200, nil, "page"
	}}
	store := &MemoryStore{}
	big := &Transport{Base: srv, Agent: "ExampleBot", Store: store, MaxBodySize: 4 << 20}
	const maxBytes = 4 << 20
	small := &Transport{Base: srv, Agent: "ExampleBot", Store: store, MaxBytes: maxBytes}
	var lateRefused int
	for i := range 4 {
		u, _ := url.Parse(fmt.Sprintf("https://h%d.example/late", i))
		big.Check(context.Background(), u)
		if err := small.Check(context.Background(), u); errors.Is(err, ErrDisallowed) {
			lateRefused++
		}
	}
	if lateRefused > 0 {
		t.Errorf("%d of 4 origins refused /late by a rule past the Transport's MaxBodySize (500 KiB)", lateRefused)
	}
	var held int64
	for i := range small.cache.shards {
		sh := &small.cache.shards[i]
		sh.mu.Lock()
		held += sh.bytes
		sh.mu.Unlock()
	}
	if held > maxBytes {
		t.Errorf("the cache holds %d MiB, MaxBytes is %d MiB", held>>20, maxBytes>>20)
	}
}

// TestAttackHangingBodyOutlivesFetchTimeout: "FetchTimeout ... bounds each
// fetch of robots.txt, redirects and body included". A Base whose body
// ignores the request's context (net/http's own would not) keeps the fetch,
// and every request to the origin, waiting forever: after FetchTimeout the
// origin should be refused as unreachable, and it is still waiting.
func TestAttackHangingBodyOutlivesFetchTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		base := rtFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL.Path != "/robots.txt" {
				return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
			}
			return &http.Response{StatusCode: 200, ContentLength: -1, Request: req,
				Body: io.NopCloser(io.MultiReader(strings.NewReader("User-agent: *\n"), chanReader(release)))}, nil
		})
		client := &http.Client{Transport: &Transport{Base: base, Agent: "ExampleBot", FetchTimeout: 10 * time.Second}}
		defer close(release)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		atkGet(ctx, client, "https://example.com/a", nil)
		cancel()
		time.Sleep(time.Minute) // well past FetchTimeout
		ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := atkGet(ctx, client, "https://example.com/b", nil)
		if !errors.Is(err, ErrUnreachable) {
			t.Errorf("a minute after a fetch with a 10 s FetchTimeout began: %v, want ErrUnreachable", err)
		}
	})
}

// chanReader blocks every Read until its channel is closed, then reports EOF.
type chanReader chan struct{}

func (c chanReader) Read([]byte) (int, error) {
	<-c
	return 0, io.EOF
}
