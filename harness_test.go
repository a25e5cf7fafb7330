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
	if _, err := os.Stat("testdata/shared/corpus"); err != nil {
		fmt.Fprintln(os.Stderr, "robots: testdata/shared/corpus (../shared/corpus) is absent: the fuzz seeds from it are not added")
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

// memPacer is a Pacer shared by several Transports, as the processes of a
// fleet share one, kept in memory. It is written from the Pacer contract
// alone, apart from the Transport's own pace, so that a test through it
// does not share the pace's mistakes.
type memPacer struct {
	epoch time.Time
	mu    sync.Mutex
	last  map[string]memTurn       // the latest turn taken
	pause map[string]time.Duration // since epoch: the end of the pause
	bo    map[string]memBackoff
	ids   uint64
}

// memTurn is a turn of a memPacer: when, since its epoch, the interval it
// keeps, and while it is held, its ID and the end of its hold.
type memTurn struct {
	at, every time.Duration
	id        uint64
	holdUntil time.Duration
}

// memForgive is the Forgive of the latest PushBack to any memPacer: the
// tests give one Backoff to all.
var memForgive time.Duration

// memBackoff is a memPacer's back-off of one origin.
type memBackoff struct {
	level      int
	start, end time.Duration
}

func (p *memPacer) Reserve(ctx context.Context, origin string, r fleet.TurnRequest) (fleet.Turn, error) {
	every := r.Every
	if !r.Known {
		every = unknownEvery(every)
	}
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
		if last.id != 0 && now < last.holdUntil {
			return fleet.Turn{InFlight: true, Wait: last.at + max(ask, last.every) - now}, nil
		}
		if last.id != 0 {
			last.at = last.holdUntil // never released: spaced from its hold's end
		}
		at = max(at, last.at+max(ask, last.every))
		if every < 0 {
			keep = max(keep, last.every)
		}
	}
	if wait := at - now; wait > 0 && wait >= r.MaxWait {
		return fleet.Turn{Wait: wait}, nil
	}
	if p.last == nil {
		p.last = make(map[string]memTurn)
	}
	t := memTurn{at: at, every: keep}
	bo, backingOff := p.bo[origin]
	backingOff = backingOff && now <= bo.end+memForgive
	if r.Hold > 0 && (keep > 0 || !r.Known || backingOff) {
		p.ids++
		t.id, t.holdUntil = p.ids, at+r.Hold
	}
	p.last[origin] = t
	return fleet.Turn{OK: true, Wait: at - now, ID: t.id}, nil
}

func (p *memPacer) Release(ctx context.Context, origin string, id uint64, answered time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.last[origin]; ok && t.id == id && id != 0 {
		t.at = max(t.at, answered.Sub(p.epoch), time.Since(p.epoch))
		t.id = 0
		p.last[origin] = t
	}
	return nil
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

func (p *memPacer) PushBack(ctx context.Context, origin string, sent time.Time, b Backoff) (time.Time, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now, s := time.Since(p.epoch), sent.Sub(p.epoch)
	if p.bo == nil {
		p.bo = make(map[string]memBackoff)
	}
	bo := p.bo[origin]
	if bo.level > 0 && s <= bo.start {
		return p.epoch.Add(bo.end), nil
	}
	if bo.level > 0 && now > bo.end+b.Forgive {
		bo.level = 0
	}
	bo.level++
	d := b.First
	for i := 1; i < bo.level && d < b.Max; i++ {
		d *= 2
	}
	bo.start, bo.end = now, now+min(d, b.Max)
	memForgive = b.Forgive
	p.bo[origin] = bo
	if p.pause == nil {
		p.pause = make(map[string]time.Duration)
	}
	p.pause[origin] = max(p.pause[origin], bo.end)
	return p.epoch.Add(bo.end), nil
}

// noHold gives a test Pacer a Release that does nothing and a PushBack
// that pauses nothing.
type noHold struct{}

func (noHold) Release(context.Context, string, uint64, time.Time) error { return nil }
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
