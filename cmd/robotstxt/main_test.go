package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// childEnv, set to 1, makes the test binary run as the command itself, for
// the tests that run it as a child process (see startChild).
const childEnv = "ROBOTSTXT_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
		return
	}
	// A crawl run in the test process keeps no state: the tests of the
	// state run the command as a child, with a cache directory of their own.
	stateDefault = func() string { return "" }
	if _, err := os.Stat(corpusDir); err != nil {
		fmt.Fprintf(os.Stderr, "robotstxt: %s is absent: the corpus is not linted\n", corpusDir)
	}
	goleak.VerifyTestMain(m)
}

// runCmd runs the command line and returns its exit status and output.
func runCmd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// lines splits output into its lines, with runs of spaces collapsed so that
// tests do not depend on column widths.
func lines(s string) []string {
	var out []string
	for l := range strings.Lines(s) {
		out = append(out, strings.Join(strings.Fields(l), " "))
	}
	return out
}

func TestUsage(t *testing.T) {
	cases := [][]string{
		{},
		{"frobnicate"},
		{"check"},
		{"check", "-nosuchflag", "testdata/basic.txt"},
		{"check", "-agent", "/1.2", "testdata/basic.txt", "/"},
		{"check", "testdata/no-such-file.txt", "/"},
		{"check", "http://[::1", "/"},
		{"lint"},
		{"lint", "a", "b"},
		{"lint", "testdata/no-such-file.txt"},
		{"crawl"},
		{"crawl", "-demo", "http://127.0.0.1/"},
		{"crawl", "-max", "0", "http://127.0.0.1/"},
		{"crawl", "ftp://127.0.0.1/"},
		{"crawl", "-agent", "two words", "http://127.0.0.1/"},
	}
	for _, args := range cases {
		code, stdout, stderr := runCmd(t, "", args...)
		if code != exitUsage {
			t.Errorf("run(%q) = %d, want %d\nstdout:\n%s", args, code, exitUsage, stdout)
		}
		if stderr == "" {
			t.Errorf("run(%q) wrote nothing to stderr", args)
		}
	}
	if code, stdout, _ := runCmd(t, "", "help"); code != exitOK || !strings.Contains(stdout, "robotstxt crawl") {
		t.Errorf("run(help) = %d, %q; want 0 and the usage", code, stdout)
	}
}

