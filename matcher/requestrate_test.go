package matcher

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

func TestRequestRate(t *testing.T) {
	const longest = time.Duration(math.MaxInt64)
	cases := []struct {
		body  string
		agent string
		want  time.Duration
		ok    bool
	}{
		{"User-agent: *\nRequest-rate: 1/5\n", "x", 5 * time.Second, true},
		{"User-agent: *\nRequest-rate: 1/5s\n", "x", 5 * time.Second, true},
		{"User-agent: *\nRequest-rate: 1/10S\n", "x", 10 * time.Second, true},
		{"User-agent: *\nRequest-rate: 30/1m\n", "x", 2 * time.Second, true},
		{"User-agent: *\nRequest-rate: 1/1h\n", "x", time.Hour, true},
		{"User-agent: *\nRequest-rate: 5/1\n", "x", 200 * time.Millisecond, true},
		{"User-agent: *\nRequest-rate: 3/1s\n", "x", 333333334 * time.Nanosecond, true}, // rounded up
		{"User-agent: *\nRequest-rate: 0.5/1s\n", "x", 2 * time.Second, true},
		{"User-agent: *\nRequest-rate: 1/2.5s\n", "x", 2500 * time.Millisecond, true},
		{"User-agent: *\nrequest-rate 1/5\n", "x", 5 * time.Second, true},                             // no colon
		{"User-agent: *\nREQUEST-RATE: 1/5 # one page every 5 seconds\n", "x", 5 * time.Second, true}, // comment
		{"User-agent: *\nRequest-rate: 1/10m 0800-1659\n", "x", 10 * time.Minute, true},               // time of day ignored
		{"User-agent: *\nRequest-rate: 1/5\nRequest-rate: 1/20\nRequest-rate: 1/1\n", "x", 20 * time.Second, true},
		{"User-agent: *\nDisallow: /a\nRequest-rate: 1/5\nAllow: /b\n", "x", 5 * time.Second, true}, // does not end the group
		{"User-agent: a\nRequest-rate: 1/2\nDisallow: /\nUser-agent: a\nRequest-rate: 1/9\n", "a", 9 * time.Second, true},
		{"User-agent: a\nRequest-rate: 1/2\nDisallow: /a\nUser-agent: *\nRequest-rate: 1/9\n", "a", 2 * time.Second, true},
		{"User-agent: a\nRequest-rate: 1/2\nDisallow: /a\nUser-agent: *\nRequest-rate: 1/9\n", "b", 9 * time.Second, true},
		{"User-agent: a\nRequest-rate: 1/2\nUser-agent: *\nDisallow: /\nRequest-rate: 1/9\n", "a", 9 * time.Second, true}, // one group
		{"User-agent: a\nRequest-rate: 1/2\n", "b", 0, false},
		{"User-agent: a\nDisallow: /\nUser-agent: b\nRequest-rate: 1/2\n", "a", 0, false},
		{"Request-rate: 1/5\nUser-agent: *\n", "x", 0, false}, // before any group
		{"Request-rate: 1/5\nContent-Usage: train-ai=n\nUser-agent: a\n", "x", 0, false},
		{"User-agent: *\nCrawl-delay: 3\n", "x", 0, false},

		// overflow: a huge T asks for the longest interval, a huge n for
		// the shortest above none
		{"User-agent: *\nRequest-rate: 1/1e308s\n", "x", longest, true},
		{"User-agent: *\nRequest-rate: 1/99999999999999999999h\n", "x", longest, true},
		{"User-agent: *\nRequest-rate: 1/9999999999h\n", "x", longest, true},
		{"User-agent: *\nRequest-rate: 1e308/1s\n", "x", time.Nanosecond, true},
		{"User-agent: *\nRequest-rate: 99999999999999999999/1s\n", "x", time.Nanosecond, true},
		{"User-agent: *\nRequest-rate: 1e-3/1s\n", "x", 1000 * time.Second, true},

		// not rates
		{"User-agent: *\nRequest-rate: 0/0\n", "x", 0, false},
		{"User-agent: *\nRequest-rate: 0/5s\n", "x", 0, false},
		{"User-agent: *\nRequest-rate: 1/0s\n", "x", 0, false},
		{"User-agent: *\nRequest-rate: 1/0\n", "x", 0, false},
		{"User-agent: *\nRequest-rate: 5/\n", "x", 0, false},
		{"User-agent: *\nRequest-rate: /5\n", "x", 0, false},
		{"User-agent: *\nRequest-rate: 1/s\n", "x", 0, false},
		{"User-agent: *\nRequest-rate: 1/5x\n", "x", 0, false},
		{"User-agent: *\nRequest-rate: 1/5ss\n", "x", 0, false},
		{"User-agent: *\nRequest-rate: 10\n", "x", 10 * time.Second, true}, // bare: one each 10 s
		{"User-agent: *\nRequest-rate: -1/5\n", "x", 0, false},
		{"User-agent: *\nRequest-rate: 1/-5\n", "x", 0, false},
		{"User-agent: *\nRequest-rate: NaN/1\n", "x", 0, false},
		{"User-agent: *\nRequest-rate: 1/5/5\n", "x", 0, false},
		{"User-agent: *\nRequest-rate: 1/10m soon\n", "x", 0, false},
		{"User-agent: *\nRequest-rate: 1/10m 0800-16\n", "x", 0, false},
		{"User-agent: *\nRequest-rate:\n", "x", 0, false},
		{"User-agent: *\nRequest-rates: 1/5\n", "x", 0, false}, // not the key
		{"User-agent: *\nRequestrate: 1/5\n", "x", 0, false},
		{"User-agent: *\nRequest-rate: 1/5\nRequest-rate: 1/0\n", "x", 5 * time.Second, true}, // the bad line alone is ignored
	}
	for _, c := range cases {
		r := Parse([]byte(c.body))
		got, ok := r.Group(c.agent).RequestRate()
		if got != c.want || ok != c.ok {
			t.Errorf("Parse(%q).Group(%q).RequestRate() = %v, %v want %v, %v", c.body, c.agent, got, ok, c.want, c.ok)
		}
		// Lint reads the same: the group's rate, or a diagnostic.
		rep := Lint([]byte(c.body))
		if c.ok && !lintHasRate(rep, c.want) {
			t.Errorf("Lint(%q): no group with request-rate %v: %+v", c.body, c.want, rep.Groups)
		}
	}
}

