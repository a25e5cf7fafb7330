package robots

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if _, err := os.Stat("../shared/corpus"); err != nil {
		fmt.Fprintln(os.Stderr, "robots: ../shared/corpus is absent: the fuzz seeds from it are not added")
	}
	goleak.VerifyTestMain(m)
}

const exampleRobots = "https://example.com/robots.txt"

// newMock returns a mock base transport on which every URL without a
// registered responder answers 200 "page".
func newMock() *httpmock.MockTransport {
	mock := httpmock.NewMockTransport()
	mock.RegisterNoResponder(httpmock.NewStringResponder(200, "page"))
	return mock
}

// get sends GET u through c and returns the error, reading and closing the
// body of a response.
func get(c *http.Client, u string) error {
	return getCtx(context.Background(), c, u)
}

func getCtx(ctx context.Context, c *http.Client, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

func calls(mock *httpmock.MockTransport, u string) int {
	return mock.GetCallCountInfo()["GET "+u]
}

// wantAllowed fails t unless GET u through c is sent.
func wantAllowed(t *testing.T, c *http.Client, u string) {
	t.Helper()
	if err := get(c, u); err != nil {
		t.Errorf("GET %s: %v, want allowed", u, err)
	}
}

// wantRefused fails t unless GET u through c is refused, and returns the
// DisallowedError.
func wantRefused(t *testing.T, c *http.Client, u string) *DisallowedError {
	t.Helper()
	err := get(c, u)
	de, ok := errors.AsType[*DisallowedError](err)
	if !ok {
		t.Errorf("GET %s: %v, want a *DisallowedError", u, err)
		return &DisallowedError{}
	}
	return de
}

func TestAccessResults(t *testing.T) {
	const rules = "User-agent: *\nDisallow: /private\n"
	cases := []struct {
		name    string
		resp    httpmock.Responder
		private bool // /private allowed
		public  bool // /public allowed
		whole   bool // refused whole: Err set, Rule empty
	}{
		{"200", httpmock.NewStringResponder(200, rules), false, true, false},
		{"204 empty", httpmock.NewStringResponder(204, ""), true, true, false},
		{"299", httpmock.NewStringResponder(299, rules), false, true, false},
		{"400", httpmock.NewStringResponder(400, rules), true, true, false},
		{"401", httpmock.NewStringResponder(401, "User-agent: *\nDisallow: /"), true, true, false},
		{"403", httpmock.NewStringResponder(403, "User-agent: *\nDisallow: /"), true, true, false},
		{"404", httpmock.NewStringResponder(404, "User-agent: *\nDisallow: /"), true, true, false},
		{"410", httpmock.NewStringResponder(410, ""), true, true, false},
		{"451", httpmock.NewStringResponder(451, ""), true, true, false},
		{"429", httpmock.NewStringResponder(429, rules), false, false, true},
		{"500", httpmock.NewStringResponder(500, rules), false, false, true},
		{"502", httpmock.NewStringResponder(502, ""), false, false, true},
		{"503", httpmock.NewStringResponder(503, ""), false, false, true},
		{"599", httpmock.NewStringResponder(599, ""), false, false, true},
		{"1xx", httpmock.NewStringResponder(103, ""), false, false, true},
		{"600", httpmock.NewStringResponder(600, rules), false, false, true},
		{"3xx without Location", httpmock.NewStringResponder(304, ""), true, true, false},
		{"network error", httpmock.NewErrorResponder(errors.New("connection reset by peer")), false, false, true},
		{"connection failure", httpmock.ConnectionFailure, false, false, true},
		{"truncated body", truncatedResponder(rules), false, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mock := newMock()
			mock.RegisterResponder("GET", exampleRobots, c.resp)
			client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}
			for _, p := range []struct {
				path    string
				allowed bool
			}{{"/private", c.private}, {"/public", c.public}} {
				u := "https://example.com" + p.path
				err := get(client, u)
				if p.allowed {
					if err != nil {
						t.Errorf("GET %s: %v, want allowed", p.path, err)
					}
					continue
				}
				de, ok := errors.AsType[*DisallowedError](err)
				if !ok {
					t.Errorf("GET %s: %v, want refused", p.path, err)
					continue
				}
				if c.whole && (de.Err == nil || de.Rule != "" || de.Line != 0) {
					t.Errorf("GET %s: Err=%v Rule=%q Line=%d, want the whole origin refused with a cause", p.path, de.Err, de.Rule, de.Line)
				}
				if !c.whole && (de.Rule != "Disallow: /private" || de.Line != 2 || de.Err != nil) {
					t.Errorf("GET %s: Rule=%q Line=%d Err=%v, want Disallow: /private on line 2", p.path, de.Rule, de.Line, de.Err)
				}
			}
			if n := calls(mock, exampleRobots); n != 1 {
				t.Errorf("robots.txt fetched %d times, want 1", n)
			}
		})
	}
}

