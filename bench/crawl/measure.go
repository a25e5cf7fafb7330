package main

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// figures are what one crawl did, judged from the web's log and the
// crawler's own log of requests as they left.
type figures struct {
	crawler  string
	workers  int
	makespan time.Duration
	bound    time.Duration // the web's polite bound
	pages    int           // page requests the web saw
	got      int           // allowed pages the web answered 200, each once
	allowed  int           // allowed pages in the web
	tooMany  int           // page requests the web answered 429
	// violations: requests to an origin with a crawl-delay that came less
	// than the crawl-delay, less the slack, after the answer to the
	// requests before it (or before that answer: two in flight). Judged
	// as the web saw them (arrival, and the answer as it began) and as
	// they left the crawler (departure, and the answer as it came back).
	violLeft, violSeen int
	// of which the request before was the fetch of robots.txt
	violLeftRobots, violSeenRobots int
	// of which the request came before the answer to one before it
	violLeftInFlight, violSeenInFlight int
	disallowed                         int // page requests RFC 9309 disallows, by ours and grobotstxt alike
	unreachable                        int // page requests to origins whose robots.txt is unreachable
	robotsMean                         float64
	robotsMax                          int
	robotsExtra                        int           // origins fetched more than once
	notYet                             int           // requests refused for now (robots.ErrNotYet), crawler b only; -1 for the others
	dropped                            int           // URLs crawler b gave up on, other than by a refusal under robots.txt
	cpu                                time.Duration // user and system CPU time of the process during the crawl
	peakHeap                           uint64        // the most heap in use during the crawl, less that at its start
	err                                error
	// critical tells when the requests to the origin of the polite bound
	// came, from the start of the crawl.
	critical string
	// examples are a few of the disallowed and unreachable requests, to
	// show what went wrong.
	examples []string
}

func (f *figures) efficiency() float64 { return f.bound.Seconds() / f.makespan.Seconds() }

// notYetPerPage is the requests refused for now per page request the web
// saw, or -1 if the crawler does not count them.
func (f *figures) notYetPerPage() float64 {
	if f.notYet < 0 || f.pages == 0 {
		return -1
	}
	return float64(f.notYet) / float64(f.pages)
}

func (f *figures) cpuPerPage() time.Duration {
	if f.pages == 0 {
		return 0
	}
	return f.cpu / time.Duration(f.pages)
}

// runConfig is what each crawl of a benchmark shares.
type runConfig struct {
	addr    string // the web's listener
	web     *web
	order   []int // the crawl order of all pages: index into pageList
	slack   time.Duration
	maxWait time.Duration
}

// pageRef names the page p of origin o.
type pageRef struct{ o, p int }

// pageList returns every page of w, origin by origin.
func (w *web) pageList() []pageRef {
	var ps []pageRef
	for i := range w.origins {
		for j := range w.origins[i].paths {
			ps = append(ps, pageRef{i, j})
		}
	}
	return ps
}

// measure runs crawler c with n workers on the web as run number run, and
// judges what it did.
func measure(ctx context.Context, cfg runConfig, c crawler, n, run int) figures {
	w := cfg.web
	pages := w.pageList()
	urls := make([]string, len(cfg.order))
	for i, k := range cfg.order {
		pr := pages[k]
		urls[i] = "http://" + host(pr.o, run) + w.origins[pr.o].paths[pr.p]
	}
	base := newBase(cfg.addr)
	sent := &sentLog{base: base}
	var notYet atomic.Uint64
	var dropped dropLog
	j := job{urls: urls, base: sent, workers: n, timeout: w.timeout, maxWait: cfg.maxWait, backoff: w.backoff, defaultDelay: w.defaultDelay, notYet: &notYet, dropped: &dropped}

	runtime.GC()
	heap0 := heapInUse()
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, heapInUse())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	cpu0 := cpuTime()
	start := time.Now()
	err := c.run(ctx, j)
	makespan := time.Since(start)
	cpu := cpuTime() - cpu0
	close(stop)
	wg.Wait()
	base.CloseIdleConnections()

	f := figures{crawler: c.name, workers: n, makespan: makespan, bound: w.politeBound(), cpu: cpu, err: err, notYet: -1}
	if c.name == "b" {
		f.notYet = int(notYet.Load())
		f.dropped = dropped.n
		for _, r := range dropped.reasons {
			f.example("dropped: %s", r)
		}
	}
	if peak > heap0 {
		f.peakHeap = peak - heap0
	}
	seen, lerr := fetchLog(cfg.addr, run)
	if lerr != nil && f.err == nil {
		f.err = fmt.Errorf("reading the web's log: %w", lerr)
	}
	sent.mu.Lock()
	left := sent.log
	sent.mu.Unlock()
	w.judgeRun(&f, run, seen, left, cfg.slack)
	f.critical = w.critical(run, start, seen, left)
	return f
}

