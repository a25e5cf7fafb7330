package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jimsmart/grobotstxt"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/matcher"
)

// agent is the product token every crawler runs as.
const agent = "ExampleBot"

// userAgent is the User-Agent header every crawler sends.
const userAgent = "ExampleBot/1.0"

// maxDelay caps the crawl-delay a served robots.txt states, before scaling:
// the robots.Transport's DefaultMaxCrawlDelay, so that every crawler and the
// judge see the same delay.
const maxDelay = 30 * time.Second

// maxBody is the largest corpus file an origin serves: RFC 9309 §2.5 asks
// a crawler to parse at least 500 KiB, and parsers differ past it.
const maxBody = 500 << 10

// slowFetch is how long a slow origin takes to answer its robots.txt.
const slowFetch = time.Second

// fastLatency is how long each page of an origin with slow pages and no
// crawl-delay takes to answer.
const fastLatency = 10 * time.Millisecond

// slowLatency returns how long each page of an origin with slow pages and
// crawl-delay d takes to answer: longer than d, so that a crawler that
// spaces its requests from when they left, not from their answers, sends
// the next before the site has answered the one before.
func slowLatency(d time.Duration) time.Duration {
	if d <= 0 {
		return fastLatency
	}
	return d + d/2 + 5*time.Millisecond
}

// kind is how an origin answers its robots.txt.
type kind int

const (
	normal  kind = iota // 200 with a corpus file
	unavail             // 404: every URL allowed
	err503              // 503: unreachable
	err429              // 429: unreachable
	slow                // 200 with a corpus file, after slowFetch
	silent              // no answer: the fetch times out, unreachable
	moved               // 301 to another host, which serves a corpus file
	nKinds
)

var kindNames = [nKinds]string{"200", "404", "503", "429", "slow", "timeout", "redirect"}

// unreachable reports whether RFC 9309 §2.3.1.4 calls an origin of kind k
// unreachable: every URL disallowed.
func (k kind) unreachable() bool { return k == err503 || k == err429 || k == silent }

// origin is one site of the web.
type origin struct {
	kind kind
	file string // corpus file whose body it serves ("" for unavail and the unreachable kinds)
	body []byte // the served robots.txt, crawl-delays scaled
	// delay is the interval the group agent obeys states, scaled: the
	// longer of its crawl-delay and its request-rate (T/n); 0 for none.
	// stated reports whether it states either, even as 0.
	delay  time.Duration
	stated bool
	paths  []string // the pages a crawler is given, path and query
	// allowed[i] reports whether RFC 9309 allows paths[i] for agent by our
	// matcher; refereed[i] whether grobotstxt agrees that it is disallowed.
	allowed  []bool
	refereed []bool
	index    map[string]int // path → index in paths
	// latency is how long each page takes to answer (slow pages; 0 for at
	// once). robots.txt is answered as its kind says.
	latency time.Duration
	// pushback is how many of the first page requests, in order of
	// arrival, are answered 429 without Retry-After (0 for none).
	pushback int
}

// web is the simulated web: the same for every crawler of a run, made
// from a seed.
type web struct {
	origins []origin
	scale   float64       // crawl-delays are multiplied by it
	timeout time.Duration // every crawler's bound on a robots.txt fetch
	// backoff is robots.Transport's default back-off scaled like the
	// crawl-delays: the back-off of crawlers (a) and (b), and of the
	// polite bound. Its zero value is no back-off (-scale 0).
	backoff robots.Backoff
	// defaultDelay is robots.Transport's default pace (its DefaultDelay,
	// 1 s) scaled like the crawl-delays: the interval of crawlers (a) and
	// (b), and of the polite bound, for an origin that states none. The
	// adaptive delay (twice the response time, see interval) is not
	// scaled: it follows the web's own latencies. paced is false at
	// -scale 0: then there is neither (robots.Transport.NoDefaultPace).
	defaultDelay time.Duration
	paced        bool
}

