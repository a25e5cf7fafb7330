package matcher

import (
	"fmt"
	"math/rand"
	"os"
	"strings"
	"testing"
)

// Bad input on the query path: long paths, escapes of every byte, long
// agents, and a file of 500 KiB in one group. Each verdict must be the
// reference matcher's, and no query may allocate, whichever way the
// group is searched.

// everyEscape returns an escape of every byte, in both cases of hex digit.
func everyEscape() string {
	var b strings.Builder
	for c := range 256 {
		fmt.Fprintf(&b, "%%%02X%%%02x", c, c)
	}
	return b.String()
}

// everyRawByte returns every byte but '#', which would start a fragment.
func everyRawByte() string {
	var b strings.Builder
	for c := 1; c < 256; c++ {
		if c != '#' {
			b.WriteByte(byte(c))
		}
	}
	return b.String()
}

// badRules returns n rules, some with escapes of many bytes, wildcards
// and anchors, sharing prefixes with badPaths's paths.
func badRules(rng *rand.Rand, n int) []refRule {
	esc := everyEscape()
	rules := make([]refRule, n)
	for i := range rules {
		var p string
		switch rng.Intn(8) {
		case 0:
			k := rng.Intn(len(esc)/3) * 3
			p = "/e/" + esc[k:min(k+3*(1+rng.Intn(8)), len(esc))]
		case 1:
			p = fmt.Sprintf("/*.x%d$", rng.Intn(50))
		case 2:
			p = fmt.Sprintf("/a/*%%%02X*b", rng.Intn(256))
		case 3:
			p = fmt.Sprintf("/%c%d/", 'a'+rng.Intn(26), rng.Intn(1000))
		case 4:
			p = "/a" + strings.Repeat("b/%7e", rng.Intn(20))
		case 5:
			p = "*ツ" + randString(rng, []string{"a", "/", "ツ", "%E3%83%84"}, 4)
		case 6:
			p = fmt.Sprintf("/r/%c", 'a'+rng.Intn(26))
		default:
			p = "/" + randString(rng, []string{"a", "b", "/", "%2F", "%61", "*", "$"}, 6)
		}
		rules[i] = refRule{allow: rng.Intn(2) == 0, pattern: p, line: i + 2}
	}
	return rules
}

// badPaths returns paths of up to 8 KiB, many needing normalising.
func badPaths(rng *rand.Rand, long bool) []string {
	esc, raw := everyEscape(), everyRawByte()
	paths := []string{"/", "/e/" + esc, "/" + raw, "/a/" + raw + "b", "/r/x?" + esc, "/ab/~/%7E",
		"/e/" + esc[rng.Intn(200)*3:]}
	if long {
		paths = append(paths,
			"/a"+strings.Repeat("b/%7e", 8<<10/5),                         // 8 KiB, needs normalising
			"/a"+strings.Repeat("b/~", 8<<10/3),                           // 8 KiB, normal
			"/"+strings.Repeat("ツ", 8<<10/3),                              // 8 KiB raw, 24 KiB normalised
			"/a/"+strings.Repeat("x", 8<<10)+"%2A"+strings.Repeat("b", 9), // 8 KiB before the wildcard's byte
			"/e/"+strings.Repeat(esc, 8<<10/len(esc)+1)[:8<<10],
		)
	}
	return paths
}

