// Crawl is an end-to-end crawl benchmark: four crawlers crawl the same
// simulated web, one after another, and it prints for each what an operator
// reads of a crawl: how long it took against the least time politeness
// allows, and whether it was polite, as the site sees it, and obeyed
// robots.txt. README.md says what it measures and gives figures.
//
// Usage:
//
//	go run . [-origins N] [-w 8,64] [-scale 0.02] [-seed S] [-crawlers a,b,c,d] ...
//
// The web is a number of origins (http://oN.rR.test, R the crawl's number,
// so that no crawl sees another's cache) served by one loopback listener,
// in a child process so that the CPU time and heap measured are the
// crawler's alone. Each origin serves a robots.txt drawn from the corpus of
// real files beside the repository (../../../shared/corpus), with each
// Crawl-delay value capped at 30 s (the robots.Transport's
// DefaultMaxCrawlDelay) and multiplied by -scale (1/50: "Crawl-delay: 10" is
// served as "Crawl-delay: 0.2"), so that a crawl takes seconds. Files over
// 500 KiB are left out, since RFC 9309 §2.5 lets parsers stop there. Each
// origin's pages are four generic paths and up to -rules paths made from its
// own allow and disallow lines, so that its rules disallow some. A share
// -faults of the origins answer their robots.txt with 404, 503, 429, after
// 1 s, never (the fetch times out after -timeout, which every crawler is
// given as its robots.txt timeout), or with a redirect to another host
// (which serves a corpus file). Of the others, a share -slowpages (of all
// origins) answer each page after 1.5 times their crawl-delay and 5 ms
// (10 ms if they state none), and a share -pushback answer their first
// -pushbackn page requests 429 without Retry-After, and 200 after that.
// The web logs each request: when it arrived, when its answer began, and
// its status.
//
// The crawlers, each run with every worker count of -w:
//
//	a  robots.Transport waiting for each turn (MaxWait 0), under a plain pool;
//	   a page answered 429 is dropped
//	b  robots.Transport with MaxWait, under package frontier (with the
//	   Transport as its Turns), which requeues a URL refused with
//	   robots.ErrNotYet until its TurnError.RetryAt; a page answered 429 is
//	   requeued at the Transport's NextTurn, after the back-off
//	c  colly v2, IgnoreRobotsTxt false, Async, LimitRule{DomainGlob: "*", Parallelism: W}
//	d  temoto/robotstxt by hand: robots.txt fetched once per host into a map,
//	   each URL tested, pages spaced by the crawl-delay with a sleep per host
//
// Each is given every page of the web, in one shuffled order. The
// Transports of a and b back off as robots.Transport does by default, with
// each time scaled by -scale (First 60 s, Max a day and Forgive an hour:
// 1.2 s, 28.8 min and 72 s at 1/50), and keep its default pace scaled
// likewise (DefaultDelay 1 s: 20 ms at 1/50) for an origin that states no
// crawl-delay nor request-rate; their adaptive delay, twice an origin's
// response time, is not scaled: it follows the web's own latencies.
//
// The figures:
//
//	makespan     from the first request to the crawler's return
//	eff          the polite bound over the makespan. The bound is the longest
//	             chain of one origin's requests, one at a time: its robots.txt
//	             fetch (1 s on a slow origin, the timeout on a silent one),
//	             then each page request, the pages answered 429 sent again
//	             included, one interval after the answer to the one before
//	             (after a 429, the back-off's pause if longer) and answered
//	             after the origin's latency; an unreachable origin has no page.
//	             The interval is the crawl-delay or request-rate, or the
//	             default pace if the origin states neither, and at least twice
//	             the estimate of its response time
//	pages sent   page requests the web saw, 429s included
//	200          allowed pages the web answered 200, of the allowed pages
//	429          page requests the web answered 429
//	viol         requests to an origin that came less than its interval (as
//	             in the bound) less -slack after the answer to the requests
//	             before them, or before it, robots.txt included: by when they
//	             left the crawler and their answers came back / by when the
//	             web saw them and began its answers
//	in flight    of the violations the web saw, those that came before the
//	             answer to a request before them: two at once
//	after robots.txt  of the violations the web saw, those that came after a
//	             fetch of robots.txt
//	disallowed   page requests that RFC 9309 disallows by our matcher and by
//	             github.com/jimsmart/grobotstxt alike
//	unreach      page requests to an origin whose robots.txt is unreachable
//	             (503, 429, no answer)
//	robots.txt   fetches per origin: mean, max, and how many origins had more
//	             than one
//	not yet      crawler b's requests refused for now (robots.ErrNotYet) per
//	             page request the web saw
//	CPU/page     the process's CPU time over the page requests the web saw
//	heap         the most heap in use during the crawl, above that at its start
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// childEnv marks the child process that serves the web.
const childEnv = "CRAWLBENCH_WEB"

