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
	kind  kind
	file  string        // corpus file whose body it serves ("" for unavail and the unreachable kinds)
	body  []byte        // the served robots.txt, crawl-delays scaled
	delay time.Duration // the crawl-delay of the group agent obeys, scaled; 0 for none
	paths []string      // the pages a crawler is given, path and query
	// allowed[i] reports whether RFC 9309 allows paths[i] for agent by our
	// matcher; refereed[i] whether grobotstxt agrees that it is disallowed.
	allowed  []bool
	refereed []bool
	index    map[string]int // path → index in paths
}

// web is the simulated web: the same for every crawler of a run, made
// from a seed.
type web struct {
	origins []origin
	scale   float64       // crawl-delays are multiplied by it
	timeout time.Duration // every crawler's bound on a robots.txt fetch
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
	w := &web{scale: cfg.scale, timeout: cfg.timeout}
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
	return w, nil
}

// judge sets o's delay and verdicts from its served robots.txt.
func (w *web) judge(o *origin) {
	o.index = make(map[string]int, len(o.paths))
	o.allowed = make([]bool, len(o.paths))
	o.refereed = make([]bool, len(o.paths))
	var r *matcher.Robots
	if o.body != nil {
		r = matcher.Parse(o.body)
		o.delay, _ = r.Group(agent).CrawlDelay()
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
// request to its last that a crawler obeying RFC 9309 and its crawl-delay
// needs. Its chain is the robots.txt fetch, which takes slowFetch on a slow
// origin and the fetch timeout on a silent one, then each allowed page one
// crawl-delay after the one before. An unreachable origin gets no page.
func (w *web) bound(o *origin) time.Duration {
	var d time.Duration
	switch o.kind {
	case slow:
		d = slowFetch
	case silent:
		return w.timeout
	}
	if o.kind.unreachable() {
		return d
	}
	for _, ok := range o.allowed {
		if ok {
			d += o.delay
		}
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
// number of seconds ("Crawl-delay: 10" at 1/50 becomes "Crawl-delay: 0.2").
// Lines whose value is not a number are left as they are.
func scaleDelays(body []byte, scale float64) []byte {
	var out bytes.Buffer
	for line := range bytes.Lines(body) {
		content := bytes.TrimRight(line, "\r\n")
		eol := line[len(content):]
		key, value, ok := bytes.Cut(content, []byte(":"))
		k := strings.NewReplacer("-", "", "_", "", " ", "", "\t", "").Replace(strings.ToLower(string(key)))
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

// arrival is a request as the site saw it, or as it left the crawler.
type arrival struct {
	host string
	path string // path and query
	at   time.Time
}

// server serves a web and logs each arrival.
type server struct {
	w   *web
	mu  sync.Mutex
	log map[int][]arrival // run → arrivals, in order
}

func newServer(w *web) *server { return &server{w: w, log: make(map[int][]arrival)} }

// ServeHTTP answers as the origin the Host names; the host "control"
// answers GET /log?run=R with that run's arrivals, one per line: host,
// path and Unix nanoseconds, tab-separated.
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
	s.mu.Lock()
	s.log[run] = append(s.log[run], arrival{host: req.Host, path: req.URL.RequestURI(), at: now})
	s.mu.Unlock()
	o := &s.w.origins[i]
	if req.URL.Path != "/robots.txt" {
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(rw, "<!doctype html><title>page</title><p>A page.</p>\n")
		return
	}
	serveBody := func() {
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
		http.NotFound(rw, req)
	case err503:
		http.Error(rw, "unavailable", http.StatusServiceUnavailable)
	case err429:
		http.Error(rw, "too many requests", http.StatusTooManyRequests)
	case slow:
		select {
		case <-time.After(slowFetch):
			serveBody()
		case <-req.Context().Done():
		}
	case silent:
		select {
		case <-time.After(time.Minute):
		case <-req.Context().Done():
		}
	case moved:
		http.Redirect(rw, req, "http://"+movedHost(i, run)+"/robots.txt", http.StatusMovedPermanently)
	}
}

func (s *server) serveLog(rw http.ResponseWriter, req *http.Request) {
	run, err := strconv.Atoi(req.URL.Query().Get("run"))
	if err != nil {
		http.Error(rw, "bad run", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	log := s.log[run]
	delete(s.log, run)
	s.mu.Unlock()
	bw := bufio.NewWriter(rw)
	for _, a := range log {
		fmt.Fprintf(bw, "%s\t%s\t%d\n", a.host, a.path, a.at.UnixNano())
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

// fetchLog returns the arrivals the web at addr saw in run, and forgets them.
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
		if len(f) != 3 {
			return nil, fmt.Errorf("bad log line %q", sc.Text())
		}
		ns, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return nil, err
		}
		log = append(log, arrival{host: f[0], path: f[1], at: time.Unix(0, ns)})
	}
	return log, sc.Err()
}
