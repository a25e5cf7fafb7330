package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/f9014239/robots"
)

// The tests in this file run crawlers in processes of their own: the test
// binary, run again with childEnv set to what it is to do (see runChild),
// against a site on 127.0.0.1 that logs when each request arrives and when
// it is answered. The tests kill them with SIGKILL mid-crawl and start them
// again on the same file.

// childEnv names the environment variable that makes the test binary a
// child process: "crawl" or "open".
const childEnv = "BOLTSTORE_TEST_CHILD"

// The settings of a child, in its environment.
const (
	envState   = "BOLTSTORE_TEST_STATE"   // the Store's file
	envPages   = "BOLTSTORE_TEST_PAGES"   // the URLs to get, one after the other, comma-separated
	envTurn    = "BOLTSTORE_TEST_TURN"    // Transport.TurnTimeout
	envBackoff = "BOLTSTORE_TEST_BACKOFF" // Transport.Backoff.First
	envDial    = "BOLTSTORE_TEST_DIAL"    // the address every host name is dialled at, if set
	envFsize   = "BOLTSTORE_TEST_FSIZE"   // "1": no write may grow the file once it is open
	envMaxWait = "BOLTSTORE_TEST_MAXWAIT" // Transport.MaxWait
	envFlush   = "BOLTSTORE_TEST_FLUSH"   // "0": exit without Transport.Flush
)

// runChild runs the child process mode, writing what it does to standard
// output, and returns its exit code.
//
// "open" opens the Store and says how it failed. "crawl" gets the pages of
// envPages through a Transport on the Store, one after the other, and
// writes "got URL STATUS" or "err URL ERROR" for each; then the Transport's
// counts, and the error of Close.
func runChild(mode string) int {
	path := os.Getenv(envState)
	start := time.Now()
	st, err := Open(path)
	if err != nil {
		fmt.Printf("openerr %v locked=%v corrupt=%v: %v\n", time.Since(start), errors.Is(err, ErrLocked), errors.Is(err, ErrCorrupt), err)
		return 3
	}
	fmt.Printf("open %v\n", time.Since(start))
	if mode == "open" {
		st.Close()
		return 0
	}
	if os.Getenv(envFsize) == "1" {
		if err := limitFileSize(path); err != nil {
			fmt.Printf("rlimit: %v\n", err)
			return 4
		}
	}
	base := &http.Transport{}
	if addr := os.Getenv(envDial); addr != "" {
		var d net.Dialer
		base.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}
	}
	tr := robots.NewTransport(base, "CrashBot")
	tr.Store, tr.Pacer = st, st
	tr.Logger = slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if d, err := time.ParseDuration(os.Getenv(envTurn)); err == nil {
		tr.TurnTimeout = d
	}
	if d, err := time.ParseDuration(os.Getenv(envMaxWait)); err == nil {
		tr.MaxWait = d
	}
	if d, err := time.ParseDuration(os.Getenv(envBackoff)); err == nil {
		tr.Backoff = robots.Backoff{First: d, Max: time.Minute, Forgive: time.Minute}
	}
	client := &http.Client{Transport: tr}
	for _, u := range strings.Split(os.Getenv(envPages), ",") {
		resp, err := client.Get(u)
		if err != nil {
			fmt.Printf("err %s %v\n", u, err)
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Printf("got %s %d\n", u, resp.StatusCode)
	}
	if os.Getenv(envFlush) != "0" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		fmt.Printf("flush %v\n", tr.Flush(ctx))
		cancel()
	}
	s := tr.Stats()
	fmt.Printf("stats fetches=%d storeErrors=%d\n", s.FetchSuccess+s.FetchUnavailable+s.FetchUnreachable, s.StoreErrors)
	fmt.Printf("close %v\n", st.Close())
	return 0
}

// child is a child process.
type child struct {
	cmd  *exec.Cmd
	out  syncBuffer
	done chan struct{}
	err  error // set before done is closed
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startChild starts the test binary as the child process mode, with env
// added to its environment.
func startChild(t *testing.T, mode string, env ...string) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: exec.Command(exe, "-test.run=^$"), done: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), append(env, childEnv+"="+mode)...)
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

// wait waits for c to exit, within timeout, and returns its output.
func (c *child) wait(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(timeout):
		c.cmd.Process.Kill()
		<-c.done
		t.Fatalf("the child did not exit within %v; its output:\n%s", timeout, c.out.String())
	}
	return c.out.String()
}

// kill sends SIGKILL to c.
func (c *child) kill() { c.cmd.Process.Kill() }

// hit is a request the site received.
type hit struct {
	host, path        string
	arrived, answered time.Time
	status            int
}

