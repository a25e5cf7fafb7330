package robots

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"
)

func TestEveryHopAndMethodIsChecked(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n"))
	mock.RegisterResponder("GET", "https://example.com/go", httpmock.NewStringResponder(302, "").
		HeaderSet(http.Header{"Location": {"/private/x"}}))
	client := &http.Client{Transport: noDefaultPace(NewTransport(mock, "ExampleBot"))}
	wantRefused(t, client, "https://example.com/go")
	if n := calls(mock, "https://example.com/private/x"); n != 0 {
		t.Errorf("redirect target sent %d times, want 0", n)
	}
	for _, m := range []string{"HEAD", "POST", "PUT", "DELETE", "OPTIONS"} {
		req, _ := http.NewRequest(m, "https://example.com/private", nil)
		if _, err := client.Do(req); !errors.Is(err, ErrDisallowed) {
			t.Errorf("%s /private: %v, want ErrDisallowed", m, err)
		}
	}
}

func TestRobotsTxtPassesThrough(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(503, "busy"))
	client := &http.Client{Transport: noDefaultPace(NewTransport(mock, "ExampleBot"))}
	resp, err := client.Get(exampleRobots)
	if err != nil {
		t.Fatalf("GET /robots.txt: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("status %d, want the origin's 503", resp.StatusCode)
	}
	if n := calls(mock, exampleRobots); n != 1 {
		t.Errorf("robots.txt sent %d times, want 1 (the caller's own)", n)
	}
}

func TestErrorsThroughClient(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: ExampleBot\nAllow: /\nDisallow: /private\n"))
	client := &http.Client{Transport: noDefaultPace(NewTransport(mock, "ExampleBot"))}
	err := get(client, "https://example.com/private/page?q=1")
	var ue *url.Error
	if !errors.As(err, &ue) {
		t.Fatalf("err = %T %v, want a *url.Error from http.Client", err, err)
	}
	if !errors.Is(err, ErrDisallowed) {
		t.Errorf("errors.Is(%v, ErrDisallowed) = false", err)
	}
	var de *DisallowedError
	if !errors.As(err, &de) {
		t.Fatalf("errors.As(%v, *DisallowedError) = false", err)
	}
	if de2, ok := errors.AsType[*DisallowedError](err); !ok || de2 != de {
		t.Errorf("errors.AsType = %v, %v", de2, ok)
	}
	if got := de.URL.String(); got != "https://example.com/private/page?q=1" {
		t.Errorf("URL = %s", got)
	}
	if de.Agent != "ExampleBot" || de.Rule != "Disallow: /private" || de.Line != 3 || de.Err != nil {
		t.Errorf("got %+v", de)
	}
	if want := `robots: robots.txt disallows https://example.com/private/page?q=1 for ExampleBot: "Disallow: /private" (line 3)`; de.Error() != want {
		t.Errorf("Error() = %q, want %q", de.Error(), want)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a rule refusal matches context.DeadlineExceeded")
	}
}

func TestRequestNotModified(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n"))
	tr := noDefaultPace(NewTransport(mock, "ExampleBot"))
	for _, path := range []string{"/public", "/private"} {
		req, _ := http.NewRequest("GET", "https://example.com"+path, nil)
		req.Header.Set("User-Agent", "ExampleBot/1.0")
		before := req.URL.String() + fmt.Sprint(req.Header)
		resp, err := tr.RoundTrip(req)
		if (resp == nil) == (err == nil) {
			t.Errorf("%s: RoundTrip returned response %v and error %v, want exactly one", path, resp != nil, err)
		}
		if resp != nil {
			resp.Body.Close()
		}
		if after := req.URL.String() + fmt.Sprint(req.Header); after != before {
			t.Errorf("%s: request changed from %s to %s", path, before, after)
		}
	}
}

// countingBody is a request body that counts its Close calls.
type countingBody struct {
	io.Reader
	closed atomic.Int32
}

func (b *countingBody) Close() error {
	b.closed.Add(1)
	return nil
}

func TestRequestBodyClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n"))
		mock.RegisterResponder("GET", "https://down.example/robots.txt", httpmock.NewStringResponder(503, ""))
		mock.RegisterResponder("GET", "https://slow.example/robots.txt", httpmock.NewStringResponder(200, "").Delay(time.Minute))
		client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}
		for _, c := range []struct {
			name, url string
			timeout   time.Duration
		}{
			{"refused by a rule", "https://example.com/private", 0},
			{"refused, unreachable", "https://down.example/x", 0},
			{"invalid host", "https://a\uFFFDb.example/x", 0},
			{"gave up waiting", "https://slow.example/x", time.Second},
		} {
			body := &countingBody{Reader: strings.NewReader("payload")}
			ctx := context.Background()
			if c.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.timeout)
				defer cancel()
			}
			req, err := http.NewRequestWithContext(ctx, "POST", c.url, body)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.Do(req); err == nil {
				t.Errorf("%s: POST succeeded", c.name)
			}
			if n := body.closed.Load(); n != 1 {
				t.Errorf("%s: body closed %d times, want 1", c.name, n)
			}
		}
		time.Sleep(time.Minute) // let the slow fetch end before the bubble does
	})
}

type closeIdleMock struct {
	http.RoundTripper
	n int
}

func (m *closeIdleMock) CloseIdleConnections() { m.n++ }

