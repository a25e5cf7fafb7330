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
// (one of each kind), with crawl-delays at 1/100 (10 s is 100 ms, the
// largest 300 ms). Requests are judged with a slack of 20 ms, which a
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
	w, err := newWeb(webConfig{corpus: "../../../shared/corpus", origins: smallOrigins, faults: 0.12, scale: smallScale, seed: 1, rules: 6, timeout: 1200 * time.Millisecond})
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
	t.Logf("%s W=%d: makespan %v, bound %v, pages %d, violations %d/%d, disallowed %d, unreachable %d, robots.txt %.2f/%d/%d, not yet %d",
		name, n, f.makespan, f.bound, f.pages, f.violLeft, f.violSeen, f.disallowed, f.unreachable, f.robotsMean, f.robotsMax, f.robotsExtra, f.notYet)
	for _, e := range f.examples {
		t.Log(e)
	}
	if f.err != nil {
		t.Fatal(f.err)
	}
	return f
}

// TestServer checks what the web answers for each kind of robots.txt, and
// that it logs each arrival.
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
	for _, tc := range []struct {
		i      int
		status int
		body   string
	}{
		{0, 200, string(w.origins[0].body)},
		{1, 503, ""},
		{3, 404, ""},
		{4, 429, ""},
		{5, 301, ""},
		{6, 0, ""}, // no answer
	} {
		resp, err := c.Get("http://" + host(tc.i, 9) + "/robots.txt")
		if tc.status == 0 {
			if err == nil {
				resp.Body.Close()
				t.Errorf("origin %d answered %d, want no answer", tc.i, resp.StatusCode)
			}
			continue
		}
		if err != nil {
			t.Fatalf("origin %d: %v", tc.i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || tc.body != "" && string(b) != tc.body {
			t.Errorf("origin %d: %d %q, want %d %q", tc.i, resp.StatusCode, b, tc.status, tc.body)
		}
		if tc.status == 301 && resp.Header.Get("Location") != "http://"+movedHost(5, 9)+"/robots.txt" {
			t.Errorf("redirect to %q", resp.Header.Get("Location"))
		}
	}
	log, err := fetchLog(addr, 9)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 6 || log[0].host != host(0, 9) || log[0].path != "/robots.txt" {
		t.Errorf("log %v, want 6 arrivals, the first at %s/robots.txt", log, host(0, 9))
	}
	if log, _ := fetchLog(addr, 9); len(log) != 0 {
		t.Errorf("log read twice: %v", log)
	}
}

// TestCrawlerB crawls a small web (with every kind of faulty robots.txt)
// with crawler b and checks what must hold of it, whatever the timing:
// no request leaves closer than its origin's crawl-delay to the one
// before, none that robots.txt disallows or whose robots.txt is
// unreachable is sent, robots.txt is fetched once per origin, every
// allowed page is fetched, and requests refused for now (robots.ErrNotYet)
// are at most 0.1 a page. The spacing the web saw is logged, not
// checked: it also counts the time a request takes to reach the web's
// handler, which on a loaded machine (a new connection, the server's
// goroutine waiting for a CPU) passes the slack.
func TestCrawlerB(t *testing.T) {
	for _, n := range []int{4, 32} {
		f := crawlSmall(t, "b", n)
		if f.violLeft != 0 {
			t.Errorf("W=%d: %d requests left closer than the crawl-delay to the one before; want 0", n, f.violLeft)
		}
		if f.disallowed != 0 || f.unreachable != 0 {
			t.Errorf("W=%d: %d disallowed requests, %d to unreachable origins; want 0", n, f.disallowed, f.unreachable)
		}
		if f.robotsMean != 1 || f.robotsMax != 1 {
			t.Errorf("W=%d: robots.txt fetched %.2f times per origin, at most %d; want exactly 1", n, f.robotsMean, f.robotsMax)
		}
		w, _ := smallWeb(t)
		want := 0
		for i := range w.origins {
			want += countTrue(w.origins[i].allowed)
		}
		if f.pages != want {
			t.Errorf("W=%d: %d pages fetched, want the %d allowed", n, f.pages, want)
		}
		if r := f.notYetPerPage(); r > 0.1 {
			t.Errorf("W=%d: %d requests refused for now, %.3f a page; want at most 0.1", n, f.notYet, r)
		}
	}
}