// webConfig says how to make a web.
type webConfig struct {
	corpus  string  // directory of the corpus, with MANIFEST.tsv
	origins int     // how many origins
	faults  float64 // share of origins with a faulty robots.txt, split evenly among the fault kinds
	scale   float64 // crawl-delay scale
	seed    uint64
	rules   int           // at most this many of a file's rules become pages
	timeout time.Duration // fetch timeout of robots.txt for every crawler
	// slowPages and pushback are the shares of the origins whose pages
	// answer slowly, and that push back; pushbackN is how many page
	// requests a pushing-back origin answers 429.
	slowPages, pushback float64
	pushbackN           int
}

// errNoCorpus is returned by newWeb when the corpus directory is absent.
var errNoCorpus = errors.New("corpus absent")

// genericPaths are given for every origin, whatever its rules.
var genericPaths = []string{"/", "/index.html", "/about/contact", "/search?q=shoes&page=2"}

// newWeb makes a web from cfg: cfg.origins files drawn from the corpus
// with cfg.seed, of which a share cfg.faults have a faulty robots.txt.
func newWeb(cfg webConfig) (*web, error) {
	names, err := readManifest(cfg.corpus)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.seed, 0x5eed))
	rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	w := &web{scale: cfg.scale, timeout: cfg.timeout, backoff: scaledBackoff(cfg.scale)}
	w.defaultDelay, w.paced = scaledDefault(cfg.scale)
	nFaults := int(float64(cfg.origins)*cfg.faults + 0.5)
	for len(w.origins) < cfg.origins {
		if len(names) == 0 {
			return nil, fmt.Errorf("corpus %s has too few files of at most %d bytes for %d origins", cfg.corpus, maxBody, cfg.origins)
		}
		name := names[0]
		names = names[1:]
		raw, err := os.ReadFile(filepath.Join(cfg.corpus, name))
		if err != nil {
			return nil, err
		}
		if len(raw) > maxBody {
			continue
		}
		o := origin{kind: normal, file: name}
		if i := len(w.origins); i < nFaults {
			o.kind = kind(1 + i%int(nKinds-1))
		}
		switch o.kind {
		case unavail, err503, err429, silent:
			o.file = ""
		default:
			o.body = scaleDelays(raw, cfg.scale)
		}
		o.paths = pagePaths(raw, cfg.rules, rng)
		w.judge(&o)
		w.origins = append(w.origins, o)
	}
	// The fault origins are the first ones made; spread them.
	rng.Shuffle(len(w.origins), func(i, j int) { w.origins[i], w.origins[j] = w.origins[j], w.origins[i] })
	w.answers(cfg)
	return w, nil
}

// answers picks, with a generator of its own (so that the files, pages and
// kinds of the web do not change with the shares), the origins whose pages
// answer slowly and those that push back: the shares cfg.slowPages and
// cfg.pushback of all origins, taken apart from each other among those
// whose robots.txt is reachable (a polite crawler sends no page to the
// others).
func (w *web) answers(cfg webConfig) {
	rng := rand.New(rand.NewPCG(cfg.seed, 0x51e9))
	var cands []int
	for i := range w.origins {
		if !w.origins[i].kind.unreachable() {
			cands = append(cands, i)
		}
	}
	rng.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	share := func(f float64) int { return min(int(float64(len(w.origins))*f+0.5), len(cands)) }
	nSlow := share(cfg.slowPages)
	for _, i := range cands[:nSlow] {
		w.origins[i].latency = slowLatency(w.origins[i].delay)
	}
	cands = cands[nSlow:]
	for _, i := range cands[:share(cfg.pushback)] {
		w.origins[i].pushback = cfg.pushbackN
	}
}

// scaledBackoff returns robots.Transport's default back-off with each of
// its times multiplied by scale, or no back-off if scale is 0.
func scaledBackoff(scale float64) robots.Backoff {
	if scale <= 0 {
		return robots.Backoff{}
	}
	f := func(d time.Duration) time.Duration { return max(time.Duration(float64(d)*scale), time.Nanosecond) }
	return robots.Backoff{
		First:   f(robots.DefaultBackoffFirst),
		Max:     f(robots.DefaultBackoffMax),
		Forgive: f(robots.DefaultBackoffForgive),
	}
}

