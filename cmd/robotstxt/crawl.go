package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/f9014239/robots/fleet"

	"golang.org/x/net/html"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/frontier"
	"github.com/f9014239/robots/matcher"
)

const (
	// defaultMax is the default for crawl -max.
	defaultMax = 50

	// maxPage is how much of a page crawl reads to find links.
	maxPage = 2 << 20

	// defaultWorkers is the default for crawl -workers.
	defaultWorkers = 4

	// crawlMaxWait is the longest a request of crawl waits for its site's
	// turn: one whose turn is further away goes back in the queue, for
	// its turn (see robots.Transport.MaxWait). The frontier hands out a
	// site's URL at its turn, so this is rare.
	crawlMaxWait = 50 * time.Millisecond
)

func runCrawl(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crawl", flag.ContinueOnError)
	agent := fs.String("agent", defaultAgent, "the crawler's product `token`, or a User-Agent header that names one")
	asJSON := fs.Bool("json", false, "write one JSON object per URL, one a line; the rest goes to standard error")
	max := fs.Int("max", defaultMax, "stop after `N` URLs, fetched or refused")
	demo := fs.Bool("demo", false, "start a demo site on 127.0.0.1 and crawl it")
	timeout := fs.Duration("timeout", fetchTimeout, "time limit for fetching robots.txt, and for each request: for its answer, then for its body")
	workers := fs.Int("workers", defaultWorkers, "send up to `N` requests at a time")
	statePath := fs.String("state", stateDefault(), "keep the crawl's state in `FILE`, and resume an interrupted crawl; \"\" for none")
	sign := addSignFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: robotstxt crawl [-agent TOKEN] [-json] [-max N] [-timeout D] [-workers N] [-state FILE] [-sign-key FILE -signature-agent URL] [-demo] [URL...]\n\n"+
			"Crawls each URL and the pages it links to on the same site, obeying its\n"+
			"robots.txt and Crawl-delay. A site's pages wait for its turn in a queue, not\n"+
			"in a worker: a site with a long Crawl-delay does not hold up the others.\n"+
			"With -demo, starts a small site on 127.0.0.1 and crawls it.\n"+
			"Exit status: 0 the crawl ran to its end, 1 a start URL could not be fetched\n"+
			"or the crawl stopped before its end (the same command resumes it), 2 bad\n"+
			"usage or a state file that cannot be used.\n\n")
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), stateHelp)
		fmt.Fprint(fs.Output(), signHelp)
		fmt.Fprint(fs.Output(), crawlJSONHelp)
	}
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	token, err := agentToken(*agent)
	if err != nil {
		fmt.Fprintf(stderr, "robotstxt: %v\n", err)
		return exitUsage
	}
	if *max < 1 {
		fmt.Fprintf(stderr, "robotstxt: -max must be at least 1\n")
		return exitUsage
	}
	if *timeout <= 0 {
		fmt.Fprintf(stderr, "robotstxt: -timeout must be positive\n")
		return exitUsage
	}
	if *workers < 1 {
		fmt.Fprintf(stderr, "robotstxt: -workers must be at least 1\n")
		return exitUsage
	}
	if *demo == (fs.NArg() > 0) {
		fs.Usage()
		return exitUsage
	}
	signer, err := sign.signer()
	if err != nil {
		fmt.Fprintf(stderr, "robotstxt: %v\n", err)
		return exitUsage
	}

	var starts []*url.URL
	head := stdout // what is not a URL's line
	if *asJSON {
		head = stderr
	}
	if *demo {
		site, stop, err := startDemo(demoCrawlDelay)
		if err != nil {
			fmt.Fprintf(stderr, "robotstxt: starting the demo site: %v\n", err)
			return exitUsage
		}
		defer stop()
		starts = append(starts, site)
		fmt.Fprintf(head, "demo site at %s, serving this robots.txt:\n\n", site)
		body := demoRobots(site.Host, demoCrawlDelay)
		n := 0
		for line := range strings.Lines(body) {
			n++
			fmt.Fprintf(head, "%6d  %s", n, line)
		}
		fmt.Fprintln(head)
	} else {
		for _, arg := range fs.Args() {
			u, err := parseSite(arg)
			if err != nil || u.Scheme != "http" && u.Scheme != "https" || originOf(u) == "" {
				fmt.Fprintf(stderr, "robotstxt: %q is not an http or https URL\n", arg)
				return exitUsage
			}
			starts = append(starts, u)
		}
	}

	c := newCrawler(*agent, token, *max, *workers, *timeout, stdout, stderr)
	c.tr.Signer = signer // before the Transport's first use
	if *asJSON {
		c.json = json.NewEncoder(stdout)
		c.json.SetEscapeHTML(false)
		c.out = bufio.NewWriter(stderr)
	}
	defer c.client.CloseIdleConnections()
	for i, start := range starts {
		starts[i] = cleanURL(start)
	}
	if *statePath != "" {
		closeState, err := c.openState(*statePath, starts, !*demo)
		if err != nil {
			fmt.Fprintf(stderr, "robotstxt: %v\n", err)
			return exitUsage
		}
		defer func() {
			if err := closeState(); err != nil {
				fmt.Fprintf(stderr, "robotstxt: closing the state file %s: %v\n", *statePath, err)
			}
		}()
	}
	return c.crawl(ctx, starts)
}

