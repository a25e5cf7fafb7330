// Pool crawls with a fixed number of workers through a [robots.Transport]
// whose MaxWait is set, so that no worker waits long for a site's turn.
//
// A request whose origin's turn (its Crawl-delay, a Retry-After pause, or
// the fetch of its robots.txt) is more than MaxWait away is not sent: the
// Transport returns at once an error that matches [robots.ErrNotYet], a
// [*robots.TurnError] whose RetryAt says when to try again. The workers take
// URLs from a [frontier.Frontier], which keeps a queue per site and hands
// out a site's next URL only at its turn (it asks the Transport), one at a
// time; a URL refused for now anyway goes back to its site's queue until
// At. A site with a long Crawl-delay then holds up nobody but itself, and
// every site is crawled as fast as its robots.txt allows. A page the site
// defers (429 or 503) is given back with the frontier's Answered, which
// queues it again for after the site's pause, a few times at most.
//
// Usage:
//
//	go run ./examples/pool [-workers N] [-maxwait D]
//
// It serves a small web on 127.0.0.1 (quick.test with no Crawl-delay,
// half.test with 0.5 s, and three sites with 1 s, one of which answers its
// /1 first with 429 and Retry-After: 2), crawls it, and prints a line per
// URL and how long the crawl took: 12 s, the time the sites' intervals and
// the pause require. The longest is quick.test's: it states no
// Crawl-delay, so the Transport paces it at its default (a second from an
// answer to the next request), and its robots.txt, home page and 10 pages
// take 12 s. "go run ./examples/pool" prints it on its last lines (12.0 s
// in two runs on a 2-core machine). With -maxwait 0 it takes as long: the frontier
// hands out a URL only at its site's turn, so no worker waits for one;
// MaxWait only guards against a turn taken by another Transport (a fleet
// sharing a Pacer).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/frontier"
)

func main() {
	workers := flag.Int("workers", 2, "fetch with `N` workers")
	maxWait := flag.Duration("maxwait", 50*time.Millisecond, "the longest a request waits for its site's turn (0: as long as it takes)")
	flag.Parse()
	if *workers < 1 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}

	// The demo web: every *.test host is this listener.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "pool:", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: newWeb(demoSites).handler(), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	base := demoBase(ln.Addr().String())
	defer base.CloseIdleConnections()

	tr := &robots.Transport{Base: base, Agent: "examplebot", MaxWait: *maxWait}
	var seeds []string
	for _, s := range demoSites {
		seeds = append(seeds, "http://"+s.host+"/")
	}

	start := time.Now()
	res := crawl(context.Background(), tr, seeds, *workers, os.Stdout)
	fmt.Printf("\n%d fetched, %d refused by robots.txt, %d failed, %d retried after the site deferred them, %d given up, in %v with %d workers;\n",
		res.Fetched, res.Refused, res.Failed, res.Retried, res.GaveUp, time.Since(start).Round(10*time.Millisecond), *workers)
	fmt.Printf("%d requests were not sent yet and requeued, %v spent waiting for a turn inside the Transport\n",
		tr.Stats().NotYet, tr.Stats().TurnWaitTime.Round(time.Millisecond))
	// With a Pacer or Store that outlives the process (redisstore,
	// boltstore), the answers must reach it before the process exits:
	// under MaxWait the Transport tells them on goroutines of their own.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tr.Flush(ctx)
}

