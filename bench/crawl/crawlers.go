package main

import (
	"context"
	"errors"
	"fmt"
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
	timeout time.Duration  // bound on a robots.txt fetch
	maxWait time.Duration  // crawler (b)'s Transport.MaxWait
	backoff robots.Backoff // crawlers (a) and (b)'s Transport.Backoff
	// crawlers (a) and (b)'s Transport.DefaultDelay; 0 for NoDefaultPace
	defaultDelay time.Duration
	// notYet, if not nil, is set by crawler (b) to the requests its
	// Transport refused for now (robots.ErrNotYet).
	notYet *atomic.Uint64
	// dropped, if not nil, is told by crawler (b) of each URL it gives up
	// on other than by a refusal under robots.txt: a failure, or a 429
	// after maxResends.
	dropped *dropLog
}

// dropLog counts the URLs a crawler gave up on, and keeps the first few
// reasons.
type dropLog struct {
	mu      sync.Mutex
	n       int
	reasons []string
}

func (d *dropLog) add(u string, why error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n++
	if len(d.reasons) < 5 {
		d.reasons = append(d.reasons, u+": "+why.Error())
	}
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

// sentLog is a RoundTripper that logs each request as it leaves for base,
// and when its answer (response headers, or an error) comes back.
type sentLog struct {
	base http.RoundTripper
	mu   sync.Mutex
	log  []arrival
}

func (s *sentLog) RoundTrip(req *http.Request) (*http.Response, error) {
	a := arrival{host: req.URL.Host, path: req.URL.RequestURI(), at: time.Now()}
	s.mu.Lock()
	k := len(s.log)
	s.log = append(s.log, a)
	s.mu.Unlock()
	resp, err := s.base.RoundTrip(req)
	now := time.Now()
	s.mu.Lock()
	s.log[k].answered = now
	if err == nil {
		s.log[k].status = resp.StatusCode
	}
	s.mu.Unlock()
	return resp, err
}

func (s *sentLog) CloseIdleConnections() {
	if c, ok := s.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// get sends a GET of u with client, reads the response to its end, and
// returns its status.
func get(ctx context.Context, client *http.Client, u string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Body.Close()
}

// isRefusal reports whether err refuses a request under robots.txt, by
// a rule or because robots.txt is unreachable, which a polite crawler
// drops.
func isRefusal(err error) bool { return errors.Is(err, robots.ErrDisallowed) }

// pushedBack reports whether status asks the crawler to come back later.
func pushedBack(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

// maxResends is how many times crawler (b) sends again a page answered 429
// or 503 before it gives the page up.
const maxResends = 5

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

// newTransport returns the robots.Transport of crawlers (a) and (b): its
// back-off and its default pace are scaled like the crawl-delays (none at
// -scale 0).
func newTransport(j job) *robots.Transport {
	t := robots.NewTransport(j.base, agent)
	t.UserAgent = userAgent
	t.FetchTimeout = j.timeout
	t.Backoff = j.backoff
	t.IgnoreBackoff = j.backoff.First <= 0
	t.DefaultDelay = j.defaultDelay
	t.NoDefaultPace = j.defaultDelay <= 0
	// The origins of the simulated web stand for unrelated sites, each on
	// a server of its own, though they are named under one domain of a
	// run (o1.r0.test, o2.r0.test) and served on one loopback address:
	// each origin is a group of its own, and no address is capped
	// (robots.Transport's DomainCap and AddressCap would take them for
	// one organisation on one shared host).
	t.GroupOf = func(string) string { return "" }
	t.NoAddressCap = true
	return t
}

// crawlBlocking is crawler (a): a robots.Transport that waits for each
// origin's turn (MaxWait 0), under a plain pool of workers. A refused URL
// is dropped, and so is a page answered 429: the Transport backs off the
// origin, but the pool has no queue to put the page back in.
func crawlBlocking(ctx context.Context, j job) error {
	client := &http.Client{Transport: newTransport(j)}
	pool(j.urls, j.workers, func(u string) {
		get(ctx, client, u) // a refusal, a failure or a 429 drops the URL
	})
	return nil
}

// crawlFrontier is crawler (b): a robots.Transport with MaxWait set, under
// a [frontier.Frontier] whose Turns is that Transport. Each origin has at
// most one request out, and is offered again at its next turn; a URL
// refused with robots.ErrNotYet goes back to the head of its origin's
// queue until the refusal's TurnError.RetryAt. A page answered 429 or 503 is
// requeued (Frontier.Requeue) at the origin's next turn as the Transport
// tells it (Transport.NextTurn): after the pause it has set, the back-off
// or Retry-After; it is sent again up to maxResends times. Any other
// refusal or failure drops the URL.
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
	var mu sync.Mutex
	resends := make(map[string]int) // URL → times sent again
	// resend reports whether u, answered 429 or 503, may be sent again,
	// and counts it.
	resend := func(u string) bool {
		mu.Lock()
		defer mu.Unlock()
		if resends[u] >= maxResends {
			return false
		}
		resends[u]++
		return true
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
				status, err := get(ctx, client, u)
				if err == nil && pushedBack(status) && resend(u) {
					at := time.Now()
					if pu, perr := url.Parse(u); perr == nil {
						if next, terr := t.NextTurn(ctx, pu); terr == nil {
							at = next
						}
					}
					f.Requeue(u, at)
					continue
				}
				if err != nil && j.dropped != nil && !isRefusal(err) && !errors.Is(err, robots.ErrNotYet) {
					j.dropped.add(u, err)
				} else if err == nil && pushedBack(status) && j.dropped != nil {
					j.dropped.add(u, fmt.Errorf("answered %d %d times", status, maxResends+1))
				}
				f.Done(u, err)
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
