package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/f9014239/robots"
)

func TestScaleDelays(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"User-agent: *\nCrawl-delay: 10\nDisallow: /a\n", "User-agent: *\nCrawl-delay: 0.2\nDisallow: /a\n"},
		{"crawl-delay:0.5\r\n", "crawl-delay: 0.01\r\n"},
		{"Crawl-Delay: 3600 # an hour\n", "Crawl-Delay: 0.6\n"}, // capped at 30 s first
		{"Crawl_delay: 5", "Crawl_delay: 0.1"},
		{"Crawl-delay: soon\n", "Crawl-delay: soon\n"},
		{"Disallow: /crawl-delay: 10\n", "Disallow: /crawl-delay: 10\n"},
		{"Request-rate: 1/10\n", "Request-rate: 1/0.2s\n"},
		{"Request-rate: 6/1m # six a minute\r\n", "Request-rate: 1/0.2s\r\n"},
		{"Request-rate: 1/1h\n", "Request-rate: 1/0.6s\n"}, // capped at 30 s first
		{"Request-rate: 1/5x\n", "Request-rate: 1/5x\n"},
	} {
		if got := string(scaleDelays([]byte(c.in), 0.02)); got != c.want {
			t.Errorf("scaleDelays(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestPagePaths(t *testing.T) {
	body := "User-agent: *\nDisallow: /private/\nAllow: /*.css$\nDisallow:/robots.txt\nDisallow: /search?q=\nDisallow: /\u00e9t\u00e9\nDisallow: /index.html # comment\n"
	got := pagePaths([]byte(body), 10, rand.New(rand.NewPCG(1, 2)))
	slices.Sort(got)
	want := []string{"/", "/about/contact", "/index.html", "/private/page.html", "/search?q=", "/search?q=shoes&page=2", "/x.css"}
	if !slices.Equal(got, want) {
		t.Errorf("pagePaths = %q, want %q", got, want)
	}
	if got := pagePaths([]byte(body), 1, rand.New(rand.NewPCG(1, 2))); len(got) != len(genericPaths)+1 {
		t.Errorf("pagePaths with n=1 = %q, want one path more than the generic ones", got)
	}
}

func TestParseHost(t *testing.T) {
	for _, c := range []struct {
		h         string
		i, r      int
		moved, ok bool
	}{
		{host(12, 3), 12, 3, false, true},
		{movedHost(7, 1), 7, 1, true, true},
		{host(5, 2) + ":80", 5, 2, false, true},
		{"control", 0, 0, false, false},
		{"o1.test", 0, 0, false, false},
		{"x1.r2.test", 0, 0, false, false},
	} {
		i, r, moved, ok := parseHost(c.h)
		if i != c.i || r != c.r || moved != c.moved || ok != c.ok {
			t.Errorf("parseHost(%q) = %d, %d, %v, %v; want %d, %d, %v, %v", c.h, i, r, moved, ok, c.i, c.r, c.moved, c.ok)
		}
	}
}

// testWeb is a web of five origins made by hand: a normal one with a
// crawl-delay of 100 ms, one whose robots.txt answers 503, one that answers
// slowly, one whose pages answer after 160 ms (delay 100 ms), and one that
// answers its first two page requests 429 (delay 100 ms); its back-off
// starts at 300 ms, and its default pace is 50 ms.
func testWeb() *web {
	w := &web{timeout: 2 * time.Second, backoff: robots.Backoff{First: 300 * time.Millisecond, Max: 500 * time.Millisecond, Forgive: time.Second},
		defaultDelay: 50 * time.Millisecond, paced: true}
	delayed := []byte("User-agent: *\nCrawl-delay: 0.1\nDisallow: /private\n")
	w.origins = []origin{
		{kind: normal, body: delayed, paths: []string{"/", "/private/a", "/b"}},
		{kind: err503, paths: []string{"/", "/c"}},
		{kind: slow, body: []byte("User-agent: *\nDisallow:\n"), paths: []string{"/"}},
		{kind: normal, body: delayed, paths: []string{"/", "/b"}, latency: 160 * time.Millisecond},
		{kind: normal, body: delayed, paths: []string{"/", "/b"}, pushback: 2},
	}
	for i := range w.origins {
		w.judge(&w.origins[i])
	}
	return w
}

func TestJudgeWeb(t *testing.T) {
	w := testWeb()
	o := &w.origins[0]
	if o.delay != 100*time.Millisecond {
		t.Errorf("delay %v, want 100ms", o.delay)
	}
	if o.allowed[1] || !o.refereed[1] || !o.allowed[0] || !o.allowed[2] {
		t.Errorf("allowed %v, refereed %v; want only /private/a disallowed, and refereed", o.allowed, o.refereed)
	}
	for _, c := range []struct {
		i    int
		want time.Duration
		why  string
	}{
		{0, 200 * time.Millisecond, "robots.txt, then two pages a delay apart"},
		{1, 0, "unreachable: no page"},
		{2, 3 * slowFetch, "robots.txt after 1 s, no delay: a page twice that after it"},
		// the first page a delay after robots.txt; the second twice its
		// response time after its answer, which is longer than the delay
		{3, 100*time.Millisecond + 160*time.Millisecond + 320*time.Millisecond + 160*time.Millisecond, "two pages answered after 160 ms"},
		// four requests a delay apart (two 429s, then two pages), and the
		// pauses of the back-off beyond the delay: 300 - 100 and 500 - 100
		// (600 capped at Max)
		{4, 1000 * time.Millisecond, "two 429s, paused 300 and 500 ms, then two pages"},
	} {
		if got := w.bound(&w.origins[c.i]); got != c.want {
			t.Errorf("bound of origin %d: %v, want %v (%s)", c.i, got, c.want, c.why)
		}
	}
	if got := w.politeBound(); got != 3*slowFetch {
		t.Errorf("polite bound %v, want %v (the slow origin)", got, 3*slowFetch)
	}
	// Without a pace (-scale 0), an origin that states nothing has no
	// interval, and the response time does not space the pages.
	w.paced, w.defaultDelay = false, 0
	if got := w.bound(&w.origins[2]); got != slowFetch {
		t.Errorf("bound of origin 2 unpaced: %v, want %v", got, slowFetch)
	}
	if got := w.bound(&w.origins[3]); got != 520*time.Millisecond {
		t.Errorf("bound of origin 3 unpaced: %v, want 520ms", got)
	}
	if d, ok := scaledDefault(0.02); d != 20*time.Millisecond || !ok {
		t.Errorf("scaledDefault(0.02) = %v, %v", d, ok)
	}
	if _, ok := scaledDefault(0); ok {
		t.Errorf("scaledDefault(0): paced")
	}
	// The stated interval is the longer of the crawl-delay and the
	// request-rate; a crawl-delay of 0 is stated all the same.
	for body, want := range map[string]time.Duration{
		"User-agent: *\nCrawl-delay: 0.1\nRequest-rate: 1/0.3s\n": 300 * time.Millisecond,
		"User-agent: *\nCrawl-delay: 0.4\nRequest-rate: 2/0.3s\n": 400 * time.Millisecond,
		"User-agent: *\nCrawl-delay: 0\n":                         0,
	} {
		o := origin{kind: normal, body: []byte(body), paths: []string{"/"}}
		w.judge(&o)
		if o.delay != want || !o.stated {
			t.Errorf("judge(%q): delay %v, stated %v; want %v, true", body, o.delay, o.stated, want)
		}
	}
	if got := scaledBackoff(0.01); got != (robots.Backoff{First: 600 * time.Millisecond, Max: 864 * time.Second, Forgive: 36 * time.Second}) {
		t.Errorf("scaledBackoff(0.01) = %+v", got)
	}
	if got := scaledBackoff(0); got != (robots.Backoff{}) {
		t.Errorf("scaledBackoff(0) = %+v, want none", got)
	}
}

func TestJudgeRun(t *testing.T) {
	w := testWeb()
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// req is a request that arrived at ms and was answered lat ms later.
	req := func(h, path string, ms, lat, status int) arrival {
		return arrival{h, path, at(ms), at(ms + lat), status}
	}
	seen := []arrival{
		req(host(0, 1), "/robots.txt", 0, 0, 200),
		req(host(0, 1), "/", 100, 0, 200),
		req(host(0, 1), "/private/a", 150, 0, 200), // disallowed, and 50 ms early
		req(host(0, 1), "/robots.txt", 400, 0, 200),
		req(host(1, 1), "/robots.txt", 0, 0, 503),
		req(host(1, 1), "/c", 60, 0, 200),              // robots.txt unreachable
		req(host(2, 1), "/robots.txt", 0, 1000, 200),   // slow
		req(movedHost(2, 1), "/robots.txt", 0, 0, 200), // not a crawled origin
		req(host(0, 2), "/", 1, 0, 200),                // another run
		req(host(2, 1), "/", 2996, 0, 200),             // no delay: twice robots.txt's response time, within the slack
		req(host(0, 1), "/b", 496, 0, 200),             // 4 ms early: within the slack
		req(host(3, 1), "/robots.txt", 0, 0, 200),
		req(host(3, 1), "/", 100, 160, 200),  // on time
		req(host(3, 1), "/b", 200, 160, 200), // before the answer to /
		req(host(4, 1), "/robots.txt", 0, 0, 200),
		req(host(4, 1), "/", 100, 0, 429),
		req(host(4, 1), "/", 400, 0, 200),
		req(host(4, 1), "/b", 500, 0, 429), // a page never answered 200
	}
	var f figures
	w.judgeRun(&f, 1, seen, seen[:2], 5*time.Millisecond)
	if f.pages != 10 || f.got != 6 || f.allowed != 7 || f.tooMany != 2 {
		t.Errorf("pages %d, got %d of %d allowed, 429s %d; want 10, 6 of 7, 2", f.pages, f.got, f.allowed, f.tooMany)
	}
	if f.disallowed != 1 || f.unreachable != 1 {
		t.Errorf("disallowed %d, unreachable %d; want 1, 1", f.disallowed, f.unreachable)
	}
	if f.violSeen != 2 || f.violSeenInFlight != 1 || f.violSeenRobots != 0 || f.violLeft != 0 {
		t.Errorf("violations seen %d (%d in flight, %d after robots.txt), left %d; want 2 (1, 0), 0",
			f.violSeen, f.violSeenInFlight, f.violSeenRobots, f.violLeft)
	}
	o0 := &w.origins[0]
	if v := w.violations(o0, seen[:3], 0); v != (violation{n: 1}) {
		t.Errorf("violations of %v: %+v; want 1", seen[:3], v)
	}
	if v := w.violations(&origin{delay: 150 * time.Millisecond, stated: true}, seen[:2], 0); v != (violation{n: 1, afterRobots: 1}) {
		t.Errorf("violations of %v at 150ms: %+v; want 1, after robots.txt", seen[:2], v)
	}
	// An answer that comes after a later request's holds the origin: the
	// request after both is judged from the later answer.
	long := []arrival{req("o", "/a", 0, 500, 200), req("o", "/b", 10, 10, 200), req("o", "/c", 300, 0, 200)}
	if v := w.violations(o0, long, 0); v != (violation{n: 2, inFlight: 2}) {
		t.Errorf("violations of %v: %+v; want 2, both in flight", long, v)
	}
	// An origin that states nothing is paced by the default pace; without
	// a pace, it has no violation.
	quiet := &w.origins[2]
	early := []arrival{req("o", "/robots.txt", 0, 0, 200), req("o", "/a", 30, 0, 200), req("o", "/b", 80, 0, 200), req("o", "/c", 81, 5, 200)}
	if v := w.violations(quiet, early, 0); v != (violation{n: 2, afterRobots: 1}) {
		t.Errorf("violations of %v at the default pace: %+v; want 2, one after robots.txt", early, v)
	}
	unpaced := *w
	unpaced.paced, unpaced.defaultDelay = false, 0
	if v := unpaced.violations(quiet, early, 0); v != (violation{}) {
		t.Errorf("violations of %v without a pace: %+v; want none", early, v)
	}
	// A slow answer spaces the next request by twice its response time,
	// once the answer has come.
	slowAs := []arrival{req("o", "/robots.txt", 0, 0, 200), req("o", "/a", 100, 160, 200), req("o", "/b", 360, 0, 200), req("o", "/c", 460, 0, 200), req("o", "/d", 740, 0, 200)}
	// /b: 100 ms after the answer, less than 2 × 160; /c: 100 ms after
	// /b's, less than 2 × 120 (the estimate fell a quarter of the way);
	// /d: 280 ms after /c's, more than 2 × 90
	if v := w.violations(o0, slowAs, 0); v != (violation{n: 2}) {
		t.Errorf("violations of %v by response time: %+v; want 2", slowAs, v)
	}
	if f.robotsMax != 2 || f.robotsExtra != 1 || f.robotsMean != 6.0/5 {
		t.Errorf("robots.txt mean %v, max %d, >1 %d; want 6/5, 2, 1", f.robotsMean, f.robotsMax, f.robotsExtra)
	}
}
