package main

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf16"
)

// writeFile writes body to a new file in a temporary directory and returns
// its name.
func writeFile(t *testing.T, body []byte) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "robots.txt")
	if err := os.WriteFile(f, body, 0o666); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestLintKinds(t *testing.T) {
	var page strings.Builder
	page.WriteString("<!DOCTYPE html>\n<html><head><title>Not found</title></head>\n<body>\n")
	for range 100 {
		page.WriteString("<div class=\"x\">nothing here</div>\n")
	}
	page.WriteString("</body></html>\n")

	text := "User-agent: *\r\nDisallow: /private/\r\n"
	var u16 bytes.Buffer
	u16.Write([]byte{0xff, 0xfe})
	for _, c := range utf16.Encode([]rune(text)) {
		u16.Write([]byte{byte(c), byte(c >> 8)})
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(text))
	zw.Close()

	cases := []struct {
		kind, want string
		body       []byte
	}{
		{"html", "this is an HTML page, not a robots.txt: crawlers will read no rules", []byte(page.String())},
		{"utf-16", "this is UTF-16 text; robots.txt must be UTF-8: crawlers will read no rules", u16.Bytes()},
		{"gzip", "this is gzip-compressed data, not a robots.txt: crawlers will read no rules", gz.Bytes()},
		{"binary", "this is binary data, not a robots.txt: crawlers will read no rules", []byte("\x00\x01\x02PNG\x00\x00\n\x00")},
	}
	for _, c := range cases {
		f := writeFile(t, c.body)
		code, stdout, _ := runCmd(t, "", "lint", f)
		got := lines(stdout)
		if code != exitFlagged || len(got) < 2 || got[1] != c.want {
			t.Errorf("lint of %s = %d\n%s\nwant 1 and second line %q", c.kind, code, stdout, c.want)
		}
		// The same from standard input.
		if code, stdin, _ := runCmd(t, string(c.body), "lint", "-"); code != exitFlagged || !strings.Contains(stdin, "\n"+c.want+"\n") {
			t.Errorf("lint - of %s = %d\n%s", c.kind, code, stdin)
		}
		var rep lintJSON
		_, stdout, _ = runCmd(t, "", "lint", "-json", f)
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.Kind != c.kind {
			t.Errorf("lint -json of %s: kind %q, %v", c.kind, rep.Kind, err)
		}
	}

	// The HTML page has over 100 problems, one or two a line: none is
	// listed, the count is given.
	f := writeFile(t, cases[0].body)
	_, stdout, _ := runCmd(t, "", "lint", f)
	if n := strings.Count(stdout, "\n  line "); n != 0 || !strings.Contains(stdout, "\nproblems of its lines: ") {
		t.Errorf("lint listed %d problems of an HTML page, want none and their count:\n%s", n, stdout)
	}
	if n := len(lines(stdout)); n > 4 {
		t.Errorf("lint of an HTML page: %d lines, want at most 4:\n%s", n, stdout)
	}
	// A robots.txt with as many problems: 20 are listed, then a count.
	_, stdout, _ = runCmd(t, "", "lint", writeFile(t, []byte(strings.Repeat("Disalow /x\n", 100))))
	if n := strings.Count(stdout, "\n  line "); n != maxShown {
		t.Errorf("lint listed %d problems, want %d:\n%s", n, maxShown, stdout)
	}
	if !strings.Contains(stdout, " more; -all to show all\n") {
		t.Errorf("lint does not say how many more problems there are:\n%s", stdout)
	}
	_, all, _ := runCmd(t, "", "lint", "-all", f)
	var rep lintJSON
	_, js, _ := runCmd(t, "", "lint", "-json", f)
	json.Unmarshal([]byte(js), &rep)
	if n := strings.Count(all, "\n  line "); n != len(rep.Diagnostics) || n <= maxShown || strings.Contains(all, "-all to show") {
		t.Errorf("lint -all listed %d problems, want %d", n, len(rep.Diagnostics))
	}

	// A robots.txt with a run of NUL bytes in a rule is not binary data.
	f = writeFile(t, []byte("User-agent: *\nDisallow: /a\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\n"))
	if _, stdout, _ := runCmd(t, "", "lint", f); strings.Contains(stdout, "binary") {
		t.Errorf("lint of a robots.txt with NUL bytes:\n%s", stdout)
	}

	// A robots.txt that mentions HTML in a comment is not an HTML page.
	f = writeFile(t, []byte("# no <html> here\nUser-agent: *\nDisallow: /x\n"))
	if code, stdout, _ := runCmd(t, "", "lint", f); code != exitOK || strings.Contains(stdout, "HTML") {
		t.Errorf("lint of a robots.txt = %d\n%s", code, stdout)
	}
}

