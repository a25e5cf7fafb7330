package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// pipeNet is an in-memory network joined by net.Pipe: a net.Listener for a
// test's http.Server and a DialContext for crawl's base transport. Unlike a
// loopback socket, it lets crawl run in a synctest bubble, where
// Crawl-delays pass in fake time, at once and exactly.
type pipeNet struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeNet() *pipeNet {
	return &pipeNet{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (p *pipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.closed:
		return nil, net.ErrClosed
	}
}

func (p *pipeNet) Close() error {
	p.once.Do(func() { close(p.closed) })
	return nil
}

func (p *pipeNet) Addr() net.Addr { return pipeAddr{} }

func (p *pipeNet) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case p.conns <- server:
		return client, nil
	case <-p.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// TestCrawlNotHeldUp: crawl does not hold a worker for a site's turn. With
// one worker, a site with a Crawl-delay of 10 s first on the command line
// and a site with none, the second is crawled at once, between the first's
// turns, and the first in the least time its Crawl-delay allows (robots.txt,
// its home page, a redirect and its pages, 10 s apart); each URL once.
func TestCrawlNotHeldUp(t *testing.T) {
	type site struct {
		delay time.Duration
		pages int
	}
	sites := map[string]site{"slow.test": {10 * time.Second, 3}, "fast.test": {0, 6}}
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		seen := make(map[string][]time.Time) // by host and path
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			host := r.Host
			mu.Lock()
			seen[host+r.URL.Path] = append(seen[host+r.URL.Path], time.Now())
			mu.Unlock()
			s := sites[host]
			switch r.URL.Path {
			case "/robots.txt":
				fmt.Fprintf(w, "User-agent: *\nDisallow: /private\nCrawl-delay: %g\n", s.delay.Seconds())
				return
			case "/moved":
				http.Redirect(w, r, "/1", http.StatusMovedPermanently)
				return
			}
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<a href="/private">p</a> <a href="/moved">m</a>`)
			for n := 1; n <= s.pages; n++ {
				fmt.Fprintf(w, `<a href="/%d">%d</a>`, n, n)
			}
		})
		pn := newPipeNet()
		srv := &http.Server{Handler: h}
		go srv.Serve(pn)
		defer srv.Close()
		defer func(f func(time.Duration) http.RoundTripper) { crawlBase = f }(crawlBase)
		crawlBase = func(time.Duration) http.RoundTripper { return &http.Transport{DialContext: pn.DialContext} }

		begin := time.Now()
		// A crawl that goes round in circles ends, in fake time, here.
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		var out, errOut strings.Builder
		code := runContext(ctx, []string{"crawl", "-workers", "1", "http://slow.test/", "http://fast.test/"}, nil, &out, &errOut)
		stdout, stderr := out.String(), errOut.String()
		end := time.Now()
		if code != exitOK {
			t.Fatalf("crawl = %d; stderr: %s\n%s", code, stderr, stdout)
		}
		got := lines(stdout)
		for _, want := range []string{
			"http://slow.test: obeying the * group (line 1), crawl-delay 10s",
			"http://fast.test: obeying the * group (line 1), crawl-delay 0s",
			"301 http://slow.test/moved redirect to http://slow.test/1",
			"refused http://fast.test/private Disallow: /private (line 2)",
		} {
			if !contains(got, want) {
				t.Errorf("output lacks %q:\n%s", want, stdout)
			}
		}
		if sum := got[len(got)-2]; !strings.HasPrefix(sum, "15 URLs in ") || !strings.HasSuffix(sum, ": 13 fetched (11 × 200, 2 × 301), 2 disallowed by rules, 0 errors; finished") {
			t.Errorf("summary = %q", sum)
		}

		mu.Lock()
		defer mu.Unlock()
		for host, s := range sites {
			paths := []string{"/robots.txt", "/", "/moved"}
			for n := 1; n <= s.pages; n++ {
				paths = append(paths, "/"+strconv.Itoa(n))
			}
			var last time.Time
			for _, p := range paths {
				if n := len(seen[host+p]); n != 1 {
					t.Errorf("%s%s requested %d times, want once", host, p, n)
					continue
				}
				if at := seen[host+p][0]; at.After(last) {
					last = at
				}
			}
			if n := len(seen[host+"/private"]); n != 0 {
				t.Errorf("%s/private requested %d times despite robots.txt", host, n)
			}
			// One turn for each request, robots.txt included.
			if want := time.Duration(len(paths)-1) * s.delay; last.Sub(begin) != want {
				t.Errorf("%s: last request %v after the start, want %v", host, last.Sub(begin), want)
			}
		}
		if d := end.Sub(begin); d != 50*time.Second {
			t.Errorf("crawl took %v, want 50s: slow.test's last turn", d)
		}
	})
}

// TestCrawlSlowRobotsTxt: a robots.txt that takes longer to answer than a
// request of the crawl may wait for its turn is waited for by the frontier,
// not by a worker, and the site's first URL is sent once it is in, with no
// refusal for now; crawl says what the file makes of the crawler before
// that URL's line.
func TestCrawlSlowRobotsTxt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		seen := make(map[string]int)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[r.URL.Path]++
			mu.Unlock()
			if r.URL.Path == "/robots.txt" {
				time.Sleep(time.Second)
				fmt.Fprint(w, "User-agent: *\nDisallow: /private\n")
				return
			}
			fmt.Fprint(w, "hello")
		})
		pn := newPipeNet()
		srv := &http.Server{Handler: h}
		go srv.Serve(pn)
		defer srv.Close()
		defer func(f func(time.Duration) http.RoundTripper) { crawlBase = f }(crawlBase)
		crawlBase = func(time.Duration) http.RoundTripper { return &http.Transport{DialContext: pn.DialContext} }

		code, stdout, stderr := runCmd(t, "", "crawl", "http://site.test/")
		got := lines(stdout)
		if code != exitOK || len(got) < 3 || got[1] != "obeying the * group (line 1), no crawl-delay: the default pace, 1s" || got[2] != "200 /" {
			t.Errorf("crawl = %d; stderr: %s\n%s\nwant the group obeyed, then 200 /", code, stderr, stdout)
		}
		if want := "robots.txt fetched 1 time (1 ok); 0 requests refused for now and queued again"; got[len(got)-1] != want {
			t.Errorf("last line = %q, want %q", got[len(got)-1], want)
		}
		mu.Lock()
		defer mu.Unlock()
		if seen["/robots.txt"] != 1 || seen["/"] != 1 {
			t.Errorf("requests %v, want robots.txt and / once each", seen)
		}
	})
}
