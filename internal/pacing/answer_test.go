package pacing

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseRateLimit(t *testing.T) {
	const maxDur = time.Duration(math.MaxInt64)
	cases := []struct {
		name   string
		limit  []string // RateLimit lines; nil for none
		policy []string // RateLimit-Policy lines
		want   time.Duration
		ok     bool
	}{
		{"absent", nil, nil, 0, false},
		{"policy alone", nil, []string{`"default";q=100;w=60`}, 0, false},
		{"empty", []string{""}, nil, 0, false},
		{"r=0 pauses t", []string{`"default";r=0;t=30`}, nil, 30 * time.Second, true},
		{"r=0 t=0", []string{`"default";r=0;t=0`}, nil, 0, true},
		{"r=n spreads", []string{`"default";r=10;t=30`}, nil, 3 * time.Second, true},
		{"r=n rounds up", []string{`"default";r=3;t=1`}, nil, 333333334 * time.Nanosecond, true},
		{"r=n t=0", []string{`"default";r=5;t=0`}, nil, 0, true},
		{"odd order", []string{`"default";t=30;r=0`}, nil, 30 * time.Second, true},
		{"unknown parameters", []string{`"default";pk=:AQID:;x-y="z";t=8;r=2;flag`}, nil, 4 * time.Second, true},
		{"token name", []string{`default;r=0;t=7`}, nil, 7 * time.Second, true},
		{"several policies: most restrictive", []string{`"permin";r=20;t=40, "perhr";r=0;t=600`}, nil, 600 * time.Second, true},
		{"several policies: spread beats pause", []string{`"a";r=0;t=1, "b";r=2;t=100`}, nil, 50 * time.Second, true},
		{"several lines", []string{`"a";r=0;t=1`, `"b";r=0;t=9`}, nil, 9 * time.Second, true},
		{"one malformed member leaves the others", []string{`"a";r=-1;t=5, "b";r=0;t=4`}, nil, 4 * time.Second, true},

		// bad input
		{"r=-1", []string{`"default";r=-1;t=30`}, nil, 0, false},
		{"t=-1", []string{`"default";r=0;t=-1`}, nil, 0, false},
		{"t=1e30 is not an Integer", []string{`"default";r=0;t=1e30`}, nil, 0, false},
		{"t with 16 digits is not an Integer", []string{`"default";r=0;t=1000000000000000`}, nil, 0, false},
		{"t at the Integer bound", []string{`"default";r=0;t=999999999999999`}, nil, maxDur, true},
		{"t at the bound spread", []string{`"default";r=999999999999999;t=999999999999999`}, nil, time.Second, true},
		{"t just over a Duration", []string{`"default";r=0;t=9223372037`}, nil, maxDur, true},
		{"t just under a Duration", []string{`"default";r=0;t=9223372036`}, nil, 9223372036 * time.Second, true},
		{"huge t spread", []string{`"default";r=2;t=999999999999999`}, nil, maxDur, true},
		{"missing t", []string{`"default";r=0`}, nil, 0, false},
		{"missing t, r=n", []string{`"default";r=4`}, nil, 0, false},
		{"missing t: the policy's window", []string{`"default";r=0`}, []string{`"default";q=100;w=60`}, 60 * time.Second, true},
		{"missing t, r=n: the policy's window", []string{`"default";r=4`}, []string{`"other";q=1;w=9000, "default";q=100;w=60`}, 15 * time.Second, true},
		{"missing t: a policy without q", []string{`"default";r=0`}, []string{`"default";w=60`}, 0, false},
		{"missing t: a policy of another name", []string{`"default";r=0`}, []string{`"other";q=100;w=60`}, 0, false},
		{"missing t: a malformed policy", []string{`"default";r=0`}, []string{`"default";q=100;w=60,,`}, 0, false},
		{"missing r", []string{`"default";t=30`}, nil, 0, false},
		{"no parameters", []string{`"default"`}, nil, 0, false},
		{"decimal r", []string{`"default";r=0.0;t=30`}, nil, 0, false},
		{"decimal t", []string{`"default";r=0;t=1.5`}, nil, 0, false},
		{"string r", []string{`"default";r="0";t=30`}, nil, 0, false},
		{"string t", []string{`"default";r=0;t="30"`}, nil, 0, false},
		{"boolean r", []string{`"default";r;t=30`}, nil, 0, false},
		{"inner list", []string{`("default");r=0;t=30`}, nil, 0, false},
		{"not a List", []string{`limit=100, remaining=0, reset=30`}, nil, 0, false},
		{"trailing comma", []string{`"default";r=0;t=30,`}, nil, 0, false},
		{"bare number", []string{`30`}, nil, 0, false},
		{"byte-sequence name", []string{`:AQID:;r=0;t=30`}, []string{`:AQID:;q=1;w=99`}, 30 * time.Second, true},
		{"byte-sequence name, missing t", []string{`:AQID:;r=0`}, []string{`:AQID:;q=1;w=99`}, 0, false},

		// a quota counted in other units than requests: only r=0 speaks
		{"bytes quota spread", []string{`"b";r=1000;t=60`}, []string{`"b";q=5000;qu="content-bytes";w=60`}, 0, false},
		{"bytes quota spent", []string{`"b";r=0;t=60`}, []string{`"b";q=5000;qu="content-bytes";w=60`}, 60 * time.Second, true},
		{"requests quota spread", []string{`"b";r=10;t=60`}, []string{`"b";q=50;qu="requests";w=60`}, 6 * time.Second, true},
	}
	for _, c := range cases {
		h := http.Header{}
		for _, l := range c.limit {
			h.Add("RateLimit", l)
		}
		for _, l := range c.policy {
			h.Add("RateLimit-Policy", l)
		}
		got, ok := ParseRateLimit(h)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: ParseRateLimit(%q, policy %q) = %v, %v want %v, %v", c.name, c.limit, c.policy, got, ok, c.want, c.ok)
		}
	}
}

