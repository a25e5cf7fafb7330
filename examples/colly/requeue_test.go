package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// pipeNet is an in-memory network joined by net.Pipe: a net.Listener for
// an http.Server and a DialContext for the crawler's http.Transport. Unlike
// a loopback socket, it lets a test run in a synctest bubble, where
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

// delayedSite is a site of a web told apart by Host: its robots.txt has
// delay as Crawl-delay and disallows /private/; its home page links to
// /private/x, to /moved (a redirect to /1) and to /1 … /pages.
type delayedSite struct {
	host  string
	delay time.Duration
	pages int
}

// arrival is a request as a site saw it.
type arrival struct {
	path string
	at   time.Time
}

// delayedWeb serves sites and logs each request by host.
func delayedWeb(sites []delayedSite) (http.Handler, func(host string) []arrival) {
	var mu sync.Mutex
	log := make(map[string][]arrival)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		mu.Lock()
		log[host] = append(log[host], arrival{r.URL.Path, time.Now()})
		mu.Unlock()
		for _, s := range sites {
			if s.host != host {
				continue
			}
			switch r.URL.Path {
			case "/robots.txt":
				fmt.Fprintf(w, "User-agent: *\nDisallow: /private/\nCrawl-delay: %g\n", s.delay.Seconds())
			case "/":
				w.Header().Set("Content-Type", "text/html")
				io.WriteString(w, `<a href="/private/x">x</a> <a href="/moved">moved</a>`)
				for n := 1; n <= s.pages; n++ {
					fmt.Fprintf(w, `<a href="/%d">%d</a>`, n, n)
				}
			case "/moved":
				http.Redirect(w, r, "/1", http.StatusMovedPermanently)
			default:
				w.Header().Set("Content-Type", "text/html")
				io.WriteString(w, `<a href="/">home</a>`)
			}
			return
		}
		http.NotFound(w, r)
	})
	return h, func(host string) []arrival {
		mu.Lock()
		defer mu.Unlock()
		return append([]arrival(nil), log[host]...)
	}
}

// TestCrawlRequeue: with two workers, a site with a Crawl-delay of 4 s and
// a site with none are crawled each in the least time its Crawl-delay
// allows: the second at once, though three of the first's URLs are ahead
// of it and its pages come back to OnError as ErrNotYet again and again.
// Those are retried at their turn, each page is fetched once, and crawl
// (c.Wait) returns only when the last retry is done.
func TestCrawlRequeue(t *testing.T) {
	sites := []delayedSite{
		{"slow.test", 4 * time.Second, 4},
		{"quick.test", 0, 8},
	}
	synctest.Test(t, func(t *testing.T) {
		h, arrivals := delayedWeb(sites)
		pn := newPipeNet()
		srv := &http.Server{Handler: h}
		go srv.Serve(pn)
		defer srv.Close()
		base := &http.Transport{DialContext: pn.DialContext}
		defer base.CloseIdleConnections()

		// More of slow.test's URLs than workers come first: workers that
		// waited for slow.test's turns would keep quick.test waiting. (A
		// turn more than 10 s away, colly's default http.Client.Timeout,
		// is refused with ErrNotYet even without MaxWait: the Crawl-delay
		// here is shorter.)
		starts := []string{"http://slow.test/", "http://slow.test/1", "http://slow.test/2", "http://quick.test/"}
		var out strings.Builder
		begin := time.Now()
		res, err := crawl(starts, options{agent: "examplebot", max: 50, workers: 2}, base, &out)
		end := time.Now()
		if err != nil {
			t.Fatalf("crawl: %v\n%s", err, out.String())
		}

		for _, s := range sites {
			as := arrivals(s.host)
			got := make(map[string]int)
			for _, a := range as {
				got[a.path]++
			}
			want := map[string]int{"/robots.txt": 1, "/": 1, "/moved": 1}
			for n := 1; n <= s.pages; n++ {
				want["/"+strconv.Itoa(n)] = 1
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s was sent %v, want %v (once each, /private/x never)", s.host, got, want)
			}
			for i := 1; i < len(as); i++ {
				if gap := as[i].at.Sub(as[i-1].at); gap < s.delay {
					t.Errorf("%s: %s came %v after %s; its Crawl-delay is %v", s.host, as[i].path, gap, as[i-1].path, s.delay)
				}
			}
			// robots.txt, the home page, /moved and each page: a turn each.
			if bound := time.Duration(s.pages+2) * s.delay; len(as) > 0 && as[len(as)-1].at.Sub(begin) != bound {
				t.Errorf("%s: last request %v after the start, want %v", s.host, as[len(as)-1].at.Sub(begin), bound)
			}
		}
		if d, want := end.Sub(begin), 24*time.Second; d != want {
			t.Errorf("crawl returned after %v, want %v: slow.test's last turn", d, want)
		}
		if len(res.Fetched) != 2*2+4+8 || len(res.Refused) != 2 || len(res.Failed) != 0 {
			t.Errorf("fetched %d, refused %v, failed %v; want 16 fetched, the 2 /private/x refused\n%s", len(res.Fetched), res.Refused, res.Failed, out.String())
		}
		if res.Retries == 0 {
			t.Errorf("no request was retried at its turn")
		}
	})
}
