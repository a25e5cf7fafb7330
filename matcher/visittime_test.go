package matcher

import (
	"strings"
	"testing"
	"time"
)

func TestVisitTime(t *testing.T) {
	h := func(hh, mm int) time.Duration { return time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute }
	for _, c := range []struct {
		body     string
		agent    string
		from, to time.Duration
		ok       bool
	}{
		{"User-agent: *\nVisit-time: 0600-0845\n", "x", h(6, 0), h(8, 45), true},
		{"User-agent: *\nvisit-time: 2200 - 0600 # overnight\n", "x", h(22, 0), h(6, 0), true},
		{"User-agent: *\nVisit-time: 0000-2359\n", "x", 0, h(23, 59), true},
		{"User-agent: *\nVisit-time: 2500-9999\n", "x", 0, 0, false},
		{"User-agent: *\nVisit-time: 0800-0800\n", "x", 0, 0, false}, // never opens: none
		{"User-agent: *\nVisit-time: 0800-0800\nVisit-time: 0900-1000\n", "x", h(9, 0), h(10, 0), true},
		{"User-agent: *\nVisit-time: 6-8\n", "x", 0, 0, false},
		{"User-agent: *\nVisit-time: 06:00-08:45\n", "x", 0, 0, false},
		{"User-agent: *\nVisit-time: 0600-0845\nVisit-time: 1000-1100\n", "x", h(6, 0), h(8, 45), true}, // the first
		{"Visit-time: 0600-0845\nUser-agent: *\n", "x", 0, 0, false},                                    // before any group
		{"User-agent: a\nVisit-time: 0100-0200\nDisallow: /\nUser-agent: *\nVisit-time: 0300-0400\n", "a", h(1, 0), h(2, 0), true},
		{"User-agent: a\nVisit-time: 0100-0200\nDisallow: /\nUser-agent: *\nVisit-time: 0300-0400\n", "b", h(3, 0), h(4, 0), true},
		{"User-agent: a\nDisallow: /\n", "a", 0, 0, false},
	} {
		r := Parse([]byte(c.body))
		from, to, ok := r.Group(c.agent).VisitTime()
		if from != c.from || to != c.to || ok != c.ok {
			t.Errorf("%q for %s: %v, %v, %v; want %v, %v, %v", c.body, c.agent, from, to, ok, c.from, c.to, c.ok)
		}
		if r.HasVisitTime() != (c.ok || strings.Contains(c.body, "0300")) {
			t.Errorf("%q: HasVisitTime %v", c.body, r.HasVisitTime())
		}
	}
}

func TestLintVisitTimeAndBareRate(t *testing.T) {
	body := "User-agent: *\nVisit-time: 2500-9999\nVisit-time: 0800-0800\nVisit-time: 0600-0845\nVisit-time: 0900-1000\nRequest-rate: 10\n"
	rep := Lint([]byte(body))
	want := map[int]string{
		2: `invalid visit-time "2500-9999" ignored`,
		3: `visit-time "0800-0800" is a window that never opens`,
		5: `visit-time "0900-1000" ignored: the group's first, 0600-0845 UTC, counts`,
		6: `request-rate "10" has no period: read as one request each 10s, the slower reading`,
	}
	got := map[int]string{}
	for _, d := range rep.Diagnostics {
		got[d.Line] = d.Message
	}
	for line, w := range want {
		if !strings.HasPrefix(got[line], w) {
			t.Errorf("line %d: %q, want %q…", line, got[line], w)
		}
	}
	if len(rep.Diagnostics) != len(want) {
		t.Errorf("diagnostics %+v", rep.Diagnostics)
	}
	if g := rep.Groups[0]; g.VisitTime != "0600-0845 UTC" || g.RequestRate != 10*time.Second {
		t.Errorf("group %+v", g)
	}
}

// Lint asks for rule paths with non-ASCII characters or spaces to be
// percent-encoded, naming the line and the encoded form.
func TestLintEncodePath(t *testing.T) {
	body := "User-agent: *\nDisallow: /café\nAllow: /a b/\nDisallow: /caf%C3%A9\nDisallow: /\xff\n"
	got := map[int]string{}
	for _, d := range Lint([]byte(body)).Diagnostics {
		got[d.Line] = d.Message
	}
	want := map[int]string{
		2: "path has non-ASCII characters or spaces: percent-encode them, as /caf%C3%A9",
		3: "path has non-ASCII characters or spaces: percent-encode them, as /a%20b/",
		5: "path has non-ASCII characters or spaces: percent-encode them, as /%FF",
	}
	if len(got) != len(want) {
		t.Errorf("diagnostics %v", got)
	}
	for line, w := range want {
		if got[line] != w {
			t.Errorf("line %d: %q, want %q", line, got[line], w)
		}
	}
}