func TestCloseIdleConnections(t *testing.T) {
	base := &closeIdleMock{RoundTripper: newMock()}
	client := &http.Client{Transport: noDefaultPace(NewTransport(base, "ExampleBot"))}
	client.CloseIdleConnections()
	if base.n != 1 {
		t.Errorf("CloseIdleConnections reached Base %d times, want 1", base.n)
	}
}

func TestZeroTransport(t *testing.T) {
	var tr Transport
	u, _ := url.Parse("http://[::1]:1/x") // nothing listens there
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := tr.Check(ctx, u)
	if de, ok := errors.AsType[*DisallowedError](err); !ok || de.Err == nil {
		t.Errorf("Check with no server = %v, want refused as unreachable", err)
	}
	tr.CloseIdleConnections()
}

// BenchmarkRoundTrip compares an allowed request to a cached origin with
// the same request sent on the bare base transport, and pacing (on by
// default) with pacing off, for an origin with no crawl-delay.
func BenchmarkRoundTrip(b *testing.B) {
	base := benchBase{page: &http.Response{StatusCode: 200, Body: http.NoBody}}
	req, _ := http.NewRequest("GET", "https://example.com/articles/2024/robots-and-you.html", nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 (compatible; ExampleBot/1.0; +https://example.com/bot)")
	for _, c := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"base", base},
		{"robots", NewTransport(base, "ExampleBot")},
		{"robots-no-pacing", &Transport{NoDefaultPace: true, Base: base, Agent: "ExampleBot", IgnoreCrawlDelay: true, IgnoreRetryAfter: true}},
		{"robots-derived-agent", &Transport{Base: base}},
		// a turn per request, without the adaptive delay, whose waits on
		// a loaded machine follow the scheduler's stalls
		{"robots-turn", &Transport{Base: base, Agent: "ExampleBot", NoDefaultPace: true, MinDelay: time.Nanosecond}},
	} {
		if _, err := c.rt.RoundTrip(req); err != nil { // warm the cache
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.rt.RoundTrip(req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.rt.RoundTrip(req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// brokenBase breaks the RoundTripper contract: no body, or no response.
type brokenBase struct{ noResponse bool }

func (b brokenBase) RoundTrip(req *http.Request) (*http.Response, error) {
	if b.noResponse {
		return nil, nil
	}
	return &http.Response{StatusCode: 200, Header: http.Header{}, Request: req}, nil
}

func TestBrokenBase(t *testing.T) {
	u := mustURL("https://example.com/page")
	if err := noDefaultPace(NewTransport(brokenBase{}, "ExampleBot")).Check(context.Background(), u); err != nil {
		t.Errorf("robots.txt with a nil Body: %v, want an empty file (allowed)", err)
	}
	err := noDefaultPace(NewTransport(brokenBase{noResponse: true}, "ExampleBot")).Check(context.Background(), u)
	if de, ok := errors.AsType[*DisallowedError](err); !ok || !errors.Is(de.Err, errNoResponse) {
		t.Errorf("robots.txt with no response: %v, want unreachable", err)
	}
}

// BenchmarkRoundTripLogger is an allowed request to a cached origin through a
// Transport whose Logger does not take debug records: it allocates nothing.
func BenchmarkRoundTripLogger(b *testing.B) {
	base := benchBase{page: &http.Response{StatusCode: 200, Body: http.NoBody}}
	req, _ := http.NewRequest("GET", "https://example.com/articles/2024/robots-and-you.html", nil)
	req.Header.Set("User-Agent", "ExampleBot/1.0")
	tr := NewTransport(base, "ExampleBot")
	tr.Logger = slog.New(slog.NewTextHandler(io.Discard, nil)) // Info: no debug records
	refused, _ := http.NewRequest("GET", "https://example.com/cart/x", nil)
	refused.Header.Set("User-Agent", "ExampleBot/1.0")
	if _, err := tr.RoundTrip(req); err != nil {
		b.Fatal(err)
	}
	b.Run("allowed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tr.RoundTrip(req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("refused", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tr.RoundTrip(refused); err == nil {
				b.Fatal("sent")
			}
		}
	})
}

// TestDefaultTransportDoesNotRecurse is a regression guard: a Transport
// installed as http.DefaultTransport, literal or from NewTransport, sends
// through net/http's own transport, and obeys its token's group.
func TestDefaultTransportDoesNotRecurse(t *testing.T) {
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
		func() http.RoundTripper { return noDefaultPace(NewTransport(nil, "MyBot/1.0")) },
		func() http.RoundTripper { return &Transport{NoDefaultPace: true, Agent: "MyBot/1.0"} },
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

// TestMisuseFailsClearly is a regression guard for the misuse promises: an Agent
// naming no token; ftp URLs; unreachable refusals; the caller's request not
// modified; Check agreeing with RoundTrip.
func TestMisuseFailsClearly(t *testing.T) {
	srv := &fakeOrigins{handle: func(req *http.Request) (int, http.Header, string) {
		if req.URL.Host == "down.example" {
			return 503, nil, ""
		}
		return 200, nil, "User-agent: examplebot\nDisallow: /x\n"
	}}
	bad := &http.Client{Transport: &Transport{NoDefaultPace: true, Base: srv, Agent: "(bot)"}}
	if err := atkGet(context.Background(), bad, "https://example.com/y", nil); err == nil || errors.Is(err, ErrDisallowed) {
		t.Errorf("Agent (bot): err = %v, want a misuse error", err)
	}
	tr := noDefaultPace(NewTransport(srv, "ExampleBot/1.0"))
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