func TestCheckFile(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want []string // output lines, spaces collapsed
	}{{
		args: []string{"-agent", "googlebot", "testdata/basic.txt", "/private/a", "/private/press/2024", "/public", "/doc.pdf", "/doc.pdf?x"},
		code: exitFlagged,
		want: []string{
			"disallowed /private/a Disallow: /private/ (line 4); group googlebot, examplebot (line 2)",
			"allowed /private/press/2024 Allow: /private/press/ (line 5); group googlebot, examplebot (line 2)",
			"allowed /public no rule matched; group googlebot, examplebot (line 2)",
			"disallowed /doc.pdf Disallow: /*.pdf$ (line 6); group googlebot, examplebot (line 2)",
			"allowed /doc.pdf?x no rule matched; group googlebot, examplebot (line 2)",
		},
	}, {
		// Tokens compare case-insensitively; the "*" group is not combined
		// with a named one.
		args: []string{"-agent", "ExampleBot", "testdata/basic.txt", "https://example.com/tmp/x"},
		code: exitOK,
		want: []string{"allowed https://example.com/tmp/x no rule matched; group googlebot, examplebot (line 2)"},
	}, {
		// Without -agent, the command is "robotstxt", which obeys "*".
		args: []string{"testdata/basic.txt", "/tmp/x", "/private/a"},
		code: exitFlagged,
		want: []string{
			"disallowed /tmp/x Disallow: /tmp/ (line 9); group * (line 8)",
			"allowed /private/a no rule matched; group * (line 8)",
		},
	}, {
		args: []string{"testdata/clean.txt", "/search/about", "/"},
		code: exitOK,
		want: []string{
			"allowed /search/about Allow: /search/about (line 3); group * (line 1)",
			"allowed / no rule matched; group * (line 1)",
		},
	}}
	for _, c := range cases {
		args := append([]string{"check"}, c.args...)
		code, stdout, stderr := runCmd(t, "", args...)
		if code != c.code {
			t.Errorf("run(%q) = %d, want %d; stderr: %s", args, code, c.code, stderr)
		}
		if got := lines(stdout); !equal(got, c.want) {
			t.Errorf("run(%q) printed\n%s\nwant\n%s", args, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
}

func equal(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}

func TestCheckNoGroup(t *testing.T) {
	f := filepath.Join(t.TempDir(), "robots.txt")
	if err := os.WriteFile(f, []byte("User-agent: otherbot\nDisallow: /\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ := runCmd(t, "", "check", f, "/x")
	if want := []string{"allowed /x no rule matched; no group applies"}; code != exitOK || !equal(lines(stdout), want) {
		t.Errorf("check = %d\n%s\nwant 0\n%s", code, stdout, want[0])
	}
}

// TestCheckStdinJSON reads URLs from standard input and decodes the JSON
// Lines output.
func TestCheckStdinJSON(t *testing.T) {
	stdin := "# URLs to check\n/private/a\n\n  /private/press/x  \n/elsewhere\n"
	code, stdout, stderr := runCmd(t, stdin, "check", "-json", "-agent", "examplebot", "testdata/basic.txt")
	if code != exitFlagged {
		t.Errorf("exit status %d, want %d; stderr: %s", code, exitFlagged, stderr)
	}
	want := []verdict{
		{URL: "/private/a", Agent: "examplebot", Allowed: false, Rule: "Disallow: /private/", Line: 4},
		{URL: "/private/press/x", Agent: "examplebot", Allowed: true, Rule: "Allow: /private/press/", Line: 5},
		{URL: "/elsewhere", Agent: "examplebot", Allowed: true},
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	for i, w := range want {
		var v verdict
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("decoding verdict %d: %v\noutput:\n%s", i, err, stdout)
		}
		if len(v.Groups) != 1 || v.Groups[0].Line != 2 || strings.Join(v.Groups[0].Agents, ",") != "googlebot,examplebot" {
			t.Errorf("verdict %d: groups %+v, want line 2, googlebot and examplebot", i, v.Groups)
		}
		v.Groups = nil
		if fmt.Sprint(v) != fmt.Sprint(w) {
			t.Errorf("verdict %d = %+v, want %+v", i, v, w)
		}
	}
	if n := strings.Count(stdout, "\n"); n != len(want) {
		t.Errorf("%d lines of output, want one per URL (%d)", n, len(want))
	}
}

func TestCheckLargeFile(t *testing.T) {
	// A rule past the first 500 KiB is not read, as crawlers do not read it.
	body := "User-agent: *\nDisallow: /a\n" + strings.Repeat("# padding\n", 52000) + "Disallow: /b\n"
	f := filepath.Join(t.TempDir(), "robots.txt")
	if err := os.WriteFile(f, []byte(body), 0o666); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "", "check", f, "/a", "/b")
	want := []string{
		"disallowed /a Disallow: /a (line 2); group * (line 1)",
		"allowed /b no rule matched; group * (line 1)",
	}
	if code != exitFlagged || !equal(lines(stdout), want) {
		t.Errorf("check = %d\n%s\nwant %d\n%s", code, stdout, exitFlagged, strings.Join(want, "\n"))
	}
	if !strings.Contains(stderr, "500 KiB") {
		t.Errorf("stderr = %q, want a warning about the size", stderr)
	}
}

// site is a loopback web site whose robots.txt answers as configured, and
// which counts the requests for each path.
type site struct {
	*httptest.Server
	mu       sync.Mutex
	requests map[string]int // by path, query included
}

func newSite(t *testing.T, h http.Handler) *site {
	t.Helper()
	s := &site{requests: make(map[string]int)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests[r.URL.RequestURI()]++
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// paths returns how many times each path was requested.
func (s *site) paths() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.requests)
}

func (s *site) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[path]
}

// robotsHandler answers /robots.txt with status and body, and every other
// path with a page.
func robotsHandler(status int, body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			w.WriteHeader(status)
			io.WriteString(w, body)
			return
		}
		io.WriteString(w, "<p>page</p>")
	})
}