// lintHasRate reports whether a group of rep has the request-rate d.
func lintHasRate(rep *Report, d time.Duration) bool {
	for _, g := range rep.Groups {
		if g.HasRequestRate && g.RequestRate == d {
			return true
		}
	}
	return false
}

// TestRequestRateNoGroup: the group of a crawler no group names, in a file
// with usage lines and no "*" group, has no request-rate, though it may
// share a line number with a group that has one.
func TestRequestRateNoGroup(t *testing.T) {
	r := Parse([]byte("Content-Usage: train-ai=n\nUser-agent: a\nRequest-rate: 1/5\n"))
	if d, ok := r.Group("a").RequestRate(); !ok || d != 5*time.Second {
		t.Errorf("a: %v, %v", d, ok)
	}
	if d, ok := r.Group("b").RequestRate(); ok {
		t.Errorf("b: %v, %v want none", d, ok)
	}
	if d, ok := Parse(nil).Group("b").RequestRate(); ok {
		t.Errorf("empty file: %v, %v want none", d, ok)
	}
}

func TestLintRequestRate(t *testing.T) {
	body := "Request-rate: 1/5\n" + // 1
		"User-agent: *\n" + // 2
		"Request-rate: 1/5x\n" + // 3
		"Request-rate: 1/10m 0800-1659\n" + // 4
		"Request-rate: 0/0\n" + // 5
		"Request-rate: 2/1m\n" // 6
	rep := Lint([]byte(body))
	want := []struct {
		line int
		msg  string
	}{
		{1, "request-rate before any user-agent line ignored"},
		{3, `invalid request-rate "1/5x" ignored`},
		{4, `request-rate time of day "0800-1659" ignored`},
		{5, `invalid request-rate "0/0" ignored`},
	}
	if len(rep.Diagnostics) != len(want) {
		t.Fatalf("Lint: %d diagnostics want %d: %v", len(rep.Diagnostics), len(want), rep.Diagnostics)
	}
	for i, w := range want {
		d := rep.Diagnostics[i]
		if d.Line != w.line || !strings.HasPrefix(d.Message, w.msg) {
			t.Errorf("diagnostic %d = %v, want line %d %q", i, d, w.line, w.msg)
		}
	}
	if g := rep.Groups[0]; !g.HasRequestRate || g.RequestRate != 10*time.Minute {
		t.Errorf("group: %+v", g)
	}
}