// truncatedResponder answers 200 with a body that ends early: it promises
// more bytes than it sends.
func truncatedResponder(body string) httpmock.Responder {
	return func(req *http.Request) (*http.Response, error) {
		resp := httpmock.NewStringResponse(200, body)
		resp.Body = io.NopCloser(io.MultiReader(strings.NewReader(body), errReader{io.ErrUnexpectedEOF}))
		resp.ContentLength = int64(len(body)) + 100
		return resp, nil
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestUnreachableCauseIsKept(t *testing.T) {
	cause := errors.New("dial tcp: lookup example.com: no such host")
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewErrorResponder(cause))
	client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}
	de := wantRefused(t, client, "https://example.com/")
	if !errors.Is(de, cause) {
		t.Errorf("DisallowedError.Err = %v, want it to wrap %v", de.Err, cause)
	}
	if !strings.Contains(de.Error(), "unreachable") || !strings.Contains(de.Error(), "no such host") {
		t.Errorf("Error() = %q, want it to say unreachable and why", de.Error())
	}
}

func TestRedirects(t *testing.T) {
	// chain registers n redirects from example.com/robots.txt, then rules.
	chain := func(mock *httpmock.MockTransport, n int, rules string) {
		from := exampleRobots
		for i := 1; i <= n; i++ {
			to := fmt.Sprintf("/hop%d/robots.txt", i) // relative Location
			mock.RegisterResponder("GET", from, httpmock.NewStringResponder(301, "").HeaderSet(http.Header{"Location": {to}}))
			from = "https://example.com" + to
		}
		mock.RegisterResponder("GET", from, httpmock.NewStringResponder(200, rules))
	}
	for _, c := range []struct {
		hops    int
		allowed bool
	}{{1, false}, {5, false}, {6, true}, {10, true}} {
		t.Run(fmt.Sprintf("%d hops", c.hops), func(t *testing.T) {
			mock := newMock()
			chain(mock, c.hops, "User-agent: *\nDisallow: /\n")
			client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}
			if c.allowed {
				wantAllowed(t, client, "https://example.com/page")
			} else {
				wantRefused(t, client, "https://example.com/page")
			}
			if n := mock.GetTotalCallCount(); n != min(c.hops, 5)+1+btoi(c.allowed) {
				t.Errorf("%d requests sent, want %d", n, min(c.hops, 5)+1+btoi(c.allowed))
			}
		})
	}

	t.Run("cross host, cached under the original origin only", func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(302, "").
			HeaderSet(http.Header{"Location": {"https://cdn.example.net/sites/example/robots.txt"}}))
		mock.RegisterResponder("GET", "https://cdn.example.net/sites/example/robots.txt",
			httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n"))
		mock.RegisterResponder("GET", "https://cdn.example.net/robots.txt",
			httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /public\n"))
		client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}
		wantRefused(t, client, "https://example.com/private")
		wantAllowed(t, client, "https://example.com/public")
		// The CDN's own origin has its own robots.txt.
		wantAllowed(t, client, "https://cdn.example.net/private")
		wantRefused(t, client, "https://cdn.example.net/public")
		if n := calls(mock, "https://cdn.example.net/robots.txt"); n != 1 {
			t.Errorf("cdn robots.txt fetched %d times, want 1", n)
		}
	})

	t.Run("non-http target", func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(301, "").
			HeaderSet(http.Header{"Location": {"ftp://example.com/robots.txt"}}))
		client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}
		wantAllowed(t, client, "https://example.com/page")
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestEveryHopAndMethodIsChecked(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n"))
	mock.RegisterResponder("GET", "https://example.com/go", httpmock.NewStringResponder(302, "").
		HeaderSet(http.Header{"Location": {"/private/x"}}))
	client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}
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
	client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}
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
	client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}
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
	if want := `robots: disallowed by robots.txt: "Disallow: /private" (line 3)`; de.Error() != want {
		t.Errorf("Error() = %q, want %q", de.Error(), want)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a rule refusal matches context.DeadlineExceeded")
	}
}