// crawlBase returns the http.RoundTripper that crawl's Transport sends
// through. Tests replace it.
var crawlBase = func(timeout time.Duration) http.RoundTripper { return baseTransport(timeout) }

// crawler visits the pages of one or more sites through a
// [robots.Transport], with workers that take URLs from a
// [frontier.Frontier]: a site's URL is handed out at the site's turn, one
// at a time. The fields below mu are guarded by it.
type crawler struct {
	client  *http.Client
	tr      *robots.Transport
	front   *frontier.Frontier
	agent   string // the product token
	max     int
	workers int
	out     *bufio.Writer // the text lines, or with -json the header and summary
	json    *json.Encoder // with -json, where a URL's object goes; else nil
	prog    *progress     // nil unless standard error is a terminal

	single string // the origin, if one: its URLs print as paths

	mu sync.Mutex
	// origins are the origins crawled: those of the start URLs and of the
	// targets of their redirects. Links to them are followed.
	origins map[string]bool
	// starts are the start URLs, with the redirects of another origin
	// that led to each: 1 for a URL of the command line.
	starts map[string]int

	seen     map[string]bool // every URL ever queued: the frontier forgets a URL once done
	capped   bool            // a link was not queued because of max
	said     map[string]bool // the origins whose robots.txt crawl has described
	requeued map[string]int  // by URL: times refused for now (robots.ErrNotYet), until it is done
	retries  map[string]int  // by URL: times answered 429 or 503 and sent again, until it is done
	visited  int

	// Totals for the summary.
	statuses    map[int]int
	refused     int // by a rule
	unreachable int // because robots.txt was unreachable
	errors      int

	// stopped is why the crawl stopped before its end (a *stalledError,
	// or the journal's write error), or nil; set once run returns.
	stopped     error
	interrupted bool                    // the crawl's context ended
	halt        context.CancelCauseFunc // stops the workers, with why

	retried int // answers 429 or 503 sent again
	givenUp int // pages still 429 or 503 after the retries

	// the state: the file's path, the crawl's journal, and what the
	// journal held of the runs before (nil if none)
	statePath string
	journal   *journal
	resume    *resume
	resumed   *resumedJSON
	others    []string // the unfinished crawls of other journals beside the state file

	timeout time.Duration // of each request, once its response has begun
	ua      string        // the User-Agent header sent
}