// cutBody returns a robots.txt body whose 500 KiB limit falls inside the rule
// "Disallow: /html/Example", which crawlers do not read, with more lines
// after it.
func cutBody() (body string, cutLine int) {
	var b strings.Builder
	b.WriteString("User-agent: *\nDisallow: /a\n")
	n := 2
	for b.Len() < parseLimit-40 {
		b.WriteString("# padding\n")
		n++
	}
	b.WriteString(strings.Repeat("#", parseLimit-18-b.Len()) + "\n")
	b.WriteString("Disallow: /html/Example\n") // the limit falls after "/html/E"
	b.WriteString(strings.Repeat("Disallow: /more\n", 10))
	return b.String(), n + 2
}

func TestCheckCutLine(t *testing.T) {
	body, cut := cutBody()
	f := writeFile(t, []byte(body))
	code, stdout, stderr := runCmd(t, "", "check", f, "/html/E", "/a")
	want := []string{
		"allowed /html/E no rule matched; group * (line 1)",
		"disallowed /a Disallow: /a (line 2); group * (line 1)",
	}
	if code != exitFlagged || !equal(lines(stdout), want) {
		t.Errorf("check = %d\n%s\nwant\n%s", code, stdout, strings.Join(want, "\n"))
	}
	if w := "is " + count(len(body), "byte") + "; like crawlers, check reads only the first 500 KiB, to line " + strconv.Itoa(cut-1); !strings.Contains(stderr, w) {
		t.Errorf("stderr = %q, want %q", stderr, w)
	}

	// The same from standard input.
	code, stdout, _ = runCmd(t, body, "check", "-", "/html/E", "/a")
	if code != exitFlagged || !equal(lines(stdout), want) {
		t.Errorf("check - = %d\n%s", code, stdout)
	}
}

func TestLintCut(t *testing.T) {
	body, cut := cutBody()
	f := writeFile(t, []byte(body))
	code, stdout, _ := runCmd(t, "", "lint", f)
	for _, want := range []string{
		"crawlers read the first 500 KiB, lines 1–" + strconv.Itoa(cut-1) + " (",
		"1 rule), and ignore the rest (11 rules)",
		"line " + strconv.Itoa(cut) + ": the file is " + count(len(body), "byte"),
		"line 1: *: 1 rule read by crawlers, 11 more past line " + strconv.Itoa(cut-1),
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("lint output lacks %q:\n%s", want, stdout)
		}
	}
	if code != exitFlagged {
		t.Errorf("lint = %d, want %d", code, exitFlagged)
	}

	// Past lint's own read limit the size is still the file's.
	big := body + strings.Repeat("# more padding\n", (lintLimit+1000)/15)
	f = writeFile(t, []byte(big))
	_, stdout, _ = runCmd(t, "", "lint", "-json", f)
	var rep lintJSON
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Size != int64(len(big)) || !rep.Truncated || rep.ReadLines != cut-1 || len(rep.Groups) != 1 || rep.Groups[0].Rules != 1 {
		t.Errorf("lint -json of a %d-byte file: size %d, truncated %v, read lines %d, groups %+v", len(big), rep.Size, rep.Truncated, rep.ReadLines, rep.Groups)
	}
	if len(rep.Diagnostics) == 0 || !strings.Contains(rep.Diagnostics[0].Message, count(len(big), "byte")) {
		t.Errorf("diagnostics = %+v, want the true size", rep.Diagnostics)
	}
}

