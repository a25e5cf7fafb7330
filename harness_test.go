package robots

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"

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

func mustRegexp(s string) *regexp.Regexp { return regexp.MustCompile(s) }

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

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

// quietLog returns a logger for servers whose errors are expected.
func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }

// rtFunc is a base transport made of a func.
type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// hit is one request that reached a fakeOrigins.
type hit struct {
	at     time.Time
	server string // scheme://host:port, lower case, the port as a number
	uri    string // the request-URI as it goes on the wire
	path   string
	ua     string
	// pause is the Retry-After (in seconds) that the answer carried, or 0.
	pause time.Duration
}

// fakeOrigins is a base transport that stands for the servers of every
// origin: it logs each request that reaches it, by the server it reaches
// (so that two spellings of one host or port are one server), and answers
// with handle if set; else robots.txt with robots and pages with page (a
// status and a Retry-After, 0 for none); else 200 "page".
type fakeOrigins struct {
	handle func(req *http.Request) (status int, hdr http.Header, body string)
	robots func(server string) string
	page   func(server, path string) (status int, retryAfter time.Duration)

	// firstFetches exempts from check the fetches of robots.txt that
	// arrive before any other request to their server: Transports that
	// share a Pacer but no Store each fetch robots.txt on a first visit
	// without knowing its crawl-delay, and until one of them has taken a
	// turn with it, the Pacer does not know it either.
	firstFetches bool

	mu   sync.Mutex
	hits []hit
}

// serverOf returns the server that req reaches.
func serverOf(req *http.Request) string {
	host, port, err := net.SplitHostPort(req.URL.Host)
	if err != nil {
		host, port = req.URL.Host, map[string]string{"http": "80", "https": "443"}[req.URL.Scheme]
	}
	n, _ := strconv.Atoi(port)
	return fmt.Sprintf("%s://%s:%d", req.URL.Scheme, strings.ToLower(host), n)
}

func (s *fakeOrigins) RoundTrip(req *http.Request) (*http.Response, error) {
	server := serverOf(req)
	status, hdr, body := 200, http.Header{}, "page"
	switch {
	case s.handle != nil:
		status, hdr, body = s.handle(req)
		if hdr == nil {
			hdr = http.Header{}
		}
	case req.URL.Path == "/robots.txt" && s.robots != nil:
		body = s.robots(server)
	case req.URL.Path != "/robots.txt" && s.page != nil:
		var pause time.Duration
		status, pause = s.page(server, req.URL.Path)
		if pause > 0 {
			hdr.Set("Retry-After", strconv.Itoa(int(pause/time.Second)))
		}
	}
	var pause time.Duration
	if n, err := strconv.Atoi(hdr.Get("Retry-After")); err == nil && n > 0 {
		pause = time.Duration(n) * time.Second
	}
	s.mu.Lock()
	s.hits = append(s.hits, hit{time.Now(), server, req.URL.RequestURI(), req.URL.Path, req.Header.Get("User-Agent"), pause})
	s.mu.Unlock()
	return &http.Response{StatusCode: status, Header: hdr, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: req}, nil
}

// minGap fails t unless the requests that reached server are at least
// delay apart, and returns how many reached it.
func (s *fakeOrigins) minGap(t *testing.T, server string, delay time.Duration) int {
	t.Helper()
	hs := s.arrivals(server)
	for i := 1; i < len(hs); i++ {
		if gap := hs[i].at.Sub(hs[i-1].at); gap < delay {
			t.Errorf("%s: %s then %s only %v apart, want at least %v", server, hs[i-1].uri, hs[i].uri, gap, delay)
		}
	}
	return len(hs)
}

// check fails t unless the arrivals at each server are at least
// delay(server) apart, and none came during a pause that an answer asked
// for.
func (s *fakeOrigins) check(t *testing.T, delay func(server string) time.Duration) {
	t.Helper()
	s.mu.Lock()
	servers := map[string]bool{}
	for _, h := range s.hits {
		servers[h.server] = true
	}
	s.mu.Unlock()
	for server := range servers {
		d := delay(server)
		var pausedUntil time.Time
		first := s.firstFetches
		as := s.arrivals(server)
		for i, a := range as {
			first = first && a.path == "/robots.txt"
			if i > 0 && !first {
				if gap := a.at.Sub(as[i-1].at); gap < d {
					t.Errorf("%s: %s and %s arrived %v apart, want at least %v", server, as[i-1].path, a.path, gap, d)
				}
			}
			if a.at.Before(pausedUntil) {
				t.Errorf("%s: %s arrived %v before the end of a pause", server, a.path, pausedUntil.Sub(a.at))
			}
			if a.pause > 0 {
				pausedUntil = a.at.Add(a.pause)
			}
		}
	}
}

// arrivals returns the requests that reached server, in order.
func (s *fakeOrigins) arrivals(server string) []hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	var hs []hit
	for _, h := range s.hits {
		if h.server == server {
			hs = append(hs, h)
		}
	}
	return hs
}

// count returns how many requests reached server.
func (s *fakeOrigins) count(server string) int { return len(s.arrivals(server)) }

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

// noHold gives a test Pacer a Release that does nothing and a PushBack
// that pauses nothing.
type noHold struct{}

func (noHold) Release(context.Context, string, fleet.Answer) error { return nil }
func (noHold) PushBack(context.Context, string, time.Time, Backoff) (time.Time, error) {
	return time.Time{}, nil
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

// noDefaultPace sets NoDefaultPace on t, for a test that is not about the
// default pace and runs on the real clock, and returns t.
func noDefaultPace(t *Transport) *Transport {
	t.NoDefaultPace = true
	return t
}