// newCrawler returns a crawler for the crawler that agent names (a token or
// a User-Agent header), whose product token is token.
func newCrawler(agent, token string, max, workers int, timeout time.Duration, stdout, stderr io.Writer) *crawler {
	tr := robots.NewTransport(crawlBase(timeout), agent)
	tr.FetchTimeout = timeout
	tr.UserAgent = sentAgent(agent, token) // for robots.txt fetched before any request
	tr.MaxWait = crawlMaxWait
	// A request of the crawl gets its answer within -timeout of its turn
	// or fails (see try), so a turn held longer is of a process that
	// died: the site is not held for longer after a kill.
	tr.TurnTimeout = timeout + time.Second
	c := &crawler{
		tr:       tr,
		timeout:  timeout,
		agent:    token,
		ua:       tr.UserAgent,
		max:      max,
		workers:  workers,
		out:      bufio.NewWriter(stdout),
		prog:     newProgress(stderr),
		origins:  make(map[string]bool),
		starts:   make(map[string]int),
		seen:     make(map[string]bool),
		said:     make(map[string]bool),
		requeued: make(map[string]int),
		retries:  make(map[string]int),
		statuses: make(map[int]int),
	}
	c.front = &frontier.Frontier{Turns: tr, MaxRetries: maxRetries}
	c.client = &http.Client{
		Transport: tr,
		// Redirects are not followed: a redirect's target on a crawled
		// site is queued like a link. (A hop refused for now after the
		// first was sent would make each retry send the first again.)
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c
}

// A job is a URL of the crawl.
type job struct {
	u        *url.URL
	start    int // a start URL: 1, or 1 + the redirects that led to it; else 0
	requeued int // how many times it was refused for now and queued again
	retries  int // how many times it was answered 429 or 503 and sent again
}

// outcome is what a worker made of a job.
type outcome struct {
	job
	err    error  // the request's error, for the frontier's Done
	notYet bool   // refused for now (robots.ErrNotYet): the frontier queues it again
	status int    // the response's status; 0 if none
	what   string // for the line: the status, "refused" or "error"
	note   string
	kind   int        // what to count: outFetched, outRefused, …
	links  []*url.URL // of an HTML page
	// redirect is a redirect's target; record decides whether it is
	// followed and says so in note
	redirect *url.URL
	gaveUp   bool // deferred (429, 503, a failure that may pass) once more than maxRetries times
	rec      crawlRecord
}

const (
	outFetched = iota
	outRefused
	outUnreachable
	outError
	outGivenUp // answered 429 or 503, or failed, after maxRetries retries
)

// maxRetries is how many times a page answered 429 or 503 (or whose
// request failed in a way that may pass) is sent again, each once its
// site's pause (Retry-After, or the back-off) has ended, before it is
// given up: the frontier's MaxRetries.
const maxRetries = frontier.DefaultMaxRetries

// mayDefer reports whether the frontier may retry o (see
// frontier.Frontier.Answered): an answer 429 Too Many Requests or 503
// Service Unavailable, the site's ways to say "later", or a request that
// failed (on the network, in a way that may pass). Such an outcome has no
// links to queue. A 404, a 500 or a refusal is never retried.
func mayDefer(o outcome) bool {
	return o.kind == outError ||
		o.kind == outFetched && (o.status == http.StatusTooManyRequests || o.status == http.StatusServiceUnavailable)
}

// response returns what frontier.Frontier.Answered reads of o's response:
// its status; nil if none came.
func (o outcome) response() *http.Response {
	if o.kind != outFetched {
		return nil
	}
	return &http.Response{StatusCode: o.status}
}

// turnOf returns when the frontier hands out u's site next: after the
// pause of a deferred answer; now if not known.
func (c *crawler) turnOf(u *url.URL) time.Time {
	origin := originOf(u)
	for _, s := range c.front.Sites() {
		if s.Origin == origin && !s.At.IsZero() {
			return s.At
		}
	}
	return time.Now()
}

// visit counts o, the outcome of the URL raw, prints its line, queues its
// links and records it as visited. c.mu must be held.
func (c *crawler) visit(ctx context.Context, raw string, o outcome, done func(outcome)) {
	delete(c.requeued, raw)
	delete(c.retries, raw)
	c.visited++
	c.record(ctx, o)
	c.note(c.journal.add("-", raw))
	done(o)
}

// crawl visits starts and the pages they lead to on the same sites, up to
// c.max URLs, and prints a line per URL and a summary.
func (c *crawler) crawl(ctx context.Context, starts []*url.URL) int {
	defer c.out.Flush()
	begin := time.Now()
	for _, start := range starts {
		c.origins[originOf(start)] = true
	}
	if len(c.origins) == 1 {
		c.single = originOf(starts[0])
	}
	names := make([]string, len(starts))
	for i, start := range starts {
		names[i] = start.String()
	}
	fmt.Fprintf(c.out, "crawling %s as %s, at most %d URLs, %s\n", strings.Join(names, ", "), c.agent, c.max, c.stateText())
	for _, o := range c.others {
		fmt.Fprintln(c.out, o)
	}
	c.out.Flush()
	// No robots.txt is fetched here: the frontier asks the Transport
	// about each site, which fetches its robots.txt, and hands out the
	// site's first URL once it is in, while the other sites go on. What
	// a site's robots.txt makes of the crawler is said before its first
	// URL's line (see record).
	for _, start := range starts {
		c.starts[start.String()] = 1
	}
	if c.resume != nil {
		c.restore()
	} else {
		for _, start := range starts {
			c.enqueue(start)
		}
	}

	code := exitOK
	done := 0
	if c.journal.failure() == nil {
		done = c.run(ctx, func(o outcome) {
			if o.start > 0 && o.kind != outFetched {
				code = exitFlagged
			}
		})
	}
	c.interrupted = ctx.Err() != nil
	if c.stopped == nil && c.journal.failure() != nil {
		c.stopped = c.journal.failure()
	}
	c.prog.clear()
	sum := c.summary(done, time.Since(begin))
	if sum.Stopped != stopFinished && sum.Stopped != stopMax && sum.Stopped != stopRefused {
		code = exitFlagged
	}
	c.printSummary(sum)
	return code
}

// run sends the queued URLs with c.workers workers until the frontier is
// empty or ctx is done, prints a line per URL, queues the links found, and
// calls done with each outcome. It returns how many URLs it visited.
//
// A URL refused for now (its site's turn is later than crawlMaxWait) goes
// back to its site's queue, for that turn. The crawl stops early, with
// c.stopped set, when every URL left waits for a turn further away than
// it waits (see stalled).
func (c *crawler) run(ctx context.Context, done func(outcome)) int {
	parent := ctx
	// The requests out when the crawl is interrupted are let end (each
	// within -timeout), so that none is sent for nothing and sent again
	// by a resumed crawl.
	send := context.WithoutCancel(ctx)
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	c.mu.Lock()
	c.halt = stop
	c.mu.Unlock()
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() {
			for {
				raw, err := c.next(ctx, stop)
				if err != nil {
					return // frontier.ErrEmpty: the crawl is over; or ctx is done
				}
				if ctx.Err() != nil {
					c.front.Requeue(raw, time.Now()) // for a resumed crawl
					return
				}
				u, _ := url.Parse(raw) // it parsed when it was queued
				c.mu.Lock()
				j := job{u: u, start: c.starts[raw], requeued: c.requeued[raw], retries: c.retries[raw]}
				c.prog.show(fmt.Sprintf("[%d/%d, %d queued] %s", c.before()+c.visited+1, c.max, c.front.Len()-1, u.RequestURI()))
				c.mu.Unlock()
				o := c.fetch(send, j)
				c.mu.Lock()
				switch {
				case o.notYet:
					c.requeued[raw]++
					c.mu.Unlock()
					c.front.Done(raw, o.err) // back in the queue, for its turn
					continue
				case ctx.Err() != nil && o.kind != outFetched:
					// Cut short by the crawl's end: not visited, so
					// that a resumed crawl sends it again.
					c.mu.Unlock()
					c.front.Requeue(raw, time.Now())
					continue
				case !mayDefer(o):
					// Its links are queued before the frontier is told,
					// so that the crawl does not end before them.
					c.visit(send, raw, o, done)
					c.mu.Unlock()
					c.front.Answered(raw, o.response(), o.err)
					continue
				}
				c.mu.Unlock()
				// A 429, a 503 or a network error: the frontier decides
				// whether it is retried (after the site's pause, at least
				// 1, 2 and 4 s after the answer) or given up.
				what, _ := c.front.Answered(raw, o.response(), o.err)
				c.mu.Lock()
				switch what {
				case frontier.Retrying:
					c.retries[raw]++
					c.retried++
					// (With -json, on standard error: the URL's object
					// comes with its last answer.)
					c.line(o.what, u, fmt.Sprintf("deferred: retry %d of %d at %s", o.retries+1, maxRetries, clock(c.turnOf(u))))
				case frontier.Requeued:
				default:
					o.gaveUp = what == frontier.GaveUp
					c.visit(send, raw, o, done)
				}
				c.mu.Unlock()
			}
		})
	}
	wg.Wait()
	if parent.Err() == nil {
		c.stopped = context.Cause(ctx) // why a worker stopped the crawl, or nil
	}
	return c.visited
}

