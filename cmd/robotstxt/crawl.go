package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/html"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/matcher"
)

const (
	// defaultMax is the default for crawl -max.
	defaultMax = 50

	// maxPage is how much of a page crawl reads to find links.
	maxPage = 2 << 20
)

func runCrawl(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crawl", flag.ContinueOnError)
	agent := fs.String("agent", defaultAgent, "the crawler's product `token`")
	max := fs.Int("max", defaultMax, "stop after `N` URLs, fetched or refused")
	demo := fs.Bool("demo", false, "start a demo site on 127.0.0.1 and crawl it")
	timeout := fs.Duration("timeout", fetchTimeout, "time limit for fetching robots.txt and for each request")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: robotstxt crawl [-agent TOKEN] [-max N] [-timeout D] [-demo] [URL]\n\n"+
			"Crawls URL and the pages it links to on the same site, obeying its robots.txt\n"+
			"and Crawl-delay. With -demo, starts a small site on 127.0.0.1 and crawls it.\n"+
			"Exit status: 0 the crawl ran, 1 the start URL could not be fetched, 2 bad usage.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if !validToken(*agent) {
		fmt.Fprintf(stderr, "robotstxt: -agent %q is not a product token (letters, digits, '-' and '_')\n", *agent)
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
	if *demo == (fs.NArg() == 1) || fs.NArg() > 1 {
		fs.Usage()
		return exitUsage
	}

	var start *url.URL
	if *demo {
		site, stop, err := startDemo(demoCrawlDelay)
		if err != nil {
			fmt.Fprintf(stderr, "robotstxt: starting the demo site: %v\n", err)
			return exitUsage
		}
		defer stop()
		start = site
		fmt.Fprintf(stdout, "demo site at %s, serving this robots.txt:\n\n", site)
		body := demoRobots(site.Host, demoCrawlDelay)
		n := 0
		for line := range strings.Lines(body) {
			n++
			fmt.Fprintf(stdout, "%6d  %s", n, line)
		}
		fmt.Fprintln(stdout)
	} else {
		u, err := parseSite(fs.Arg(0))
		if err != nil || u.Scheme != "http" && u.Scheme != "https" {
			fmt.Fprintf(stderr, "robotstxt: %q is not an http or https URL\n", fs.Arg(0))
			return exitUsage
		}
		start = u
	}

	c := newCrawler(*agent, *max, *timeout, stdout, stderr)
	defer c.client.CloseIdleConnections()
	return c.crawl(ctx, start)
}

// validToken reports whether s is a product token: letters, digits, '-' and
// '_' (RFC 9309 §2.2.1, with digits, as SPEC.md section 5 allows).
func validToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return s != ""
}

// crawler visits the pages of one site, breadth first, through a
// [robots.Transport]. It is not safe for concurrent use.
type crawler struct {
	client *http.Client
	tr     *robots.Transport
	agent  string
	max    int
	out    *bufio.Writer
	prog   *progress // nil unless standard error is a terminal

	origin string
	queue  []*url.URL
	seen   map[string]bool // every URL ever queued
	capped bool            // a link was not queued because of max

	// Totals for the summary.
	statuses    map[int]int
	refused     int // by a rule
	unreachable int // because robots.txt was unreachable
	errors      int

	timeout time.Duration // of each request, once its response has begun
}

