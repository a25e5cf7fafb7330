// Colly crawls a site with a [colly.Collector] whose requests go through a
// [robots.Transport], so that the site's robots.txt decides what is fetched.
//
// Usage:
//
//	go run . [-agent TOKEN] [-max N] URL
//
// It prints a line per URL: the HTTP status, or "refused" with the robots.txt
// rule that refused it, or, for a site whose robots.txt is unreachable, why
// (DNS, a refused connection, a time-out, a 5xx status…) and when it is
// fetched again.
//
// The whole integration is two lines:
//
//	c.IgnoreRobotsTxt = true
//	c.WithTransport(robots.NewTransport(nil, "examplebot"))
//
// Colly can read robots.txt itself when IgnoreRobotsTxt is false. Leave that
// off and let the Transport decide: it follows RFC 9309 (a robots.txt that
// answers 5xx, 429 or not at all disallows everything, a 4xx allows
// everything, the file is cached per origin for at most a day), it checks every
// request including each redirect hop, and its refusals reach OnError as an
// error that matches [robots.ErrDisallowed] and carries the deciding rule as
// a [*robots.DisallowedError]. With both on, two parsers with different rules
// would each fetch and judge robots.txt.
//
// The Collector is Async, with Parallelism workers, and the Transport has a
// MaxWait: a request whose site's turn (its Crawl-delay, a Retry-After
// pause) is further away is not sent, and reaches OnError at once as an
// error that matches [robots.ErrNotYet]. OnError then waits, in the
// request's own goroutine and without its Parallelism slot, until
// [robots.TurnError.RetryAt], and calls the Request's Retry. The slot goes to a
// request that is ready, so that a site with a long Crawl-delay holds up
// nobody but itself; and since OnError has not returned, c.Wait does not
// return while a retry is pending. Leave colly's LimitRule.Delay at zero:
// the Transport keeps each site's Crawl-delay.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gocolly/colly/v2"

	"github.com/f9014239/robots"
)

func main() {
	agent := flag.String("agent", "examplebot", "the crawler's product `token`")
	max := flag.Int("max", 50, "send at most `N` requests")
	workers := flag.Int("workers", 4, "send at most `N` requests at a time")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: colly [-agent TOKEN] [-max N] URL\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *max < 1 || *workers < 1 || strings.Trim(*agent, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" || *agent == "" {
		flag.Usage()
		os.Exit(2)
	}
	res, err := crawl([]string{flag.Arg(0)}, options{agent: *agent, max: *max, workers: *workers}, nil, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "colly: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%d fetched, %d refused by robots.txt, %d failed; %d retried at their site's turn\n",
		len(res.Fetched), len(res.Refused), len(res.Failed), res.Retries)
}

// result is what a crawl did. Fetched and Failed hold URLs in the order
// they were handled.
type result struct {
	Fetched []string          // got a response, of any status
	Refused map[string]string // refused by robots.txt: URL → deciding rule
	Failed  []string          // a network error
	Retries int               // requests retried at their site's turn (ErrNotYet)
}

// options are a crawl's settings.
type options struct {
	agent   string        // the crawler's product token
	max     int           // send at most this many requests (retries of unsent ones excepted)
	workers int           // send at most this many requests at a time; 0 for 1
	maxWait time.Duration // the Transport's MaxWait; 0 for defaultMaxWait
}

// defaultMaxWait is the longest a request waits for its site's turn before
// it is retried at that turn instead.
const defaultMaxWait = 50 * time.Millisecond