func TestRequestNotModified(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n"))
	tr := NewTransport(mock, "ExampleBot")
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

func TestInvalidHost(t *testing.T) {
	mock := newMock()
	client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}
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
	client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}

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

func TestBodySizeLimit(t *testing.T) {
	head := "User-agent: *\nDisallow: /head\n"
	tail := "Disallow: /tail\n"
	pad := strings.Repeat("# padding line\n", DefaultMaxBodySize/15+1)
	big := head + pad + tail // /tail lies past 500 KiB

	t.Run("rules past the limit are ignored", func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, big))
		client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}
		wantRefused(t, client, "https://example.com/head")
		wantAllowed(t, client, "https://example.com/tail")
	})

	t.Run("a larger MaxBodySize reads them", func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, big))
		client := &http.Client{Transport: &Transport{Base: mock, Agent: "ExampleBot", MaxBodySize: 1 << 20}}
		wantRefused(t, client, "https://example.com/tail")
	})

	t.Run("a smaller MaxBodySize is raised to 500 KiB", func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, head+strings.Repeat("#\n", 1000)+tail))
		client := &http.Client{Transport: &Transport{Base: mock, Agent: "ExampleBot", MaxBodySize: 100}}
		wantRefused(t, client, "https://example.com/tail")
	})

	t.Run("an endless body is read no further", func(t *testing.T) {
		mock := newMock()
		body := &endless{prefix: head}
		mock.RegisterResponder("GET", exampleRobots, func(*http.Request) (*http.Response, error) {
			resp := httpmock.NewStringResponse(200, "")
			resp.Body = body
			resp.ContentLength = -1
			return resp, nil
		})
		client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}
		wantRefused(t, client, "https://example.com/head")
		// The limit, and one byte to tell that the body goes on.
		if n := body.read.Load(); n != DefaultMaxBodySize+1 {
			t.Errorf("read %d bytes of an endless body, want %d", n, DefaultMaxBodySize+1)
		}
		if !body.closed.Load() {
			t.Errorf("body not closed")
		}
	})
}

// endless is a response body that never ends: prefix, then '#' forever.
type endless struct {
	prefix string
	read   atomic.Int64
	closed atomic.Bool
}

func (e *endless) Read(p []byte) (int, error) {
	off := e.read.Load()
	n := 0
	for ; n < len(p); n++ {
		if i := off + int64(n); i < int64(len(e.prefix)) {
			p[n] = e.prefix[i]
		} else {
			p[n] = '#'
		}
	}
	e.read.Add(int64(n))
	return n, nil
}

func (e *endless) Close() error {
	e.closed.Store(true)
	return nil
}

func TestLifetime(t *testing.T) {
	for _, c := range []struct {
		cacheControl string
		ttl          time.Duration // Transport.TTL
		want         time.Duration
	}{
		{"", 0, 24 * time.Hour},
		{"max-age=3600", 0, time.Hour},
		{"public, max-age=600", 0, 10 * time.Minute},
		{"max-age=0", 0, MinTTL},
		{"no-store", 0, MinTTL},
		{"max-age=999999", 0, 24 * time.Hour},
		{"", 2 * time.Hour, 2 * time.Hour},
		{"max-age=86400", 48 * time.Hour, 24 * time.Hour},
	} {
		t.Run(fmt.Sprintf("%q ttl=%v", c.cacheControl, c.ttl), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mock := newMock()
				mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n").
					HeaderSet(http.Header{"Cache-Control": {c.cacheControl}}))
				client := &http.Client{Transport: &Transport{Base: mock, Agent: "ExampleBot", TTL: c.ttl}}
				wantAllowed(t, client, "https://example.com/a")
				time.Sleep(c.want - time.Second)
				wantAllowed(t, client, "https://example.com/b")
				if n := calls(mock, exampleRobots); n != 1 {
					t.Errorf("before %v: fetched %d times, want 1", c.want, n)
				}
				time.Sleep(time.Second)
				wantAllowed(t, client, "https://example.com/c")
				if n := calls(mock, exampleRobots); n != 2 {
					t.Errorf("at %v: fetched %d times, want 2", c.want, n)
				}
			})
		})
	}
}