// transportDefaultDelay is robots.Transport's default pace: the interval
// of an origin that states neither a crawl-delay nor a request-rate.
const transportDefaultDelay = robots.DefaultPaceDelay

// slowFactor is how many times an origin's response time the Transport's
// adaptive delay spaces its requests, once its estimate is slowFloor or
// more (see interval).
const (
	slowFactor = 2
	slowFloor  = 10 * time.Millisecond
)

// scaledDefault returns robots.Transport's default pace multiplied by
// scale, and false, for no default pace, if scale is 0.
func scaledDefault(scale float64) (time.Duration, bool) {
	if scale <= 0 {
		return 0, false
	}
	return max(time.Duration(float64(transportDefaultDelay)*scale), time.Nanosecond), true
}

// interval returns the least time from an answer of o to its next request
// under robots.Transport's pace, given est, the estimate of o's response
// time so far: the stated delay (crawl-delay or request-rate), or the
// default pace if o states neither; and no less than the adaptive delay,
// slowFactor times est once est is slowFloor or more, capped like a
// crawl-delay (the crawlers' Transports keep the default MaxCrawlDelay).
func (w *web) interval(o *origin, est time.Duration) time.Duration {
	base := o.delay
	if !o.stated && w.paced {
		base = w.defaultDelay
	}
	if !w.paced || est < slowFloor {
		return base
	}
	return max(base, min(slowFactor*est, robots.DefaultMaxCrawlDelay))
}

// nextEstimate returns the estimate of an origin's response time after a
// sample: it rises at once to a slower sample and falls a quarter of the
// way to a faster one, as the Transport's does.
func nextEstimate(est, sample time.Duration) time.Duration {
	if sample >= est {
		return sample
	}
	return est - (est-sample)/4
}

