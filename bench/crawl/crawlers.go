package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocolly/colly/v2"
	"github.com/temoto/robotstxt"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/frontier"
)

// job is what a crawler is given: the URLs to fetch, in the order to take
// them, a base transport that reaches the web and logs each request as it
// leaves, and its number of workers.
type job struct {
	urls    []string
	base    http.RoundTripper
	workers int
	timeout time.Duration // bound on a robots.txt fetch
	maxWait time.Duration // crawler (b)'s Transport.MaxWait
	// notYet, if not nil, is set by crawler (b) to the requests its
	// Transport refused for now (robots.ErrNotYet).
	notYet *atomic.Uint64
}

// crawler is one of the crawlers compared.
type crawler struct {
	name string
	what string
	run  func(ctx context.Context, j job) error
}

var crawlers = []crawler{
	{"a", "robots.Transport, blocking, plain pool", crawlBlocking},
	{"b", "robots.Transport, MaxWait, package frontier", crawlFrontier},
	{"c", "colly v2, robots.txt on, Async, Parallelism W", crawlColly},
	{"d", "temoto/robotstxt by hand, sleep per host, plain pool", crawlTemoto},
}

// sentLog is a RoundTripper that logs each request as it leaves for base.
type sentLog struct {
	base http.RoundTripper
	mu   sync.Mutex
	log  []arrival
}

func (s *sentLog) RoundTrip(req *http.Request) (*http.Response, error) {
	a := arrival{host: req.URL.Host, path: req.URL.RequestURI(), at: time.Now()}
	s.mu.Lock()
	s.log = append(s.log, a)
	s.mu.Unlock()
	return s.base.RoundTrip(req)
}

func (s *sentLog) CloseIdleConnections() {
	if c, ok := s.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// get sends a GET of u with client and reads the response to its end.
func get(ctx context.Context, client *http.Client, u string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// pool runs n workers, each calling do with the URLs of urls in turn.
func pool(urls []string, n int, do func(u string)) {
	ch := make(chan string)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for u := range ch {
				do(u)
			}
		})
	}
	for _, u := range urls {
		ch <- u
	}
	close(ch)
	wg.Wait()
}

// newTransport returns the robots.Transport of crawlers (a) and (b).
func newTransport(j job) *robots.Transport {
	t := robots.NewTransport(j.base, agent)
	t.UserAgent = userAgent
	t.FetchTimeout = j.timeout
	return t
}

// crawlBlocking is crawler (a): a robots.Transport that waits for each
// origin's turn (MaxWait 0), under a plain pool of workers. A refused URL
// is dropped.
func crawlBlocking(ctx context.Context, j job) error {
	client := &http.Client{Transport: newTransport(j)}
	pool(j.urls, j.workers, func(u string) {
		get(ctx, client, u) // a refusal or a failure drops the URL
	})
	return nil
}

// crawlFrontier is crawler (b): a robots.Transport with MaxWait set, under
// a [frontier.Frontier] whose Turns is that Transport. Each origin has at
// most one request out, and is offered again at its next turn; a URL
// refused with robots.ErrNotYet goes back to the head of its origin's
// queue until the refusal's TurnError.At. Any other refusal or failure
// drops the URL.
func crawlFrontier(ctx context.Context, j job) error {
	t := newTransport(j)
	t.MaxWait = j.maxWait
	client := &http.Client{Transport: t}
	f := &frontier.Frontier{Turns: t}
	for _, u := range j.urls {
		if err := f.Push(u); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, j.workers)
	for range j.workers {
		wg.Go(func() {
			for {
				u, err := f.Next(ctx)
				if err != nil {
					if err != frontier.ErrEmpty {
						errs <- err
					}
					return
				}
				f.Done(u, get(ctx, client, u))
			}
		})
	}
	wg.Wait()
	if j.notYet != nil {
		j.notYet.Store(t.Stats().NotYet)
	}
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// crawlColly is crawler (c): colly v2 as its documentation shows it, with
// its own robots.txt support on. Colly fetches a host's robots.txt inside
// Visit, on the caller's goroutine, and parses it with temoto/robotstxt; it
// has no crawl-delay from robots.txt, and its LimitRule with Parallelism W
// and DomainGlob "*" bounds the requests in flight across all hosts.
func crawlColly(ctx context.Context, j job) error {
	c := colly.NewCollector(colly.UserAgent(userAgent), colly.Async(true))
	c.IgnoreRobotsTxt = false
	c.WithTransport(j.base)
	c.SetRequestTimeout(j.timeout)
	if err := c.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: j.workers}); err != nil {
		return err
	}
	for _, u := range j.urls {
		c.Visit(u) // refused by robots.txt, or its robots.txt failed: dropped
	}
	c.Wait()
	return nil
}

// crawlTemoto is crawler (d): what a careful Go user writes by hand with
// temoto/robotstxt. Each host's robots.txt is fetched once (the first
// worker to need it fetches, the others wait) into a map; a host whose
// fetch fails, or whose file temoto cannot parse, is skipped; each URL is
// tested with TestAgent (which, unlike FindGroup and Group.Test, obeys
// temoto's disallow-all for a 5xx); and the pages of a host are spaced by the group's crawl-delay
// with a per-host reservation and a sleep. The robots.txt fetch itself
// is not spaced from the pages: the first page of a host leaves as soon
// as its robots.txt is read.
func crawlTemoto(ctx context.Context, j job) error {
	client := &http.Client{Transport: j.base, Timeout: j.timeout}
	type hostState struct {
		once  sync.Once
		data  *robotstxt.RobotsData // nil if the fetch failed
		delay time.Duration
		mu    sync.Mutex
		next  time.Time // when the next page may leave
	}
	var mu sync.Mutex
	hosts := make(map[string]*hostState)
	pool(j.urls, j.workers, func(raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		mu.Lock()
		h := hosts[u.Host]
		if h == nil {
			h = new(hostState)
			hosts[u.Host] = h
		}
		mu.Unlock()
		h.once.Do(func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", u.Scheme+"://"+u.Host+"/robots.txt", nil)
			req.Header.Set("User-Agent", userAgent)
			resp, err := client.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			data, err := robotstxt.FromResponse(resp)
			if err != nil {
				return
			}
			h.data, h.delay = data, data.FindGroup(agent).CrawlDelay
		})
		if h.data == nil || !h.data.TestAgent(u.RequestURI(), agent) {
			return
		}
		if d := h.delay; d > 0 {
			h.mu.Lock()
			at := time.Now()
			if at.Before(h.next) {
				at = h.next
			}
			h.next = at.Add(d)
			h.mu.Unlock()
			time.Sleep(time.Until(at))
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", raw, nil)
		req.Header.Set("User-Agent", userAgent)
		resp, err := client.Do(req)
		if err != nil {
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	})
	return nil
}