// next returns the next URL from the frontier, as Next does. It checks
// every -timeout, while it waits, whether the crawl has stalled, and then
// stops it with the reason.
func (c *crawler) next(ctx context.Context, stop context.CancelCauseFunc) (string, error) {
	for {
		wctx, cancel := context.WithTimeout(ctx, c.timeout)
		raw, err := c.front.Next(wctx)
		cancel()
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return raw, err
		}
		if why := c.stalled(ctx, time.Now()); why != nil {
			stop(why)
			return "", why
		}
	}
}

// stalledError is why a crawl stopped before its end, other than an
// interrupt: every URL left waits for a pause further away than it waits.
type stalledError struct {
	origin  string    // the site whose turn is the soonest
	at      time.Time // that turn
	timeout time.Duration
}

func (e *stalledError) Error() string {
	return fmt.Sprintf("every URL left waits for its site's pause, further away than twice -timeout %v (the soonest, of %s, at %s)",
		e.timeout, e.origin, clock(e.at))
}

// stalled returns why the crawl cannot go on, or nil: no URL is out, and
// every site with a URL queued has its turn further away than both twice
// -timeout and its crawl-delay: a pause the site asked for (Retry-After)
// or a back-off, which the crawl does not wait for. (Twice -timeout: the
// pace a site keeps by its answers' times is up to twice the slowest,
// which -timeout bounds.) The URLs stay queued, for a resumed crawl.
func (c *crawler) stalled(ctx context.Context, now time.Time) error {
	var soonest *stalledError
	for _, s := range c.front.Sites() {
		if s.Out {
			return nil
		}
		if s.Queued == 0 {
			continue
		}
		if s.At.IsZero() || s.At.Sub(now) <= 2*c.timeout {
			return nil
		}
		if u, err := url.Parse(s.Origin + "/"); err == nil {
			ctx, cancel := context.WithTimeout(ctx, c.timeout)
			d, err := c.tr.CrawlDelay(ctx, u)
			cancel()
			if err != nil || s.At.Sub(now) <= d {
				return nil
			}
		}
		if soonest == nil || s.At.Before(soonest.at) {
			soonest = &stalledError{origin: s.Origin, at: s.At, timeout: c.timeout}
		}
	}
	if soonest == nil {
		return nil
	}
	return soonest
}