// judgeRun fills in f's figures of correctness from what the web saw and
// what left the crawler in run.
func (w *web) judgeRun(f *figures, run int, seen, left []arrival, slack time.Duration) {
	bySeen := w.byOrigin(run, seen)
	byLeft := w.byOrigin(run, left)
	total := 0
	for i := range w.origins {
		o := &w.origins[i]
		f.allowed += countTrue(o.allowed)
		robotsTxt := 0
		got := make(map[int]bool)
		for _, a := range bySeen[i] {
			if a.path == "/robots.txt" {
				robotsTxt++
				continue
			}
			f.pages++
			if a.status == http.StatusTooManyRequests {
				f.tooMany++
			}
			if o.kind.unreachable() {
				f.unreachable++
				f.example("unreachable (%s): %s%s", kindNames[o.kind], a.host, a.path)
				continue
			}
			k, ok := o.index[a.path]
			if ok && !o.allowed[k] && o.refereed[k] {
				f.disallowed++
				f.example("disallowed (%s, %s): %s%s", kindNames[o.kind], o.file, a.host, a.path)
			}
			if ok && o.allowed[k] && a.status == http.StatusOK {
				got[k] = true
			}
		}
		f.got += len(got)
		if n := countTrue(o.allowed); len(got) < n && !o.kind.unreachable() && o.pushback == 0 {
			f.example("%d of %d allowed pages never answered 200 (%s, %s, delay %v, latency %v): %s",
				n-len(got), n, kindNames[o.kind], o.file, o.delay, o.latency, gaps(bySeen[i]))
		}
		total += robotsTxt
		f.robotsMax = max(f.robotsMax, robotsTxt)
		if robotsTxt > 1 {
			f.robotsExtra++
			f.example("%d robots.txt fetches (%s, %s): %s", robotsTxt, kindNames[o.kind], o.file, gaps(bySeen[i]))
		}
		if v := w.violations(o, bySeen[i], slack); v.n > 0 {
			f.violSeen += v.n
			f.violSeenRobots += v.afterRobots
			f.violSeenInFlight += v.inFlight
			f.example("%d too early (%s, %s, delay %v, latency %v) as seen: %s", v.n, kindNames[o.kind], o.file, o.delay, o.latency, gaps(bySeen[i]))
		}
		if v := w.violations(o, byLeft[i], slack); v.n > 0 {
			f.violLeft += v.n
			f.violLeftRobots += v.afterRobots
			f.violLeftInFlight += v.inFlight
			f.example("%d too early (%s, %s, delay %v, latency %v) as left: %s", v.n, kindNames[o.kind], o.file, o.delay, o.latency, gaps(byLeft[i]))
		}
	}
	f.robotsMean = float64(total) / float64(len(w.origins))
}

// critical returns how the requests to the origin of the polite bound
// came, as the web saw them, from start, and as they left the crawler.
func (w *web) critical(run int, start time.Time, seen, left []arrival) string {
	crit := 0
	for i := range w.origins {
		if w.bound(&w.origins[i]) > w.bound(&w.origins[crit]) {
			crit = i
		}
	}
	as := w.byOrigin(run, seen)[crit]
	if len(as) == 0 {
		return ""
	}
	last := as[len(as)-1].answered.Sub(start)
	return fmt.Sprintf("the origin of the bound got its first request at +%v, the answer to its last at +%v: %s; as they left: %s",
		as[0].at.Sub(start).Round(time.Millisecond), last.Round(time.Millisecond), gaps(as), gaps(w.byOrigin(run, left)[crit]))
}

