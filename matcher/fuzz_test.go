package matcher

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seedBodies returns the robots.txt files in testdata.
func seedBodies(f *testing.F) [][]byte {
	f.Helper()
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed files in testdata: %v", err)
	}
	var bodies [][]byte
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		bodies = append(bodies, b)
	}
	return bodies
}

// FuzzParse checks that any body parses without a panic, that matching is
// deterministic, that /robots.txt is always allowed, and that the index
// agrees with trying every rule.
func FuzzParse(f *testing.F) {
	urls := []string{"/", "/fish/salmon.htm", "https://example.com/page.htm?x#y", "/x", "/ツ/a", "/a%2fb/c", "?q", "//h/p"}
	for i, body := range seedBodies(f) {
		f.Add(body, "FooBot", urls[i%len(urls)])
		f.Add(body, "googlebot", urls[(i+3)%len(urls)])
	}
	f.Add([]byte("user-agent: *\ndisallow: /*a*a*a*b\n"), "x", "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab")
	f.Add([]byte("\xEF\xBB\xBF\xEF\xBBuser-agent:\ndisallow: /\r\r\n"), "", "")
	f.Fuzz(func(t *testing.T, body []byte, agent, url string) {
		r := Parse(body)
		g := r.Group(agent)
		m := g.Match(url)
		if m.Allowed != g.Allowed(url) || m != r.Match(agent, url) || m.Allowed != r.Allowed(agent, url) {
			t.Fatalf("Match and Allowed disagree on %q", url)
		}
		if (m.Line == 0) != (m.Rule == "") || m.Line == 0 && !m.Allowed {
			t.Fatalf("Match(%q) = %+v: a verdict without a rule, or a rule without a line", url, m)
		}
		if again := Parse(body).Match(agent, url); again != m {
			t.Fatalf("Match(%q) = %+v, then %+v", url, m, again)
		}
		if !r.Allowed(agent, "/robots.txt") || !r.Allowed(agent, "https://example.com/robots.txt") {
			t.Fatalf("/robots.txt disallowed")
		}
		p := normalPath(url)
		if got, want := g.find(p), bruteFind(g, p); got != want && p != "/robots.txt" {
			t.Fatalf("find(%q) = %d want %d", p, got, want)
		}
		checkWritten(t, body, r)
		checkLines(t, body)
		rep := Lint(body)
		for i, d := range rep.Diagnostics {
			if d.Line < 1 || i > 0 && d.Line < rep.Diagnostics[i-1].Line {
				t.Fatalf("diagnostics out of line order: %v", rep.Diagnostics)
			}
		}
		if len(rep.Sitemaps) != len(r.Sitemaps()) {
			t.Fatalf("Lint found %d sitemaps, Parse %d", len(rep.Sitemaps), len(r.Sitemaps()))
		}
	})
}

// checkLines checks the scanner's lines, fields, keys and values against
// those of the naive split.
func checkLines(t *testing.T, body []byte) {
	t.Helper()
	texts, contents := naiveLines(body)
	var s scanner
	s.init(body)
	n := 0
	for ; s.next(); n++ {
		if n >= len(texts) || string(s.text) != texts[n] {
			t.Fatalf("line %d = %q, want the naive split's %q", s.num, s.text, texts)
		}
		var want scanner
		want.split([]byte(contents[n]))
		if s.field != want.field || string(s.key) != string(want.key) || string(s.value) != string(want.value) {
			t.Fatalf("line %d: field %d key %q value %q, want those of content %q", s.num, s.field, s.key, s.value, contents[n])
		}
	}
	if n != len(texts) {
		t.Fatalf("%d lines, want %d", n, len(texts))
	}
}

// checkWritten checks that each rule of r gives back its pattern as
// written on its line of body, as Match reports it.
func checkWritten(t *testing.T, body []byte, r *Robots) {
	t.Helper()
	written := map[int]string{}
	var s scanner
	s.init(body)
	for s.next() {
		if s.field == fieldAllow || s.field == fieldDisallow {
			written[s.num] = string(s.value)
		}
	}
	for i := range r.rules {
		rl := &r.rules[i]
		var b strings.Builder
		rl.writeWritten(&b, r.arena)
		if w, ok := written[r.lineOf(rl)]; !ok || b.String() != w || rl.writtenLen(r.arena) != len(w) {
			t.Fatalf("rule of line %d (%q): as written %q (length %d), want %q", r.lineOf(rl), rl.pattern(r.arena), b.String(), rl.writtenLen(r.arena), w)
		}
	}
}

