package robots

import (
	"errors"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		status int
		want   Access
	}{
		{100, AccessUnreachable}, {103, AccessUnreachable},
		{200, AccessSuccess}, {203, AccessSuccess}, {204, AccessSuccess}, {206, AccessSuccess}, {299, AccessSuccess},
		{300, AccessUnreachable}, // only reached when a redirect cannot be followed; see fetch
		{400, AccessUnavailable}, {401, AccessUnavailable}, {403, AccessUnavailable}, {404, AccessUnavailable},
		{410, AccessUnavailable}, {418, AccessUnavailable}, {451, AccessUnavailable}, {499, AccessUnavailable},
		{429, AccessUnreachable},
		{500, AccessUnreachable}, {502, AccessUnreachable}, {503, AccessUnreachable}, {599, AccessUnreachable},
		{0, AccessUnreachable}, {600, AccessUnreachable}, {999, AccessUnreachable}, {-1, AccessUnreachable},
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

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		header string
		want   time.Duration
		ok     bool
	}{
		{"", 0, false},
		{"120", 2 * time.Minute, true},
		{" 0 ", 0, true},
		{"-1", 0, false},
		{"9223372036854775808", (1<<63 - 1) / time.Second * time.Second, true}, // past int64 seconds
		{"99999999999999999999", (1<<63 - 1) / time.Second * time.Second, true},
		{"-9223372036854775809", 0, false},
		{"soon", 0, false},
		{"Thu, 02 Jan 2025 04:04:05 GMT", time.Hour, true},
		{"Thu, 02 Jan 2025 02:04:05 GMT", 0, true}, // in the past
	}
	for _, c := range cases {
		got, ok := retryAfter(c.header, now)
		if got != c.want || ok != c.ok {
			t.Errorf("retryAfter(%q) = %v, %v want %v, %v", c.header, got, ok, c.want, c.ok)
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
		{DefaultTTL, "max-age=1", MinTTL},
		{DefaultTTL, "no-store", MinTTL},
		{DefaultTTL, "max-age=172800", DefaultTTL}, // max-age never lengthens
		{time.Hour, "max-age=7200", time.Hour},
		{30 * time.Second, "max-age=1", 30 * time.Second}, // a TTL below MinTTL is kept
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
	if got := backoff(1 << 30); got != RetryMax {
		t.Errorf("backoff(huge) = %v want %v", got, RetryMax)
	}
}

func TestNext(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	down := &fetchResult{access: AccessUnreachable, status: 503, err: errors.New("robots: 503")}
	good := &fetchResult{access: AccessSuccess, body: []byte("User-agent: *\nDisallow: /\n"), lifetime: time.Hour}

	e := next(nil, good, now)
	if e.Access != AccessSuccess || string(e.Body) != string(good.body) || !e.FetchedAt.Equal(now) ||
		!e.Expires.Equal(now.Add(time.Hour)) || !e.UnreachableSince.IsZero() || e.Failures != 0 || e.Error != "" {
		t.Errorf("after success: %+v", e)
	}

	// Unreachable with a good copy: the copy is kept.
	e2 := next(e, down, now.Add(2*time.Hour))
	if e2.Access != AccessSuccess || string(e2.Body) != string(good.body) || !e2.FetchedAt.Equal(now) {
		t.Errorf("stale copy not kept: %+v", e2)
	}
	if !e2.UnreachableSince.Equal(now.Add(2*time.Hour)) || e2.Failures != 1 || e2.Error != "robots: 503" ||
		!e2.Expires.Equal(now.Add(2*time.Hour+RetryMin)) {
		t.Errorf("after first failure: %+v", e2)
	}
	if e.Failures != 0 || !e.UnreachableSince.IsZero() {
		t.Errorf("next modified prev: %+v", e)
	}
	e3 := next(e2, down, now.Add(3*time.Hour))
	if !e3.UnreachableSince.Equal(e2.UnreachableSince) || e3.Failures != 2 || !e3.Expires.Equal(now.Add(3*time.Hour+2*RetryMin)) {
		t.Errorf("after second failure: %+v", e3)
	}

	// Unreachable without a copy.
	e4 := next(nil, down, now)
	if e4.Access != AccessUnreachable || e4.Body != nil || !e4.UnreachableSince.Equal(now) || e4.Failures != 1 {
		t.Errorf("unreachable without a copy: %+v", e4)
	}

	// Retry-After longer than the back-off wins, capped at a day.
	ra := &fetchResult{access: AccessUnreachable, status: 429, retryAfter: 3 * time.Hour, err: errors.New("robots: 429")}
	if e := next(nil, ra, now); !e.Expires.Equal(now.Add(3 * time.Hour)) {
		t.Errorf("Retry-After 3h: expires %v", e.Expires.Sub(now))
	}
	ra.retryAfter = 30 * 24 * time.Hour
	if e := next(nil, ra, now); !e.Expires.Equal(now.Add(DefaultTTL)) {
		t.Errorf("Retry-After 30d: expires %v", e.Expires.Sub(now))
	}
	ra.retryAfter = time.Second // shorter than the back-off: the back-off wins
	if e := next(nil, ra, now); !e.Expires.Equal(now.Add(RetryMin)) {
		t.Errorf("Retry-After 1s: expires %v", e.Expires.Sub(now))
	}

	// Recovery clears the unreachable run.
	if e5 := next(e3, good, now.Add(4*time.Hour)); !e5.UnreachableSince.IsZero() || e5.Failures != 0 || e5.Error != "" {
		t.Errorf("after recovery: %+v", e5)
	}
}