// pause returns the pause of the back-off's level-th incident (1 for the
// first), without the random tenth the Transport may add: First, doubling
// up to Max.
func (w *web) pause(level int) time.Duration {
	b := w.backoff
	if b.First <= 0 {
		return 0
	}
	d := b.First
	for i := 1; i < level && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// judge sets o's delay and verdicts from its served robots.txt.
func (w *web) judge(o *origin) {
	o.index = make(map[string]int, len(o.paths))
	o.allowed = make([]bool, len(o.paths))
	o.refereed = make([]bool, len(o.paths))
	var r *matcher.Robots
	if o.body != nil {
		r = matcher.Parse(o.body)
		g := r.Group(agent)
		delay, hasDelay := g.CrawlDelay()
		rate, hasRate := g.RequestRate()
		o.delay, o.stated = max(delay, rate), hasDelay || hasRate
	}
	for i, p := range o.paths {
		o.index[p] = i
		switch {
		case o.kind.unreachable():
			o.allowed[i] = false
		case r == nil: // 404
			o.allowed[i] = true
		default:
			o.allowed[i] = r.Allowed(agent, p)
			o.refereed[i] = !o.allowed[i] && !grobotstxt.AgentAllowed(string(o.body), agent, "http://example.test"+p)
		}
	}
}

// bound returns the polite bound of origin o: the least time from its first
// request to the answer to its last that a crawler needs if it obeys
// RFC 9309 and paces o as robots.Transport does: one request at a time,
// each spaced from the answer to the one before by o's interval (see
// interval: the crawl-delay or request-rate, else the default pace, and
// at least twice the estimate of its response time), and, after a 429
// without Retry-After, by the back-off w.backoff if longer. Its chain is:
//
//   - the robots.txt fetch, which takes slowFetch on a slow origin and the
//     fetch timeout on a silent one (an unreachable origin gets no page);
//   - then every request for a page, the allowed pages and the o.pushback
//     refused ones sent again: each one interval after the answer before,
//     and answered after o.latency. Each answer is a sample of the
//     estimate, robots.txt's first (slowFetch on a slow origin), as the
//     Transport counts them;
//   - and, after the k-th 429, the back-off's k-th pause instead of the
//     interval, if it is longer: First, doubling up to Max, without the
//     random tenth that the Transport may add.
//
// With a fixed interval d (no latency): fetch + (n + K)·d + Σₖ max(0,
// pause(k) − d), for n allowed pages and K = o.pushback refusals (none
// if n is 0).
func (w *web) bound(o *origin) time.Duration {
	var d time.Duration
	switch o.kind {
	case slow:
		d = slowFetch
	case silent:
		return w.timeout
	}
	n := countTrue(o.allowed)
	if o.kind.unreachable() || n == 0 {
		return d
	}
	est := d // robots.txt's answer: slowFetch or at once
	for i := 1; i <= n+o.pushback; i++ {
		gap := w.interval(o, est)
		if k := i - 1; k >= 1 && k <= o.pushback {
			gap = max(gap, w.pause(k))
		}
		d += gap + o.latency
		est = nextEstimate(est, o.latency)
	}
	return d
}

// politeBound is the largest bound of its origins: no crawl can take less.
func (w *web) politeBound() time.Duration {
	var b time.Duration
	for i := range w.origins {
		b = max(b, w.bound(&w.origins[i]))
	}
	return b
}

// readManifest returns the file names of the corpus in dir.
func readManifest(dir string) ([]string, error) {
	f, err := os.Open(filepath.Join(dir, "MANIFEST.tsv"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", errNoCorpus, dir)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, _, _ := strings.Cut(sc.Text(), "\t")
		if name == "" || name == "filename" {
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names) // the manifest's order must not change the web
	return names, sc.Err()
}

// scaleDelays returns body with the value of each crawl-delay line
// multiplied by scale, after capping it at maxDelay, written as a decimal
// number of seconds ("Crawl-delay: 10" at 1/50 becomes "Crawl-delay: 0.2"),
// and each request-rate line likewise as one request per its interval
// ("Request-rate: 1/10" becomes "Request-rate: 1/0.2s"). Lines whose value
// is not a number, or not a rate, are left as they are.
func scaleDelays(body []byte, scale float64) []byte {
	var out bytes.Buffer
	for line := range bytes.Lines(body) {
		content := bytes.TrimRight(line, "\r\n")
		eol := line[len(content):]
		key, value, ok := bytes.Cut(content, []byte(":"))
		k := strings.NewReplacer("-", "", "_", "", " ", "", "\t", "").Replace(strings.ToLower(string(key)))
		if ok && k == "requestrate" {
			if every, isRate := rateInterval(value); isRate {
				s := min(every, maxDelay).Seconds() * scale
				out.Write(key)
				out.WriteString(": 1/")
				out.WriteString(strconv.FormatFloat(s, 'f', -1, 64))
				out.WriteString("s")
				out.Write(eol)
				continue
			}
		}
		if ok && k == "crawldelay" {
			v := string(bytes.TrimSpace(value))
			if c, _, _ := strings.Cut(v, "#"); c != v {
				v = strings.TrimSpace(c)
			}
			if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < 1e9 {
				s = min(s, maxDelay.Seconds()) * scale
				out.Write(key)
				out.WriteString(": ")
				out.WriteString(strconv.FormatFloat(s, 'f', -1, 64))
				out.Write(eol)
				continue
			}
		}
		out.Write(line)
	}
	return out.Bytes()
}

// rateInterval returns the interval of a request-rate value as the
// matcher reads it, T/n, and whether it is a rate.
func rateInterval(value []byte) (time.Duration, bool) {
	r := matcher.Parse([]byte("User-agent: *\nRequest-rate:" + string(value) + "\n"))
	return r.Group(agent).RequestRate()
}

// pagePaths returns the pages of an origin whose robots.txt is body: the
// generic ones, and up to n paths made from its allow and disallow rules
// (a '*' becomes "x", a final '$' is dropped, "/robots.txt" is left out),
// so that its rules decide some of them.
func pagePaths(body []byte, n int, rng *rand.Rand) []string {
	paths := slices.Clone(genericPaths)
	var rules []string
	for line := range bytes.Lines(body) {
		key, value, ok := bytes.Cut(line, []byte(":"))
		k := strings.ToLower(strings.TrimSpace(string(key)))
		if !ok || k != "allow" && k != "disallow" {
			continue
		}
		v, _, _ := strings.Cut(string(value), "#")
		v = strings.TrimSpace(v)
		v = strings.TrimSuffix(v, "$")
		v = strings.ReplaceAll(v, "*", "x")
		if len(v) < 2 || v[0] != '/' || strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-~?=&") != "" {
			continue
		}
		if strings.HasSuffix(v, "/") {
			v += "page.html"
		}
		if v == "/robots.txt" {
			continue // the fetch of robots.txt, not a page
		}
		rules = append(rules, v)
	}
	rng.Shuffle(len(rules), func(i, j int) { rules[i], rules[j] = rules[j], rules[i] })
	for _, r := range rules {
		if n == 0 {
			break
		}
		if !slices.Contains(paths, r) {
			paths = append(paths, r)
			n--
		}
	}
	return paths
}

// host returns the host name of origin i in run r, and moved, that of the
// host its robots.txt redirects to.
func host(i, r int) string      { return "o" + strconv.Itoa(i) + ".r" + strconv.Itoa(r) + ".test" }
func movedHost(i, r int) string { return "m" + strconv.Itoa(i) + ".r" + strconv.Itoa(r) + ".test" }

// parseHost returns the origin index, run and whether it is the redirect
// target, of a host made by host or moved_.
func parseHost(h string) (i, r int, isMoved, ok bool) {
	h, _, _ = strings.Cut(h, ":")
	name, ok := strings.CutSuffix(h, ".test")
	if !ok || len(name) < 2 || name[0] != 'o' && name[0] != 'm' {
		return 0, 0, false, false
	}
	is, rs, ok := strings.Cut(name[1:], ".r")
	if !ok {
		return 0, 0, false, false
	}
	i, err1 := strconv.Atoi(is)
	r, err2 := strconv.Atoi(rs)
	return i, r, name[0] == 'm', err1 == nil && err2 == nil
}

// arrival is a request as the site saw it (at: when it arrived, answered:
// when the site began its answer), or as it left the crawler (at: when it
// left, answered: when its response headers or its error came back).
type arrival struct {
	host     string
	path     string // path and query
	at       time.Time
	answered time.Time // zero if not answered yet
	status   int       // 0 if no answer
}

// runOrigin names an origin in a run, for the pushback count.
type runOrigin struct{ run, i int }

// server serves a web and logs each request: when it arrived, and when and
// how it was answered.
type server struct {
	w     *web
	mu    sync.Mutex
	log   map[int][]*arrival // run → requests, in order of arrival
	pages map[runOrigin]int  // page requests each origin has had
}

func newServer(w *web) *server {
	return &server{w: w, log: make(map[int][]*arrival), pages: make(map[runOrigin]int)}
}

// ServeHTTP answers as the origin the Host names; the host "control"
// answers GET /log?run=R with that run's requests, one per line: host,
// path, when it arrived and when it was answered (Unix nanoseconds; when
// the log was read if it is still unanswered), and the status (0 for
// none), tab-separated.
func (s *server) ServeHTTP(rw http.ResponseWriter, req *http.Request) {
	now := time.Now()
	if req.Host == "control" {
		s.serveLog(rw, req)
		return
	}
	i, run, isMoved, ok := parseHost(req.Host)
	if !ok || i >= len(s.w.origins) {
		http.Error(rw, "no such origin", http.StatusBadGateway)
		return
	}
	a := &arrival{host: req.Host, path: req.URL.RequestURI(), at: now}
	isPage := req.URL.Path != "/robots.txt"
	s.mu.Lock()
	s.log[run] = append(s.log[run], a)
	nth := 0 // which page request of its origin this is, from 1
	if isPage && !isMoved {
		s.pages[runOrigin{run, i}]++
		nth = s.pages[runOrigin{run, i}]
	}
	s.mu.Unlock()
	// answer notes that the answer begins now, with status; the time is
	// taken before the response is written, so that no crawler sees the
	// answer before the log says it was given.
	answer := func(status int) {
		t := time.Now()
		s.mu.Lock()
		a.answered, a.status = t, status
		s.mu.Unlock()
	}
	defer func() {
		s.mu.Lock()
		if a.answered.IsZero() {
			a.answered = time.Now() // no answer: the request ended unanswered
		}
		s.mu.Unlock()
	}()
	o := &s.w.origins[i]
	if isPage {
		if o.latency > 0 && !sleep(req.Context(), o.latency) {
			return
		}
		if nth <= o.pushback {
			answer(http.StatusTooManyRequests) // no Retry-After
			http.Error(rw, "too many requests", http.StatusTooManyRequests)
			return
		}
		answer(http.StatusOK)
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(rw, "<!doctype html><title>page</title><p>A page.</p>\n")
		return
	}
	serveBody := func() {
		answer(http.StatusOK)
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		rw.Write(o.body)
	}
	if isMoved {
		serveBody()
		return
	}
	switch o.kind {
	case normal:
		serveBody()
	case unavail:
		answer(http.StatusNotFound)
		http.NotFound(rw, req)
	case err503:
		answer(http.StatusServiceUnavailable)
		http.Error(rw, "unavailable", http.StatusServiceUnavailable)
	case err429:
		answer(http.StatusTooManyRequests)
		http.Error(rw, "too many requests", http.StatusTooManyRequests)
	case slow:
		if sleep(req.Context(), slowFetch) {
			serveBody()
		}
	case silent:
		sleep(req.Context(), time.Minute)
	case moved:
		answer(http.StatusMovedPermanently)
		http.Redirect(rw, req, "http://"+movedHost(i, run)+"/robots.txt", http.StatusMovedPermanently)
	}
}

// sleep waits for d, or until ctx is done; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *server) serveLog(rw http.ResponseWriter, req *http.Request) {
	run, err := strconv.Atoi(req.URL.Query().Get("run"))
	if err != nil {
		http.Error(rw, "bad run", http.StatusBadRequest)
		return
	}
	now := time.Now()
	s.mu.Lock()
	log := make([]arrival, len(s.log[run]))
	for k, a := range s.log[run] {
		log[k] = *a
		if log[k].answered.IsZero() {
			log[k].answered = now // still in flight
		}
	}
	delete(s.log, run)
	for k := range s.pages {
		if k.run == run {
			delete(s.pages, k)
		}
	}
	s.mu.Unlock()
	bw := bufio.NewWriter(rw)
	for _, a := range log {
		fmt.Fprintf(bw, "%s\t%s\t%d\t%d\t%d\n", a.host, a.path, a.at.UnixNano(), a.answered.UnixNano(), a.status)
	}
	bw.Flush()
}

// dialer returns a DialContext that sends every connection to addr, the
// web's listener, whatever host it names.
func dialer(addr string) func(ctx context.Context, network, _ string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}
}

