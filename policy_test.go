package robots

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/jarcoal/httpmock"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		status int
		want   fleet.Access
	}{
		{100, fleet.AccessUnreachable}, {103, fleet.AccessUnreachable},
		{200, fleet.AccessSuccess}, {203, fleet.AccessSuccess}, {204, fleet.AccessSuccess}, {206, fleet.AccessSuccess}, {299, fleet.AccessSuccess},
		{300, fleet.AccessUnreachable}, // only reached when a redirect cannot be followed; see fetch
		{400, fleet.AccessUnavailable}, {401, fleet.AccessUnavailable}, {403, fleet.AccessUnavailable}, {404, fleet.AccessUnavailable},
		{410, fleet.AccessUnavailable}, {418, fleet.AccessUnavailable}, {451, fleet.AccessUnavailable}, {499, fleet.AccessUnavailable},
		{429, fleet.AccessUnreachable},
		{500, fleet.AccessUnreachable}, {502, fleet.AccessUnreachable}, {503, fleet.AccessUnreachable}, {599, fleet.AccessUnreachable},
		{0, fleet.AccessUnreachable}, {600, fleet.AccessUnreachable}, {999, fleet.AccessUnreachable}, {-1, fleet.AccessUnreachable},
	}
	for _, c := range cases {
		if got := classify(c.status); got != c.want {
			t.Errorf("classify(%d) = %v want %v", c.status, got, c.want)
		}
	}
}

func TestMaxAge(t *testing.T) {
	cases := []struct {
		header string
		want   time.Duration
		ok     bool
	}{
		{"", 0, false},
		{"public", 0, false},
		{"max-age=60", time.Minute, true},
		{"MAX-AGE=60", time.Minute, true},
		{"public, max-age=3600, must-revalidate", time.Hour, true},
		{`max-age="120"`, 2 * time.Minute, true},
		{"max-age = 30", 30 * time.Second, true},
		{"max-age=-5", 0, true},  // invalid: stale (RFC 9111 §4.2.1)
		{"max-age=abc", 0, true}, // invalid: stale
		{"max-age=99999999999999999999", time.Duration(1<<63-1) / time.Second * time.Second, true}, // RFC 9111 §1.2.2
		{"max-age=9999999999999", time.Duration(1<<63-1) / time.Second * time.Second, true},
		{"no-cache", 0, true},
		{"max-age=600, no-store", 0, true},
		{"s-maxage=60", 0, false},
	}
	for _, c := range cases {
		got, ok := maxAge(c.header)
		if got != c.want || ok != c.ok {
			t.Errorf("maxAge(%q) = %v, %v want %v, %v", c.header, got, ok, c.want, c.ok)
		}
	}
}

