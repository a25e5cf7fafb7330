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

	"github.com/f9014239/robots"
)

// pipeNet is an in-memory network joined by net.Pipe: a net.Listener for
// the web's http.Server and a DialContext for the crawler's http.Transport.
// Unlike a loopback socket, it lets a test run in a synctest bubble, where
// the Crawl-delays pass in fake time, at once and exactly.
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

// crawlWeb serves sites on a pipeNet and crawls them from their home pages
// with the given number of workers and MaxWait. It must run in a synctest
// bubble. It returns the web, with its log, and the time the crawl began
// and ended.
func crawlWeb(t *testing.T, sites []site, workers int, maxWait time.Duration) (w *web, res result, begin, end time.Time) {
	t.Helper()
	w = newWeb(sites)
	pn := newPipeNet()
	srv := &http.Server{Handler: w.handler()}
	go srv.Serve(pn)
	defer srv.Close()
	base := &http.Transport{DialContext: pn.DialContext}
	defer base.CloseIdleConnections()

	tr := &robots.Transport{Base: base, Agent: "examplebot", MaxWait: maxWait}
	var seeds []string
	for _, s := range sites {
		seeds = append(seeds, "http://"+s.host+"/")
	}
	// A crawl that goes round in circles ends, in fake time, here.
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()
	begin = time.Now()
	res = crawl(ctx, tr, seeds, workers, io.Discard)
	return w, res, begin, time.Now()
}

// paths returns the paths of the requests of as, robots.txt included, by
// how many times each was sent.
func paths(as []arrival) map[string]int {
	m := make(map[string]int)
	for _, a := range as {
		m[a.path]++
	}
	return m
}

// TestCrawlPolite: the crawl fetches robots.txt and every page robots.txt
// allows once, nothing that it disallows, and never sends two requests to a
// site closer than its Crawl-delay, as the site sees them.
func TestCrawlPolite(t *testing.T) {
	sites := []site{
		{"quick.test", 0, 6},
		{"half.test", 500 * time.Millisecond, 4},
		{"one.test", time.Second, 3},
		{"ten.test", 10 * time.Second, 3},
	}
	for _, workers := range []int{1, 2, 8} {
		t.Run(strconv.Itoa(workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w, res, _, _ := crawlWeb(t, sites, workers, 50*time.Millisecond)
				fetched := 0
				for _, s := range sites {
					as := w.arrivals(s.host)
					got := paths(as)
					want := map[string]int{"/robots.txt": 1, "/": 1, "/moved": 1}
					for n := 1; n <= s.pages; n++ {
						want["/"+strconv.Itoa(n)] = 1
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("%s was sent %v, want %v (once each, /private/staff never)", s.host, got, want)
					}
					for i := 1; i < len(as); i++ {
						if gap := as[i].at.Sub(as[i-1].at); gap < s.delay {
							t.Errorf("%s: %s came %v after %s; its Crawl-delay is %v", s.host, as[i].path, gap, as[i-1].path, s.delay)
						}
					}
					fetched += 2 + s.pages
				}
				if want := (result{Fetched: fetched, Refused: len(sites)}); res != want {
					t.Errorf("crawl = %+v, want %+v", res, want)
				}
			})
		})
	}
}

// TestCrawlNotHeldUp: with fewer workers than sites, a site with a long
// Crawl-delay holds up nobody but itself: every site is crawled in the
// least time its Crawl-delay allows (its requests, robots.txt included,
// one Crawl-delay apart), the fast ones at once, and the crawl ends when
// the slowest site's last turn comes. It holds with MaxWait 0 too: the
// frontier hands out a site's URL only at its turn, so that no worker waits
// inside the Transport for one, and none is refused for now.
func TestCrawlNotHeldUp(t *testing.T) {
	sites := []site{
		{"quick.test", 0, 10},
		{"one.test", time.Second, 3},
		{"ten.test", 10 * time.Second, 5},
	}
	for _, maxWait := range []time.Duration{50 * time.Millisecond, 0} {
		t.Run(maxWait.String(), func(t *testing.T) { crawlNotHeldUp(t, sites, maxWait) })
	}
}

func crawlNotHeldUp(t *testing.T, sites []site, maxWait time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		w, _, begin, end := crawlWeb(t, sites, 2, maxWait)
		for _, s := range sites {
			as := w.arrivals(s.host)
			if len(as) == 0 {
				t.Fatalf("%s was sent nothing", s.host)
			}
			// robots.txt, the home page, /moved and each page: one turn each.
			// A site that states no Crawl-delay is paced by the default.
			every := s.delay
			if every == 0 {
				every = robots.DefaultPaceDelay
			}
			bound := time.Duration(s.pages+2) * every
			if last := as[len(as)-1].at.Sub(begin); last != bound {
				t.Errorf("%s: last request %v after the start, want %v (%d requests, %v apart)", s.host, last, bound, s.pages+3, every)
			}
		}
		if d, want := end.Sub(begin), 70*time.Second; d != want {
			t.Errorf("the crawl took %v, want %v: ten.test's 8 requests, 10 s apart", d, want)
		}
	})
}

// TestCrawlLoopback crawls, as main does, a web served on 127.0.0.1 through
// demoBase: sites with no Crawl-delay, and NoDefaultPace, so that it takes
// no time. A host that
// is not of the demo web is not dialled: its robots.txt is unreachable, and
// its URL refused.
func TestCrawlLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := newWeb([]site{{"a.test", 0, 3}, {"b.test", 0, 2}})
	srv := &http.Server{Handler: w.handler()}
	go srv.Serve(ln)
	defer srv.Close()
	base := demoBase(ln.Addr().String())
	defer base.CloseIdleConnections()
	tr := &robots.Transport{Base: base, Agent: "examplebot", MaxWait: 50 * time.Millisecond, NoDefaultPace: true}

	var out strings.Builder
	res := crawl(t.Context(), tr, []string{"http://a.test/", "http://example.com/"}, 2, &out)
	if want := (result{Fetched: 2*2 + 3 + 2, Refused: 3}); res != want {
		t.Errorf("crawl = %+v, want %+v\n%s", res, want, out.String())
	}
	if !strings.Contains(out.String(), "refused http://example.com/  robots.txt unreachable") {
		t.Errorf("example.com was not refused as unreachable:\n%s", out.String())
	}
	if got := paths(w.arrivals("b.test")); got["/2"] != 1 || got["/private/staff"] != 0 {
		t.Errorf("b.test, found through a.test's link, was sent %v", got)
	}
}