// demoBase returns a transport that connects every *.test host to addr, and
// refuses other hosts.
func demoBase(addr string) *http.Transport {
	return &http.Transport{
		DialContext: func(ctx context.Context, network, hostport string) (net.Conn, error) {
			if host, _, _ := net.SplitHostPort(hostport); !strings.HasSuffix(host, ".test") {
				return nil, fmt.Errorf("pool: %s is not a host of the demo web", hostport)
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
}

// noRedirects is the CheckRedirect of the crawl's http.Client: the crawl
// queues a redirect's target like a link, and the Transport checks it then.
// A hop the client followed could be refused with ErrNotYet after the first
// was sent, and a retry of the first URL would spend its site's turn on it
// again.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// outcome is what a worker made of a URL.
type outcome struct {
	resp  *http.Response // the response, its body closed, or nil; for the frontier's Answered
	err   error          // the request's error, for the frontier's Answered
	what  string         // "fetched", "refused" (by robots.txt) or "failed"; "" if not yet sent
	line  string         // what happened, for the log
	links []string       // the URLs of the page's links
}

// result counts what a crawl did.
type result struct {
	Fetched int // got a response, of any status but a deferral retried
	Refused int // refused by robots.txt
	Failed  int // any other error
	Retried int // deferred by the site (429, 503) or failed for now, and queued again
	GaveUp  int // of Fetched and Failed, deferred once too often
}

// crawl fetches seeds and the pages they link to, each once, with n workers
// that send through rt, a [robots.Transport] with a MaxWait, and writes a
// line per URL to out, with the time since the start. It returns when
// every URL found is done, or when ctx is done.
//
// The workers take URLs from a [frontier.Frontier], which hands out a
// site's URL only once the site's turn has come (it asks rt, when rt is a
// frontier.Turns) and none of its URLs is out. A URL refused for now
// anyway (robots.ErrNotYet) goes back to the head of its site's queue
// until the refusal's TurnError.RetryAt.
func crawl(ctx context.Context, rt http.RoundTripper, seeds []string, n int, out io.Writer) result {
	client := &http.Client{Transport: rt, CheckRedirect: noRedirects, Timeout: time.Minute}
	f := &frontier.Frontier{}
	if t, ok := rt.(frontier.Turns); ok {
		f.Turns = t
	}
	var (
		mu   sync.Mutex // guards res, seen and out
		res  result
		seen = make(map[string]bool) // every URL pushed: the frontier forgets a URL once Done
	)
	push := func(urls []string) {
		for _, u := range urls {
			if !seen[u] {
				seen[u] = true
				f.Push(u) // a bad URL is not queued
			}
		}
	}
	push(seeds)
	start := time.Now()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				u, err := f.Next(ctx)
				if err != nil {
					return // frontier.ErrEmpty: the crawl is over; or ctx is done
				}
				o := fetch(ctx, client, u)
				if o.what == "" {
					f.Answered(u, nil, o.err) // robots.ErrNotYet: queued again for its turn
					continue
				}
				mu.Lock()
				push(o.links) // before Answered, so that the crawl does not end before them
				mu.Unlock()
				// A 429 or 503 goes back to its site's queue for after the
				// pause the site asked for (the Transport keeps it);
				// anything else is done.
				did, _ := f.Answered(u, o.resp, o.err)
				mu.Lock()
				switch {
				case did == frontier.Retrying:
					res.Retried++
					o.line += "  retried after the site's pause"
				case o.what == "fetched":
					res.Fetched++
				case o.what == "refused":
					res.Refused++
				default:
					res.Failed++
				}
				if did == frontier.GaveUp {
					res.GaveUp++
					o.line += "  given up"
				}
				fmt.Fprintf(out, "%5.2fs  %s\n", time.Since(start).Seconds(), o.line)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return res
}

// fetch sends a GET for u and reports what happened.
func fetch(ctx context.Context, client *http.Client, u string) outcome {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return outcome{err: err, what: "failed", line: "error   " + u + ": " + err.Error()}
	}
	resp, err := client.Do(req)
	if errors.Is(err, robots.ErrNotYet) {
		return outcome{err: err} // the frontier queues it again
	}
	if de, ok := errors.AsType[*robots.DisallowedError](err); ok {
		// A rule refused it; or robots.txt is unreachable (errors.Is(err,
		// robots.ErrUnreachable)), and a crawler that wants the URL later
		// may requeue it at de.RetryAt.
		why := de.Rule
		if why == "" {
			why = "robots.txt unreachable"
		}
		return outcome{err: err, what: "refused", line: "refused " + u + "  " + why}
	}
	if err != nil {
		return outcome{err: err, what: "failed", line: "error   " + u + ": " + err.Error()}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return outcome{resp: resp, err: err, what: "failed", line: "error   " + u + ": " + err.Error()}
	}
	o := outcome{resp: resp, what: "fetched", line: fmt.Sprintf("%d     %s", resp.StatusCode, u)}
	if loc, err := resp.Location(); err == nil {
		o.line += "  redirect to " + loc.String()
		o.links = []string{loc.String()}
	} else {
		o.links = links(body, resp.Request.URL)
	}
	return o
}

// href finds links in the demo web's pages; a real crawler parses HTML.
var href = regexp.MustCompile(`href="([^"]*)"`)

// links returns the http and https URLs that page links to, resolved against
// base, without fragments.
func links(page []byte, base *url.URL) []string {
	var out []string
	for _, m := range href.FindAllSubmatch(page, -1) {
		ref, err := url.Parse(string(m[1]))
		if err != nil {
			continue
		}
		u := base.ResolveReference(ref)
		u.Fragment, u.RawFragment = "", ""
		if u.Scheme == "http" || u.Scheme == "https" {
			out = append(out, u.String())
		}
	}
	return out
}