// example keeps a line about a wrong request, up to a few.
func (f *figures) example(format string, args ...any) {
	if len(f.examples) < 12 {
		f.examples = append(f.examples, fmt.Sprintf(format, args...))
	}
}

// byOrigin splits log by the crawled origin of run it went to, each in
// time order; requests to other hosts (redirect targets) are left out.
func (w *web) byOrigin(run int, log []arrival) [][]arrival {
	out := make([][]arrival, len(w.origins))
	for _, a := range log {
		i, r, isMoved, ok := parseHost(a.host)
		if !ok || r != run || isMoved || i >= len(w.origins) {
			continue
		}
		out[i] = append(out[i], a)
	}
	for _, as := range out {
		slices.SortStableFunc(as, func(a, b arrival) int { return a.at.Compare(b.at) })
	}
	return out
}

// gaps writes the paths of as, each with the time from the answer to the
// one before to its arrival (negative: it came before that answer), its
// latency and its status if not 200.
func gaps(as []arrival) string {
	var b strings.Builder
	for k, a := range as {
		if k > 0 {
			sign := "+"
			if a.at.Before(as[k-1].answered) {
				sign = "" // the Duration has its minus
			}
			fmt.Fprintf(&b, " %s%v ", sign, a.at.Sub(as[k-1].answered).Round(10*time.Microsecond))
		}
		b.WriteString(a.path)
		if l := a.answered.Sub(a.at); l >= time.Millisecond {
			fmt.Fprintf(&b, " (%v)", l.Round(time.Millisecond))
		}
		if a.status != http.StatusOK {
			fmt.Fprintf(&b, " [%d]", a.status)
		}
	}
	return b.String()
}

// violation counts are the requests too early to an origin: n, of which
// afterRobots came after a fetch of robots.txt, and inFlight before the
// answer to a request before them.
type violation struct{ n, afterRobots, inFlight int }

// violations counts the requests of as, to origin o and in order of
// arrival, that came less than o's interval less slack after the latest
// answer to the requests before them, or before it (two in flight). The
// interval is w.interval: the crawl-delay or request-rate, or the default
// pace, and at least twice the estimate of the response time from the
// requests (robots.txt's included) answered before the request came, in
// the order of their answers. Without a pace (-scale
// 0), an origin that states no interval has none: any number of requests
// may be in flight to it.
func (w *web) violations(o *origin, as []arrival, slack time.Duration) violation {
	var v violation
	if !w.paced && !o.stated {
		return v
	}
	// The requests by their answers, for the estimate.
	byAnswer := slices.Clone(as)
	slices.SortStableFunc(byAnswer, func(a, b arrival) int { return a.answered.Compare(b.answered) })
	var est time.Duration
	j := 0
	var free time.Time // the latest answer so far
	freePath := ""     // the path of the request it answered
	for k, a := range as {
		for ; j < len(byAnswer) && !byAnswer[j].answered.After(a.at); j++ {
			est = nextEstimate(est, byAnswer[j].answered.Sub(byAnswer[j].at))
		}
		if k > 0 && a.at.Before(free.Add(w.interval(o, est)-slack)) {
			v.n++
			if freePath == "/robots.txt" {
				v.afterRobots++
			}
			if a.at.Before(free) {
				v.inFlight++
			}
		}
		if a.answered.After(free) {
			free, freePath = a.answered, a.path
		}
	}
	return v
}

var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}

// heapInUse returns the bytes of heap objects, live or not yet swept.
func heapInUse() uint64 {
	s := []metrics.Sample{heapSample[0]}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

var _ http.RoundTripper = (*sentLog)(nil)