func TestCheckSite(t *testing.T) {
	basic, err := os.ReadFile("testdata/basic.txt")
	if err != nil {
		t.Fatal(err)
	}
	s := newSite(t, robotsHandler(http.StatusOK, string(basic)))
	// The first URL names the site; the others are resolved against it.
	code, stdout, stderr := runCmd(t, "", "check", "-agent", "googlebot", s.URL+"/private/a", "/private/press/", "?q=1", "/public")
	want := []string{
		"allowed " + s.URL + "/private/press/ Allow: /private/press/ (line 5); group googlebot, examplebot (line 2)",
		"disallowed " + s.URL + "/private/a?q=1 Disallow: /private/ (line 4); group googlebot, examplebot (line 2)",
		"allowed " + s.URL + "/public no rule matched; group googlebot, examplebot (line 2)",
	}
	if code != exitFlagged || !equal(lines(stdout), want) {
		t.Errorf("check = %d\n%s\nwant %d\n%s\nstderr: %s", code, stdout, exitFlagged, strings.Join(want, "\n"), stderr)
	}
	if n := s.count("/robots.txt"); n != 1 {
		t.Errorf("robots.txt fetched %d times, want once", n)
	}
	for p, n := range s.paths() {
		if p != "/robots.txt" {
			t.Errorf("check requested %s %d times; it must fetch only robots.txt", p, n)
		}
	}

	// With URLs on standard input.
	code, stdout, _ = runCmd(t, "/private/b\n"+s.URL+"/public\n", "check", "-agent", "googlebot", s.URL)
	want = []string{
		"disallowed " + s.URL + "/private/b Disallow: /private/ (line 4); group googlebot, examplebot (line 2)",
		"allowed " + s.URL + "/public no rule matched; group googlebot, examplebot (line 2)",
	}
	if code != exitFlagged || !equal(lines(stdout), want) {
		t.Errorf("check with stdin = %d\n%s\nwant %d\n%s", code, stdout, exitFlagged, strings.Join(want, "\n"))
	}
}

// TestCheckSiteStatus checks the verdicts for robots.txt files that are
// missing or unreachable (RFC 9309 §2.3.1.3, §2.3.1.4).
func TestCheckSiteStatus(t *testing.T) {
	cases := []struct {
		status  int
		code    int
		verdict string
		reason  string
	}{
		{http.StatusNotFound, exitOK, "allowed", "unavailable (404 Not Found)"},
		{http.StatusForbidden, exitOK, "allowed", "unavailable (403 Forbidden)"},
		{http.StatusServiceUnavailable, exitFlagged, "disallowed", "unreachable"},
		{http.StatusTooManyRequests, exitFlagged, "disallowed", "unreachable"},
	}
	for _, c := range cases {
		s := newSite(t, robotsHandler(c.status, "User-agent: *\nDisallow: /\n"))
		code, stdout, _ := runCmd(t, "", "check", "-json", s.URL+"/", "/a")
		var v verdict
		if err := json.Unmarshal([]byte(stdout), &v); err != nil {
			t.Fatalf("robots.txt %d: %v in %q", c.status, err, stdout)
		}
		if code != c.code || v.Allowed != (c.verdict == "allowed") || v.Rule != "" || !strings.Contains(v.Reason, c.reason) {
			t.Errorf("robots.txt %d: exit %d, %+v; want exit %d, %s, reason containing %q",
				c.status, code, v, c.code, c.verdict, c.reason)
		}
	}
}