// checkBad checks r's verdicts for agent on paths against the reference
// matcher on rules, and that none allocates.
func checkBad(t *testing.T, r *Robots, agent string, rules []refRule, paths []string) {
	t.Helper()
	g := r.Group(agent)
	for _, p := range paths {
		want := refMatch(rules, p)
		urls := []string{"https://example.com" + p}
		if !strings.HasPrefix(p, "//") {
			urls = append(urls, p)
		}
		for _, u := range urls {
			if got := r.Allowed(agent, u); got != want.Allowed {
				t.Fatalf("Allowed(%.40q, %.60q) = %v, want %v (%s, line %d)", agent, u, got, want.Allowed, want.Rule, want.Line)
			}
			if got := g.Match(u); got != want {
				t.Fatalf("Match(%.60q) = %+.80v\nreference: %+.80v", u, got, want)
			}
			if raceEnabled {
				continue // sync.Pool drops buffers at random under the race detector
			}
			if n := testing.AllocsPerRun(5, func() { r.Allowed(agent, u) }); n != 0 {
				t.Fatalf("Allowed(%.40q, %.60q) allocates %v times", agent, u, n)
			}
			if n := testing.AllocsPerRun(5, func() { g.Allowed(u) }); n != 0 {
				t.Fatalf("Group.Allowed(%.60q) allocates %v times", u, n)
			}
		}
	}
}

func TestBadInputQueries(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	for _, n := range []int{5, linearMax, 60, scanMax + 40} {
		rules := badRules(rng, n)
		r := Parse(refBody(rules))
		g := r.Group("x")
		t.Logf("%d rules: indexed %v", n, g.indexed())
		checkBad(t, r, "x", rules, badPaths(rng, true))
	}
}

func TestBadInputLongAgents(t *testing.T) {
	rng := rand.New(rand.NewSource(43))
	long := strings.Repeat("a", 1<<10)
	named := "Googlebot" + strings.Repeat("-x", 1<<9)
	star, own := badRules(rng, 40), badRules(rng, 10)
	body := append(refBody(star), "User-agent: "+named+"/1.0\n"...)
	for _, r := range own {
		body = fmt.Appendf(body, "%s: %s\n", map[bool]string{true: "Allow", false: "Disallow"}[r.allow], r.pattern)
	}
	for i := range own {
		own[i].line = len(star) + 3 + i
	}
	r := Parse(body)
	paths := badPaths(rng, false)
	checkBad(t, r, long, star, paths)
	checkBad(t, r, strings.ToUpper(long), star, paths)
	checkBad(t, r, named[:len(named)-1], star, paths) // one byte short: not the named group
	checkBad(t, r, named, own, paths)
	checkBad(t, r, strings.ToUpper(named), own, paths)
}

func TestBadInputLargeGroup(t *testing.T) {
	rng := rand.New(rand.NewSource(44))
	var rules []refRule
	for len(refBody(rules)) < MaxSize {
		rs := badRules(rng, 1000)
		for i := range rs {
			rs[i].line = len(rules) + 2
			rules = append(rules, rs[i])
		}
	}
	body := refBody(rules)
	if len(body) < MaxSize {
		t.Fatalf("body of %d bytes, want at least %d", len(body), MaxSize)
	}
	r := Parse(body)
	if g := r.Group("x"); !g.indexed() {
		t.Fatalf("a group of %d rules, not indexed", g.hi-g.lo)
	}
	// The reference takes about a second a path here: three paths, or
	// all of them in a long test.
	paths := badPaths(rng, false)[:3]
	if raceEnabled {
		paths = paths[1:2]
	}
	if os.Getenv("ROBOTS_LONG_TESTS") != "" {
		paths = append(badPaths(rng, false), "/a"+strings.Repeat("b/%7e", 300))
	}
	checkBad(t, r, "x", rules, paths)
}

// TestRelativeReference checks a URL that is neither absolute nor a path
// from the root, such as "a", against rules of one to three bytes, which a
// scan decides by their prints: no rule that starts with '/' matches it.
func TestRelativeReference(t *testing.T) {
	rules := []refRule{{pattern: "/", line: 2}, {allow: true, pattern: "/a", line: 3}, {pattern: "/ab", line: 4}, {pattern: "/a$", line: 5}, {pattern: "*b", line: 6}}
	r := Parse(refBody(rules))
	for _, u := range []string{"a", "ab", "b", "ba", "a?x"} {
		if got, want := r.Match("x", u), refMatch(rules, u); got != want {
			t.Errorf("Match(%q) = %+v, reference %+v", u, got, want)
		}
	}
}