// TestParseRateLimitLarge: a field of 64 KiB, within the Transport's header
// limit, is ignored (over 8 KiB) without being parsed, and one just under
// the bound is parsed; both in bounded memory.
func TestParseRateLimitLarge(t *testing.T) {
	member := `"p";r=0;t=5, `
	big := strings.Repeat(member, 64<<10/len(member)) + `"last";r=0;t=9`
	h := http.Header{"Ratelimit": {big}}
	if d, ok := ParseRateLimit(h); ok {
		t.Errorf("64 KiB field: %v, %v want ignored", d, ok)
	}
	allocs := testing.AllocsPerRun(10, func() { ParseRateLimit(h) })
	if allocs > 2 {
		t.Errorf("64 KiB field: %v allocations, want it not parsed", allocs)
	}

	under := strings.Repeat(member, (maxRateLimitField-100)/len(member)) + `"last";r=0;t=9`
	h = http.Header{"Ratelimit": {under}}
	if d, ok := ParseRateLimit(h); !ok || d != 9*time.Second {
		t.Errorf("field under the bound: %v, %v want 9s, true", d, ok)
	}

	// The bound is exact: a field of 8 KiB is read, one a byte longer
	// is not, on one line or on two joined by ", ".
	last := `"last";r=0;t=9`
	for _, lines := range [][]string{
		{strings.Repeat(" ", maxRateLimitField-len(last)) + last},
		{strings.Repeat(" ", maxRateLimitField-len(last)-2-(len(member)-2)) + member[:len(member)-2], last},
	} {
		if got := fieldLen(lines); got != maxRateLimitField {
			t.Fatalf("fieldLen of the test's field = %d, want %d", got, maxRateLimitField)
		}
		if d, ok := ParseRateLimit(http.Header{"Ratelimit": lines}); !ok || d != 9*time.Second {
			t.Errorf("a field of exactly %d bytes in %d lines: %v, %v want 9s, true", maxRateLimitField, len(lines), d, ok)
		}
		lines[0] = " " + lines[0]
		if d, ok := ParseRateLimit(http.Header{"Ratelimit": lines}); ok {
			t.Errorf("a field of %d bytes in %d lines: %v, %v want ignored", maxRateLimitField+1, len(lines), d, ok)
		}
	}

	// A long policy field is ignored the same way; the RateLimit field
	// still counts.
	h = http.Header{"Ratelimit": {`"p";r=0`, `"q";r=0;t=3`}, "Ratelimit-Policy": {strings.Repeat(`"p";q=1;w=99, `, 64<<10/14) + `"p";q=1;w=99`}}
	if d, ok := ParseRateLimit(h); !ok || d != 3*time.Second {
		t.Errorf("64 KiB policy: %v, %v want 3s, true", d, ok)
	}

	// Many lines, each short: the bound is on them together.
	h = http.Header{}
	for range 10000 {
		h.Add("RateLimit", `"p";r=0;t=5`)
	}
	if d, ok := ParseRateLimit(h); ok {
		t.Errorf("10000 lines: %v, %v want ignored", d, ok)
	}
}

func FuzzParseRateLimit(f *testing.F) {
	for _, s := range []string{
		`"default";r=0;t=30`, `"default";r=10;t=30`, `"a";r=0;t=1, "b";r=2;t=100`,
		`"default";r=-1;t=30`, `"default";r=0;t=1e30`, `"default";r=0`, `"default";r=0;t=999999999999999`,
		`"default";r="0";t=30`, `default;t=8;r=2;pk=:AQID:`, `("x");r=0;t=1`,
	} {
		f.Add(s, `"default";q=100;w=60`)
	}
	f.Fuzz(func(t *testing.T, limit, policy string) {
		h := http.Header{"Ratelimit": {limit}, "Ratelimit-Policy": {policy}}
		d, ok := ParseRateLimit(h)
		if d < 0 || (!ok && d != 0) {
			t.Fatalf("ParseRateLimit(%q, %q) = %v, %v", limit, policy, d, ok)
		}
		// A member saying the quota is spent for a second, added to the
		// field, never shortens the wait: more policies only restrict.
		h2 := http.Header{"Ratelimit": {limit, `"zz-extra";r=0;t=1`}, "Ratelimit-Policy": {policy}}
		if d2, ok2 := ParseRateLimit(h2); ok && ok2 && d2 < d {
			t.Fatalf("an added policy shortened the wait of %q: %v < %v", limit, d2, d)
		}
	})
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
		got, ok := RetryAfter(c.header, now)
		if got != c.want || ok != c.ok {
			t.Errorf("RetryAfter(%q) = %v, %v want %v, %v", c.header, got, ok, c.want, c.ok)
		}
	}
}
