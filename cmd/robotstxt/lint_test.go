package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// longFile returns a robots.txt of one group, "User-agent: *", and rules of
// 21 bytes a line ("Disallow: /p" and 8 digits), size bytes or a little
// more in all.
func longFile(size int) []byte {
	var b bytes.Buffer
	b.WriteString("User-agent: *\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "Disallow: /p%08d\n", i)
	}
	return b.Bytes()
}

// aligned returns a longFile, then a comment, then tail, which the comment
// makes begin at byte at.
func aligned(at int, tail string) []byte {
	body := longFile(at - 100)
	body = append(body, "#"+strings.Repeat("x", at-len(body)-2)+"\n"...)
	return append(body, tail...)
}

// wholeLines returns the lines that end within the first n bytes of body,
// and the rules among them, counted without the matcher.
func wholeLines(body []byte, n int) (lines, rules int) {
	for l := range strings.Lines(string(body[:min(n, len(body))])) {
		if strings.HasSuffix(l, "\n") {
			lines++
			if strings.HasPrefix(l, "Disallow: /") {
				rules++
			}
		}
	}
	return lines, rules
}

func lintReport(t *testing.T, args ...string) lintJSON {
	t.Helper()
	_, stdout, stderr := runCmd(t, "", append([]string{"lint", "-json"}, args...)...)
	var rep lintJSON
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("lint -json: %v in %q; stderr: %s", err, stdout, stderr)
	}
	return rep
}

// TestLintLongerThanRead lints a 6 MiB file, longer than the 4 MiB lint
// reads: the rules crawlers read are counted exactly and called that, and
// the text and the JSON say that lint read only part of the file and count
// what lies past 500 KiB in that part only, as a lower bound.
func TestLintLongerThanRead(t *testing.T) {
	body := longFile(6 << 20)
	f := writeFile(t, body)
	readLines, readRules := wholeLines(body, parseLimit)
	lintedLines, lintedRules := wholeLines(body, lintLimit)
	linted := bytes.LastIndexByte(body[:lintLimit], '\n') + 1
	ignored := lintedRules - readRules

	code, stdout, _ := runCmd(t, "", "lint", f)
	if code != exitFlagged {
		t.Errorf("lint = %d, want %d", code, exitFlagged)
	}
	for _, want := range []string{
		fmt.Sprintf("%s: %s, 1 group, %d rules read by crawlers, 0 sitemaps, 1 problem\n", f, count(len(body), "byte"), readRules),
		fmt.Sprintf("\nthe file is longer than lint reads: it read the first 4 MiB, lines 1–%d (%s), and counted nothing in the %s after them\n",
			lintedLines, count(linted, "byte"), count(len(body)-linted, "byte")),
		fmt.Sprintf("\ncrawlers read the first 500 KiB, lines 1–%d (", readLines),
		fmt.Sprintf("%d rules), and ignore the rest (at least %d rules)\n", readRules, ignored),
		fmt.Sprintf("this line and the rest are ignored, at least %d rules among them (lint read only the first 4 MiB, to line %d)\n", ignored, lintedLines),
		fmt.Sprintf("line 1: *: %d rules read by crawlers, at least %d more past line %d\n", readRules, ignored, readLines),
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("lint output lacks %q:\n%s", want, stdout)
		}
	}

	rep := lintReport(t, f)
	if !rep.Truncated || rep.Size != int64(len(body)) || rep.Linted != linted || rep.LintedLines != lintedLines ||
		rep.ReadLines != readLines || len(rep.Groups) != 1 || rep.Groups[0].Rules != readRules || rep.Groups[0].Ignored != ignored {
		t.Errorf("lint -json: truncated %v, size %d, linted %d bytes and %d lines, read lines %d, groups %+v; want true, %d, %d, %d, %d, %d rules and %d ignored",
			rep.Truncated, rep.Size, rep.Linted, rep.LintedLines, rep.ReadLines, rep.Groups, len(body), linted, lintedLines, readLines, readRules, ignored)
	}
	if len(rep.Diagnostics) != 1 || !strings.Contains(rep.Diagnostics[0].Message, "at least "+count(ignored, "rule")+" among them (lint read only the first 4 MiB") {
		t.Errorf("diagnostics = %+v, want one that says lint read only the first 4 MiB", rep.Diagnostics)
	}

	// The same file from a site.
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer s.Close()
	if got := lintReport(t, s.URL+"/"); !got.Truncated || got.Size != rep.Size || got.Linted != rep.Linted ||
		got.LintedLines != rep.LintedLines || len(got.Groups) != 1 || got.Groups[0].Rules != rep.Groups[0].Rules || got.Groups[0].Ignored != rep.Groups[0].Ignored {
		t.Errorf("lint -json of the site: %+v\nwant the counts of the file: %+v", got, rep)
	}
}

