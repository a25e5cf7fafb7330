package matcher

import (
	"math/rand"
	"strings"
	"testing"
)

// naiveLines splits body into lines and each line into its content, the
// slow and obvious way.
func naiveLines(body []byte) (texts, contents []string) {
	s := string(body)
	for _, bom := range []string{"\xEF\xBB\xBF", "\xEF\xBB", "\xEF"} {
		if strings.HasPrefix(s, bom) {
			s = s[len(bom):]
			break
		}
	}
	for s != "" {
		line := s
		s = ""
		if i := strings.IndexAny(line, "\r\n"); i >= 0 {
			end := i + 1
			if strings.HasPrefix(line[i:], "\r\n") {
				end++
			}
			line, s = line[:i], line[end:]
		}
		texts = append(texts, line)
		content := line
		if j := strings.IndexAny(content, "#\x00"); j >= 0 {
			content = content[:j]
		}
		contents = append(contents, strings.Trim(content, " \t\v\f"))
	}
	return texts, contents
}

func TestScannerLines(t *testing.T) {
	pieces := []string{"\n", "\r", "\r\n", "#", "\x00", " ", "\t", "a", "user-agent: x", "disallow: /y",
		strings.Repeat("p", 30), strings.Repeat("q", 70), ":", "\xEF\xBB\xBF",
		strings.Repeat("r", 7), strings.Repeat("s", 9), "a#b\x00c", "##", "\x00\x00", "!\"$"}
	rng := rand.New(rand.NewSource(3))
	for range 50000 {
		var b strings.Builder
		for range rng.Intn(12) {
			b.WriteString(pieces[rng.Intn(len(pieces))])
		}
		body := []byte(b.String())
		texts, contents := naiveLines(body)
		var s scanner
		s.init(body)
		n := 0
		for s.next() {
			if n >= len(texts) {
				t.Fatalf("%q: more lines than %d", body, len(texts))
			}
			if s.num != n+1 || string(s.text) != texts[n] {
				t.Fatalf("%q: line %d = %q want %q", body, s.num, s.text, texts[n])
			}
			// The content is what the key and value were cut from.
			if contents[n] == "" && s.field != fieldNone || contents[n] != "" && s.field == fieldNone {
				t.Fatalf("%q: line %d content %q, field %d", body, s.num, contents[n], s.field)
			}
			var want scanner
			want.split([]byte(contents[n]))
			if s.field != want.field || string(s.key) != string(want.key) || string(s.value) != string(want.value) {
				t.Fatalf("%q: line %d: field %d key %q value %q, want those of content %q", body, s.num, s.field, s.key, s.value, contents[n])
			}
			n++
		}
		if n != len(texts) {
			t.Fatalf("%q: %d lines want %d", body, n, len(texts))
		}
	}
}

func TestScannerLongLines(t *testing.T) {
	long := strings.Repeat("x", 100)
	cases := []struct {
		body  string
		value string // of the second line
	}{
		{"user-agent: a\ndisallow: /" + long + " # c\n", "/" + long},
		{"user-agent: a\ndisallow: /" + long + "\x00tail # c\n", "/" + long},
		{"user-agent: a\rdisallow: /" + long + "#" + long + "\r", "/" + long},
		{"user-agent: a\r\ndisallow: /a#" + long + "\r\n", "/a"},
		{"user-agent: a\ndisallow: /" + strings.Repeat("y", 52) + "\x00" + "#\n", "/" + strings.Repeat("y", 52)},
		{"user-agent: a\rdisallow: /a # c\r#" + long + "\r", "/a"}, // a short line in a long CR-only run
	}
	for _, c := range cases {
		var s scanner
		s.init([]byte(c.body))
		s.next()
		s.next()
		if string(s.value) != c.value || s.field != fieldDisallow {
			t.Errorf("%q: second line value %q want %q", c.body, s.value, c.value)
		}
	}
}

// scanKeysOnly checks that scanning body as Parse does (keysOnly) finds
// the same lines as Lint does, and the same field, key and value for
// every line but those that Parse ignores either way.
func scanKeysOnly(t *testing.T, body []byte) {
	t.Helper()
	var a, b scanner
	a.init(body)
	b.init(body)
	b.keysOnly = true
	for {
		okA, okB := a.next(), b.next()
		if okA != okB {
			t.Fatalf("%q: keysOnly scan ends at line %d, the other at %d", body, b.num, a.num)
		}
		if !okA {
			return
		}
		if a.num != b.num || a.start != b.start || string(a.text) != string(b.text) || a.pos != b.pos {
			t.Fatalf("%q: line %d: keysOnly reads %q at %d, the other %q at %d", body, a.num, b.text, b.start, a.text, a.start)
		}
		used := func(f field) bool { return f != fieldNone && f != fieldInvalid && f != fieldUnknown }
		if b.field == fieldUnknown && b.key == nil && !used(a.field) {
			continue // skipped: a line Parse ignores
		}
		if a.field != b.field || string(a.key) != string(b.key) || string(a.value) != string(b.value) {
			t.Fatalf("%q: line %d: keysOnly reads %v %q %q, the other %v %q %q", body, a.num, b.field, b.key, b.value, a.field, a.key, a.value)
		}
	}
}

// TestScanKeysOnly checks the lines that Parse's scanner skips: long
// lines whose content may start with a key, after white space, or with
// anything else, and that CR, LF, '#' and NUL may cut anywhere.
func TestScanKeysOnly(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	parts := []string{
		"Disallow: /x", "user-agent: a", "Sitemap: https://e/s", "crawl-delay: 1", "content-usage: train-ai=n",
		"disallow: /y", "USER-AGENT: b", "sitemap: https://e/t", "Crawl-Delay: 2", "Content-Signal: search=yes",
		"allow: /z", "useragent c", "dissallow: /w",
		"<div class=\"a\">", "Allow:", "  ", "\t", "\r", "\n", "\r\n", "#", "\x00", "# note", ":", "x y",
		strings.Repeat("<p>", 30), strings.Repeat("a", 70), strings.Repeat(" ", 65),
	}
	for range 3000 {
		var b strings.Builder
		for range 1 + rng.Intn(12) {
			b.WriteString(parts[rng.Intn(len(parts))])
		}
		scanKeysOnly(t, []byte(b.String()))
	}
}

func FuzzScanKeysOnly(f *testing.F) {
	f.Add([]byte("<html>" + strings.Repeat("x", 80) + "\rDisallow: /a\n"))
	f.Add([]byte(strings.Repeat(" ", 70) + "User-agent: *\r\n" + strings.Repeat("#", 70) + "\nAllow: /"))
	f.Fuzz(func(t *testing.T, body []byte) { scanKeysOnly(t, body) })
}