// record counts o, prints its line and queues its links; before the first
// line of a site, it says what the site's robots.txt makes of the crawler.
// c.mu must be held.
func (c *crawler) record(ctx context.Context, o outcome) {
	if origin := originOf(o.u); !c.said[origin] {
		c.said[origin] = true
		said := obeying(ctx, c.tr, o.u, c.agent)
		if origin != c.single {
			said = origin + ": " + said
		}
		c.prog.clear()
		fmt.Fprintln(c.out, said)
		c.out.Flush()
	}
	if o.gaveUp {
		last := strconv.Itoa(o.status)
		if o.kind == outError {
			last = o.note
		}
		o.kind, o.what, o.note = outGivenUp, "given up", last+" after "+retriesText(o.retries)
		o.rec.Outcome = "given-up"
	}
	o.rec.Retries = o.retries
	switch o.kind {
	case outGivenUp:
		c.givenUp++
	case outFetched:
		c.statuses[o.status]++
	case outRefused:
		c.refused++
	case outUnreachable:
		c.unreachable++
	default:
		c.errors++
	}
	if loc := o.redirect; loc != nil {
		var note string
		switch origin := originOf(loc); {
		case c.origins[origin]:
			note = "redirect to " + c.target(loc)
			o.links = append(o.links, loc)
		case o.start > 0 && o.start <= maxRedirects:
			// A start URL that moved to another origin: that origin
			// is crawled, as its robots.txt allows.
			note = "redirect to " + loc.String() + ", another site: followed, as a start URL"
			c.origins[origin] = true
			c.addStart(loc, o.start+1)
			o.links = append(o.links, loc)
		default:
			note = "redirect to " + loc.String() + ", another site: not followed"
		}
		o.note = joinNote(note, o.note)
	}
	if c.json != nil {
		c.json.Encode(o.rec)
	} else {
		c.line(o.what, o.u, o.note)
	}
	for _, link := range o.links {
		if c.origins[originOf(link)] {
			c.enqueue(link)
		}
	}
}