// TestRecorderCut: the check recorder sees what a Transport reads, which
// stops at 500 KiB, and drops the line cut there.
func TestRecorderCut(t *testing.T) {
	body, _ := cutBody()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, body)
	}))
	defer s.Close()
	rec := &recorder{base: baseTransport(time.Second), limit: parseLimit}
	defer rec.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/robots.txt", nil)
	resp, err := rec.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, parseLimit)) // as the Transport reads
	resp.Body.Close()
	f := rec.take()
	if src := sourceOf(f); !src.robots.Group("x").Allowed("/html/E") || src.robots.Group("x").Allowed("/a") {
		t.Errorf("recorded body: /html/E disallowed or /a allowed; body is %d bytes", len(f.body))
	}
}

func TestCheckInvalidURL(t *testing.T) {
	code, _, stderr := runCmd(t, "", "check", "testdata/basic.txt", "http://[::1")
	if code != exitUsage || stderr == "" {
		t.Errorf("check FILE of an invalid URL = %d, %q; want %d and an error", code, stderr, exitUsage)
	}
	s := newSite(t, robotsHandler(200, "User-agent: *\nDisallow:\n"))
	if code, _, _ := runCmd(t, "", "check", s.URL+"/", "http://[::1"); code != exitUsage {
		t.Errorf("check SITE of an invalid URL = %d, want %d", code, exitUsage)
	}
	// Standard input holds the robots.txt, so the URLs must be arguments.
	if code, _, _ := runCmd(t, "User-agent: *\n", "check", "-"); code != exitUsage {
		t.Errorf("check - without URLs = %d, want %d", code, exitUsage)
	}
}

func TestCheckLongLine(t *testing.T) {
	in := "/a\n/" + strings.Repeat("x", maxURLLine+10) + "\n/b\n"
	code, stdout, stderr := runCmd(t, in, "check", "testdata/allow-all.txt")
	got := lines(stdout)
	if code != exitUsage || len(got) != 2 || !strings.Contains(got[0], "/a") || !strings.Contains(got[1], "/b") {
		t.Errorf("check with a long line = %d\n%s\nwant %d and /a, /b", code, stdout, exitUsage)
	}
	if !strings.Contains(stderr, "line 2: longer than 64 KiB") {
		t.Errorf("stderr = %q", stderr)
	}
}

func TestHelp(t *testing.T) {
	for _, cmd := range []string{"check", "lint", "crawl"} {
		for _, h := range []string{"-h", "-help", "--help"} {
			code, stdout, stderr := runCmd(t, "", cmd, h)
			if code != exitOK || !strings.HasPrefix(stdout, "usage: robotstxt "+cmd) || !strings.Contains(stdout, "-timeout") || stderr != "" {
				t.Errorf("%s %s = %d, stdout %q, stderr %q; want 0 and the usage on stdout", cmd, h, code, stdout, stderr)
			}
		}
		if code, stdout, _ := runCmd(t, "", "help", cmd); code != exitOK || !strings.HasPrefix(stdout, "usage: robotstxt "+cmd) {
			t.Errorf("help %s = %d, %q", cmd, code, stdout)
		}
		// A usage error goes to stderr, with status 2.
		code, stdout, stderr := runCmd(t, "", cmd, "-nosuchflag")
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, "usage: robotstxt "+cmd) {
			t.Errorf("%s -nosuchflag = %d, stdout %q, stderr %q", cmd, code, stdout, stderr)
		}
	}
	for _, h := range []string{"-h", "--help", "help"} {
		if code, stdout, _ := runCmd(t, "", h); code != exitOK || !strings.HasPrefix(stdout, "usage:") {
			t.Errorf("%s = %d, %q", h, code, stdout)
		}
	}
}

