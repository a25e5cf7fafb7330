package frontier_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/frontier"
)

// withHeader returns resp with the header fields kv (name, value, ...).
func withHeader(resp *http.Response, kv ...string) *http.Response {
	resp.Header = http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		resp.Header.Set(kv[i], kv[i+1])
	}
	return resp
}

// TestAnsweredOutcomes: which answers are deferred (retried), and which
// finish a URL.
func TestAnsweredOutcomes(t *testing.T) {
	status := func(code int) *http.Response { return &http.Response{StatusCode: code, Body: http.NoBody} }
	urlErr := func(err error) error { return &url.Error{Op: "Get", URL: "http://a.test/", Err: err} }
	for _, c := range []struct {
		name string
		resp *http.Response
		err  error
		want frontier.Outcome
	}{
		{"200", status(200), nil, frontier.Finished},
		{"404", status(404), nil, frontier.Finished},
		{"500", status(500), nil, frontier.Finished},
		{"429", status(429), nil, frontier.Retrying},
		{"503", status(503), nil, frontier.Retrying},
		// Payment and licenses are answers, never retried.
		{"402 pay-per-crawl", withHeader(status(402), "Crawler-Price", "USD 0.01", "Retry-After", "1"), nil, frontier.Finished},
		{"402 license", withHeader(status(402), "Www-Authenticate", `License error="invalid_request"`), nil, frontier.Finished},
		{"401 license", withHeader(status(401), "Www-Authenticate", `License error="invalid_token"`), nil, frontier.Finished},
		{"connection refused", nil, urlErr(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), frontier.Retrying},
		{"connection reset", nil, urlErr(&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}), frontier.Retrying},
		{"client timeout", nil, urlErr(fmt.Errorf("%w (Client.Timeout exceeded while awaiting headers)", context.DeadlineExceeded)), frontier.Retrying},
		{"cut short", nil, urlErr(io.ErrUnexpectedEOF), frontier.Retrying},
		{"DNS timeout", nil, urlErr(&net.OpError{Op: "dial", Err: &net.DNSError{Err: "timeout", Name: "a.test", IsTimeout: true}}), frontier.Retrying},
		{"no such host", nil, urlErr(&net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "a.test", IsNotFound: true}}), frontier.Finished},
		{"certificate", nil, urlErr(errors.New("tls: failed to verify certificate: x509: certificate signed by unknown authority")), frontier.Finished},
		{"refused by a rule", nil, urlErr(fmt.Errorf("refused: %w", robots.ErrDisallowed)), frontier.Finished},
		{"robots.txt unreachable", nil, urlErr(fmt.Errorf("refused: %w", robots.ErrUnreachable)), frontier.Finished},
		{"not yet", nil, urlErr(&robots.TurnError{Origin: "http://a.test", RetryAt: time.Now(), Reason: robots.ReasonCrawlDelay}), frontier.Requeued},
		{"canceled", nil, urlErr(context.Canceled), frontier.Requeued},
	} {
		f := &frontier.Frontier{RetryDelay: time.Nanosecond}
		f.Push("http://a.test/")
		u, _ := f.Next(context.Background())
		got, err := f.Answered(u, c.resp, c.err)
		if got != c.want || err != nil {
			t.Errorf("%s: Answered = %v, %v; want %v", c.name, got, err, c.want)
		}
		if n, want := f.Len(), map[bool]int{true: 0, false: 1}[c.want == frontier.Finished]; n != want {
			t.Errorf("%s: Len = %d after %v, want %d", c.name, n, got, want)
		}
		if _, err := f.Answered(u, c.resp, c.err); err != frontier.ErrNotOut {
			t.Errorf("%s: Answered of a URL not out = %v, want ErrNotOut", c.name, err)
		}
	}
	// A negative MaxRetries retries nothing.
	f := &frontier.Frontier{MaxRetries: -1}
	f.Push("http://a.test/")
	u, _ := f.Next(context.Background())
	if got, _ := f.Answered(u, status(503), nil); got != frontier.GaveUp || f.Len() != 0 || f.Counts().GaveUp != 1 {
		t.Errorf("MaxRetries -1: Answered = %v, Len %d, %+v; want GaveUp and forgotten", got, f.Len(), f.Counts())
	}
}