// site is a web site on 127.0.0.1 that logs its requests. Its robots.txt
// is robotsTxt; "/busy..." answers 429 with Retry-After: 3, "/backoff..."
// 503 without one, and every other page 200, after pageTime.
type site struct {
	*httptest.Server
	robotsTxt string

	mu       sync.Mutex
	hits     []hit
	onArrive func(h hit) // guarded by mu; called before the answer, if set
	onAnswer func(h hit) // guarded by mu; called after the answer, if set
}

const pageTime = 20 * time.Millisecond

func newSite(t *testing.T, robotsTxt string) *site {
	s := &site{robotsTxt: robotsTxt}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *site) serve(w http.ResponseWriter, r *http.Request) {
	h := hit{host: r.Host, path: r.URL.Path, arrived: time.Now()}
	s.mu.Lock()
	onArrive, onAnswer := s.onArrive, s.onAnswer
	s.mu.Unlock()
	if onArrive != nil {
		onArrive(h)
	}
	switch {
	case h.path == "/robots.txt":
		h.status = http.StatusOK
		w.Write([]byte(s.robotsTxt))
	case strings.HasPrefix(h.path, "/busy"):
		h.status = http.StatusTooManyRequests
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(h.status)
	case strings.HasPrefix(h.path, "/quota"):
		h.status = http.StatusOK
		w.Header().Set("RateLimit", `"default";r=0;t=3`)
		w.Write([]byte("the last of the quota"))
	case strings.HasPrefix(h.path, "/backoff"):
		h.status = http.StatusServiceUnavailable
		w.WriteHeader(h.status)
	default:
		time.Sleep(pageTime)
		h.status = http.StatusOK
		w.Write([]byte("a page"))
	}
	h.answered = time.Now()
	s.mu.Lock()
	s.hits = append(s.hits, h)
	s.mu.Unlock()
	if onAnswer != nil {
		onAnswer(h)
	}
}

func (s *site) hooks(onArrive, onAnswer func(h hit)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onArrive, s.onAnswer = onArrive, onAnswer
}

// log returns the requests the site answered, in the order they arrived.
func (s *site) log() []hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := slices.Clone(s.hits)
	slices.SortFunc(h, func(a, b hit) int { return a.arrived.Compare(b.arrived) })
	return h
}

// urls returns the URLs of paths on s.
func (s *site) urls(paths ...string) string {
	for i, p := range paths {
		paths[i] = s.URL + p
	}
	return strings.Join(paths, ",")
}

// checkPolite fails t unless every request of each host arrived at least
// gap(previous) after the previous one to that host was answered, and each
// host's robots.txt arrived once.
func checkPolite(t *testing.T, hits []hit, gap func(prev hit) time.Duration) {
	t.Helper()
	byHost := map[string][]hit{}
	for _, h := range hits {
		byHost[h.host] = append(byHost[h.host], h)
	}
	for host, hs := range byHost {
		robotsTxt := 0
		for i, h := range hs {
			if h.path == "/robots.txt" {
				robotsTxt++
			}
			if i == 0 {
				continue
			}
			prev := hs[i-1]
			if d, want := h.arrived.Sub(prev.answered), gap(prev); d < want {
				t.Errorf("%s: %s arrived %v after %s was answered, want at least %v", host, h.path, d, prev.path, want)
			}
		}
		if robotsTxt != 1 {
			t.Errorf("%s: robots.txt fetched %d times, want once", host, robotsTxt)
		}
	}
}

