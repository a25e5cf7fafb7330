// Colly crawls a site with a [colly.Collector] whose requests go through a
// [robots.Transport], so that the site's robots.txt decides what is fetched.
//
// Usage:
//
//	go run . [-agent TOKEN] [-max N] URL
//
// It prints a line per URL: the HTTP status, or "refused" with the robots.txt
// rule that refused it.
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
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/gocolly/colly/v2"

	"github.com/f9014239/robots"
)

func main() {
	agent := flag.String("agent", "examplebot", "the crawler's product `token`")
	max := flag.Int("max", 50, "send at most `N` requests")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: colly [-agent TOKEN] [-max N] URL\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *max < 1 || strings.Trim(*agent, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" || *agent == "" {
		flag.Usage()
		os.Exit(2)
	}
	res, err := crawl(flag.Arg(0), *agent, *max, nil, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "colly: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%d fetched, %d refused by robots.txt, %d failed\n", len(res.Fetched), len(res.Refused), len(res.Failed))
}

// result is what a crawl did. Fetched and Failed hold URLs in the order
// they were handled.
type result struct {
	Fetched []string          // got a response, of any status
	Refused map[string]string // refused by robots.txt: URL → deciding rule
	Failed  []string          // a network error
}

// crawl visits start and the pages it links to on the same host, sending at
// most max requests through base (nil means [http.DefaultTransport]) wrapped
// in a [robots.Transport] for agent. It writes a line per URL to out.
func crawl(start, agent string, max int, base http.RoundTripper, out io.Writer) (*result, error) {
	u, err := url.Parse(start)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%q is not an http or https URL", start)
	}

	c := colly.NewCollector(
		colly.UserAgent(agent+" (+https://github.com/f9014239/robots)"),
		colly.AllowedDomains(u.Hostname()),
		colly.MaxRequests(uint32(max)),
	)
	// Our Transport decides, not colly's own robots.txt support (see the
	// package doc). Colly's default is true already; say it anyway.
	c.IgnoreRobotsTxt = true
	c.WithTransport(robots.NewTransport(base, agent))

	var mu sync.Mutex // guards res and out, for a Collector made Async
	res := &result{Refused: make(map[string]string)}
	c.OnHTML("a[href]", func(e *colly.HTMLElement) {
		e.Request.Visit(e.Attr("href")) // errors (visited, other host) are expected
	})
	c.OnResponse(func(r *colly.Response) {
		mu.Lock()
		defer mu.Unlock()
		res.Fetched = append(res.Fetched, r.Request.URL.String())
		fmt.Fprintf(out, "%d %s\n", r.StatusCode, r.Request.URL)
	})
	c.OnError(func(r *colly.Response, err error) {
		mu.Lock()
		defer mu.Unlock()
		target := r.Request.URL.String()
		switch {
		case errors.Is(err, robots.ErrDisallowed):
			rule := "robots.txt unreachable"
			if de, ok := errors.AsType[*robots.DisallowedError](err); ok && de.Rule != "" {
				rule = de.Rule
			}
			res.Refused[target] = rule
			fmt.Fprintf(out, "refused %s (%s)\n", target, rule)
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

	err = c.Visit(start)
	c.Wait()
	if err != nil && !errors.Is(err, robots.ErrDisallowed) && len(res.Fetched) == 0 {
		return res, err
	}
	return res, nil
}