func TestLifetimeFunc(t *testing.T) {
	cases := []struct {
		ttl    time.Duration
		header string
		want   time.Duration
	}{
		{DefaultTTL, "", DefaultTTL},
		{DefaultTTL, "max-age=7200", 2 * time.Hour},
		{DefaultTTL, "max-age=1", minTTL},
		{DefaultTTL, "no-store", minTTL},
		{DefaultTTL, "max-age=172800", DefaultTTL}, // max-age never lengthens
		{time.Hour, "max-age=7200", time.Hour},
		{30 * time.Second, "max-age=1", 30 * time.Second}, // a TTL below minTTL is kept
	}
	for _, c := range cases {
		if got := lifetime(c.ttl, c.header); got != c.want {
			t.Errorf("lifetime(%v, %q) = %v want %v", c.ttl, c.header, got, c.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute,
		16 * time.Minute, 32 * time.Minute, time.Hour, time.Hour}
	for i, w := range want {
		if got := backoff(i + 1); got != w {
			t.Errorf("backoff(%d) = %v want %v", i+1, got, w)
		}
	}
	if got := backoff(1 << 30); got != retryMax {
		t.Errorf("backoff(huge) = %v want %v", got, retryMax)
	}
}

func TestNext(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	down := &fetchResult{access: fleet.AccessUnreachable, status: 503, err: errors.New("robots: 503")}
	good := &fetchResult{access: fleet.AccessSuccess, body: []byte("User-agent: *\nDisallow: /\n"), lifetime: time.Hour}

	e := next(nil, good, now)
	if e.Access != fleet.AccessSuccess || string(e.Body) != string(good.body) || !e.FetchedAt.Equal(now) ||
		!e.Expires.Equal(now.Add(time.Hour)) || !e.UnreachableSince.IsZero() || e.Failures != 0 || e.Error != "" {
		t.Errorf("after success: %+v", e)
	}

	// Unreachable with a good copy: the copy is kept.
	e2 := next(e, down, now.Add(2*time.Hour))
	if e2.Access != fleet.AccessSuccess || string(e2.Body) != string(good.body) || !e2.FetchedAt.Equal(now) {
		t.Errorf("stale copy not kept: %+v", e2)
	}
	if !e2.UnreachableSince.Equal(now.Add(2*time.Hour)) || e2.Failures != 1 || e2.Error != "robots: 503" ||
		!e2.Expires.Equal(now.Add(2*time.Hour+retryMin)) {
		t.Errorf("after first failure: %+v", e2)
	}
	if e.Failures != 0 || !e.UnreachableSince.IsZero() {
		t.Errorf("next modified prev: %+v", e)
	}
	e3 := next(e2, down, now.Add(3*time.Hour))
	if !e3.UnreachableSince.Equal(e2.UnreachableSince) || e3.Failures != 2 || !e3.Expires.Equal(now.Add(3*time.Hour+2*retryMin)) {
		t.Errorf("after second failure: %+v", e3)
	}

	// Unreachable without a copy.
	e4 := next(nil, down, now)
	if e4.Access != fleet.AccessUnreachable || e4.Body != nil || !e4.UnreachableSince.Equal(now) || e4.Failures != 1 {
		t.Errorf("unreachable without a copy: %+v", e4)
	}

	// Retry-After longer than the back-off wins, capped at a day.
	ra := &fetchResult{access: fleet.AccessUnreachable, status: 429, retryAfter: 3 * time.Hour, err: errors.New("robots: 429")}
	if e := next(nil, ra, now); !e.Expires.Equal(now.Add(3 * time.Hour)) {
		t.Errorf("Retry-After 3h: expires %v", e.Expires.Sub(now))
	}
	ra.retryAfter = 30 * 24 * time.Hour
	if e := next(nil, ra, now); !e.Expires.Equal(now.Add(DefaultTTL)) {
		t.Errorf("Retry-After 30d: expires %v", e.Expires.Sub(now))
	}
	ra.retryAfter = time.Second // shorter than the back-off: the back-off wins
	if e := next(nil, ra, now); !e.Expires.Equal(now.Add(retryMin)) {
		t.Errorf("Retry-After 1s: expires %v", e.Expires.Sub(now))
	}

	// Recovery clears the unreachable run.
	if e5 := next(e3, good, now.Add(4*time.Hour)); !e5.UnreachableSince.IsZero() || e5.Failures != 0 || e5.Error != "" {
		t.Errorf("after recovery: %+v", e5)
	}
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
			client := &http.Client{Transport: noDefaultPace(NewTransport(mock, "ExampleBot"))}
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
	client := &http.Client{Transport: noDefaultPace(NewTransport(mock, "ExampleBot"))}
	de := wantRefused(t, client, "https://example.com/")
	if !errors.Is(de, cause) {
		t.Errorf("DisallowedError.Err = %v, want it to wrap %v", de.Err, cause)
	}
	if !strings.Contains(de.Error(), "unreachable") || !strings.Contains(de.Error(), "no such host") {
		t.Errorf("Error() = %q, want it to say unreachable and why", de.Error())
	}
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
		{"max-age=0", 0, minTTL},
		{"no-store", 0, minTTL},
		{"max-age=999999", 0, 24 * time.Hour},
		{"", 2 * time.Hour, 2 * time.Hour},
		{"max-age=86400", 48 * time.Hour, 24 * time.Hour},
	} {
		t.Run(fmt.Sprintf("%q ttl=%v", c.cacheControl, c.ttl), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mock := newMock()
				mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n").
					HeaderSet(http.Header{"Cache-Control": {c.cacheControl}}))
				client := &http.Client{Transport: &Transport{NoDefaultPace: true, Base: mock, Agent: "ExampleBot", TTL: c.ttl}}
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
		time.Sleep(retryMax)
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
		time.Sleep(unreachableAllowAfter - time.Hour)
		wantRefused(t, client, "https://example.com/x")
		time.Sleep(time.Hour)
		wantAllowed(t, client, "https://example.com/x")
		n := calls(mock, exampleRobots)
		if n > 2+30*24 {
			t.Errorf("fetched %d times in 30 days, want at most one an hour", n)
		}
	})
}