// describe returns the log as lines, for a failure.
func describe(hits []hit) string {
	var b strings.Builder
	for i, h := range hits {
		fmt.Fprintf(&b, "%s %s %d arrived %s answered +%v", h.host, h.path, h.status, h.arrived.Format("15:04:05.000"), h.answered.Sub(h.arrived).Round(time.Millisecond))
		if i > 0 {
			fmt.Fprintf(&b, " (%v after the previous answer)", h.arrived.Sub(hits[i-1].answered).Round(time.Millisecond))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func pages(prefix string, n int) []string {
	p := make([]string, n)
	for i := range p {
		p[i] = fmt.Sprintf("/%s%d", prefix, i)
	}
	return p
}

// TestRestart crawls a site with a crawl-delay in a child process, stops it
// (SIGKILL at various moments, or a clean exit) and crawls on in another on
// the same file: the site sees every request at least the crawl-delay after
// the answer to the one before, across the restart too, and robots.txt
// fetched once.
func TestRestart(t *testing.T) {
	cases := []struct {
		name  string
		delay time.Duration
		first []string // the first child's pages
		// when to kill the first child: at the arrival of the request
		// to path (after, if after >= 0, so long after its answer); or
		// never ("": it gets its pages and exits)
		path  string
		after time.Duration
	}{
		{"kill in flight", 300 * time.Millisecond, pages("p", 6), "/p2", -1},
		{"kill as answered", 300 * time.Millisecond, pages("p", 6), "/p2", 0},
		{"kill while waiting", 300 * time.Millisecond, pages("p", 6), "/p2", 100 * time.Millisecond},
		// Shorter than the flush interval: the turns taken since the
		// last write are lost, and recovery must cover them.
		{"kill, short crawl-delay", 30 * time.Millisecond, pages("p", 40), "/p12", 5 * time.Millisecond},
		{"clean exit", 300 * time.Millisecond, pages("p", 3), "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSite(t, fmt.Sprintf("User-agent: *\nCrawl-delay: %g\n", tc.delay.Seconds()))
			state := tempPath(t)
			env := []string{envState + "=" + state, envTurn + "=1s"}
			c1 := startChild(t, "crawl", append(env, envPages+"="+s.urls(tc.first...))...)
			if tc.path != "" {
				kill := func(h hit) {
					if h.path == tc.path {
						c1.kill()
					}
				}
				if tc.after < 0 {
					s.hooks(kill, nil)
				} else {
					s.hooks(nil, func(h hit) {
						if h.path == tc.path {
							time.AfterFunc(tc.after, c1.kill)
						}
					})
				}
			}
			out1 := c1.wait(t, 30*time.Second)
			killed := c1.cmd.ProcessState.ExitCode() == -1
			if killed != (tc.path != "") {
				t.Fatalf("first child killed: %v, want %v; its output:\n%s", killed, tc.path != "", out1)
			}
			s.hooks(nil, nil)
			c2 := startChild(t, "crawl", append(env, envPages+"="+s.urls(pages("q", 4)...))...)
			out2 := c2.wait(t, 30*time.Second)
			if strings.Count(out2, "got ") != 4 {
				t.Errorf("second child: want 4 pages got; its output:\n%s", out2)
			}
			hits := s.log()
			checkPolite(t, hits, func(hit) time.Duration { return tc.delay })
			if t.Failed() {
				t.Logf("first child:\n%s\nsecond child:\n%s\nthe site's log:\n%s", out1, out2, describe(hits))
			}
		})
	}
}

// TestRestartPauses: a Retry-After pause and a back-off, with its level,
// survive a kill.
func TestRestartPauses(t *testing.T) {
	const delay = 100 * time.Millisecond
	const backoff = time.Second
	t.Run("retry-after", func(t *testing.T) {
		t.Parallel()
		s := newSite(t, fmt.Sprintf("User-agent: *\nCrawl-delay: %g\n", delay.Seconds()))
		state := tempPath(t)
		env := []string{envState + "=" + state, envTurn + "=1s"}
		c1 := startChild(t, "crawl", append(env, envPages+"="+s.urls("/p0", "/busy", "/p1", "/p2"))...)
		s.hooks(nil, func(h hit) {
			if h.path == "/busy" {
				time.AfterFunc(200*time.Millisecond, c1.kill)
			}
		})
		out1 := c1.wait(t, 30*time.Second)
		s.hooks(nil, nil)
		out2 := startChild(t, "crawl", append(env, envPages+"="+s.urls("/q0", "/q1"))...).wait(t, 30*time.Second)
		hits := s.log()
		checkPolite(t, hits, func(prev hit) time.Duration {
			if prev.path == "/busy" {
				return 3 * time.Second
			}
			return delay
		})
		if len(hits) != 5 || t.Failed() {
			t.Errorf("want robots.txt, p0, busy, q0 and q1; first child:\n%s\nsecond child:\n%s\nthe site's log:\n%s", out1, out2, describe(hits))
		}
	})
	t.Run("backoff", func(t *testing.T) {
		t.Parallel()
		s := newSite(t, fmt.Sprintf("User-agent: *\nCrawl-delay: %g\n", delay.Seconds()))
		state := tempPath(t)
		env := []string{envState + "=" + state, envTurn + "=1s", envBackoff + "=" + backoff.String()}
		c1 := startChild(t, "crawl", append(env, envPages+"="+s.urls("/p0", "/backoff1", "/p1", "/p2"))...)
		s.hooks(nil, func(h hit) {
			if h.path == "/backoff1" {
				time.AfterFunc(200*time.Millisecond, c1.kill)
			}
		})
		out1 := c1.wait(t, 30*time.Second)
		s.hooks(nil, nil)
		out2 := startChild(t, "crawl", append(env, envPages+"="+s.urls("/backoff2", "/q0"))...).wait(t, 30*time.Second)
		hits := s.log()
		// The second incident, after the restart, is the back-off's
		// second level: twice the first pause.
		checkPolite(t, hits, func(prev hit) time.Duration {
			switch prev.path {
			case "/backoff1":
				return backoff
			case "/backoff2":
				return 2 * backoff
			}
			return delay
		})
		if len(hits) != 5 || t.Failed() {
			t.Errorf("want robots.txt, p0, backoff1, backoff2 and q0; first child:\n%s\nsecond child:\n%s\nthe site's log:\n%s", out1, out2, describe(hits))
		}
	})
}

// TestExitAfterFlush: a process under MaxWait (which tells the Pacer of
// its answers on goroutines of their own) gets "quota spent, wait 3 s",
// calls Flush, closes its Store and exits at once; the next process on the
// file sends no request to the site before the 3 s have passed, and finds
// no turn of the first still held.
func TestExitAfterFlush(t *testing.T) {
	s := newSite(t, "User-agent: *\nDisallow: /private\n")
	state := tempPath(t)
	env := []string{envState + "=" + state, envMaxWait + "=1m"}
	out1 := startChild(t, "crawl", append(env, envPages+"="+s.urls("/quota"))...).wait(t, 30*time.Second)
	out2 := startChild(t, "crawl", append(env, envPages+"="+s.urls("/q0"))...).wait(t, 30*time.Second)
	hits := s.log()
	checkPolite(t, hits, func(prev hit) time.Duration {
		if prev.path == "/quota" {
			return 3 * time.Second
		}
		return 0
	})
	if len(hits) != 3 || !strings.Contains(out2, "got "+s.URL+"/q0 200") || t.Failed() {
		t.Errorf("want robots.txt, quota and q0, each sent; first child:\n%s\nsecond child:\n%s\nthe site's log:\n%s", out1, out2, describe(hits))
	}
}

// TestSecondProcess: a process that opens a file another has open fails
// within about a second, with an error that says so and names the file.
func TestSecondProcess(t *testing.T) {
	path := tempPath(t)
	openTest(t, path)
	out := startChild(t, "open", envState+"="+path).wait(t, 10*time.Second)
	f := strings.Fields(out)
	if len(f) < 2 || f[0] != "openerr" {
		t.Fatalf("the second process's output: %q, want a failed Open", out)
	}
	elapsed, err := time.ParseDuration(f[1])
	if err != nil {
		t.Fatal(err)
	}
	if elapsed > 1500*time.Millisecond || !strings.Contains(out, "locked=true") || !strings.Contains(out, path) ||
		!strings.Contains(out, "in use by another process") {
		t.Errorf("the second process's Open: %s; want ErrLocked within about a second, naming %s", out, path)
	}
	t.Logf("second process: %s", out)
}

// TestDiskFull crawls 30 origins in a child process whose writes cannot grow
// the file, as on a full disk: the Puts fail and the Transport logs them,
// while the crawl goes on, paced in memory, and every robots.txt is fetched
// once; the file is whole afterwards.
func TestDiskFull(t *testing.T) {
	const delay = 50 * time.Millisecond
	s := newSite(t, fmt.Sprintf("User-agent: *\nCrawl-delay: %g\n%s", delay.Seconds(), strings.Repeat("# a comment to fill the file\n", 100)))
	var urls []string
	for round := range 2 {
		for i := range 30 {
			urls = append(urls, fmt.Sprintf("http://o%d.test/p%d", i, round))
		}
	}
	state := tempPath(t)
	out := startChild(t, "crawl", envState+"="+state, envFsize+"=1", envDial+"="+s.Listener.Addr().String(),
		envPages+"="+strings.Join(urls, ",")).wait(t, 60*time.Second)
	if strings.Contains(out, "rlimit:") {
		t.Skipf("cannot limit the size of files: %s", out)
	}
	hits := s.log()
	checkPolite(t, hits, func(hit) time.Duration { return delay })
	var fetches, storeErrors int
	for line := range strings.Lines(out) {
		fmt.Sscanf(line, "stats fetches=%d storeErrors=%d", &fetches, &storeErrors)
	}
	if got := strings.Count(out, " 200\n"); got != len(urls) || fetches != 30 || storeErrors == 0 ||
		!strings.Contains(out, "file too large") {
		t.Errorf("%d pages got, %d robots.txt fetched, %d store errors; want %d, 30, and some (EFBIG); the child's output:\n%s",
			got, fetches, storeErrors, len(urls), out)
	}
	st := openTest(t, state)
	n := count(t, st)
	t.Logf("%d entries were written before the file could not grow; %d store errors", n, storeErrors)
}
