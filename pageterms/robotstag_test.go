package pageterms

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRobotsTag(t *testing.T) {
	date := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, c := range []struct {
		name  string
		h     http.Header
		agent string
		want  RobotsTag
	}{
		{"draft example, for ExampleBot", http.Header{"Robots-Tag": {"*;nosnippet, ExampleBot;noindex"}}, "ExampleBot",
			RobotsTag{NoSnippet: true, NoIndex: true, Rules: []string{"nosnippet", "noindex"}}},
		{"draft example, for another", http.Header{"Robots-Tag": {"*;nosnippet, ExampleBot;noindex"}}, "OtherBot",
			RobotsTag{NoSnippet: true, Rules: []string{"nosnippet"}}},
		{"draft example, no agent", http.Header{"Robots-Tag": {"*;nosnippet, ExampleBot;noindex"}}, "",
			RobotsTag{NoSnippet: true, Rules: []string{"nosnippet"}}},
		{"agent case-insensitive, several lines", http.Header{"Robots-Tag": {"examplebot;noai;noimageai", "*;nofollow"}}, "ExampleBot",
			RobotsTag{NoAI: true, NoImageAI: true, NoFollow: true, Rules: []string{"noai", "noimageai", "nofollow"}}},
		{"unknown tokens kept", http.Header{"Robots-Tag": {`*;max-snippet=50;notranslate;foo="bar"`}}, "",
			RobotsTag{Rules: []string{"max-snippet: 50", "notranslate", "foo: bar"}}},
		{"legacy form in Robots-Tag", http.Header{"Robots-Tag": {"noindex, nofollow"}}, "",
			RobotsTag{NoIndex: true, NoFollow: true, Rules: []string{"noindex", "nofollow"}}},
		{"upper-case rule", http.Header{"Robots-Tag": {"ExampleBot;NoIndex"}}, "ExampleBot",
			RobotsTag{NoIndex: true, Rules: []string{"noindex"}}},
		{"unavailable_after in SF", http.Header{"Robots-Tag": {`*;unavailable_after="2026-12-31T00:00:00Z"`}}, "",
			RobotsTag{UnavailableAfter: date("2026-12-31T00:00:00Z"), Rules: []string{"unavailable_after: 2026-12-31T00:00:00Z"}}},
		{"legacy", http.Header{"X-Robots-Tag": {"noindex, nofollow"}}, "ExampleBot",
			RobotsTag{NoIndex: true, NoFollow: true, Rules: []string{"noindex", "nofollow"}}},
		{"legacy none", http.Header{"X-Robots-Tag": {"none"}}, "",
			RobotsTag{None: true, NoIndex: true, NoFollow: true, Rules: []string{"none"}}},
		{"legacy botname prefixes", http.Header{"X-Robots-Tag": {"googlebot: nofollow, noai", "examplebot: noindex", "nosnippet"}}, "ExampleBot",
			RobotsTag{NoIndex: true, NoSnippet: true, Rules: []string{"noindex", "nosnippet"}}},
		{"legacy unavailable_after, RFC 850 with its comma", http.Header{"X-Robots-Tag": {"unavailable_after: Friday, 25-Jun-10 15:00:00 GMT, noai"}}, "",
			RobotsTag{NoAI: true, UnavailableAfter: date("2010-06-25T15:00:00Z"), Rules: []string{"unavailable_after: Friday, 25-Jun-10 15:00:00 GMT", "noai"}}},
		{"legacy unavailable_after for a bot", http.Header{"X-Robots-Tag": {"examplebot: unavailable_after: 25 Jun 2010 15:00:00 GMT"}}, "ExampleBot",
			RobotsTag{UnavailableAfter: date("2010-06-25T15:00:00Z"), Rules: []string{"unavailable_after: 25 Jun 2010 15:00:00 GMT"}}},
		{"garbage date", http.Header{"X-Robots-Tag": {"unavailable_after: tomorrow-ish"}}, "",
			RobotsTag{Rules: []string{"unavailable_after: tomorrow-ish"}}},
		{"both fields, union", http.Header{"Robots-Tag": {"*;nosnippet"}, "X-Robots-Tag": {"noindex"}}, "",
			RobotsTag{NoSnippet: true, NoIndex: true, Rules: []string{"nosnippet", "noindex"}}},
		{"broken quoting: members before it count", http.Header{"Robots-Tag": {`*;noai, ExampleBot;foo="bar, *;noindex`}}, "ExampleBot",
			RobotsTag{NoAI: true, Rules: []string{"noai"}, Malformed: 1}},
		{"a member that is not an item", http.Header{"Robots-Tag": {`*;noai, (a b);noindex, *;nofollow`}}, "",
			RobotsTag{NoAI: true, NoFollow: true, Rules: []string{"noai", "nofollow"}, Malformed: 1}},
	} {
		got := RobotsTagFor(c.h, c.agent)
		if got.NoIndex != c.want.NoIndex || got.NoFollow != c.want.NoFollow || got.NoSnippet != c.want.NoSnippet ||
			got.NoAI != c.want.NoAI || got.NoImageAI != c.want.NoImageAI || got.None != c.want.None ||
			!got.UnavailableAfter.Equal(c.want.UnavailableAfter) || !slices.Equal(got.Rules, c.want.Rules) || got.Malformed != c.want.Malformed {
			t.Errorf("%s: got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

// 64 KiB of members: the first 16 KiB are read, the members complete there
// count, the one the limit cuts does not, and the rules kept are bounded.
func TestRobotsTagBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("*;noai, ")
	for i := 0; b.Len() < 64<<10; i++ {
		b.WriteString("*;x")
		b.WriteString(strings.Repeat("y", i%7))
		b.WriteString(", ")
	}
	b.WriteString("*;noindex")
	got := RobotsTagFor(http.Header{"Robots-Tag": {b.String()}}, "")
	if !got.NoAI || got.NoIndex || got.Malformed != 1 || len(got.Rules) > maxRobotsTagRules {
		t.Errorf("got NoAI %v, NoIndex %v, Malformed %d, %d rules", got.NoAI, got.NoIndex, got.Malformed, len(got.Rules))
	}
	// Many lines: the limit is the field's, all lines together.
	lines := make([]string, 5000)
	for i := range lines {
		lines[i] = "*;noai"
	}
	lines = append(lines, "*;noindex")
	if got := RobotsTagFor(http.Header{"Robots-Tag": lines}, ""); got.NoIndex || got.Malformed == 0 {
		t.Errorf("lines past the limit read: %+v", got.Malformed)
	}
}

func TestRobotsTagOf(t *testing.T) {
	req, _ := http.NewRequest("GET", "https://example.com/", nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 (compatible; ExampleBot/1.0; +https://example.com/bot)")
	resp := &http.Response{Request: req, Header: http.Header{"Robots-Tag": {"*;nosnippet, ExampleBot;nofollow"}}}
	if got := RobotsTagOf(resp); !got.NoFollow || !got.NoSnippet {
		t.Errorf("RobotsTagOf = %+v", got)
	}
	if got := RobotsTagOf(nil); got.Rules != nil {
		t.Error("nil response has rules")
	}
	now := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	if (RobotsTag{UnavailableAfter: now.Add(-time.Hour)}).NoIndexAt(now) != true || (RobotsTag{UnavailableAfter: now.Add(time.Hour)}).NoIndexAt(now) {
		t.Error("NoIndexAt")
	}
}

// RobotsTagOf on a response without the fields allocates nothing.
func TestRobotsTagNoAlloc(t *testing.T) {
	req, _ := http.NewRequest("GET", "https://example.com/", nil)
	resp := &http.Response{Request: req, Header: http.Header{"Content-Type": {"text/html"}}}
	if n := testing.AllocsPerRun(100, func() { RobotsTagOf(resp) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// BenchmarkRobotsTagOf: what a caller who asks pays, for a response with no
// such field (nothing) and for one with the draft's example and a legacy
// line.
//
//	go test -run '^$' -bench BenchmarkRobotsTagOf -benchmem ./pageterms
func BenchmarkRobotsTagOf(b *testing.B) {
	req, _ := http.NewRequest("GET", "https://example.com/", nil)
	req.Header.Set("User-Agent", "ExampleBot/1.0")
	for _, c := range []struct {
		name string
		h    http.Header
	}{
		{"none", http.Header{"Content-Type": {"text/html"}}},
		{"robots-tag", http.Header{"Robots-Tag": {"*;nosnippet, ExampleBot;noindex"}}},
		{"x-robots-tag", http.Header{"X-Robots-Tag": {"examplebot: noindex, nofollow"}}},
	} {
		resp := &http.Response{Request: req, Header: c.h}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				RobotsTagOf(resp)
			}
		})
	}
}

// FuzzRobotsTag: any Robots-Tag and X-Robots-Tag read without a panic,
// within the bounds: at most 64 rules, each at most the field's length.
func FuzzRobotsTag(f *testing.F) {
	f.Add("*;nosnippet, ExampleBot;noindex", "googlebot: nofollow, noai", "ExampleBot")
	f.Add(`*;a="b, c;d`, "unavailable_after: Friday, 25-Jun-10 15:00:00 GMT", "")
	f.Add("(a b);c, *;d=?0;e=@1700000000", "x: y: z, ,,", "x")
	f.Fuzz(func(t *testing.T, rt, xrt, agent string) {
		r := RobotsTagFor(http.Header{"Robots-Tag": {rt}, "X-Robots-Tag": {xrt}}, agent)
		if len(r.Rules) > maxRobotsTagRules {
			t.Fatalf("%d rules", len(r.Rules))
		}
		for _, x := range r.Rules {
			if len(x) > len(rt)+len(xrt)+len(": ")+len("…") {
				t.Fatalf("rule %q longer than the fields", x)
			}
		}
		if r.None && (!r.NoIndex || !r.NoFollow) {
			t.Fatalf("none without noindex and nofollow: %+v", r)
		}
	})
}