// FuzzMatch checks the matcher against the reference matcher. Each line of
// rules is a rule: 'a' then an allow pattern, or anything else then a
// disallow pattern.
func FuzzMatch(f *testing.F) {
	seeds := []struct{ rules, path string }{
		{"d/fish\na/fish*", "/fish"},
		{"d/\na/$", "/"},
		{"a/p\nd/", "/page"},
		{"a/page\nd/*.htm", "/page.htm"},
		{"a/page\nd/*.ph", "/page.php5"},
		{"d/*.php$", "/folder/filename.php"},
		{"d/fish*.php", "/fishheads/catfish.php?parameters"},
		{"d/foo/bar/%62%61%7A", "/foo/bar/baz"},
		{"d/a%2fb", "/a%2Fb"},
		{"d/file-with-a-%2A.html", "/file-with-a-*.html"},
		{"d/a$b$", "/a$b"},
		{"a/%E3%83\nd/ツ", "/%E3%83%84"},
		{"d/*a*a*a*a*a*a*a*a*a*a*b", "/" + strings.Repeat("a", 200)},
		{"dx", "/x"},
		{"d*x$", "/ax"},
	}
	for _, s := range seeds {
		f.Add(s.rules, s.path)
	}
	f.Fuzz(func(t *testing.T, rules, path string) {
		var rs []refRule
		for line := range strings.SplitSeq(rules, "\n") {
			if line == "" {
				continue
			}
			// Keep patterns that survive a robots.txt line unchanged.
			pat := strings.Trim(line[1:], " \t\v\f")
			if strings.ContainsAny(pat, "#\r\x00") {
				continue
			}
			rs = append(rs, refRule{allow: line[0] == 'a', pattern: pat, line: len(rs) + 2})
		}
		if i := strings.IndexByte(path, '#'); i >= 0 {
			path = path[:i]
		}
		path = "/" + path
		// Once as written, scanned; with extra rules whose prints differ,
		// so that the group is still scanned; and with extra rules that
		// all have the same prints, or too many, so that it is indexed.
		for _, extra := range []struct {
			n       int
			format  string
			scanned bool
		}{{0, "", true}, {linearMax + 1, "/%c%d*z$", true}, {4 * linearMax, "/a%c%d*z$", false}, {scanMax + 1, "/%c%d*z$", false}} {
			rs := rs
			for i := range extra.n {
				c := 'a' + i%3
				if extra.format == "/a%c%d*z$" {
					c = 'a'
				}
				rs = append(rs, refRule{allow: i%2 == 0, pattern: fmt.Sprintf(extra.format, c, i), line: len(rs) + 2})
			}
			body := refBody(rs)
			want := refMatch(rs, path)
			g := Parse(body).Group("x")
			if got := g.Match("https://example.com" + path); got != want {
				t.Fatalf("robots.txt:\n%sMatch(%q) = %+v\nreference:  %+v", body, path, got, want)
			}
			if len(rs) <= linearMax && g.indexed() {
				t.Fatalf("%d rules, not scanned", len(rs))
			}
			if extra.n > 0 && extra.scanned != g.byPrints() {
				t.Fatalf("%d rules: scanned %v, want %v", len(rs), g.byPrints(), extra.scanned)
			}
			if extra.n > 0 && !extra.scanned && g.idx.Load() == nil {
				t.Fatalf("%d rules, not indexed", len(rs))
			}
			if !strings.HasPrefix(path, "//") {
				if got := g.Match(path); got != want {
					t.Fatalf("robots.txt:\n%sMatch(%q) = %+v\nreference:  %+v", body, path, got, want)
				}
			}
		}
	})
}

// pathQueryRef is pathQuery as the byte loops of its specification.
func pathQueryRef(url string) (string, bool) {
	if len(url) == 0 || url[0] != '/' {
		// A scheme: a letter, then letters, digits, '+', '-' or '.', then ':'.
		i := 0
		for i < len(url) && ('a' <= url[i]|0x20 && url[i]|0x20 <= 'z' || i > 0 && ('0' <= url[i] && url[i] <= '9' || url[i] == '+' || url[i] == '-' || url[i] == '.')) {
			i++
		}
		if i > 0 && i < len(url) && url[i] == ':' {
			url = url[i+1:]
		}
	}
	if strings.HasPrefix(url, "//") {
		i := 2
		for i < len(url) && url[i] != '/' && url[i] != '?' && url[i] != '#' {
			i++
		}
		url = url[i:]
	}
	if i := strings.IndexByte(url, '#'); i >= 0 {
		url = url[:i]
	}
	// Normal when normalising changes nothing.
	return url, url != "" && url[0] != '?' && string(appendNormURL(nil, url)) == url
}

func FuzzPathQuery(f *testing.F) {
	for _, s := range []string{
		"", "/", "/a?b#c", "?q", "#f", "//host", "//host/p", "//h?x", "//h#x",
		"https://example.com/a/b?c=d#e", "http://example.com", "HTTPS://Example.COM/X",
		"https:/x", "http:x", "https:", "mailto:a@b", "a+b-c.d:/x", "1a:/x", ":/x",
		"https://user@host:8080/p", "https://[::1]:80/p%2f", "https://host.example.org?x#y",
		"https://a.very.long.host.name.example.com/path/with/ツ", "https://h/%zz*$",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, url string) {
		p, normal := pathQuery(url)
		wp, wn := pathQueryRef(url)
		if p != wp || normal != wn {
			t.Fatalf("pathQuery(%q) = %q, %v; want %q, %v", url, p, normal, wp, wn)
		}
	})
}