// addStart makes u a start URL, reached through hops-1 redirects to
// another origin. c.mu must be held.
func (c *crawler) addStart(u *url.URL, hops int) {
	k := cleanURL(u).String()
	if c.starts[k] == 0 {
		c.starts[k] = hops
		c.note(c.journal.add("s "+strconv.Itoa(hops), k))
	}
}

// joinNote joins two notes of a line with "; ", either of which may be
// empty.
func joinNote(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// fetch fetches j.u and reports what happened, with the links of an HTML
// page. It does not touch c's queue or totals.
func (c *crawler) fetch(ctx context.Context, j job) outcome {
	o := c.try(ctx, j)
	o.rec.URL, o.rec.Requeued = j.u.String(), j.requeued
	switch o.kind {
	case outFetched:
		o.rec.Outcome, o.rec.Status = "fetched", o.status
	case outRefused:
		o.rec.Outcome = "disallowed"
	case outUnreachable:
		o.rec.Outcome = "unreachable"
	default:
		o.rec.Outcome = "error"
	}
	return o
}

// try is fetch but for the record's fields that every outcome has.
func (c *crawler) try(ctx context.Context, j job) outcome {
	o := outcome{job: j}
	u := j.u
	// The request may first wait for its turn, up to crawlMaxWait; then
	// its answer (the response's headers) must come within -timeout, and
	// its body within -timeout after that. So no request holds its site
	// longer than turnTimeout (see newCrawler).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	timer := time.AfterFunc(crawlMaxWait+c.timeout, cancel)
	defer timer.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		o.kind, o.what, o.note = outError, "error", err.Error()
		o.rec.Error = o.note
		return o
	}
	req.Header.Set("User-Agent", c.ua)
	resp, err := c.client.Do(req)
	o.err = err
	if errors.Is(err, robots.ErrNotYet) {
		o.notYet = true
		return o
	}
	if de, ok := errors.AsType[*robots.DisallowedError](err); ok {
		o.kind, o.what = outRefused, "refused"
		if errors.Is(err, robots.ErrUnreachable) {
			o.kind = outUnreachable
		}
		why := "robots.txt unreachable"
		o.rec.Rule, o.rec.Line = de.Rule, de.Line
		switch {
		case de.Rule != "":
			why = de.Rule + " (line " + strconv.Itoa(de.Line) + ")"
		case de.Err != nil:
			o.rec.Error = unreachableText(de.Err)
			why += " (" + o.rec.Error + ")"
			if !de.RetryAt.IsZero() {
				why += "; retry after " + clock(de.RetryAt)
				at := de.RetryAt
				o.rec.RetryAt = &at
			}
		}
		o.note = why
		return o
	}
	if err != nil {
		o.kind, o.what, o.note = outError, "error", errorText(err)
		o.rec.Error = o.note
		return o
	}
	timer.Reset(c.timeout) // for the body
	defer resp.Body.Close()

	o.kind, o.status, o.what = outFetched, resp.StatusCode, strconv.Itoa(resp.StatusCode)
	if loc, err := resp.Location(); err == nil && resp.StatusCode/100 == 3 {
		o.rec.Redirect = loc.String()
		o.redirect = loc // record decides whether it is followed
	}
	if u := robots.UsageOf(resp); !u.IsZero() && resp.StatusCode/100 == 2 {
		o.rec.Usage, o.rec.Use, o.rec.UsageSources = u.String(), u.Use(), usageSources(u)
		o.note = "usage " + usageText(o.rec.UsageSources)
	}

	body := io.LimitReader(resp.Body, maxPage)
	if resp.StatusCode/100 == 2 && isHTML(resp.Header.Get("Content-Type")) {
		o.links = links(body, u)
	}
	io.Copy(io.Discard, io.LimitReader(body, 64<<10)) // let the connection be reused
	return o
}