// switchable returns a responder that answers with whatever *cur holds.
func switchable(cur *atomic.Pointer[httpmock.Responder]) httpmock.Responder {
	return func(req *http.Request) (*http.Response, error) {
		return (*cur.Load())(req)
	}
}

func respond(cur *atomic.Pointer[httpmock.Responder], r httpmock.Responder) { cur.Store(&r) }

func TestExpiredEntryWaitsForRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cur atomic.Pointer[httpmock.Responder]
		respond(&cur, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /old\n"))
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, switchable(&cur))
		client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}
		wantRefused(t, client, "https://example.com/old")
		respond(&cur, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /new\n").Delay(5*time.Second))
		time.Sleep(DefaultTTL)
		start := time.Now()
		wantAllowed(t, client, "https://example.com/old")
		if waited := time.Since(start); waited != 5*time.Second {
			t.Errorf("waited %v for the refresh, want 5s", waited)
		}
		wantRefused(t, client, "https://example.com/new")
	})
}

func TestStaleIfError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cur atomic.Pointer[httpmock.Responder]
		respond(&cur, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n"))
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, switchable(&cur))
		tr := NewTransport(mock, "ExampleBot")
		client := &http.Client{Transport: tr}
		wantRefused(t, client, "https://example.com/private")

		respond(&cur, httpmock.NewStringResponder(503, ""))
		time.Sleep(DefaultTTL)
		for range 10 {
			wantRefused(t, client, "https://example.com/private")
			wantAllowed(t, client, "https://example.com/public")
		}
		if n := calls(mock, exampleRobots); n != 2 {
			t.Errorf("fetched %d times, want 2: one refresh, then a back-off", n)
		}
		// Long past the copy's lifetime, it is still obeyed, and
		// fetches back off.
		time.Sleep(40 * 24 * time.Hour)
		wantRefused(t, client, "https://example.com/private")
		wantAllowed(t, client, "https://example.com/public")
		if n := calls(mock, exampleRobots); n > 3 {
			t.Errorf("fetched %d times, want 3 (one per request that found the back-off over)", n)
		}

		respond(&cur, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /public\n"))
		time.Sleep(RetryMax)
		wantAllowed(t, client, "https://example.com/private")
		wantRefused(t, client, "https://example.com/public")
		if s := tr.Stats(); s.FetchSuccess != 2 || s.FetchUnreachable != 2 {
			t.Errorf("stats %+v, want 2 successful and 2 unreachable fetches", s)
		}
	})
}

func TestUnreachableBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(500, ""))
		client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}
		var at []time.Duration
		start := time.Now()
		prev := 0
		for time.Since(start) < 5*time.Hour {
			wantRefused(t, client, "https://example.com/x")
			if n := calls(mock, exampleRobots); n != prev {
				at = append(at, time.Since(start))
				prev = n
			}
			time.Sleep(10 * time.Second)
		}
		// Fetches at 0, then after 1m, 2m, 4m, ... capped at 1h.
		want := []time.Duration{0, time.Minute, 3 * time.Minute, 7 * time.Minute, 15 * time.Minute,
			31 * time.Minute, 63 * time.Minute, 123 * time.Minute, 183 * time.Minute, 243 * time.Minute}
		if len(at) != len(want) {
			t.Fatalf("fetches at %v, want %v", at, want)
		}
		for i := range want {
			// Requests come every 10 s, so a fetch follows its due time within 10 s.
			if at[i] < want[i] || at[i] > want[i]+10*time.Second*time.Duration(i+1) {
				t.Errorf("fetch %d at %v, want at %v", i, at[i], want[i])
			}
		}
	})
}

func TestRetryAfterOnRobotsTxt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cur atomic.Pointer[httpmock.Responder]
		respond(&cur, httpmock.NewStringResponder(503, "").HeaderSet(http.Header{"Retry-After": {"7200"}}))
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, switchable(&cur))
		client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}
		wantRefused(t, client, "https://example.com/x")
		respond(&cur, httpmock.NewStringResponder(200, ""))
		time.Sleep(2*time.Hour - time.Second)
		wantRefused(t, client, "https://example.com/x")
		time.Sleep(time.Second)
		wantAllowed(t, client, "https://example.com/x")
		if n := calls(mock, exampleRobots); n != 2 {
			t.Errorf("fetched %d times, want 2", n)
		}
	})
}

func TestThirtyDayRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(503, ""))
		client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}
		de := wantRefused(t, client, "https://example.com/x")
		if de.Err == nil || !strings.Contains(de.Err.Error(), "503") {
			t.Errorf("Err = %v, want it to name the 503", de.Err)
		}
		time.Sleep(UnreachableAllowAfter - time.Hour)
		wantRefused(t, client, "https://example.com/x")
		time.Sleep(time.Hour)
		wantAllowed(t, client, "https://example.com/x")
		n := calls(mock, exampleRobots)
		if n > 2+30*24 {
			t.Errorf("fetched %d times in 30 days, want at most one an hour", n)
		}
	})
}

func TestSingleFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n").Delay(time.Second))
		tr := NewTransport(mock, "ExampleBot")
		client := &http.Client{Transport: tr}
		const n = 200
		var wg sync.WaitGroup
		var refused atomic.Int32
		for i := range n {
			wg.Go(func() {
				path := "/public"
				if i%2 == 0 {
					path = "/private"
				}
				if errors.Is(get(client, "https://example.com"+path), ErrDisallowed) {
					refused.Add(1)
				}
			})
		}
		wg.Wait()
		if c := calls(mock, exampleRobots); c != 1 {
			t.Errorf("%d concurrent requests fetched robots.txt %d times, want 1", n, c)
		}
		if r := refused.Load(); r != n/2 {
			t.Errorf("%d refused, want %d", r, n/2)
		}
		if s := tr.Stats(); s.Misses != n || s.Hits != 0 || s.FetchSuccess != 1 || s.Refused != n/2 {
			t.Errorf("stats %+v", s)
		}
	})
}

func TestWaitersHonourTheirContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		var fetchCtxErr atomic.Value
		mock.RegisterResponder("GET", exampleRobots, func(req *http.Request) (*http.Response, error) {
			time.Sleep(10 * time.Second)
			fetchCtxErr.Store(fmt.Sprint(req.Context().Err()))
			return httpmock.NewStringResponse(200, "User-agent: *\nDisallow: /private\n"), nil
		})
		client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}

		// The first caller gives up after 1 s; a second one cancels.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		err := getCtx(ctx, client, "https://example.com/public")
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrDisallowed) {
			t.Errorf("first caller: %v, want context.DeadlineExceeded", err)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("first caller returned after %v, want 1s", d)
		}
		ctx2, cancel2 := context.WithCancel(context.Background())
		go func() {
			time.Sleep(time.Second)
			cancel2()
		}()
		if err := getCtx(ctx2, client, "https://example.com/public"); !errors.Is(err, context.Canceled) {
			t.Errorf("second caller: %v, want context.Canceled", err)
		}

		// The fetch was not canceled with them: a third caller gets its
		// result without another fetch.
		wantRefused(t, client, "https://example.com/private")
		if d := time.Since(start); d != 10*time.Second {
			t.Errorf("third caller returned after %v, want 10s", d)
		}
		if got := fetchCtxErr.Load(); got != "<nil>" {
			t.Errorf("fetch context error %v, want nil", got)
		}
		if n := calls(mock, exampleRobots); n != 1 {
			t.Errorf("fetched %d times, want 1", n)
		}

		// A caller whose context is already done starts no fetch.
		done, cancel3 := context.WithCancel(context.Background())
		cancel3()
		if err := getCtx(done, client, "https://other.example/"); err == nil {
			t.Errorf("done context: allowed")
		}
		if n := calls(mock, "https://other.example/robots.txt"); n != 0 {
			t.Errorf("done context: fetched %d times", n)
		}
	})
}

func TestFetchTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "").Delay(time.Hour))
		client := &http.Client{Transport: &Transport{Base: mock, Agent: "ExampleBot", FetchTimeout: 5 * time.Second}}
		start := time.Now()
		de := wantRefused(t, client, "https://example.com/x")
		if !errors.Is(de.Err, context.DeadlineExceeded) {
			t.Errorf("Err = %v, want the fetch's deadline", de.Err)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("refused after %v, want 5s", d)
		}
	})
}

