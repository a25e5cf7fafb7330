package matcher

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// This file holds a slow, obviously correct matcher written straight from
// the matching rules of RFC 9309 §2.2.2, and checks the fast one against it.

// refRule is a rule as the reference matcher sees it.
type refRule struct {
	allow   bool
	pattern string // as written
	line    int
}

// refNormalize percent-normalises s as a rule pattern (rule) or as a URL
// path and query.
func refNormalize(s string, rule bool) string {
	anchored := rule && strings.HasSuffix(s, "$")
	if anchored {
		s = s[:len(s)-1]
	}
	isHex := func(c byte) bool { return strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 }
	unreserved := func(c byte) bool {
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			var v byte
			fmt.Sscanf(s[i+1:i+3], "%02x", &v)
			if unreserved(v) {
				b.WriteByte(v)
			} else {
				fmt.Fprintf(&b, "%%%02X", v)
			}
			i += 2
		case c == '%':
			b.WriteString("%25")
		case rule && c == '*':
			b.WriteByte('*')
		case c <= ' ' || c >= 0x7F || strings.IndexByte("\"<>\\^`{|}*$", c) >= 0:
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	out := b.String()
	for strings.Contains(out, "**") {
		out = strings.ReplaceAll(out, "**", "*")
	}
	if anchored {
		out += "$"
	}
	return out
}

// refGlob reports whether the normalised pattern matches the normalised path
// p, by dynamic programming over every (pattern, path) prefix pair.
func refGlob(pattern, p string) bool {
	if strings.HasSuffix(pattern, "$") {
		pattern = pattern[:len(pattern)-1]
	} else {
		pattern += "*" // anchored at the start only
	}
	// m[j] reports whether pattern[:i] matches p[:j], for the current i.
	m := make([]bool, len(p)+1)
	m[0] = true
	for i := 0; i < len(pattern); i++ {
		next := make([]bool, len(p)+1)
		for j := 0; j <= len(p); j++ {
			if pattern[i] == '*' {
				next[j] = m[j] || j > 0 && next[j-1]
			} else {
				next[j] = j > 0 && m[j-1] && p[j-1] == pattern[i]
			}
		}
		m = next
	}
	return m[len(p)]
}

// refMatch decides the URL path and query p under rules: the matching rule
// with the longest normalised pattern wins, allow wins a tie, and the first
// line wins what is left.
func refMatch(rules []refRule, p string) Match {
	np := refNormalize(p, false)
	if np == "/robots.txt" {
		return Match{Allowed: true}
	}
	var best *refRule
	bestLen := -1
	for i := range rules {
		r := &rules[i]
		if r.pattern == "" || r.pattern[0] != '/' && r.pattern[0] != '*' {
			continue
		}
		pat := refNormalize(r.pattern, true)
		if !refGlob(pat, np) {
			continue
		}
		if n := len(pat); n > bestLen || n == bestLen && r.allow && !best.allow {
			best, bestLen = r, n
		}
	}
	if best == nil {
		return Match{Allowed: true}
	}
	key := "Disallow: "
	if best.allow {
		key = "Allow: "
	}
	return Match{Allowed: best.allow, Rule: key + best.pattern, Line: best.line}
}

// refBody writes rules as a robots.txt body with one "*" group; rule i is
// on line i+2.
func refBody(rules []refRule) []byte {
	var b strings.Builder
	b.WriteString("User-agent: *\n")
	for _, r := range rules {
		if r.allow {
			b.WriteString("Allow: ")
		} else {
			b.WriteString("Disallow: ")
		}
		b.WriteString(r.pattern)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

func TestReferenceMatcher(t *testing.T) {
	// The reference itself, on the worked examples of Google's robots.txt
	// documentation.
	cases := []struct {
		pattern, path string
		want          bool
	}{
		{"/fish", "/fish.html", true},
		{"/fish", "/Fish.asp", false},
		{"/*.php$", "/folder/filename.php", true},
		{"/*.php$", "/filename.php?parameters", false},
		{"/fish*.php", "/fishheads/catfish.php?parameters", true},
		{"/a%2fb", "/a%2Fb", true},
		{"/foo/bar/%62%61%7A", "/foo/bar/baz", true},
		{"/ツ", "/%E3%83%84", true},
		{"/file-with-a-%2A.html", "/file-with-a-*.html", true},
		{"/a$b", "/a$b", true},
		{"/a$b", "/a", false},
	}
	for _, c := range cases {
		if got := refGlob(refNormalize(c.pattern, true), refNormalize(c.path, false)); got != c.want {
			t.Errorf("reference: %q matches %q = %v want %v", c.pattern, c.path, got, c.want)
		}
	}
}

// randString returns a string of up to n pieces drawn from alphabet.
func randString(rng *rand.Rand, alphabet []string, n int) string {
	var b strings.Builder
	for range rng.Intn(n + 1) {
		b.WriteString(alphabet[rng.Intn(len(alphabet))])
	}
	return b.String()
}

// patternAlphabet and pathAlphabet are small, so that random rules and paths
// often meet, and hold every byte class normalisation treats differently.
var (
	patternAlphabet = []string{"/", "/", "a", "a", "b", "*", "*", "$", "%", "%2A", "%24", "%61", "%2f", "?", "=", "ツ", ".", "~", "\"", "x y"}
	pathAlphabet    = []string{"/", "/", "a", "a", "b", "*", "$", "%", "%2A", "%24", "%61", "%2F", "%2f", "?", "=", "ツ", "%E3%83%84", ".", "~", "\""}
)

// randRules returns a random rule set.
func randRules(rng *rand.Rand) []refRule {
	n := rng.Intn(8)
	if rng.Intn(4) == 0 {
		n = rng.Intn(80) // big enough for deep prefix chains
	}
	rules := make([]refRule, n)
	for i := range rules {
		p := randString(rng, patternAlphabet, 8)
		switch rng.Intn(10) {
		case 0: // rarely, no leading '/': matches nothing, unless it starts with '*'
		case 1:
			p = "*" + p
		default:
			p = "/" + p
		}
		rules[i] = refRule{allow: rng.Intn(2) == 0, pattern: strings.TrimSpace(p), line: i + 2}
	}
	return rules
}

// randPath returns a random path, often one built from a rule so that it
// matches or nearly matches.
func randPath(rng *rand.Rand, rules []refRule) string {
	if len(rules) > 0 && rng.Intn(2) == 0 {
		p := rules[rng.Intn(len(rules))].pattern
		p = strings.TrimSuffix(p, "$")
		for strings.Contains(p, "*") {
			p = strings.Replace(p, "*", randString(rng, pathAlphabet, 3), 1)
		}
		p += randString(rng, pathAlphabet, 2)
		if !strings.HasPrefix(p, "/") {
			p = "/" + p
		}
		return p
	}
	return "/" + randString(rng, pathAlphabet, 10)
}

func TestMatchAgreesWithReference(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	sets := 5000
	if testing.Short() || raceEnabled {
		sets = 500
	}
	decided, total := 0, 0
	for range sets {
		rules := randRules(rng)
		body := refBody(rules)
		g := Parse(body).Group("AnyBot")
		for range 20 {
			p := randPath(rng, rules)
			want := refMatch(rules, p)
			total++
			if want.Line > 0 {
				decided++
			}
			// A path, unless it would read as "//authority", and the same
			// path in an absolute URL with a fragment.
			var urls []string
			if !strings.HasPrefix(p, "//") {
				urls = append(urls, p)
			}
			urls = append(urls, "https://example.com"+p+"#top")
			for _, u := range urls {
				if got := g.Match(u); got != want {
					t.Fatalf("robots.txt:\n%sMatch(%q) = %+v\nreference:  %+v", body, u, got, want)
				}
				if got := g.Allowed(u); got != want.Allowed {
					t.Fatalf("robots.txt:\n%sAllowed(%q) = %v want %v", body, u, got, want.Allowed)
				}
			}
		}
	}
	// Guard the generator: most paths should be decided by some rule.
	if decided < total/3 {
		t.Errorf("only %d of %d random paths were decided by a rule; the generator is too weak", decided, total)
	}
	t.Logf("%d of %d random paths decided by a rule", decided, total)
}

// bruteFind decides the normalised path p by trying every rule of g in turn,
// without the index.
func bruteFind(g *Group, p string) int {
	if p == "/robots.txt" {
		return -1
	}
	best := -1
	rules := g.rules()
	for i := range rules {
		r := &rules[i]
		if refGlob(r.pattern(g.r.arena), p) && (best < 0 || better(r, &rules[best])) {
			best = i
		}
	}
	return best
}

func TestIndexAgreesWithBruteForce(t *testing.T) {
	// Many rules sharing prefixes, so that entries have long parent chains
	// and the early stop is exercised.
	rng := rand.New(rand.NewSource(2))
	for range 300 {
		rules := make([]refRule, 1+rng.Intn(300))
		for i := range rules {
			rules[i] = refRule{allow: rng.Intn(2) == 0, pattern: "/" + randString(rng, []string{"a", "b", "/", "*", "$"}, 7), line: i + 2}
		}
		g := Parse(refBody(rules)).Group("x")
		for range 50 {
			p := "/" + randString(rng, []string{"a", "b", "/"}, 9)
			if got, want := g.find(p), bruteFind(g, p); got != want {
				t.Fatalf("find(%q) = %d want %d\n%s", p, got, want, refBody(rules))
			}
		}
	}
}

// TestIndexBuckets checks the index against trying every rule on groups
// of thousands of rules whose literals share long prefixes, so that they
// fill many buckets, buckets share more than 16 bytes, and entries of a
// bucket tie on their keys.
func TestIndexBuckets(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	stems := []string{"/html/E10087_0", "/docs/cd/library/reference/section-0", "/a", "/docs/cd/library/reference/section-1/x"}
	var sawLongSkip, sawTie bool
	for range 4 {
		rules := make([]refRule, 500+rng.Intn(1500))
		for i := range rules {
			pat := stems[rng.Intn(len(stems))] + randString(rng, []string{"a", "b", "_", "/", "1"}, 6)
			switch rng.Intn(10) {
			case 0:
				pat += "*" + randString(rng, []string{"a", "b"}, 2)
			case 1:
				pat += "$"
			}
			rules[i] = refRule{allow: rng.Intn(2) == 0, pattern: pat, line: i + 2}
		}
		g := Parse(refBody(rules)).Group("x")
		ix := g.index()
		for b, bk := range ix.bkts {
			sawLongSkip = sawLongSkip || bk.skip > 16
			for i := b*bucketLen + 1; i < min((b+1)*bucketLen, len(ix.ents)-1); i++ {
				k, _ := ix.key(i)
				prev, _ := ix.key(i - 1)
				sawTie = sawTie || k == prev
			}
		}
		for range 150 {
			var p string
			if rng.Intn(3) > 0 {
				r := rules[rng.Intn(len(rules))].pattern
				p = strings.TrimRight(strings.ReplaceAll(r, "*", "a"), "$")
				p = p[:1+rng.Intn(len(p))] + randString(rng, []string{"a", "b", "_", "/", "1", "z"}, 4)
			} else {
				p = stems[rng.Intn(len(stems))] + randString(rng, []string{"a", "b", "_", "/", "1", "z"}, 8)
			}
			if got, want := g.find(p), bruteFind(g, p); got != want {
				t.Fatalf("find(%q) = %d want %d", p, got, want)
			}
		}
	}
	if !sawLongSkip || !sawTie {
		t.Errorf("no bucket sharing more than 16 bytes (%v) or no tied keys (%v): the test does not reach every path", sawLongSkip, sawTie)
	}
}

// TestIndexKeyWidths checks the index against trying every rule on groups
// whose literals are long and tie on their first key bytes, as those of a
// large documentation site do ("/html/E10087_01/", "/html/E10087_02/"),
// in sorted order: one of long lines, which takes 8-byte keys, and one of
// raw bytes, which percent-encoding makes three times longer than written,
// so that wide keys would cost too much for its size and it keeps 4-byte
// keys. Among them are literals that end within a key, literals that tie
// on all the key's bytes, parents, and exact and wildcard rules.
func TestIndexKeyWidths(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for _, tc := range []struct {
		name  string
		wide  bool
		head  string
		piece []string // of the literals, and of paths
	}{
		{"long lines", true, "/html/E1", []string{"0", "1", "2", "_0", "_1", "/", "a"}},
		{"raw bytes", false, "/", []string{"\x80", "\x81", "\x82", "_", "/"}},
	} {
		var rules []refRule
		add := func(pat string) {
			rules = append(rules, refRule{allow: rng.Intn(2) == 0, pattern: pat, line: len(rules) + 2})
		}
		stem := func() string {
			var b strings.Builder
			b.WriteString(tc.head)
			for range 3 + rng.Intn(2) {
				b.WriteString(tc.piece[rng.Intn(3)])
			}
			return b.String()
		}
		for range 1500 {
			lit := stem()
			for range rng.Intn(8) {
				lit += tc.piece[rng.Intn(len(tc.piece))]
			}
			switch rng.Intn(12) {
			case 0:
				add(lit + "*" + tc.piece[rng.Intn(len(tc.piece))])
			case 1:
				add(lit + "$")
			case 2:
				add(lit[:1+rng.Intn(len(lit))]) // a parent of others, often
			default:
				add(lit + "/")
			}
		}
		slices.SortFunc(rules, func(a, b refRule) int { return strings.Compare(a.pattern, b.pattern) })
		for i := range rules {
			rules[i].line = i + 2
		}
		g := Parse(refBody(rules)).Group("x")
		ix := g.index()
		if got := ix.keys8 != nil; got != tc.wide {
			t.Fatalf("%s: wide keys %v, want %v", tc.name, got, tc.wide)
		}
		// The paths the test must reach: literals ending within their
		// keys, and entries tied on every byte of their keys.
		arena, grules := g.r.arena, g.rules()
		var short, tied int
		for b, bk := range ix.bkts {
			for i := b * bucketLen; i < min((b+1)*bucketLen, len(ix.ents)-1); i++ {
				width := 4
				if tc.wide {
					width = 8
				}
				if len(ix.literal(arena, grules, int32(i))) < len(ix.cp)+int(bk.skip)+width {
					short++
				}
				k, _ := ix.key(i)
				prev, _ := ix.key(max(i-1, 0))
				if i > b*bucketLen && k == prev {
					tied++
				}
			}
		}
		if short == 0 || tied == 0 {
			t.Fatalf("%s: %d literals end within their keys, %d entries tie on their keys: the test does not reach every path", tc.name, short, tied)
		}
		for range 600 {
			var p string
			if rng.Intn(4) > 0 {
				r := &grules[rng.Intn(len(grules))]
				p = r.literal(arena)
				if rng.Intn(2) == 0 {
					p = p[:rng.Intn(len(p)+1)]
				}
			} else {
				p = refNormalize(stem(), false)
			}
			for range rng.Intn(4) {
				p += refNormalize(tc.piece[rng.Intn(len(tc.piece))], false)
			}
			if got, want := g.find(p), bruteFind(g, p); got != want {
				t.Fatalf("%s: find(%q) = %d want %d", tc.name, p, got, want)
			}
		}
	}
}

// TestKey8 checks key8, which loads short strings in overlapping parts,
// against its definition: the first 8 bytes, big-endian, zero-padded.
func TestKey8(t *testing.T) {
	const s = "/html/E10087_01/"
	for n := range len(s) + 1 {
		var want uint64
		for i := range 8 {
			want <<= 8
			if i < n {
				want |= uint64(s[i])
			}
		}
		if got := key8(s[:n]); got != want {
			t.Errorf("key8(%q) = %#x, want %#x", s[:n], got, want)
		}
	}
}

// TestScanAgreesWithBruteForce checks groups of up to 4*linearMax
// rules, scanned and indexed, against trying every rule, with short
// patterns and paths, anchors and wildcards near the start.
func TestScanAgreesWithBruteForce(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	letters := []string{"a", "b", "c", "d", "e", "f", "g", "h", "/", "*"}
	for range 400 {
		rules := make([]refRule, 1+rng.Intn(4*linearMax))
		for i := range rules {
			pat := "/" + randString(rng, letters, 4)
			switch rng.Intn(6) {
			case 0:
				pat += "$"
			case 1:
				pat = "*" + pat
			}
			rules[i] = refRule{allow: rng.Intn(2) == 0, pattern: pat, line: i + 2}
		}
		g := Parse(refBody(rules)).Group("x")
		for range 50 {
			p := "/" + randString(rng, []string{"a", "b", "c", "/"}, 4)
			if got, want := g.find(p), bruteFind(g, p); got != want {
				t.Fatalf("find(%q) = %d want %d\n%s", p, got, want, refBody(rules))
			}
		}
	}
}