// enqueue queues u unless it was queued before. It stops queueing once there
// are more URLs than the crawl will visit. c.mu must be held, or no worker
// run.
func (c *crawler) enqueue(u *url.URL) {
	u = cleanURL(u)
	k := u.String()
	if c.seen[k] {
		return
	}
	if len(c.seen) >= c.max {
		c.capped = true
		return
	}
	c.seen[k] = true
	if c.front.Push(k) == nil { // a URL that the frontier refuses (too long) is not crawled
		c.note(c.journal.add("+", k))
	}
}

// target returns how a line names u: as a path if the crawl is of u's
// origin only, else in full.
func (c *crawler) target(u *url.URL) string {
	if originOf(u) == c.single {
		return u.RequestURI()
	}
	return u.String()
}

// line prints one outcome, as "200      /path  note".
func (c *crawler) line(what string, u *url.URL, note string) {
	c.prog.clear()
	if note != "" {
		note = "  " + note
	}
	fmt.Fprintf(c.out, "%-8s %s%s\n", what, c.target(u), note)
	c.out.Flush()
}

// cleanURL returns u without its fragment and with an empty path as "/".
func cleanURL(u *url.URL) *url.URL {
	v := *u
	v.Fragment, v.RawFragment = "", ""
	if v.Path == "" && v.Opaque == "" {
		v.Path = "/"
	}
	return &v
}

// isHTML reports whether a Content-Type is HTML.
func isHTML(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.TrimSpace(strings.ToLower(mt))
	return mt == "text/html" || mt == "application/xhtml+xml"
}

// links returns the http and https URLs that the <a href> and <area href>
// elements of an HTML page link to, resolved against base (or the page's
// <base href>).
func links(r io.Reader, base *url.URL) []*url.URL {
	var out []*url.URL
	z := html.NewTokenizer(r)
	for {
		switch z.Next() {
		case html.ErrorToken:
			return out
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			tag := string(name)
			if !hasAttr || tag != "a" && tag != "area" && tag != "base" {
				continue
			}
			for {
				key, val, more := z.TagAttr()
				if string(key) == "href" {
					ref, err := url.Parse(strings.TrimSpace(string(val)))
					if err == nil {
						u := base.ResolveReference(ref)
						if tag == "base" {
							base = u
						} else if u.Scheme == "http" || u.Scheme == "https" {
							out = append(out, u)
						}
					}
					break
				}
				if !more {
					break
				}
			}
		}
	}
}

// progress keeps one line of status at the bottom of a terminal. A nil
// *progress does nothing.
type progress struct {
	w     io.Writer
	shown bool
}

// newProgress returns a progress for w if w is a terminal, or nil.
func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return &progress{w: w}
}