type options struct {
	web      webConfig
	workers  []int
	crawlers string
	slack    time.Duration
	maxWait  time.Duration
}

func main() {
	var o options
	var ws string
	flag.StringVar(&o.web.corpus, "corpus", "../../../shared/corpus", "the corpus `dir`ectory of real robots.txt files")
	flag.IntVar(&o.web.origins, "origins", 1000, "how many origins the web has")
	flag.Float64Var(&o.web.faults, "faults", 0.06, "share of origins whose robots.txt is faulty, split among 404, 503, 429, slow, timeout, redirect")
	flag.Float64Var(&o.web.scale, "scale", 0.02, "crawl-delays are multiplied by this `factor`")
	flag.Uint64Var(&o.web.seed, "seed", 1, "the `seed` of the web and the crawl order")
	flag.IntVar(&o.web.rules, "rules", 6, "at most `n` pages made from each file's rules")
	flag.DurationVar(&o.web.timeout, "timeout", 2*time.Second, "every crawler's robots.txt fetch timeout")
	flag.Float64Var(&o.web.slowPages, "slowpages", 0.1, "share of origins whose pages answer after 1.5 times their crawl-delay and 5 ms (10 ms with none)")
	flag.Float64Var(&o.web.pushback, "pushback", 0.1, "share of origins that answer their first -pushbackn page requests 429 without Retry-After")
	flag.IntVar(&o.web.pushbackN, "pushbackn", 2, "how many page requests a pushing-back origin answers 429")
	flag.StringVar(&ws, "w", "8,64", "comma-separated worker `counts`")
	flag.StringVar(&o.crawlers, "crawlers", "a,b,c,d", "comma-separated crawlers to run")
	flag.DurationVar(&o.slack, "slack", 5*time.Millisecond, "a request this much early is not a violation")
	flag.DurationVar(&o.maxWait, "maxwait", 5*time.Millisecond, "crawler b's Transport.MaxWait")
	flag.Parse()
	for f := range strings.SplitSeq(ws, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "crawl: bad -w %q\n", ws)
			os.Exit(2)
		}
		o.workers = append(o.workers, n)
	}
	share := func(f float64) bool { return f >= 0 && f <= 1 }
	if o.web.origins < 1 || o.web.scale < 0 || !share(o.web.faults) || !share(o.web.slowPages) || !share(o.web.pushback) ||
		o.web.slowPages+o.web.pushback > 1 || o.web.pushbackN < 0 || o.web.timeout <= slowFetch {
		fmt.Fprintln(os.Stderr, "crawl: want -origins ≥ 1, -scale ≥ 0, 0 ≤ -faults ≤ 1, -slowpages and -pushback ≥ 0 summing to at most 1, -pushbackn ≥ 0 and -timeout > 1s")
		os.Exit(2)
	}
	w, err := newWeb(o.web)
	if errors.Is(err, errNoCorpus) {
		fmt.Fprintf(os.Stderr, "crawl: %v: the corpus lives beside the repository; nothing to do\n", err)
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawl: %v\n", err)
		os.Exit(1)
	}
	if os.Getenv(childEnv) == "1" {
		serveChild(w)
		return
	}
	addr, stop, err := startChild()
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawl: starting the web: %v\n", err)
		os.Exit(1)
	}
	defer stop()
	describe(os.Stdout, w)
	fs := run(context.Background(), addr, w, o, os.Stderr)
	printTable(os.Stdout, fs)
}

// serveChild serves w on a loopback listener, writes its address on
// standard output, and serves until standard input ends.
func serveChild(w *web) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawl web: %v\n", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: newServer(w)}
	go srv.Serve(ln)
	fmt.Println(ln.Addr())
	io.Copy(io.Discard, os.Stdin)
}

// startChild starts this program again as the web, with the same flags, and
// returns its address and a function that stops it.
func startChild() (string, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { in.Close(); cmd.Wait() }
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("no address from the web: %w", err)
	}
	return strings.TrimSpace(line), stop, nil
}

// run runs the crawlers of o on the web w at addr, each with each worker
// count, and returns their figures. It logs progress to log.
func run(ctx context.Context, addr string, w *web, o options, log io.Writer) []figures {
	order := make([]int, len(w.pageList()))
	for i := range order {
		order[i] = i
	}
	rng := rand.New(rand.NewPCG(o.web.seed, 0x0de7))
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	cfg := runConfig{addr: addr, web: w, order: order, slack: o.slack, maxWait: o.maxWait}
	var fs []figures
	runNo := 0
	for _, n := range o.workers {
		for _, c := range crawlers {
			if !strings.Contains(","+o.crawlers+",", ","+c.name+",") {
				continue
			}
			runNo++
			fmt.Fprintf(log, "crawl %s (%s), W=%d ...", c.name, c.what, n)
			f := measure(ctx, cfg, c, n, runNo)
			fmt.Fprintf(log, " %v", f.makespan.Round(time.Millisecond))
			if f.dropped > 0 {
				fmt.Fprintf(log, ", %d URLs given up", f.dropped)
			}
			fmt.Fprintln(log)
			if f.critical != "" {
				fmt.Fprintf(log, "\t%s\n", f.critical)
			}
			for _, e := range f.examples {
				fmt.Fprintf(log, "\t%s\n", e)
			}
			fs = append(fs, f)
		}
	}
	return fs
}

