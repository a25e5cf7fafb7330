package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestScaleDelays(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"User-agent: *\nCrawl-delay: 10\nDisallow: /a\n", "User-agent: *\nCrawl-delay: 0.2\nDisallow: /a\n"},
		{"crawl-delay:0.5\r\n", "crawl-delay: 0.01\r\n"},
		{"Crawl-Delay: 3600 # an hour\n", "Crawl-Delay: 0.6\n"}, // capped at 30 s first
		{"Crawl_delay: 5", "Crawl_delay: 0.1"},
		{"Crawl-delay: soon\n", "Crawl-delay: soon\n"},
		{"Disallow: /crawl-delay: 10\n", "Disallow: /crawl-delay: 10\n"},
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

// testWeb is a web of three origins made by hand: a normal one with a
// crawl-delay of 100 ms, one whose robots.txt answers 503, and one that
// answers slowly.
func testWeb() *web {
	w := &web{timeout: 2 * time.Second}
	w.origins = []origin{
		{kind: normal, body: []byte("User-agent: *\nCrawl-delay: 0.1\nDisallow: /private\n"), paths: []string{"/", "/private/a", "/b"}},
		{kind: err503, paths: []string{"/", "/c"}},
		{kind: slow, body: []byte("User-agent: *\nDisallow:\n"), paths: []string{"/"}},
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
	if got := w.bound(o); got != 200*time.Millisecond {
		t.Errorf("bound of the normal origin %v, want 200ms (robots.txt, then two pages a delay apart)", got)
	}
	if got := w.bound(&w.origins[1]); got != 0 {
		t.Errorf("bound of the unreachable origin %v, want 0", got)
	}
	if got := w.politeBound(); got != slowFetch {
		t.Errorf("polite bound %v, want %v (the slow origin)", got, slowFetch)
	}
}

func TestJudgeRun(t *testing.T) {
	w := testWeb()
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	seen := []arrival{
		{host(0, 1), "/robots.txt", at(0)},
		{host(0, 1), "/", at(100)},
		{host(0, 1), "/private/a", at(150)}, // disallowed, and 50 ms early
		{host(0, 1), "/robots.txt", at(400)},
		{host(1, 1), "/robots.txt", at(0)},
		{host(1, 1), "/c", at(10)},              // robots.txt unreachable
		{movedHost(2, 1), "/robots.txt", at(0)}, // not a crawled origin
		{host(0, 2), "/", at(1)},                // another run
		{host(2, 1), "/robots.txt", at(0)},      // slow
		{host(2, 1), "/", at(1000)},             // no delay: never too close
		{host(0, 1), "/b", at(496)},             // 4 ms early: within the slack
	}
	var f figures
	w.judgeRun(&f, 1, seen, seen[:2], 5*time.Millisecond)
	if f.pages != 5 || f.disallowed != 1 || f.unreachable != 1 || f.violSeen != 1 || f.violLeft != 0 || f.violSeenRobots != 0 {
		t.Errorf("pages %d, disallowed %d, unreachable %d, violations seen %d (%d after robots.txt), left %d; want 5, 1, 1, 1 (0), 0",
			f.pages, f.disallowed, f.unreachable, f.violSeen, f.violSeenRobots, f.violLeft)
	}
	if n, r := violations(seen[:3], 100*time.Millisecond, 0); n != 1 || r != 0 {
		t.Errorf("violations of %v: %d, %d after robots.txt; want 1, 0", seen[:3], n, r)
	}
	if n, r := violations(seen[:2], 150*time.Millisecond, 0); n != 1 || r != 1 {
		t.Errorf("violations of %v at 150ms: %d, %d after robots.txt; want 1, 1", seen[:2], n, r)
	}
	if f.robotsMax != 2 || f.robotsExtra != 1 || f.robotsMean != 4.0/3 {
		t.Errorf("robots.txt mean %v, max %d, >1 %d; want 4/3, 2, 1", f.robotsMean, f.robotsMax, f.robotsExtra)
	}
}