// deferringWeb is a Base whose sites answer as their paths say, and logs
// when each request arrived and its answer left, by URL.
type deferringWeb struct {
	mu    sync.Mutex
	n     map[string]int // requests so far, by URL
	log   map[string][]hit
	rules string
}

func (w *deferringWeb) RoundTrip(req *http.Request) (*http.Response, error) {
	arrived := time.Now()
	time.Sleep(50 * time.Millisecond)
	u := req.URL.String()
	w.mu.Lock()
	w.n[u]++
	n := w.n[u]
	w.log[u] = append(w.log[u], hit{path: req.URL.Path, arrived: arrived, left: time.Now()})
	w.mu.Unlock()
	code, h, body := 200, http.Header{}, "page"
	switch p := req.URL.Path; {
	case p == "/robots.txt":
		body = w.rules
	case p == "/later" && n == 1:
		code = 429
		h.Set("Retry-After", "2")
	case p == "/busy":
		code = 503
	case p == "/gone":
		code = 404
	case p == "/flaky" && n == 1:
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	case p == "/nohost":
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: req.URL.Host, IsNotFound: true}}
	}
	return &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// TestRetryDeferred crawls through a robots.Transport: a page answered 429
// with Retry-After: 2 is fetched again after the pause, as the site sees
// it; one answered 503 forever is sent 1+DefaultMaxRetries times, further
// apart each, then given up; a 404, a refusal by a rule and a host that
// does not exist are never retried; a connection reset is.
func TestRetryDeferred(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		web := &deferringWeb{n: map[string]int{}, log: map[string][]hit{}, rules: "User-agent: *\nDisallow: /private\n"}
		tr := &robots.Transport{Base: web, Agent: "ExampleBot", MaxWait: 10 * time.Millisecond}
		client := &http.Client{Transport: tr}
		f := &frontier.Frontier{Turns: tr}
		for _, u := range []string{"http://a.test/later", "http://a.test/gone", "http://a.test/private", "http://b.test/busy",
			"http://c.test/flaky", "http://c.test/nohost", "http://c.test/ok"} {
			f.Push(u)
		}
		var mu sync.Mutex
		outcomes := map[string][]frontier.Outcome{}
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				for {
					u, err := f.Next(context.Background())
					if err != nil {
						return
					}
					resp, err := client.Get(u)
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					o, err := f.Answered(u, resp, err)
					if err != nil {
						t.Errorf("Answered(%s) = %v", u, err)
					}
					mu.Lock()
					outcomes[u] = append(outcomes[u], o)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		sent := func(u string) []hit { return web.log[u] }
		want := map[string]string{
			"http://a.test/later":   "[retrying finished]",
			"http://a.test/gone":    "[finished]",
			"http://a.test/private": "[finished]",
			"http://b.test/busy":    "[retrying retrying retrying gave up]",
			"http://c.test/flaky":   "[retrying finished]",
			"http://c.test/nohost":  "[finished]",
			"http://c.test/ok":      "[finished]",
		}
		for u, w := range want {
			var got []frontier.Outcome
			for _, o := range outcomes[u] {
				if o != frontier.Requeued { // refused for now: not an answer
					got = append(got, o)
				}
			}
			if g := fmt.Sprint(got); g != w {
				t.Errorf("%s: %s, want %s", u, g, w)
			}
		}
		if n := len(sent("http://a.test/private")); n != 0 {
			t.Errorf("a URL refused by a rule was sent %d times", n)
		}
		if l := sent("http://a.test/later"); len(l) != 2 || l[1].arrived.Sub(l[0].left) < 2*time.Second {
			t.Errorf("/later: %d requests, want 2, the second 2 s after the 429 at least: %+v", len(l), l)
		}
		l := sent("http://b.test/busy")
		if len(l) != 1+frontier.DefaultMaxRetries {
			t.Fatalf("/busy sent %d times, want %d", len(l), 1+frontier.DefaultMaxRetries)
		}
		for i := 1; i < len(l); i++ {
			least := frontier.DefaultRetryDelay << (i - 1)
			gap := l[i].arrived.Sub(l[i-1].left)
			if gap < least {
				t.Errorf("/busy: retry %d %v after the 503, want %v at least", i, gap, least)
			}
			if i > 1 && gap <= l[i-1].arrived.Sub(l[i-2].left) {
				t.Errorf("/busy: retry %d %v after the 503, no longer than the one before", i, gap)
			}
		}
		c := f.Counts()
		if c.Retried != 5 || c.GaveUp != 1 || c.Refused != 1 || c.Finished != 7 || c.Queued+c.Out != 0 {
			t.Errorf("Counts = %+v, want 5 retried, 1 given up, 1 refused, 7 finished", c)
		}
	})
}

