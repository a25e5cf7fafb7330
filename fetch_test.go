package robots

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"
)

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
			client := &http.Client{Transport: noDefaultPace(NewTransport(mock, "ExampleBot"))}
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
		client := &http.Client{Transport: noDefaultPace(NewTransport(mock, "ExampleBot"))}
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
		client := &http.Client{Transport: noDefaultPace(NewTransport(mock, "ExampleBot"))}
		wantAllowed(t, client, "https://example.com/page")
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestBodySizeLimit(t *testing.T) {
	head := "User-agent: *\nDisallow: /head\n"
	tail := "Disallow: /tail\n"
	pad := strings.Repeat("# padding line\n", DefaultMaxBodySize/15+1)
	big := head + pad + tail // /tail lies past 500 KiB

	t.Run("rules past the limit are ignored", func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, big))
		client := &http.Client{Transport: noDefaultPace(NewTransport(mock, "ExampleBot"))}
		wantRefused(t, client, "https://example.com/head")
		wantAllowed(t, client, "https://example.com/tail")
	})

	t.Run("a larger MaxBodySize reads them", func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, big))
		client := &http.Client{Transport: &Transport{NoDefaultPace: true, Base: mock, Agent: "ExampleBot", MaxBodySize: 1 << 20}}
		wantRefused(t, client, "https://example.com/tail")
	})

	t.Run("a smaller MaxBodySize is raised to 500 KiB", func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, head+strings.Repeat("#\n", 1000)+tail))
		client := &http.Client{Transport: &Transport{NoDefaultPace: true, Base: mock, Agent: "ExampleBot", MaxBodySize: 100}}
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
		client := &http.Client{Transport: noDefaultPace(NewTransport(mock, "ExampleBot"))}
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

// TestFetchTimeoutBoundsBase: a Base that ignores its request's context,
// with a RoundTrip that does not return or a body whose Read blocks, cannot
// hold the fetch past FetchTimeout: the fetch ends as unreachable, a request
// without a deadline is refused then, the origin is fetched again after the
// back-off, and a response that Base returns late has its body closed. No
// goroutine is left once Base returns (synctest.Test fails on one that is
// blocked at its end).
func TestFetchTimeoutBoundsBase(t *testing.T) {
	for _, hang := range []string{"RoundTrip", "Read"} {
		t.Run(hang, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				var calls atomic.Int32
				late := &closeTracker{Reader: strings.NewReader("User-agent: *\nAllow: /\n")}
				base := rtFunc(func(req *http.Request) (*http.Response, error) {
					if req.URL.Path != "/robots.txt" {
						return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
					}
					if calls.Add(1) > 1 {
						return &http.Response{StatusCode: 200, ContentLength: -1, Request: req,
							Body: io.NopCloser(strings.NewReader("User-agent: *\nAllow: /\n"))}, nil
					}
					if hang == "RoundTrip" {
						<-release // ignoring req.Context()
						return &http.Response{StatusCode: 200, ContentLength: -1, Request: req, Body: late}, nil
					}
					return &http.Response{StatusCode: 200, ContentLength: -1, Request: req,
						Body: io.NopCloser(chanReader(release))}, nil
				})
				tr := &Transport{Base: base, Agent: "ExampleBot", FetchTimeout: 10 * time.Second}
				start := time.Now()
				req, _ := http.NewRequest(http.MethodGet, "https://example.com/page", nil) // no deadline
				_, err := tr.RoundTrip(req)
				if !errors.Is(err, ErrUnreachable) || !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("err = %v, want ErrUnreachable from the fetch's deadline", err)
				}
				if d := time.Since(start); d != 10*time.Second {
					t.Errorf("refused after %v, want FetchTimeout, 10s", d)
				}
				time.Sleep(retryMin)
				req, _ = http.NewRequest(http.MethodGet, "https://example.com/page", nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatalf("after the back-off: %v, want a new fetch and the page", err)
				}
				resp.Body.Close()
				close(release)
				synctest.Wait()
				if hang == "RoundTrip" && !late.closed.Load() {
					t.Error("the body of the response Base returned after FetchTimeout was not closed")
				}
			})
		})
	}
}

// closeTracker is a body that records whether it was closed.
type closeTracker struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeTracker) Close() error {
	c.closed.Store(true)
	return nil
}

// TestFetchTimeoutBoundsHangingBody guards against this: "FetchTimeout ...
// bounds each fetch of robots.txt, redirects and body included". A Base whose
// body ignores the request's context (net/http's own would not) keeps the
// fetch, and every request to the origin, waiting forever: after FetchTimeout
// the origin should be refused as unreachable, and it is still waiting.
func TestFetchTimeoutBoundsHangingBody(t *testing.T) {
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

// TestRobotsTxtRedirectHopTakesTurn guards against this: robots.txt of
// http://example.com commonly redirects to https://example.com/robots.txt.
// That hop is a request to the https origin, which the crawler is already
// pacing by its crawl-delay, but it takes no turn there.
func TestRobotsTxtRedirectHopTakesTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeOrigins{handle: func(req *http.Request) (int, http.Header, string) {
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

// TestFetchCarriesNoCallerTrace: the caller's httptrace hooks see its own
// request only, not the Transport's fetch of robots.txt.
func TestFetchCarriesNoCallerTrace(t *testing.T) {
	var mu sync.Mutex
	var traced []string
	base := rtFunc(func(req *http.Request) (*http.Response, error) {
		if tr := httptrace.ContextClientTrace(req.Context()); tr != nil && tr.GetConn != nil {
			tr.GetConn(req.URL.Host)
			mu.Lock()
			traced = append(traced, req.URL.Path)
			mu.Unlock()
		}
		return httpmock.NewStringResponse(200, ""), nil
	})
	tr := noDefaultPace(NewTransport(base, "ExampleBot"))
	for _, deadline := range []bool{false, true} {
		traced = nil
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GetConn: func(string) {}})
		if deadline {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Minute)
			defer cancel()
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", "https://t"+map[bool]string{false: "1", true: "2"}[deadline]+".example/page", nil)
		if _, err := tr.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
		if strings.Join(traced, ",") != "/page" {
			t.Errorf("deadline %v: traced %q, want the caller's request only", deadline, traced)
		}
	}
}

// TestFetchFiresNoCallerTraceHooks is a regression guard: "A fetch ... carries
// none of its [request's] context's values (its httptrace hooks, for one)",
// both when the request can be canceled (the fetch runs on its own
// goroutine) and when it cannot (the fetch runs on the caller's).
func TestFetchFiresNoCallerTraceHooks(t *testing.T) {
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
		client := &http.Client{Transport: noDefaultPace(NewTransport(base, "ExampleBot"))}
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
