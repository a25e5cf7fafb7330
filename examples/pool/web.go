package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// site is a site of the demo web.
type site struct {
	host  string
	delay time.Duration // its Crawl-delay; 0 for none
	pages int           // pages besides "/": "/1" to "/pages", each linking to the next
	// busy, if set, makes the site answer its first request for /1 with
	// 429 Too Many Requests and Retry-After: 2, as a site that sheds load
	// does; it serves /1 after.
	busy bool
}

// demoSites is the web that main crawls.
var demoSites = []site{
	{"quick.test", 0, 10, false},
	{"half.test", 500 * time.Millisecond, 6, false},
	{"one.test", time.Second, 3, true},
	{"two.test", time.Second, 3, false},
	{"three.test", time.Second, 3, false},
}

// web serves sites, told apart by the Host header, and logs every request
// it is sent.
type web struct {
	sites []site

	mu  sync.Mutex
	log []arrival
}

// arrival is a request as the web saw it.
type arrival struct {
	host, path string
	at         time.Time
}

func newWeb(sites []site) *web { return &web{sites: sites} }

// handler serves each site: a robots.txt with its Crawl-delay that
// disallows /private/; a home page that links to its pages, to
// /private/staff, to /moved (a redirect to /1) and to the next site's home
// page; and pages /1 to /pages, each linking to the
// next, so that a site's pages are found one by one.
func (w *web) handler() http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		w.mu.Lock()
		w.log = append(w.log, arrival{host, r.URL.Path, time.Now()})
		first := w.count(host, r.URL.Path) == 1
		w.mu.Unlock()
		i := w.index(host)
		if i < 0 {
			http.NotFound(rw, r)
			return
		}
		s := w.sites[i]
		switch p := r.URL.Path; {
		case p == "/robots.txt":
			io.WriteString(rw, "User-agent: *\nDisallow: /private/\n")
			if s.delay > 0 {
				fmt.Fprintf(rw, "Crawl-delay: %g\n", s.delay.Seconds())
			}
		case p == "/":
			rw.Header().Set("Content-Type", "text/html")
			var b strings.Builder
			for n := 1; n <= s.pages; n++ {
				fmt.Fprintf(&b, "<a href=\"/%d\">page %d</a>\n", n, n)
			}
			b.WriteString("<a href=\"/private/staff\">staff</a>\n")
			if s.pages > 0 {
				b.WriteString("<a href=\"/moved\">moved</a>\n")
			}
			next := w.sites[(i+1)%len(w.sites)].host
			fmt.Fprintf(&b, "<a href=\"http://%s/#top\">%s</a>\n", next, next)
			io.WriteString(rw, b.String())
		case p == "/1" && s.busy && first:
			rw.Header().Set("Retry-After", "2")
			http.Error(rw, "busy: come back in 2 s", http.StatusTooManyRequests)
		case p == "/moved":
			http.Redirect(rw, r, "/1", http.StatusMovedPermanently)
		default:
			n, err := strconv.Atoi(strings.TrimPrefix(p, "/"))
			if err != nil || n < 1 || n > s.pages {
				http.NotFound(rw, r)
				return
			}
			rw.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(rw, "<a href=\"/\">home</a>\n")
			if n < s.pages {
				fmt.Fprintf(rw, "<a href=\"/%d\">page %d</a>\n", n+1, n+1)
			}
		}
	})
}

// count returns how many requests for path host was sent. w.mu must be
// held.
func (w *web) count(host, path string) int {
	n := 0
	for _, a := range w.log {
		if a.host == host && a.path == path {
			n++
		}
	}
	return n
}

// index returns the index of the site of host in w.sites, or -1.
func (w *web) index(host string) int {
	for i, s := range w.sites {
		if s.host == host {
			return i
		}
	}
	return -1
}

// arrivals returns the requests that host was sent, in order.
func (w *web) arrivals(host string) []arrival {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []arrival
	for _, a := range w.log {
		if a.host == host {
			out = append(out, a)
		}
	}
	return out
}