func newCrawler(agent string, max int, timeout time.Duration, stdout, stderr io.Writer) *crawler {
	tr := robots.NewTransport(baseTransport(timeout), agent)
	tr.FetchTimeout = timeout
	tr.UserAgent = userAgent(agent) // for robots.txt fetched before any request
	c := &crawler{
		tr:       tr,
		timeout:  timeout,
		agent:    agent,
		max:      max,
		out:      bufio.NewWriter(stdout),
		prog:     newProgress(stderr),
		seen:     make(map[string]bool),
		statuses: make(map[int]int),
	}
	c.client = &http.Client{
		Transport: tr,
		// Every hop is checked by the Transport. Stay on the site, and
		// give up after a few hops.
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return errTooManyRedirects
			}
			if originOf(req.URL) != c.origin {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
	return c
}

// crawl visits start and the same-origin pages it leads to, up to c.max
// URLs, and prints a line per URL and a summary.
func (c *crawler) crawl(ctx context.Context, start *url.URL) int {
	defer c.out.Flush()
	begin := time.Now()
	start = cleanURL(start)
	c.origin = originOf(start)
	c.enqueue(start)
	fmt.Fprintf(c.out, "crawling %s as %s, at most %d URLs\n", start, c.agent, c.max)
	c.out.Flush()
	c.prog.show("fetching " + robotsURL(start).String())
	fmt.Fprintln(c.out, obeying(ctx, c.tr, start, c.agent))
	c.prog.clear()
	c.out.Flush()
	asked := c.tr.Stats() // the question above is not one of the crawl's requests

	code := exitOK
	done := 0
	for ; len(c.queue) > 0 && done < c.max && ctx.Err() == nil; done++ {
		u := c.queue[0]
		c.queue = c.queue[1:]
		c.prog.show(fmt.Sprintf("[%d/%d, %d queued] %s", done+1, c.max, len(c.queue), u.RequestURI()))
		ok := c.visit(ctx, u)
		if done == 0 && !ok {
			code = exitFlagged
		}
	}
	c.prog.clear()

	var parts []string
	fetched := 0
	for _, status := range slices.Sorted(maps.Keys(c.statuses)) {
		n := c.statuses[status]
		fetched += n
		parts = append(parts, fmt.Sprintf("%d × %d", n, status))
	}
	fmt.Fprintf(c.out, "\n%s in %v: %d fetched", count(done, "URL"), time.Since(begin).Round(10*time.Millisecond), fetched)
	if len(parts) > 0 {
		fmt.Fprintf(c.out, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintf(c.out, ", %d disallowed by rules", c.refused)
	if c.unreachable > 0 {
		fmt.Fprintf(c.out, ", %d refused: robots.txt unreachable", c.unreachable)
	}
	fmt.Fprintf(c.out, ", %s", count(c.errors, "error"))
	if len(c.queue) > 0 || c.capped {
		fmt.Fprintf(c.out, "; stopped at -max %d", c.max)
	}
	if err := ctx.Err(); err != nil {
		fmt.Fprintf(c.out, "; interrupted")
	}
	fmt.Fprintln(c.out)

	st := c.tr.Stats()
	fetches := st.FetchSuccess + st.FetchUnavailable + st.FetchUnreachable
	parts = parts[:0]
	for _, p := range []struct {
		n    uint64
		what string
	}{{st.FetchSuccess, "ok"}, {st.FetchUnavailable, "unavailable"}, {st.FetchUnreachable, "unreachable"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	fmt.Fprintf(c.out, "robots.txt fetched %s", count(int(fetches), "time"))
	if len(parts) > 0 {
		fmt.Fprintf(c.out, " (%s)", strings.Join(parts, ", "))
	}
	hits, misses := st.Hits-asked.Hits, st.Misses-asked.Misses
	fmt.Fprintf(c.out, "; %d of %s decided from the cache\n", hits, count(int(hits+misses), "request"))
	return code
}

// visit fetches u, prints the outcome and queues the links of an HTML page.
// It reports whether u was fetched.
func (c *crawler) visit(ctx context.Context, u *url.URL) bool {
	// The request may first wait for robots.txt and for the Crawl-delay;
	// the time limit starts once the response has begun.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		c.errors++
		c.line("error", u, err.Error())
		return false
	}
	req.Header.Set("User-Agent", userAgent(c.agent))
	resp, err := c.client.Do(req)
	if de, ok := errors.AsType[*robots.DisallowedError](err); ok {
		if errors.Is(err, robots.ErrUnreachable) {
			c.unreachable++
		} else {
			c.refused++
		}
		why := "robots.txt unreachable"
		switch {
		case de.Rule != "":
			why = de.Rule + " (line " + strconv.Itoa(de.Line) + ")"
		case de.Err != nil:
			why += " (" + unreachableText(de.Err) + ")"
			if !de.RetryAt.IsZero() {
				why += "; retry after " + clock(de.RetryAt)
			}
		}
		if de.URL != nil && de.URL.String() != u.String() {
			why = "redirected to " + de.URL.RequestURI() + ": " + why
		}
		c.line("refused", u, why)
		return false
	}
	if err != nil {
		c.errors++
		c.line("error", u, errorText(err))
		return false
	}
	timer := time.AfterFunc(c.timeout, cancel)
	defer timer.Stop()
	defer resp.Body.Close()

	c.statuses[resp.StatusCode]++
	var note string
	final := resp.Request.URL
	if final.String() != u.String() {
		note = "redirected to " + final.String()
		if originOf(final) == c.origin {
			note = "redirected to " + final.RequestURI()
			c.seen[cleanURL(final).String()] = true
		}
	}
	if loc := resp.Header.Get("Location"); resp.StatusCode/100 == 3 && loc != "" {
		note = "redirect to " + loc + ", another site: not followed"
	}
	if usage := robots.UsageOf(resp).String(); usage != "" && resp.StatusCode/100 == 2 {
		if note != "" {
			note += "; "
		}
		note += "usage " + usage
	}
	c.line(strconv.Itoa(resp.StatusCode), u, note)

	body := io.LimitReader(resp.Body, maxPage)
	if resp.StatusCode/100 == 2 && isHTML(resp.Header.Get("Content-Type")) {
		for _, link := range links(body, final) {
			if originOf(link) == c.origin {
				c.enqueue(link)
			}
		}
	}
	io.Copy(io.Discard, io.LimitReader(body, 64<<10)) // let the connection be reused
	return true
}

// enqueue queues u unless it was queued before. It stops queueing once there
// are more URLs than the crawl will visit.
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
	c.queue = append(c.queue, u)
}

// line prints one outcome, as "200      /path  note".
func (c *crawler) line(what string, u *url.URL, note string) {
	c.prog.clear()
	target := u.String()
	if originOf(u) == c.origin {
		target = u.RequestURI()
	}
	if note != "" {
		note = "  " + note
	}
	fmt.Fprintf(c.out, "%-8s %s%s\n", what, target, note)
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
	rt, err := tr.RobotsTxt(ctx, u)
	if err != nil {
		return "robots.txt not known: " + errorText(err)
	}
	var s string
	switch rt.Access {
	case robots.AccessUnavailable:
		s = "robots.txt is unavailable: everything is allowed"
	case robots.AccessSuccess:
		s = obeyedGroups(rt.Robots, agent)
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
	if rt.Robots != nil {
		stated, hasDelay = rt.Robots.Group(agent).CrawlDelay()
	}
	switch {
	case hasDelay && stated > kept:
		return s + ", crawl-delay " + stated.String() + ", kept at " + kept.String()
	case kept > 0 || hasDelay:
		return s + ", crawl-delay " + kept.String()
	}
	return s + ", no crawl-delay"
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