// newBase returns a transport that reaches the web at addr: the Base of
// every crawler, one per crawl, so that no connection outlives a crawl.
func newBase(addr string) *http.Transport {
	return &http.Transport{
		DialContext:         dialer(addr),
		MaxIdleConns:        0, // no limit: one origin per host name
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     10 * time.Second,
		ForceAttemptHTTP2:   false,
	}
}

// fetchLog returns the requests the web at addr saw in run, and forgets them.
func fetchLog(addr string, run int) ([]arrival, error) {
	c := &http.Client{Transport: &http.Transport{DialContext: dialer(addr)}, Timeout: time.Minute}
	defer c.CloseIdleConnections()
	req, _ := http.NewRequest("GET", "http://control/log?run="+strconv.Itoa(run), nil)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var log []arrival
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 5 {
			return nil, fmt.Errorf("bad log line %q", sc.Text())
		}
		var n [3]int64
		for k := range n {
			if n[k], err = strconv.ParseInt(f[2+k], 10, 64); err != nil {
				return nil, fmt.Errorf("bad log line %q: %w", sc.Text(), err)
			}
		}
		log = append(log, arrival{host: f[0], path: f[1], at: time.Unix(0, n[0]), answered: time.Unix(0, n[1]), status: int(n[2])})
	}
	return log, sc.Err()
}