// TestCrawlTimeout: -timeout bounds the robots.txt fetch of a site that does
// not answer; the crawl reports it unreachable.
func TestCrawlTimeout(t *testing.T) {
	release := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer s.Close()
	defer close(release)
	begin := time.Now()
	code, stdout, _ := runCmd(t, "", "crawl", "-timeout", "200ms", s.URL+"/")
	if code != exitFlagged || !strings.Contains(stdout, "refused  /  robots.txt unreachable") {
		t.Errorf("crawl -timeout = %d\n%s", code, stdout)
	}
	// Without -timeout the fetch would end after the default fetchTimeout;
	// half of it tells the two apart however loaded the machine.
	if d := time.Since(begin); d >= fetchTimeout/2 {
		t.Errorf("crawl -timeout 200ms took %v, as if the default of %v had ended the fetch", d, fetchTimeout)
	}
}

// TestCrawlObeying: a crawl of a live site says first what its robots.txt
// makes of the crawler, from the Transport's own copy: robots.txt is
// fetched once for that and for the whole crawl.
func TestCrawlObeying(t *testing.T) {
	cases := []struct {
		status int
		body   string
		agent  string
		want   string
	}{
		{http.StatusOK, "User-agent: *\nDisallow: /x\n\nUser-agent: examplebot\nUser-agent: other\nCrawl-delay: 0.01\nDisallow: /y\n",
			"ExampleBot", "obeying the group of user-agent: ExampleBot (line 4), not the * group, crawl-delay 10ms"},
		{http.StatusOK, "User-agent: a\nDisallow: /x\n\nUser-agent: examplebot\nDisallow: /y\nUser-agent: examplebot\nDisallow: /z\n",
			"ExampleBot", "obeying the groups of user-agent: ExampleBot (lines 4 and 6), no crawl-delay"},
		{http.StatusOK, "User-agent: other\nDisallow: /\n\nUser-agent: *\nDisallow: /x\n",
			"ExampleBot", "obeying the * group (line 4), no crawl-delay"},
		{http.StatusOK, "User-agent: other\nDisallow: /\n",
			"ExampleBot", "no group names ExampleBot and there is no * group: everything is allowed, no crawl-delay"},
		{http.StatusNotFound, "User-agent: *\nDisallow: /\n",
			"ExampleBot", "robots.txt is unavailable: everything is allowed, no crawl-delay: the default pace, 1s"},
		{http.StatusServiceUnavailable, "User-agent: *\nDisallow: /\n",
			"ExampleBot", "robots.txt unreachable (503 Service Unavailable): every URL is refused until it is fetched again, at "},
	}
	for i, c := range cases {
		// In fake time: a site that states no crawl-delay is paced by
		// the default delay, a second between robots.txt and the page.
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				fetches := 0
				h := robotsHandler(c.status, c.body)
				serveFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/robots.txt" {
						mu.Lock()
						fetches++
						mu.Unlock()
					}
					h.ServeHTTP(w, r)
				}))
				_, stdout, stderr := runCmd(t, "", "crawl", "-agent", c.agent, "-max", "2", "http://site.test/")
				got := lines(stdout)
				if len(got) < 2 || !strings.HasPrefix(got[1], c.want) {
					t.Errorf("robots.txt %d %q: crawl says\n%s\nwant a second line starting %q; stderr: %s", c.status, c.body, stdout, c.want, stderr)
				}
				mu.Lock()
				defer mu.Unlock()
				if fetches != 1 {
					t.Errorf("robots.txt %d %q: fetched %d times, want once", c.status, c.body, fetches)
				}
			})
		})
	}
}

