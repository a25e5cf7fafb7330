package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// Crawls of a small web: 50 origins, of which 6 have a faulty robots.txt
// (one of each kind), 5 answer their pages slowly and 5 answer their first
// two page requests 429, with crawl-delays at 1/100 (10 s is 100 ms, the
// largest 300 ms) and a back-off of 600 ms doubling. Requests are judged with a slack of 20 ms, which a
// goroutine's wake-up and a loopback connection on a loaded machine (under
// -race, on two cores) stay within, and which still tells a request sent at
// its turn from one sent before.
const (
	smallOrigins = 50
	smallScale   = 0.01
	smallSlack   = 20 * time.Millisecond
)

// smallWeb returns the small web, served in this process, and its address;
// it skips t when the corpus is absent.
func smallWeb(t *testing.T) (*web, string) {
	t.Helper()
	w, err := newWeb(webConfig{corpus: "../../../shared/corpus", origins: smallOrigins, faults: 0.12, scale: smallScale, seed: 1, rules: 6, timeout: 1200 * time.Millisecond,
		slowPages: 0.1, pushback: 0.1, pushbackN: 2})
	if errors.Is(err, errNoCorpus) {
		t.Skipf("%v: the corpus lives beside the repository; skipping", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: newServer(w)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return w, ln.Addr().String()
}

// crawlSmall runs crawler name with n workers on a small web and returns
// its figures.
func crawlSmall(t *testing.T, name string, n int) figures {
	t.Helper()
	w, addr := smallWeb(t)
	o := options{web: webConfig{seed: 1}, workers: []int{n}, crawlers: name, slack: smallSlack, maxWait: 2 * time.Millisecond}
	fs := run(context.Background(), addr, w, o, t.Output())
	if len(fs) != 1 {
		t.Fatalf("got %d results, want 1", len(fs))
	}
	f := fs[0]
	t.Logf("%s W=%d: makespan %v, bound %v, pages %d (%d of %d allowed answered 200, %d 429s), violations %d/%d (%d in flight), disallowed %d, unreachable %d, robots.txt %.2f/%d/%d, not yet %d",
		name, n, f.makespan, f.bound, f.pages, f.got, f.allowed, f.tooMany, f.violLeft, f.violSeen, f.violSeenInFlight, f.disallowed, f.unreachable, f.robotsMean, f.robotsMax, f.robotsExtra, f.notYet)
	for _, e := range f.examples {
		t.Log(e)
	}
	if f.err != nil {
		t.Fatal(f.err)
	}
	return f
}

// TestServer checks what the web answers for each kind of robots.txt, for
// slow pages and pushback, and that it logs each request with when it
// arrived and when and how it was answered.
func TestServer(t *testing.T) {
	w := testWeb()
	w.origins = append(w.origins,
		origin{kind: unavail}, origin{kind: err429}, origin{kind: moved, body: []byte("Disallow: /")}, origin{kind: silent})
	srv := newServer(w)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	defer hs.Close()
	addr := ln.Addr().String()
	c := &http.Client{
		Transport:     newBase(addr),
		Timeout:       200 * time.Millisecond,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	cases := []struct {
		i      int
		path   string
		status int
		body   string
	}{
		{0, "/robots.txt", 200, string(w.origins[0].body)},
		{1, "/robots.txt", 503, ""},
		{5, "/robots.txt", 404, ""},
		{6, "/robots.txt", 429, ""},
		{7, "/robots.txt", 301, ""},
		{8, "/robots.txt", 0, ""}, // no answer
		{0, "/", 200, ""},
		{3, "/", 200, ""}, // after 160 ms
		{4, "/robots.txt", 200, ""},
		{4, "/", 429, ""},
		{4, "/b", 429, ""},
		{4, "/", 200, ""},
	}
	for _, tc := range cases {
		resp, err := c.Get("http://" + host(tc.i, 9) + tc.path)
		if tc.status == 0 {
			if err == nil {
				resp.Body.Close()
				t.Errorf("origin %d: answered %d, want no answer", tc.i, resp.StatusCode)
			}
			continue
		}
		if err != nil {
			t.Fatalf("origin %d%s: %v", tc.i, tc.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || tc.body != "" && string(b) != tc.body {
			t.Errorf("origin %d%s: %d %q, want %d %q", tc.i, tc.path, resp.StatusCode, b, tc.status, tc.body)
		}
		if tc.status == 301 && resp.Header.Get("Location") != "http://"+movedHost(7, 9)+"/robots.txt" {
			t.Errorf("redirect to %q", resp.Header.Get("Location"))
		}
		if tc.status == 429 && resp.Header.Get("Retry-After") != "" {
			t.Errorf("origin %d%s: 429 with Retry-After %q, want none", tc.i, tc.path, resp.Header.Get("Retry-After"))
		}
	}
	log, err := fetchLog(addr, 9)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != len(cases) {
		t.Fatalf("log of %d requests, want %d: %v", len(log), len(cases), log)
	}
	for k, a := range log {
		tc := cases[k]
		if a.host != host(tc.i, 9) || a.path != tc.path || a.status != tc.status {
			t.Errorf("log %d: %s%s %d, want %s%s %d", k, a.host, a.path, a.status, host(tc.i, 9), tc.path, tc.status)
		}
		lat := a.answered.Sub(a.at)
		switch {
		case lat < 0:
			t.Errorf("log %d: answered %v before it arrived", k, -lat)
		case tc.i == 3 && tc.path != "/robots.txt" && lat < 160*time.Millisecond:
			t.Errorf("log %d: a slow page answered after %v, want at least 160ms", k, lat)
		}
	}
	if log, _ := fetchLog(addr, 9); len(log) != 0 {
		t.Errorf("log read twice: %v", log)
	}
}

// TestCrawlerB crawls a small web (with every kind of faulty robots.txt,
// slow pages and pushback) with crawler b and checks what must hold of it,
// whatever the timing: no request leaves before the answer to the one
// before it, or closer than its origin's interval (crawl-delay or
// request-rate, else the default pace; at least twice its response time)
// to that answer; none
// that robots.txt disallows or whose robots.txt is unreachable is sent;
// robots.txt is fetched once per origin; every allowed page is answered
// 200, those answered 429 having been sent again; the 429s are those a
// crawler that waits out each back-off meets (pushbackn for each origin
// that pushes back); and requests refused for now (robots.ErrNotYet) are
// at most 0.1 a page. The spacing the web saw is logged, not checked: it
// also counts the time a request takes to reach the web's handler, which on
// a loaded machine (a new connection, the server's goroutine waiting for a
// CPU) passes the slack.
func TestCrawlerB(t *testing.T) {
	w, _ := smallWeb(t)
	polite429 := 0
	for i := range w.origins {
		if o := &w.origins[i]; countTrue(o.allowed) > 0 {
			polite429 += o.pushback
		}
	}
	if polite429 == 0 {
		t.Fatal("no origin of the small web pushes back")
	}
	for _, n := range []int{4, 32} {
		f := crawlSmall(t, "b", n)
		if f.violLeft != 0 {
			t.Errorf("W=%d: %d requests left before their origin's interval after the answer before; want 0", n, f.violLeft)
		}
		if f.disallowed != 0 || f.unreachable != 0 {
			t.Errorf("W=%d: %d disallowed requests, %d to unreachable origins; want 0", n, f.disallowed, f.unreachable)
		}
		if f.robotsMean != 1 || f.robotsMax != 1 {
			t.Errorf("W=%d: robots.txt fetched %.2f times per origin, at most %d; want exactly 1", n, f.robotsMean, f.robotsMax)
		}
		if f.got != f.allowed {
			t.Errorf("W=%d: %d pages answered 200, want the %d allowed", n, f.got, f.allowed)
		}
		if f.tooMany != polite429 {
			t.Errorf("W=%d: %d pages answered 429, want %d", n, f.tooMany, polite429)
		}
		if r := f.notYetPerPage(); r > 0.1 {
			t.Errorf("W=%d: %d requests refused for now, %.3f a page; want at most 0.1", n, f.notYet, r)
		}
	}
}