func TestCheckSiteDown(t *testing.T) {
	s := httptest.NewServer(http.NotFoundHandler())
	addr := s.URL
	s.Close() // nothing listens there now
	code, stdout, stderr := runCmd(t, "", "check", addr+"/", "/a")
	if code != exitFlagged || !strings.HasPrefix(stdout, "disallowed") || !strings.Contains(stdout, "unreachable") {
		t.Errorf("check of a site that is down = %d, %q, %q; want 1 and disallowed, unreachable", code, stdout, stderr)
	}
}

func TestLintFile(t *testing.T) {
	code, stdout, stderr := runCmd(t, "", "lint", "testdata/problems.txt")
	if code != exitFlagged {
		t.Errorf("lint problems.txt = %d, want %d; stderr: %s", code, exitFlagged, stderr)
	}
	for _, want := range []string{
		"problems:", "line 1:", "line 3:", "line 4:", "line 5:",
		"groups:", "line 2: *: ", "crawl-delay 5s", "line 8: slowbot: 1 rule",
		"sitemaps:", "https://example.com/a.xml",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("lint problems.txt: output lacks %q:\n%s", want, stdout)
		}
	}

	code, stdout, _ = runCmd(t, "", "lint", "testdata/clean.txt")
	if code != exitOK || strings.Contains(stdout, "problems:") || !strings.Contains(stdout, "0 problems") {
		t.Errorf("lint clean.txt = %d\n%s\nwant 0 and no problems", code, stdout)
	}

	code, stdout, _ = runCmd(t, "", "lint", "-json", "testdata/problems.txt")
	var rep lintJSON
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("lint -json: %v in %s", err, stdout)
	}
	if code != exitFlagged || len(rep.Diagnostics) < 4 || len(rep.Groups) != 2 || rep.Size != 172 ||
		rep.Groups[0].CrawlDelay == nil || *rep.Groups[0].CrawlDelay != 5 || len(rep.Sitemaps) != 1 {
		t.Errorf("lint -json = %d, %+v", code, rep)
	}
	for i, d := range rep.Diagnostics {
		if d.Message == "" || d.Line == 0 {
			t.Errorf("diagnostic %d = %+v: no line or message", i, d)
		}
	}
}

func TestLintLargeFile(t *testing.T) {
	body := "User-agent: *\nDisallow: /a\n" + strings.Repeat("# padding\n", 52000)
	f := filepath.Join(t.TempDir(), "robots.txt")
	if err := os.WriteFile(f, []byte(body), 0o666); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ := runCmd(t, "", "lint", "-json", f)
	var rep lintJSON
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("lint -json: %v in %s", err, stdout)
	}
	if code != exitFlagged || rep.Size != int64(len(body)) || len(rep.Diagnostics) == 0 {
		t.Errorf("lint of a %d-byte file = %d, %+v; want 1, the size, a diagnostic", len(body), code, rep)
	}
}

func TestLintSite(t *testing.T) {
	clean, err := os.ReadFile("testdata/clean.txt")
	if err != nil {
		t.Fatal(err)
	}
	s := newSite(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			http.Redirect(w, r, "/moved/robots.txt", http.StatusMovedPermanently)
		case "/moved/robots.txt":
			w.Write(clean)
		default:
			http.NotFound(w, r)
		}
	}))
	code, stdout, stderr := runCmd(t, "", "lint", s.URL+"/some/page")
	if code != exitOK || !strings.HasPrefix(stdout, s.URL+"/robots.txt: 200 OK (redirected to "+s.URL+"/moved/robots.txt), 95 bytes, 1 group, 2 rules, 1 sitemap, 0 problems\n") ||
		!strings.Contains(stdout, "line 1: *: 2 rules") {
		t.Errorf("lint of a redirected robots.txt = %d\n%s\nstderr: %s", code, stdout, stderr)
	}

	cases := []struct {
		h    http.Handler
		code int
		want string
	}{
		{robotsHandler(http.StatusNotFound, ""), exitOK, "no robots.txt (404 Not Found)"},
		{robotsHandler(http.StatusInternalServerError, ""), exitFlagged, "unreachable (500 Internal Server Error)"},
		{http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/robots.txt?again", http.StatusFound) // a loop
		}), exitFlagged, "more than 5 redirects"},
	}
	for _, c := range cases {
		s := newSite(t, c.h)
		code, stdout, stderr := runCmd(t, "", "lint", s.URL)
		if code != c.code || !strings.Contains(stdout, c.want) {
			t.Errorf("lint = %d, %q; want %d and %q; stderr: %s", code, stdout, c.code, c.want, stderr)
		}
	}
}