// TestLintCutAtReadLimit: the line that lint's 4 MiB cuts, of which it has
// read only the start, is not counted: not "Disallow: /p0001", a rule the
// file does not have, nor "User-agent: bo", a group. A line that ends just
// at the limit is whole, and counted.
func TestLintCutAtReadLimit(t *testing.T) {
	more := strings.Repeat("Disallow: /more\n", 100)
	for _, c := range []struct {
		name string
		body []byte
	}{
		{"limit within a rule", aligned(lintLimit-13, "Disallow: /p0001\n"+more)},
		{"limit at a line end", aligned(lintLimit-21, "Disallow: /p00000001\n"+more)},
	} {
		if got := c.body[bytes.LastIndexByte(c.body[:lintLimit], '\n')+1 : lintLimit]; c.name == "limit within a rule" && string(got) != "Disallow: /p0" || c.body[lintLimit-1] == '\n' != (c.name == "limit at a line end") {
			t.Fatalf("%s: the limit falls after %q", c.name, got)
		}
		lintedLines, lintedRules := wholeLines(c.body, lintLimit)
		rep := lintReport(t, writeFile(t, c.body))
		if len(rep.Groups) != 1 || rep.Groups[0].Rules+rep.Groups[0].Ignored != lintedRules || rep.LintedLines != lintedLines {
			t.Errorf("%s: groups %+v, %d lines linted; want %d rules in all in %d whole lines", c.name, rep.Groups, rep.LintedLines, lintedRules, lintedLines)
		}
	}

	// A group whose user-agent line the limit cuts.
	body := aligned(lintLimit-14, "User-agent: botwithalongname\nDisallow: /\n")
	if got := body[lintLimit-14 : lintLimit]; string(got) != "User-agent: bo" {
		t.Fatalf("the limit falls after %q", got)
	}
	rep := lintReport(t, writeFile(t, body))
	if !rep.Truncated || len(rep.Groups) != 1 {
		t.Errorf("truncated %v, groups %+v; want one group, and none of a cut user-agent line", rep.Truncated, rep.Groups)
	}
}

// TestLintWhollyRead: a file lint reads whole, long or short, is counted
// whole, and nothing says otherwise.
func TestLintWhollyRead(t *testing.T) {
	for _, size := range []int{100, parseLimit + 1000, lintLimit} {
		body := longFile(size)
		body = body[:bytes.LastIndexByte(body[:min(size, len(body))], '\n')+1] // at most lintLimit bytes
		lines, rules := wholeLines(body, len(body))
		f := writeFile(t, body)
		rep := lintReport(t, f)
		if rep.Truncated || rep.Linted != len(body) || rep.LintedLines != lines || len(rep.Groups) != 1 ||
			rep.Groups[0].Rules+rep.Groups[0].Ignored != rules {
			t.Errorf("%d bytes: truncated %v, linted %d bytes and %d lines, groups %+v; want false, %d, %d, %d rules",
				len(body), rep.Truncated, rep.Linted, rep.LintedLines, rep.Groups, len(body), lines, rules)
		}
		_, stdout, _ := runCmd(t, "", "lint", f)
		if strings.Contains(stdout, "longer than lint reads") || strings.Contains(stdout, "at least") {
			t.Errorf("%d bytes: lint says it read part of the file:\n%s", len(body), stdout)
		}
		if cut := len(body) > parseLimit; cut != strings.Contains(stdout, "rules read by crawlers, 0 sitemaps") {
			t.Errorf("%d bytes: the summary should say the rules are those crawlers read only when they read part of the file:\n%s", len(body), stdout)
		}
	}
}

// endless is a reader of n bytes: block, over and over.
type endless struct {
	block []byte
	n     int64
	off   int
}

func (r *endless) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.block[r.off:])
		n += c
		r.off = (r.off + c) % len(r.block)
	}
	r.n -= int64(n)
	return n, nil
}

// TestLintOverCountLimit: of a file over 1 GiB lint knows neither the size
// nor what lies past its first 4 MiB, and says so.
func TestLintOverCountLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 1 GiB from standard input")
	}
	line := []byte("Disallow: /p0000000\n")
	stdin := io.MultiReader(strings.NewReader("User-agent: *\n"), &endless{block: bytes.Repeat(line, 1<<10), n: countLimit})
	var out, errOut bytes.Buffer
	code := run([]string{"lint", "-"}, stdin, &out, &errOut)
	stdout := out.String()
	if code != exitFlagged || !strings.HasPrefix(stdout, "-: over 1 GiB, 1 group, ") {
		t.Errorf("lint = %d, %s", code, stdout)
	}
	if !strings.Contains(stdout, "\nthe file is longer than lint reads: it read the first 4 MiB, lines 1–"+
		strconv.Itoa(1+(lintLimit-14)/len(line))+" (") || !strings.Contains(stdout, "), and counted nothing in the rest\n") {
		t.Errorf("lint does not say it read part of a file of unknown size:\n%s", stdout)
	}
}