func TestMaxAgeHeaderLines(t *testing.T) {
	for _, c := range []struct {
		lines []string
		want  time.Duration
		ok    bool
	}{
		{nil, 0, false},
		{[]string{"public", "max-age=120"}, 2 * time.Minute, true},
		{[]string{"max-age=60, max-age=86400"}, time.Minute, true},
		{[]string{"max-age=300", "max-age=60"}, 5 * time.Minute, true},
		{[]string{"max-age=abc", "max-age=600"}, 0, true}, // an invalid first max-age: stale
		{[]string{"max-age=-1, max-age=600"}, 0, true},
		{[]string{"max-age", "max-age=600"}, 0, true},
		{[]string{"max-age=+60"}, 0, true},
		{[]string{`max-age="120"`, "max-age=600"}, 2 * time.Minute, true},
		{[]string{`max-age="120`}, 0, true},
		{[]string{"MAX-AGE = 120 "}, 2 * time.Minute, true},
		{[]string{"max-age=99999999999999999999999"}, time.Duration(1<<63-1) / time.Second * time.Second, true},
		{[]string{`private="x, y"`, "max-age=300"}, 5 * time.Minute, true},
		{[]string{"max-age=600", "no-cache"}, 0, true},
		{[]string{"no-store", "max-age=600"}, 0, true},
		{[]string{"", "s-maxage=60"}, 0, false},
	} {
		got, ok := maxAge(c.lines...)
		if got != c.want || ok != c.ok {
			t.Errorf("maxAge(%q) = %v, %v want %v, %v", c.lines, got, ok, c.want, c.ok)
		}
	}
	for _, c := range []struct {
		lines []string
		want  time.Duration
	}{
		{[]string{"public", "max-age=7200"}, 2 * time.Hour},
		{[]string{"max-age=60, max-age=86400"}, minTTL},
		{[]string{"max-age=3600", "max-age=1"}, time.Hour},
		{[]string{"max-age=3600", "no-cache"}, minTTL},
		{[]string{"max-age=abc", "max-age=3600"}, minTTL},
		{[]string{"max-age=99999999999"}, DefaultTTL},
	} {
		if got := lifetime(DefaultTTL, c.lines...); got != c.want {
			t.Errorf("lifetime(%v, %q) = %v want %v", DefaultTTL, c.lines, got, c.want)
		}
	}
}