func TestFetchUserAgent(t *testing.T) {
	for _, c := range []struct {
		agent, header, want string
	}{
		{"ExampleBot", "Mozilla/5.0 (compatible; ExampleBot/1.0; +https://example.com/bot)", "Mozilla/5.0 (compatible; ExampleBot/1.0; +https://example.com/bot)"},
		{"ExampleBot", "", "ExampleBot"},
		{"", "ExampleBot/2.0", "ExampleBot/2.0"},
	} {
		mock := newMock()
		var got atomic.Value
		mock.RegisterResponder("GET", exampleRobots, func(req *http.Request) (*http.Response, error) {
			got.Store(req.Header.Get("User-Agent"))
			return httpmock.NewStringResponse(404, ""), nil
		})
		req, _ := http.NewRequest("GET", "https://example.com/", nil)
		if c.header != "" {
			req.Header.Set("User-Agent", c.header)
		}
		resp, err := (&Transport{Base: mock, Agent: c.agent}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got.Load() != c.want {
			t.Errorf("agent %q, header %q: robots.txt fetched as %q, want %q", c.agent, c.header, got.Load(), c.want)
		}
	}
}

func TestProductToken(t *testing.T) {
	for _, c := range []struct{ ua, want string }{
		{"Mozilla/5.0 (compatible; ExampleBot/1.0; +https://example.com/bot)", "ExampleBot"},
		{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "Googlebot"},
		{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36", "bingbot"},
		{"Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "Googlebot"},
		{"Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)", "MJ12bot"},
		{"Mozilla/5.0 (compatible; ExampleBot; +https://example.com/bot)", "ExampleBot"},
		{"ExampleBot/1.0", "ExampleBot"},
		{"ExampleBot/1.0 (+https://example.com/bot)", "ExampleBot"},
		{"Mozilla/5.0 ExampleBot/1.0", "ExampleBot"},
		{"curl/8.5.0", "curl"},
		{"Go-http-client/1.1", "Go-http-client"},
		{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36", ""},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1", ""},
		{"Mozilla/5.0 (compatible; MSIE 10.0; Windows NT 6.2; Trident/6.0)", ""},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0", ""},
		{"", ""},
		{"(((", ""},
		{"just words", "just"}, // two products (RFC 9110 §10.1.5); the first names the crawler
		{"ExampleBot", "ExampleBot"},
		{"ExampleBot (+https://example.com/bot)", "ExampleBot"},
	} {
		if got := productToken(c.ua); got != c.want {
			t.Errorf("productToken(%q) = %q, want %q", c.ua, got, c.want)
		}
	}
}

func TestAgentFromUserAgent(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200,
		"User-agent: ExampleBot\nDisallow: /bot\n\nUser-agent: *\nDisallow: /star\n"))
	client := &http.Client{Transport: &Transport{Base: mock}} // the zero Transport, but for Base
	do := func(ua, path string) error {
		req, _ := http.NewRequest("GET", "https://example.com"+path, nil)
		req.Header.Set("User-Agent", ua)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	bot := "Mozilla/5.0 (compatible; ExampleBot/1.0; +https://example.com/bot)"
	browser := "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
	for _, c := range []struct {
		ua, path string
		allowed  bool
	}{
		{bot, "/bot", false}, {bot, "/star", true},
		{browser, "/bot", true}, {browser, "/star", false},
		{"", "/star", false},
		{bot, "/bot", false},
	} {
		err := do(c.ua, c.path)
		if (err == nil) != c.allowed {
			t.Errorf("%q %s: %v, want allowed=%v", c.ua, c.path, err, c.allowed)
		}
		if de, ok := errors.AsType[*DisallowedError](err); ok {
			if want := map[bool]string{true: "ExampleBot", false: "*"}[c.ua == bot]; de.Agent != want {
				t.Errorf("%q %s: Agent %q, want %q", c.ua, c.path, de.Agent, want)
			}
		}
	}
}

func TestCheck(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: ExampleBot\nDisallow: /private\n"))
	tr := NewTransport(mock, "ExampleBot")
	ctx := context.Background()
	check := func(s string) error {
		u, _ := url.Parse(s)
		return tr.Check(ctx, u)
	}
	if err := check("https://example.com/private"); !errors.Is(err, ErrDisallowed) {
		t.Errorf("Check(/private) = %v, want ErrDisallowed", err)
	}
	if err := check("https://example.com/public"); err != nil {
		t.Errorf("Check(/public) = %v", err)
	}
	if err := check("https://example.com/robots.txt"); err != nil {
		t.Errorf("Check(/robots.txt) = %v", err)
	}
	if err := check("/relative"); err == nil || errors.Is(err, ErrDisallowed) {
		t.Errorf("Check(/relative) = %v, want an error", err)
	}
	if err := tr.Check(ctx, nil); err == nil {
		t.Errorf("Check(nil) = nil")
	}
	if n := mock.GetTotalCallCount(); n != 1 {
		t.Errorf("%d requests sent, want only the robots.txt fetch", n)
	}
}

func TestStats(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n"))
	mock.RegisterResponder("GET", "https://gone.example/robots.txt", httpmock.NewStringResponder(404, ""))
	mock.RegisterResponder("GET", "https://down.example/robots.txt", httpmock.NewStringResponder(500, ""))
	tr := NewTransport(mock, "ExampleBot")
	client := &http.Client{Transport: tr}
	wantAllowed(t, client, "https://example.com/a")
	wantAllowed(t, client, "https://example.com/b")
	wantRefused(t, client, "https://example.com/private")
	wantAllowed(t, client, "https://gone.example/a")
	wantRefused(t, client, "https://down.example/a")
	wantRefused(t, client, "https://down.example/b")
	want := Stats{Hits: 3, Misses: 3, Refused: 3, FetchSuccess: 1, FetchUnavailable: 1, FetchUnreachable: 1}
	if got := tr.Stats(); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}

func TestMaxOrigins(t *testing.T) {
	mock := newMock()
	for _, h := range []string{"a", "b", "c"} {
		mock.RegisterResponder("GET", "https://"+h+".example/robots.txt", httpmock.NewStringResponder(200, ""))
	}
	tr := &Transport{Base: mock, Agent: "ExampleBot", MaxOrigins: 2}
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
	tr = &Transport{Base: mock, Agent: "ExampleBot", MaxOrigins: 1000}
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

func TestStoreSharedBetweenTransports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200,
			"User-agent: ABot\nDisallow: /a\n\nUser-agent: BBot\nDisallow: /b\n").Delay(time.Second))
		store := &MemoryStore{}
		a := &Transport{Base: mock, Agent: "ABot", Store: store}
		b := &Transport{Base: mock, Agent: "BBot", Store: store}
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Go(func() {
				tr, path, refused := a, "/a", true
				switch i % 4 {
				case 1:
					path, refused = "/b", false
				case 2:
					tr = b
				case 3:
					tr, path = b, "/b"
				}
				if i%4 == 2 {
					refused = false
				}
				err := get(&http.Client{Transport: tr}, "https://example.com"+path)
				if errors.Is(err, ErrDisallowed) != refused {
					t.Errorf("request %d: %v, want refused=%v", i, err, refused)
				}
			})
		}
		wg.Wait()
		if n := calls(mock, exampleRobots); n != 1 {
			t.Errorf("two Transports on one Store fetched %d times, want 1", n)
		}
		if sa, sb := a.Stats(), b.Stats(); sa.FetchSuccess+sb.FetchSuccess != 1 || sa.StoreHits+sb.StoreHits != 1 {
			t.Errorf("stats a=%+v b=%+v, want one fetch and one store hit", sa, sb)
		}

		// A fresh Transport finds the entry in the Store.
		c := &Transport{Base: mock, Agent: "ABot", Store: store}
		wantRefused(t, &http.Client{Transport: c}, "https://example.com/a")
		if n := calls(mock, exampleRobots); n != 1 {
			t.Errorf("fetched %d times, want 1", n)
		}

		// An expired entry in the Store is fetched again, and put back.
		time.Sleep(DefaultTTL)
		refetch := time.Now()
		wantRefused(t, &http.Client{Transport: c}, "https://example.com/a")
		if n := calls(mock, exampleRobots); n != 2 {
			t.Errorf("fetched %d times, want 2", n)
		}
		e, _ := store.Get(context.Background(), "https://example.com")
		if e == nil || e.Access != AccessSuccess || e.FetchedAt.Before(refetch) {
			t.Errorf("store entry %+v, want the new fetch", e)
		}
	})
}