func TestLinks(t *testing.T) {
	page := `<html><head><base href="/docs/"></head><body>
<a href="a.html#top">a</a> <A HREF="/b?x=1">b</A>
<a name="no-href">c</a> <area href="../c"> <a href="mailto:x@example.com">mail</a>
<a href="javascript:void(0)">js</a> <a href="https://other.example/d">d</a>
<link href="/style.css"> <a href=" e ">e</a>`
	base, _ := url.Parse("http://127.0.0.1/index.html")
	var got []string
	for _, u := range links(strings.NewReader(page), base) {
		got = append(got, u.String())
	}
	want := []string{
		"http://127.0.0.1/docs/a.html#top",
		"http://127.0.0.1/b?x=1",
		"http://127.0.0.1/c",
		"https://other.example/d",
		"http://127.0.0.1/docs/e",
	}
	if !equal(got, want) {
		t.Errorf("links =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// demoRefused are the links of the demo site that robotstxt, the default
// agent, must not fetch.
var demoRefused = []string{"/private/", "/private/team", "/blog/?sort=date", "/blog/?sort=title", "/files/report.pdf"}

// TestCrawlDemo runs "crawl -demo", the README's first command, with a short
// crawl-delay.
func TestCrawlDemo(t *testing.T) {
	defer func(d time.Duration) { demoCrawlDelay = d }(demoCrawlDelay)
	demoCrawlDelay = 20 * time.Millisecond

	code, stdout, stderr := runCmd(t, "", "crawl", "-demo")
	if code != exitOK {
		t.Errorf("crawl -demo = %d, want 0; stderr: %s", code, stderr)
	}
	got := lines(stdout)
	for _, want := range []string{
		"200 / usage ai-use=n, search=y, use=reference from robots.txt line 12 (Content-Signal); train-ai=n from robots.txt line 10 (Content-Usage)",
		"200 /blog/ usage ai-use=n, search=y, use=reference from robots.txt line 12 (Content-Signal); train-ai=y from robots.txt line 11 (Content-Usage)",
		"refused /private/ Disallow: /private/ (line 6)",
		"200 /private/press/launch usage ai-use=n, search=y, use=reference from robots.txt line 12 (Content-Signal); train-ai=n from robots.txt line 10 (Content-Usage)",
		"404 /gone",
		// robots.txt says y for /blog/, the page's own header n: the header decides.
		"200 /blog/first-post usage ai-use=n, search=y, use=reference from robots.txt line 12 (Content-Signal); train-ai=n from the response's Content-Usage header",
		"refused /blog/?sort=date Disallow: /*?sort= (line 7)",
		"refused /blog/?sort=title Disallow: /*?sort= (line 7)",
		"refused /files/report.pdf Disallow: /*.pdf$ (line 8)",
		"refused /private/team Disallow: /private/ (line 6)",
	} {
		if !contains(got, want) {
			t.Errorf("crawl -demo output lacks %q:\n%s", want, stdout)
		}
	}
	if w := "obeying the group of user-agent: robotstxt (line 3), not the * group, crawl-delay 20ms"; !contains(got, w) {
		t.Errorf("crawl -demo does not say which group it obeys (%q):\n%s", w, stdout)
	}
	if strings.Contains(stdout, "elsewhere.invalid") {
		t.Errorf("crawl -demo left the site:\n%s", stdout)
	}
	if sum := got[len(got)-2]; !strings.HasPrefix(sum, "10 URLs in ") ||
		!strings.HasSuffix(sum, ": 5 fetched (4 × 200, 1 × 404), 5 disallowed by rules, 0 errors; finished") {
		t.Errorf("summary = %q", sum)
	}
	if want := "robots.txt fetched 1 time (1 ok); 0 requests refused for now and queued again"; got[len(got)-1] != want {
		t.Errorf("last line = %q, want %q", got[len(got)-1], want)
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

// TestCrawlObeys crawls the demo site as several agents and checks on the
// server that no disallowed URL was requested.
func TestCrawlObeys(t *testing.T) {
	cases := []struct {
		agent   string
		code    int
		fetched []string
		refused []string
	}{
		{"robotstxt", exitOK,
			[]string{"/", "/blog/", "/private/press/launch", "/gone", "/blog/first-post"},
			demoRefused},
		// Other crawlers obey "*": no blog, but the press release (it is
		// allowed only in the robotstxt group) is refused.
		{"otherbot", exitOK,
			[]string{"/", "/gone"},
			[]string{"/blog/", "/private/", "/private/press/launch"}},
		{"BadBot", exitFlagged, nil, []string{"/"}},
	}
	for _, c := range cases {
		s := newSite(t, demoHandler(10*time.Millisecond))
		code, stdout, stderr := runCmd(t, "", "crawl", "-agent", c.agent, s.URL)
		if code != c.code {
			t.Errorf("crawl as %s = %d, want %d; stderr: %s", c.agent, code, c.code, stderr)
		}
		for _, p := range c.fetched {
			if n := s.count(p); n != 1 {
				t.Errorf("crawl as %s: %s requested %d times, want once", c.agent, p, n)
			}
		}
		for _, p := range c.refused {
			if n := s.count(p); n != 0 {
				t.Errorf("crawl as %s: %s requested %d times despite robots.txt", c.agent, p, n)
			}
			if !strings.Contains(stdout, "refused  "+p+" ") {
				t.Errorf("crawl as %s: %s not reported refused:\n%s", c.agent, p, stdout)
			}
		}
		if n := s.count("/robots.txt"); n != 1 {
			t.Errorf("crawl as %s: robots.txt fetched %d times, want once", c.agent, n)
		}
		if paths := s.paths(); len(paths) != len(c.fetched)+1 {
			t.Errorf("crawl as %s: %d paths requested, want %d: %v", c.agent, len(paths), len(c.fetched)+1, paths)
		}
	}
}

func TestCrawlMax(t *testing.T) {
	s := newSite(t, demoHandler(10*time.Millisecond))
	code, stdout, _ := runCmd(t, "", "crawl", "-max", "3", s.URL+"/")
	got := lines(stdout)
	if code != exitOK || len(got) != 2+3+3 {
		t.Fatalf("crawl -max 3 = %d\n%s\nwant 0, a header, the group obeyed, 3 URLs, a blank line and a summary", code, stdout)
	}
	if sum := got[len(got)-2]; !strings.HasPrefix(sum, "3 URLs in ") || !strings.HasSuffix(sum, "; stopped at -max 3") {
		t.Errorf("summary = %q", sum)
	}
	total := 0
	paths := s.paths()
	for p, n := range paths {
		if p != "/robots.txt" {
			total += n
		}
	}
	if total > 3 {
		t.Errorf("crawl -max 3 requested %d pages: %v", total, paths)
	}
}

func TestCrawlDown(t *testing.T) {
	s := httptest.NewServer(http.NotFoundHandler())
	addr := s.URL
	s.Close()
	code, stdout, _ := runCmd(t, "", "crawl", addr)
	// Unreachable robots.txt: everything is refused (RFC 9309 §2.3.1.4).
	if code != exitFlagged || !strings.Contains(stdout, "refused  /  robots.txt unreachable") {
		t.Errorf("crawl of a site that is down = %d\n%s", code, stdout)
	}
	if !strings.Contains(stdout, ": 0 fetched, 0 disallowed by rules, 1 refused: robots.txt unreachable, 0 errors; stopped: every site refused the crawler\n") {
		t.Errorf("crawl of a site that is down: summary does not count it unreachable\n%s", stdout)
	}
}

// TestCheckSiteMixed checks URLs of two sites and a URL that does not parse.
func TestCheckSiteMixed(t *testing.T) {
	a := newSite(t, robotsHandler(http.StatusOK, "User-agent: *\nDisallow: /a\n"))
	b := newSite(t, robotsHandler(http.StatusOK, "User-agent: *\nDisallow: /b\n"))
	stdin := "/a\n" + b.URL + "/a\n/%zz\n" + b.URL + "/b\n/b\n"
	code, stdout, stderr := runCmd(t, stdin, "check", a.URL)
	want := []string{
		"disallowed " + a.URL + "/a Disallow: /a (line 2); group * (line 1)",
		"allowed " + b.URL + "/a no rule matched; group * (line 1)",
		"disallowed " + b.URL + "/b Disallow: /b (line 2); group * (line 1)",
		"allowed " + a.URL + "/b no rule matched; group * (line 1)",
	}
	if code != exitUsage || !equal(lines(stdout), want) {
		t.Errorf("check = %d\n%s\nwant %d\n%s", code, stdout, exitUsage, strings.Join(want, "\n"))
	}
	if !strings.Contains(stderr, "/%zz") {
		t.Errorf("stderr = %q, want the URL that does not parse", stderr)
	}
	if a.count("/robots.txt") != 1 || b.count("/robots.txt") != 1 {
		t.Errorf("robots.txt fetched %d and %d times, want once each", a.count("/robots.txt"), b.count("/robots.txt"))
	}
}

func TestProgress(t *testing.T) {
	if p := newProgress(&bytes.Buffer{}); p != nil {
		t.Errorf("newProgress(a buffer) = %v, want nil", p)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if p := newProgress(f); p != nil {
		t.Errorf("newProgress(a regular file) = %v, want nil", p)
	}
	var nilp *progress
	nilp.show("x") // does nothing
	nilp.clear()

	var buf bytes.Buffer
	p := &progress{w: &buf}
	p.clear() // nothing shown yet: nothing to clear
	p.show("[1/50] /" + strings.Repeat("x", 100))
	p.clear()
	p.clear()
	want := "\r\x1b[K[1/50] /" + strings.Repeat("x", 77-8) + "…" + "\r\x1b[K"
	if buf.String() != want {
		t.Errorf("progress wrote %q, want %q", buf.String(), want)
	}
}

// TestLintAllowAll: an empty Disallow, the documented way to allow
// everything, is not a problem.
func TestLintAllowAll(t *testing.T) {
	code, stdout, _ := runCmd(t, "", "lint", "testdata/allow-all.txt")
	if code != exitOK || !strings.Contains(stdout, "0 problems") {
		t.Errorf("lint allow-all.txt = %d\n%s\nwant 0 and no problems", code, stdout)
	}
	// An empty Allow still is.
	f := filepath.Join(t.TempDir(), "robots.txt")
	if err := os.WriteFile(f, []byte("User-agent: *\nAllow:\nDisallow: /x\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if code, stdout, _ := runCmd(t, "", "lint", f); code != exitFlagged || !strings.Contains(stdout, "line 2: empty allow value ignored") {
		t.Errorf("lint of an empty Allow = %d\n%s\nwant 1 and the line", code, stdout)
	}
}