func TestCacheControlHeaderLines(t *testing.T) {
	for _, c := range []struct {
		lines []string
		want  time.Duration
	}{
		{[]string{"public", "max-age=120"}, 2 * time.Minute},
		{[]string{"max-age=60, max-age=86400"}, minTTL},
		{[]string{"max-age=300", "max-age=86400"}, 5 * time.Minute},
		{[]string{"max-age=300", "no-store"}, minTTL},
	} {
		t.Run(strings.Join(c.lines, "|"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mock := newMock()
				mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n").
					HeaderSet(http.Header{"Cache-Control": c.lines}))
				client := &http.Client{Transport: noDefaultPace(NewTransport(mock, "ExampleBot"))}
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

// TestEntryZeroFields: what an Entry from a Store means with each of its
// fields left at the zero value (or out of range). The zero Access refuses
// (TestZeroEntryRefuses); the rest:
//   - Body nil with AccessSuccess is an empty robots.txt: everything is
//     allowed, as for a file fetched empty (a Store that encodes entries
//     cannot tell nil from empty);
//   - a zero Expires is long past: the entry is not used as it is, the
//     origin is fetched again, and the entry stays the last good copy if
//     that fetch fails;
//   - a zero FetchedAt is used like any other until Expires, and is older
//     than any Forget;
//   - Failures out of range (negative, or the largest int) give a back-off
//     within retryMin..retryMax and a count that stays positive.
func TestEntryZeroFields(t *testing.T) {
	const rules = "User-agent: *\nDisallow: /private\n"
	far := time.Now().Add(time.Hour)
	type result struct {
		private bool // whether /private is allowed
		fetches int  // robots.txt fetches
	}
	for _, c := range []struct {
		name   string
		entry  *fleet.Entry
		status int // of the robots.txt the origin serves
		forget bool
		want   result
	}{
		{"success, nil Body", &fleet.Entry{Access: fleet.AccessSuccess, Expires: far}, 200, false, result{true, 0}},
		{"success, zero Expires", &fleet.Entry{Access: fleet.AccessSuccess, Body: []byte("User-agent: *\nDisallow: /\n")}, 200, false, result{false, 1}},
		{"success, zero Expires, origin unreachable", &fleet.Entry{Access: fleet.AccessSuccess, Body: []byte("User-agent: *\nAllow: /private\nDisallow: /\n")}, 503, false, result{true, 1}},
		{"unavailable, zero Expires", &fleet.Entry{Access: fleet.AccessUnavailable}, 200, false, result{false, 1}},
		{"unreachable, zero Expires", &fleet.Entry{}, 200, false, result{false, 1}},
		{"unavailable", &fleet.Entry{Access: fleet.AccessUnavailable, Expires: far}, 200, false, result{true, 0}},
		{"zero FetchedAt", &fleet.Entry{Access: fleet.AccessSuccess, Body: []byte("User-agent: *\nAllow: /\n"), Expires: far}, 200, false, result{true, 0}},
		{"zero FetchedAt, forgotten", &fleet.Entry{Access: fleet.AccessSuccess, Body: []byte("User-agent: *\nAllow: /\n"), Expires: far}, 200, true, result{false, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var fetches atomic.Int32
			base := rtFunc(func(req *http.Request) (*http.Response, error) {
				if req.URL.Path == "/robots.txt" {
					fetches.Add(1)
					return &http.Response{StatusCode: c.status, Body: io.NopCloser(strings.NewReader(rules)), Request: req}, nil
				}
				return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
			})
			store := &fleet.MemoryStore{}
			store.Put(context.Background(), "https://example.com", c.entry)
			tr := &Transport{NoDefaultPace: true, Base: base, Agent: "ExampleBot", Store: store}
			if c.forget {
				// Forget drops what the Transport holds: load it first.
				if err := tr.Check(context.Background(), mustURL("https://example.com/private")); err != nil || fetches.Load() != 0 {
					t.Fatalf("before Forget: %v after %d fetches", err, fetches.Load())
				}
				tr.Forget(mustURL("https://example.com/"))
			}
			err := tr.Check(context.Background(), mustURL("https://example.com/private"))
			if got := (result{err == nil, int(fetches.Load())}); got != c.want {
				t.Errorf("allowed %v (err %v) after %d fetches, want %+v", got.private, err, got.fetches, c.want)
			}
		})
	}

	for _, failures := range []int{-5, 0, math.MaxInt} {
		e := next(&fleet.Entry{Failures: failures}, &fetchResult{err: errors.New("down")}, time.Now())
		wait := time.Until(e.Expires)
		if e.Failures < 1 || wait < retryMin-time.Second || wait > retryMax {
			t.Errorf("Failures %d: next has Failures %d and waits %v", failures, e.Failures, wait)
		}
	}
}