// failingStore is a Store whose every call fails.
type failingStore struct{ calls atomic.Int32 }

func (s *failingStore) Get(context.Context, string) (*Entry, error) {
	s.calls.Add(1)
	return nil, errors.New("store down")
}

func (s *failingStore) Put(context.Context, string, *Entry) error {
	s.calls.Add(1)
	return errors.New("store down")
}

func TestStoreErrorsAreNotFatal(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n"))
	store := &failingStore{}
	client := &http.Client{Transport: &Transport{Base: mock, Agent: "ExampleBot", Store: store}}
	wantRefused(t, client, "https://example.com/private")
	wantAllowed(t, client, "https://example.com/public")
	if n := store.calls.Load(); n != 2 {
		t.Errorf("store called %d times, want a Get and a Put", n)
	}
}

func TestMemoryStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := &MemoryStore{MaxEntries: 3}
		for i := range 10 {
			if err := s.Put(ctx, fmt.Sprint(i), &Entry{Failures: i}); err != nil {
				t.Fatal(err)
			}
		}
		n := 0
		for i := range 10 {
			if e, _ := s.Get(ctx, fmt.Sprint(i)); e != nil {
				n++
			}
		}
		if e, _ := s.Get(ctx, "9"); n != 3 || e == nil || e.Failures != 9 {
			t.Errorf("%d entries kept (want 3), last %+v", n, e)
		}

		unlock, ok, err := s.TryLock(ctx, "o", time.Minute)
		if !ok || err != nil {
			t.Fatalf("TryLock = %v, %v", ok, err)
		}
		if _, ok, _ := s.TryLock(ctx, "o", time.Minute); ok {
			t.Errorf("second TryLock succeeded")
		}
		if _, ok, _ := s.TryLock(ctx, "p", time.Minute); !ok {
			t.Errorf("TryLock of another origin failed")
		}
		unlock()
		unlock2, ok, _ := s.TryLock(ctx, "o", time.Minute)
		if !ok {
			t.Errorf("TryLock after unlock failed")
		}
		time.Sleep(time.Minute)
		if _, ok, _ := s.TryLock(ctx, "o", time.Minute); !ok {
			t.Errorf("TryLock after the ttl failed")
		}
		unlock2() // a stale unlock does not release the new holder
		if _, ok, _ := s.TryLock(ctx, "o", time.Minute); ok {
			t.Errorf("a stale unlock released the lock")
		}
	})
}