// TestCrawlRetryAt: a URL refused because robots.txt is unreachable says
// when the Transport fetches robots.txt again.
func TestCrawlRetryAt(t *testing.T) {
	s := newSite(t, robotsHandler(http.StatusServiceUnavailable, ""))
	code, stdout, _ := runCmd(t, "", "crawl", s.URL+"/x")
	got := lines(stdout)
	if code != exitFlagged || len(got) < 3 {
		t.Fatalf("crawl = %d\n%s", code, stdout)
	}
	refused, at, ok := strings.Cut(got[2], "; retry after ")
	if !ok || refused != "refused /x robots.txt unreachable (503 Service Unavailable)" {
		t.Fatalf("refused line = %q, want %q and a time", got[2], "refused /x robots.txt unreachable (503 Service Unavailable); retry after …")
	}
	if _, err := time.Parse("15:04:05", at); err != nil {
		if _, err := time.Parse("Jan 2 15:04:05", at); err != nil {
			t.Errorf("retry time %q is not a time", at)
		}
	}
	if !strings.HasSuffix(got[1], ", at "+at) {
		t.Errorf("the first line %q does not give the same time as the refusal (%s)", got[1], at)
	}
	if n := s.count("/robots.txt"); n != 1 {
		t.Errorf("robots.txt fetched %d times, want once", n)
	}
}

// TestCheckSiteOneFetch: in site mode, one fetch of robots.txt serves the
// verdicts and the groups named, whatever the fetch finds.
func TestCheckSiteOneFetch(t *testing.T) {
	for _, c := range []struct {
		status int
		want   []string // output lines, with the site's URL as %s
	}{
		{http.StatusOK, []string{
			"disallowed %s/a Disallow: / (line 2); group * (line 1)",
			"allowed %s/ok Allow: /ok (line 3); group * (line 1)",
		}},
		{http.StatusNotFound, []string{
			"allowed %s/a robots.txt is unavailable (404 Not Found): no restrictions",
			"allowed %s/ok robots.txt is unavailable (404 Not Found): no restrictions",
		}},
		{http.StatusServiceUnavailable, []string{
			"disallowed %s/a robots.txt unreachable: robots: fetching %s/robots.txt: 503 Service Unavailable",
			"disallowed %s/ok robots.txt unreachable: robots: fetching %s/robots.txt: 503 Service Unavailable",
		}},
	} {
		s := newSite(t, robotsHandler(c.status, "User-agent: *\nDisallow: /\nAllow: /ok\n"))
		_, stdout, stderr := runCmd(t, "", "check", s.URL+"/", "/a", "/ok")
		var want []string
		for _, w := range c.want {
			want = append(want, strings.ReplaceAll(w, "%s", s.URL))
		}
		if got := lines(stdout); !equal(got, want) {
			t.Errorf("robots.txt %d: check says\n%s\nwant\n%s\nstderr: %s", c.status, stdout, strings.Join(want, "\n"), stderr)
		}
		if n := s.count("/robots.txt"); n != 1 {
			t.Errorf("robots.txt %d: fetched %d times, want once", c.status, n)
		}
	}
}

// TestCheckSiteDeflate: the rules check gives are those the Transport
// decided by, even when robots.txt comes in a Content-Encoding that only the
// Transport decodes.
func TestCheckSiteDeflate(t *testing.T) {
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	io.WriteString(zw, "User-agent: *\nDisallow: /\nAllow: /ok\n")
	zw.Close()
	s := newSite(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "deflate")
		w.Write(z.Bytes())
	}))
	code, stdout, stderr := runCmd(t, "", "check", s.URL+"/", "/ok", "/a")
	want := []string{
		"allowed " + s.URL + "/ok Allow: /ok (line 3); group * (line 1)",
		"disallowed " + s.URL + "/a Disallow: / (line 2); group * (line 1)",
	}
	if code != exitFlagged || !equal(lines(stdout), want) {
		t.Errorf("check = %d\n%s\nwant %d\n%s\nstderr: %s", code, stdout, exitFlagged, strings.Join(want, "\n"), stderr)
	}
	if n := s.count("/robots.txt"); n != 1 {
		t.Errorf("robots.txt fetched %d times, want once", n)
	}
}
