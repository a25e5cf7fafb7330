package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAgentForms: -agent takes every form package robots takes (a product
// token, a User-Agent header with the token as its first product or in a
// compatible comment) and derives the token as the package does; what
// names no token is a usage error.
func TestAgentForms(t *testing.T) {
	for _, c := range []struct{ agent, token string }{
		{"examplebot", "examplebot"},
		{"Googlebot/2.1", "Googlebot"},
		{"ExampleBot/1.0 (+https://example.com/bot)", "ExampleBot"},
		{"Mozilla/5.0 (compatible; ExampleBot/1.0; +https://x)", "ExampleBot"},
		{"*", "*"},
	} {
		tok, err := agentToken(c.agent)
		if err != nil || tok != c.token {
			t.Errorf("agentToken(%q) = %q, %v; want %q", c.agent, tok, err, c.token)
		}
	}
	for _, agent := range []string{"", "/1.0", "two words", "My Crawler"} {
		if tok, err := agentToken(agent); err == nil {
			t.Errorf("agentToken(%q) = %q, want an error", agent, tok)
		}
		for _, cmd := range []string{"check", "crawl"} {
			args := []string{cmd, "-agent", agent, "http://127.0.0.1/"}
			if cmd == "check" {
				args = append(args, "/")
			}
			if code, _, stderr := runCmd(t, "", args...); code != exitUsage || !strings.Contains(stderr, "-agent") {
				t.Errorf("%s -agent %q = %d, %q; want %d and why", cmd, agent, code, stderr, exitUsage)
			}
		}
	}
}

func TestCheckAgentHeader(t *testing.T) {
	for _, agent := range []string{"Googlebot/2.1", "Mozilla/5.0 (compatible; ExampleBot/1.0; +https://x)", "examplebot"} {
		code, stdout, stderr := runCmd(t, "", "check", "-agent", agent, "testdata/basic.txt", "/private/a")
		want := "disallowed /private/a Disallow: /private/ (line 4); group googlebot, examplebot (line 2)"
		if code != exitFlagged || !equal(lines(stdout), []string{want}) {
			t.Errorf("check -agent %q = %d\n%s\nwant %d\n%s\nstderr: %s", agent, code, stdout, exitFlagged, want, stderr)
		}
	}
	_, stdout, _ := runCmd(t, "", "check", "-json", "-agent", "Googlebot/2.1", "testdata/basic.txt", "/x")
	var v verdict
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || v.Agent != "Googlebot" {
		t.Errorf("check -json -agent Googlebot/2.1: agent %q, %v; want the token, Googlebot", v.Agent, err)
	}

	// In site mode, robots.txt is fetched with the User-Agent as given.
	var mu sync.Mutex
	var uas []string
	s := newSite(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		uas = append(uas, r.Header.Get("User-Agent"))
		mu.Unlock()
		robotsHandler(http.StatusOK, "User-agent: googlebot\nDisallow: /g\n").ServeHTTP(w, r)
	}))
	code, stdout, stderr := runCmd(t, "", "check", "-agent", "Googlebot/2.1", s.URL+"/", "/g")
	if want := "disallowed " + s.URL + "/g Disallow: /g (line 2); group googlebot (line 1)"; code != exitFlagged || !equal(lines(stdout), []string{want}) {
		t.Errorf("check -agent Googlebot/2.1 SITE = %d\n%s\nwant\n%s\nstderr: %s", code, stdout, want, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(uas) != 1 || uas[0] != "Googlebot/2.1" {
		t.Errorf("robots.txt fetched with User-Agent %q, want once with Googlebot/2.1", uas)
	}
}

func TestCrawlAgentHeader(t *testing.T) {
	var mu sync.Mutex
	uas := map[string]bool{}
	h := demoHandler(10 * time.Millisecond)
	s := newSite(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		uas[r.Header.Get("User-Agent")] = true
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	ua := "Mozilla/5.0 (compatible; BadBot/1.0; +https://x)"
	code, stdout, stderr := runCmd(t, "", "crawl", "-agent", ua, s.URL+"/")
	got := lines(stdout)
	if code != exitFlagged || !contains(got, "refused / Disallow: / (line 15)") || !contains(got, "crawling "+s.URL+"/ as BadBot, at most 50 URLs, keeping no state") {
		t.Errorf("crawl -agent %q = %d\n%s\nstderr: %s", ua, code, stdout, stderr)
	}
	mu.Lock()
	if len(uas) != 1 || !uas[ua] {
		t.Errorf("requests sent with User-Agent %v, want only %q", uas, ua)
	}
	mu.Unlock()
	// A header whose token no group names obeys "*".
	code, stdout, _ = runCmd(t, "", "crawl", "-agent", "Googlebot/2.1", "-max", "1", s.URL+"/")
	if code != exitOK || !contains(lines(stdout), "obeying the * group (line 17), crawl-delay 10ms") {
		t.Errorf("crawl -agent Googlebot/2.1 = %d\n%s", code, stdout)
	}
}

// TestCrawlHelpUserAgent: crawl -h says which User-Agent the crawl sends,
// as it sends it.
func TestCrawlHelpUserAgent(t *testing.T) {
	_, stdout, stderr := runCmd(t, "", "crawl", "-h")
	if help := stdout + stderr; !strings.Contains(help, `"`+userAgent("TOKEN")+`"`) {
		t.Errorf("crawl -h does not say the User-Agent sent, %q:\n%s", userAgent("TOKEN"), help)
	}
}