// crawl visits starts and the pages they link to on the same hosts,
// sending through base (nil means [http.DefaultTransport]) wrapped in a
// [robots.Transport]. It writes a line per URL to out.
func crawl(starts []string, o options, base http.RoundTripper, out io.Writer) (*result, error) {
	var hosts []string
	for _, start := range starts {
		u, err := url.Parse(start)
		if err != nil {
			return nil, err
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return nil, fmt.Errorf("%q is not an http or https URL", start)
		}
		hosts = append(hosts, u.Hostname())
	}

	c := colly.NewCollector(
		colly.UserAgent(o.agent+" (+https://github.com/f9014239/robots)"),
		colly.AllowedDomains(hosts...),
		colly.Async(),
	)
	c.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: max(o.workers, 1)})
	// Our Transport decides, not colly's own robots.txt support (see the
	// package doc). Colly's default is true already; say it anyway.
	c.IgnoreRobotsTxt = true
	tr := robots.NewTransport(base, o.agent)
	tr.MaxWait = o.maxWait
	if tr.MaxWait == 0 {
		tr.MaxWait = defaultMaxWait
	}
	// Colly's own client, but redirects are not followed: a redirect's
	// target is visited like a link (see OnError). A hop the client
	// followed could be refused with ErrNotYet after the first was sent,
	// and each Retry would spend the site's turn on the first again.
	jar, _ := cookiejar.New(nil)
	c.SetClient(&http.Client{
		Transport:     tr,
		Jar:           jar,
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	})

	var mu sync.Mutex // guards res, out and the fields below: the Collector is Async
	res := &result{Refused: make(map[string]string)}
	sent := 0                        // requests started, not counting retries
	retrying := make(map[string]int) // retries not yet started, by URL

	c.OnHTML("a[href]", func(e *colly.HTMLElement) {
		e.Request.Visit(e.Attr("href")) // errors (visited, other host) are expected
	})
	// colly.MaxRequests would count each retry as a request: count here,
	// where a retry is known as one.
	c.OnRequest(func(r *colly.Request) {
		mu.Lock()
		defer mu.Unlock()
		if u := r.URL.String(); retrying[u] > 0 {
			retrying[u]--
			return
		}
		if sent == o.max {
			r.Abort()
			return
		}
		sent++
	})
	c.OnResponse(func(r *colly.Response) {
		mu.Lock()
		defer mu.Unlock()
		res.Fetched = append(res.Fetched, r.Request.URL.String())
		fmt.Fprintf(out, "%d %s\n", r.StatusCode, r.Request.URL)
	})
	c.OnError(func(r *colly.Response, err error) {
		if te, ok := errors.AsType[*robots.TurnError](err); ok {
			// Not sent: the site's turn is at te.RetryAt. Wait for it here,
			// in this request's goroutine: its Parallelism slot is free
			// for requests to other sites, and c.Wait waits for this.
			mu.Lock()
			res.Retries++
			retrying[r.Request.URL.String()]++
			mu.Unlock()
			time.Sleep(time.Until(te.RetryAt))
			if err := r.Request.Retry(); err != nil {
				mu.Lock()
				retrying[r.Request.URL.String()]--
				res.Failed = append(res.Failed, r.Request.URL.String())
				fmt.Fprintf(out, "error %s: retry: %v\n", r.Request.URL, err)
				mu.Unlock()
			}
			return
		}
		if r.StatusCode/100 == 3 && r.Headers != nil && r.Headers.Get("Location") != "" {
			r.Request.Visit(r.Headers.Get("Location")) // errors (visited, other host) are expected
		}
		mu.Lock()
		defer mu.Unlock()
		target := r.Request.URL.String()
		switch {
		case errors.Is(err, robots.ErrDisallowed):
			rule, retry := "robots.txt unreachable", ""
			if de, ok := errors.AsType[*robots.DisallowedError](err); ok {
				switch {
				case de.Rule != "":
					rule = de.Rule
				case de.Err != nil:
					// Not the site's rules: its robots.txt could not be
					// fetched. Say why, and when it is fetched again.
					rule += ": " + unreachableWhy(de)
					if !de.RetryAt.IsZero() {
						retry = "; retry after " + de.RetryAt.Format(time.TimeOnly)
					}
				}
			}
			res.Refused[target] = rule
			fmt.Fprintf(out, "refused %s (%s%s)\n", target, rule, retry)
		case r.StatusCode != 0:
			// Colly reports a status of 203 or more as an error too; the
			// request was sent and answered.
			res.Fetched = append(res.Fetched, target)
			fmt.Fprintf(out, "%d %s\n", r.StatusCode, target)
		default:
			res.Failed = append(res.Failed, target)
			fmt.Fprintf(out, "error %s: %v\n", target, err)
		}
	})

	var errs []error
	for _, start := range starts {
		if err := c.Visit(start); err != nil {
			errs = append(errs, err)
		}
	}
	c.Wait()
	if err := errors.Join(errs...); err != nil && len(res.Fetched) == 0 {
		return res, err
	}
	return res, nil
}

// unreachableWhy says why the robots.txt behind de, a refusal of a whole
// site, is unreachable, from the error that de wraps (its Err, and what that
// wraps in turn): a DNS failure, a refused or reset connection, a time-out,
// or the status robots.txt answered with, as in "503 Service Unavailable".
func unreachableWhy(de *robots.DisallowedError) string {
	err := de.Err
	if dns, ok := errors.AsType[*net.DNSError](err); ok {
		return "DNS: " + dns.Err + " " + dns.Name
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return "timed out"
	}
	// A status, or another failure: what follows "robots: fetching URL: ".
	s := err.Error()
	if rest, ok := strings.CutPrefix(s, "robots: fetching "); ok {
		if _, why, ok := strings.Cut(rest, ": "); ok {
			return why
		}
	}
	return strings.TrimPrefix(s, "robots: ")
}