// TestRetryDelay: with no Transport to tell the site's pause (no Turns, or
// one whose turns are always now), retries of a URL still wait RetryDelay,
// doubling, and stop at MaxRetries.
func TestRetryDelay(t *testing.T) {
	for _, turns := range []frontier.Turns{nil, nowTurns{}} {
		synctest.Test(t, func(t *testing.T) {
			web := &deferringWeb{n: map[string]int{}, log: map[string][]hit{}}
			f := &frontier.Frontier{Turns: turns, MaxRetries: 4, RetryDelay: 3 * time.Second}
			f.Push("http://b.test/busy")
			f.Push("http://b.test/other")
			for {
				u, err := f.Next(t.Context())
				if err != nil {
					break
				}
				req, _ := http.NewRequest(http.MethodGet, u, nil)
				resp, err := web.RoundTrip(req)
				f.Answered(u, resp, err)
			}
			l := web.log["http://b.test/busy"]
			if len(l) != 5 {
				t.Fatalf("/busy sent %d times, want 5", len(l))
			}
			for i := 1; i < len(l); i++ {
				if gap, want := l[i].arrived.Sub(l[i-1].left), 3*time.Second<<(i-1); gap != want {
					t.Errorf("retry %d %v after the 503, want %v", i, gap, want)
				}
			}
			if c := f.Counts(); c.Retried != 4 || c.GaveUp != 1 || c.Finished != 2 {
				t.Errorf("Counts = %+v, want 4 retried, 1 given up, 2 finished", c)
			}
		})
	}
}

// everyTurns is a Turns whose every turn is d after now.
type everyTurns time.Duration

func (d everyTurns) NextTurn(context.Context, *url.URL) (time.Time, error) {
	return time.Now().Add(time.Duration(d)), nil
}

// TestWaitCounts: the waiting the Frontier does for the sites' turns, and
// its workers' idle time, show in Counts.
func TestWaitCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &frontier.Frontier{Turns: everyTurns(2 * time.Second)}
		for i := range 3 {
			f.Push(fmt.Sprintf("http://a.test/%d", i))
		}
		f.Push("http://b.test/")
		synctest.Wait() // the probes have answered: both sites wait 2 s
		if c := f.Counts(); c.Held != 2 || c.Ready != 0 || c.TurnWaits != 0 {
			t.Errorf("after the probes: %+v, want 2 sites held", c)
		}
		time.Sleep(2 * time.Second)
		if c := f.Counts(); c.Held != 0 || c.Ready != 2 {
			t.Errorf("at their turn: %+v, want 2 sites ready", c)
		}
		for {
			u, err := f.Next(t.Context())
			if err != nil {
				break
			}
			f.Done(u, nil)
		}
		// a.test: 3 turns 2 s apart (after its probe and its first two
		// answers); b.test: 1. The worker came at the first turns, and
		// waited for a.test's next two.
		c := f.Counts()
		if c.TurnWaits != 4 || c.TurnWaitTime != 8*time.Second || c.Held != 0 {
			t.Errorf("Counts = %+v, want 4 turn waits, 8 s", c)
		}
		if c.IdleWaits != 2 || c.IdleTime != 4*time.Second {
			t.Errorf("Counts = %+v, want 2 idle waits, 4 s", c)
		}
	})
}