func (p *progress) show(s string) {
	if p == nil {
		return
	}
	if r := []rune(s); len(r) > 78 {
		s = string(r[:77]) + "…"
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", s)
	p.shown = true
}

func (p *progress) clear() {
	if p == nil || !p.shown {
		return
	}
	fmt.Fprint(p.w, "\r\x1b[K")
	p.shown = false
}

// obeying says what the robots.txt of u's origin makes of the crawler with
// product token agent: which group it obeys, with the line where each group
// combined starts, and which crawl-delay tr keeps; or that robots.txt is
// unavailable or unreachable. It asks tr, which fetches robots.txt if it does
// not have it yet, as a request to u would, so that the crawl that follows
// finds it in the cache.
func obeying(ctx context.Context, tr *robots.Transport, u *url.URL, agent string) string {
	ctx = robots.WithMaxWait(ctx, 0) // wait for the fetch, however long it takes (up to -timeout)
	rt, err := tr.Origin(ctx, u)
	if err != nil {
		return "robots.txt not known: " + errorText(err)
	}
	var s string
	switch rt.Access {
	case fleet.AccessUnavailable:
		s = "robots.txt is unavailable: everything is allowed"
	case fleet.AccessSuccess:
		s = obeyedGroups(rt.File, agent)
		if rt.Err != nil {
			s = "robots.txt unreachable (" + unreachableText(rt.Err) + "); obeying the copy fetched at " +
				clock(rt.FetchedAt) + ": " + s
		}
	default:
		why := "robots.txt unreachable"
		if rt.Err != nil {
			why += " (" + unreachableText(rt.Err) + ")"
		}
		return why + ": every URL is refused until it is fetched again, at " + clock(rt.Expires)
	}
	kept, err := tr.CrawlDelay(ctx, u)
	if err != nil {
		return s
	}
	var stated time.Duration
	hasDelay := false
	if rt.File != nil {
		stated, hasDelay = rt.File.Group(agent).CrawlDelay()
	}
	switch {
	case hasDelay && stated > kept:
		return s + ", crawl-delay " + stated.String() + ", kept at " + kept.String()
	case kept > 0 || hasDelay:
		return s + ", crawl-delay " + kept.String()
	}
	if tr.NoDefaultPace {
		return s + ", no crawl-delay"
	}
	d := tr.DefaultDelay
	if d <= 0 {
		d = robots.DefaultPaceDelay
	}
	return s + ", no crawl-delay: the default pace, " + d.String()
}

// obeyedGroups names the groups of r that the crawler with product token
// agent obeys, by the line of their first user-agent line, as in "obeying
// the group of user-agent: examplebot (line 3), not the * group".
func obeyedGroups(r *matcher.Robots, agent string) string {
	g, star := r.Group(agent), r.Group("*")
	lines := g.Lines()
	if len(lines) == 0 {
		return "no group names " + agent + " and there is no * group: everything is allowed"
	}
	where := make([]string, len(lines))
	for i, l := range lines {
		where[i] = strconv.Itoa(l)
	}
	at := "line " + where[0]
	if len(where) > 1 {
		at = "lines " + strings.Join(where[:len(where)-1], ", ") + " and " + where[len(where)-1]
	}
	if g == star {
		if len(lines) > 1 {
			return "obeying the * groups (" + at + ")"
		}
		return "obeying the * group (" + at + ")"
	}
	s := "obeying the group of user-agent: " + agent + " (" + at + ")"
	if len(lines) > 1 {
		s = "obeying the groups of user-agent: " + agent + " (" + at + ")"
	}
	if len(star.Lines()) > 0 {
		s += ", not the * group"
	}
	return s
}

// unreachableText returns why robots.txt is unreachable, without the
// "robots: fetching URL: " that the Transport puts before a status or a
// network error, as in "503 Service Unavailable".
func unreachableText(err error) string {
	s := errorText(err)
	if rest, ok := strings.CutPrefix(s, "robots: fetching "); ok {
		if _, why, ok := strings.Cut(rest, ": "); ok {
			return why
		}
	}
	return strings.TrimPrefix(s, "robots: ")
}

// clock formats t as a local time of day, with the date unless it is today.
func clock(t time.Time) string {
	t = t.Local()
	if y, m, d := t.Date(); y == time.Now().Year() && m == time.Now().Month() && d == time.Now().Day() {
		return t.Format("15:04:05")
	}
	return t.Format("Jan 2 15:04:05")
}

// retriesText returns "1 retry" or "n retries".
func retriesText(n int) string {
	if n == 1 {
		return "1 retry"
	}
	return strconv.Itoa(n) + " retries"
}