type closeIdleMock struct {
	http.RoundTripper
	n int
}

func (m *closeIdleMock) CloseIdleConnections() { m.n++ }

func TestCloseIdleConnections(t *testing.T) {
	base := &closeIdleMock{RoundTripper: newMock()}
	client := &http.Client{Transport: NewTransport(base, "ExampleBot")}
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

// benchBase is a base transport that answers robots.txt with rules and
// every other request with one shared response, doing no other work.
type benchBase struct{ page *http.Response }

const benchRobots = "User-agent: *\nDisallow: /private/\nDisallow: /*.php$\nAllow: /private/ok\n\n" +
	"User-agent: ExampleBot\nDisallow: /search\nDisallow: /cart/\nAllow: /search/about\nCrawl-delay: 0\n"

func (b benchBase) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path == "/robots.txt" {
		return httpmock.NewStringResponse(200, benchRobots), nil
	}
	return b.page, nil
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
		{"robots-no-pacing", &Transport{Base: base, Agent: "ExampleBot", IgnoreCrawlDelay: true, IgnoreRetryAfter: true}},
		{"robots-derived-agent", &Transport{Base: base}},
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
	if err := NewTransport(brokenBase{}, "ExampleBot").Check(context.Background(), u); err != nil {
		t.Errorf("robots.txt with a nil Body: %v, want an empty file (allowed)", err)
	}
	err := NewTransport(brokenBase{noResponse: true}, "ExampleBot").Check(context.Background(), u)
	if de, ok := errors.AsType[*DisallowedError](err); !ok || !errors.Is(de.Err, errNoResponse) {
		t.Errorf("robots.txt with no response: %v, want unreachable", err)
	}
}

// TestCachedBodyDropped checks that, without a Store, a cached origin keeps
// only the parsed form of its robots.txt, not the body beside it, and that
// with a Store the entry it is given still has the body.
func TestCachedBodyDropped(t *testing.T) {
	const body = "User-agent: *\nDisallow: /private\n"
	for _, withStore := range []bool{false, true} {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, body))
		tr := NewTransport(mock, "ExampleBot")
		store := &MemoryStore{}
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
				t.Errorf("the Store's entry = %+v, want the body", e)
			}
		}
	}
}