// describe writes what the web is made of.
func describe(out io.Writer, w *web) {
	pages, allowed, delayed := 0, 0, 0
	slowN, slowDelayed, pushN, pushDelayed, pushPages := 0, 0, 0, 0, 0
	var kinds [nKinds]int
	var maxD time.Duration
	crit := 0
	for i := range w.origins {
		o := &w.origins[i]
		kinds[o.kind]++
		pages += len(o.paths)
		for _, ok := range o.allowed {
			if ok {
				allowed++
			}
		}
		if o.delay > 0 {
			delayed++
		}
		if o.latency > 0 {
			slowN++
			if o.delay > 0 {
				slowDelayed++
			}
		}
		if o.pushback > 0 {
			pushN++
			if o.delay > 0 {
				pushDelayed++
			}
			if countTrue(o.allowed) > 0 {
				pushPages += o.pushback
			}
		}
		maxD = max(maxD, o.delay)
		if w.bound(o) > w.bound(&w.origins[crit]) {
			crit = i
		}
	}
	c := &w.origins[crit]
	fmt.Fprintf(out, "web: %d origins, %d pages (%d allowed), %d origins with a crawl-delay (largest %v, scaled); robots.txt:", len(w.origins), pages, allowed, delayed, maxD)
	for k, n := range kinds {
		fmt.Fprintf(out, " %s %d", kindNames[k], n)
	}
	fmt.Fprintf(out, "\npages: %d origins answer slowly (%d with a crawl-delay), %d push back (%d with a crawl-delay; %d 429s to a polite crawler); back-off %v, up to %v, forgiven after %v\n",
		slowN, slowDelayed, pushN, pushDelayed, pushPages, w.backoff.First, w.backoff.Max, w.backoff.Forgive)
	fmt.Fprintf(out, "polite bound %v: origin %d (%s, %s), %d pages at %v, latency %v, %d 429s\n", w.politeBound(), crit, kindNames[c.kind], c.file, countTrue(c.allowed), c.delay, c.latency, c.pushback)
	fmt.Fprint(out, "longest chains:")
	for _, class := range []struct {
		name string
		is   func(*origin) bool
	}{
		{"slow pages", func(o *origin) bool { return o.latency > 0 }},
		{"pushback", func(o *origin) bool { return o.pushback > 0 }},
		{"others", func(o *origin) bool { return o.latency == 0 && o.pushback == 0 }},
	} {
		best := -1
		for i := range w.origins {
			if o := &w.origins[i]; class.is(o) && (best < 0 || w.bound(o) > w.bound(&w.origins[best])) {
				best = i
			}
		}
		if best >= 0 {
			o := &w.origins[best]
			fmt.Fprintf(out, " %s %v (%d pages at %v, latency %v);", class.name, w.bound(o), countTrue(o.allowed), o.delay, o.latency)
		}
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "%s/%s, %d CPUs\n\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// printTable writes fs as a Markdown table.
func printTable(out io.Writer, fs []figures) {
	tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprintln(tw, "crawler\tW\tmakespan\teff\tpages sent\t200 of allowed\t429\tviol left/seen\tseen: in flight/after robots.txt\tdisallowed\tunreach\trobots.txt mean/max/>1\tnot yet/page\tCPU/page\theap\t")
	for _, f := range fs {
		notYet := "-"
		if r := f.notYetPerPage(); r >= 0 {
			notYet = fmt.Sprintf("%.3f", r)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2fs\t%.2f\t%d\t%d / %d\t%d\t%d / %d\t%d / %d\t%d\t%d\t%.2f / %d / %d\t%s\t%.0fµs\t%.1f MB\t",
			f.crawler, f.workers, f.makespan.Seconds(), f.efficiency(), f.pages, f.got, f.allowed, f.tooMany,
			f.violLeft, f.violSeen, f.violSeenInFlight, f.violSeenRobots,
			f.disallowed, f.unreachable, f.robotsMean, f.robotsMax, f.robotsExtra, notYet,
			float64(f.cpuPerPage())/float64(time.Microsecond), float64(f.peakHeap)/1e6)
		if f.err != nil {
			fmt.Fprintf(tw, " error: %v", f.err)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}