// TestRequestRateCorpus reads every request-rate line of the corpus: none
// panics, and each is either a rate of its group or reported by Lint.
func TestRequestRateCorpus(t *testing.T) {
	bodies, _ := readCorpus(t)
	lines, files := 0, 0
	for _, body := range bodies {
		if !bytes.Contains(bytes.ToLower(body), []byte("request-rate")) {
			continue
		}
		files++
		rep := Lint(body)
		reported := map[int]bool{}
		for _, d := range rep.Diagnostics {
			reported[d.Line] = true
		}
		var s scanner
		s.init(body)
		var in bool // after a user-agent line
		for s.next() {
			switch s.field {
			case fieldUserAgent:
				in = true
			case fieldRequestRate:
				lines++
				d, ok := parseRequestRate(s.value)
				switch {
				case ok && in && d <= 0:
					t.Errorf("line %d %q: interval %v", s.num, s.text, d)
				case (!ok || !in) && !reported[s.num]:
					t.Errorf("line %d %q: ignored and not reported", s.num, s.text)
				}
			}
		}
		r := Parse(body)
		for _, g := range rep.Groups {
			for _, a := range g.Agents {
				if g.HasRequestRate {
					if d, ok := r.Group(a).RequestRate(); !ok || d < g.RequestRate {
						t.Errorf("agent %q: RequestRate %v, %v; Lint says %v", a, d, ok, g.RequestRate)
					}
				}
			}
		}
	}
	if lines == 0 {
		t.Fatalf("no request-rate line in %d corpus files", len(bodies))
	}
	t.Logf("%d request-rate lines in %d files", lines, files)
}

// TestRequestRateForms: the forms found in the corpus, kept here so that
// the test runs without it.
func TestRequestRateForms(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"1/5":     5 * time.Second,
		"1/10":    10 * time.Second,
		"5/1":     200 * time.Millisecond,
		"1/30":    30 * time.Second,
		"1/10s":   10 * time.Second,
		"1/10s\t": 10 * time.Second, // trailing white space is trimmed
		"1/1":     time.Second,
		"10":      10 * time.Second, // bare: one each 10 s, the slower reading
		"0.5":     500 * time.Millisecond,
		"0":       0, // not a rate
	} {
		body := "User-agent: *\nRequest-rate: " + v + "\n"
		d, ok := Parse([]byte(body)).Group("x").RequestRate()
		if d != want || ok != (want > 0) {
			t.Errorf("%q: %v, %v want %v", v, d, ok, want)
		}
	}
}

func FuzzRequestRate(f *testing.F) {
	for _, s := range []string{"1/5", "1/10s", "30/1m", "1/1h", "0/0", "1/0s", "5/", "1e308/1s", "1/5x", "1/10m 0800-1659", "0.5/1e-9s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := parseRequestRate([]byte(v))
		if ok != (d > 0) {
			t.Fatalf("parseRequestRate(%q) = %v, %v", v, d, ok)
		}
		body := "User-agent: *\nRequest-rate: " + v + "\n"
		g, gok := Parse([]byte(body)).Group("x").RequestRate()
		rep := Lint([]byte(body))
		if gok && !lintHasRate(rep, g) {
			t.Fatalf("%q: Parse says %v, Lint %+v", v, g, rep.Groups)
		}
		if !gok && strings.Contains(strings.ToLower(v), "request-rate") == false && len(rep.Diagnostics) == 0 && !strings.ContainsAny(v, "\r\n#\x00") {
			t.Fatalf("%q: no rate and no diagnostic", v)
		}
	})
}
