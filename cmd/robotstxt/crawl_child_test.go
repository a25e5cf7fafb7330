package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// child is the command run as a child process: the test binary, which
// TestMain makes run as the command, with a cache directory of its own.
type child struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
}

// cacheEnv returns the environment of a child whose user cache directory
// is under home (os.UserCacheDir reads XDG_CACHE_HOME, or HOME).
func cacheEnv(home string) []string {
	return append(os.Environ(), childEnv+"=1", "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, "cache"),
		"LocalAppData="+filepath.Join(home, "cache"))
}

// startChild starts the command with args and the environment env.
func startChild(t *testing.T, env []string, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(os.Args[0], args...)}
	c.cmd.Env = env
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			c.cmd.Process.Kill()
			c.cmd.Wait()
		}
	})
	return c
}

// wait waits for the child to end, within a minute, and returns its exit
// status.
func (c *child) wait(t *testing.T) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		c.cmd.Process.Kill()
		<-done
		t.Fatalf("the command did not end within a minute\nstdout:\n%s\nstderr:\n%s", &c.stdout, &c.stderr)
	}
	return c.cmd.ProcessState.ExitCode()
}

// runChild runs the command to its end and returns its exit status.
func runChild(t *testing.T, env []string, args ...string) (*child, int) {
	t.Helper()
	c := startChild(t, env, args...)
	return c, c.wait(t)
}

// pagedSite is a site of n pages linked from its home page, with a
// robots.txt of Crawl-delay delay, that records when each request came.
type pagedSite struct {
	*httptest.Server
	mu    sync.Mutex
	times map[string][]time.Time // by path
	all   []time.Time            // every request's arrival, robots.txt included
	pages chan string            // each page's path, as it is answered (buffered)
}

func newPagedSite(t *testing.T, n int, delay time.Duration, page func(w http.ResponseWriter, r *http.Request, count int) bool) *pagedSite {
	s := &pagedSite{times: make(map[string][]time.Time), pages: make(chan string, 1000)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.times[r.URL.Path] = append(s.times[r.URL.Path], time.Now())
		s.all = append(s.all, time.Now())
		count := len(s.times[r.URL.Path])
		s.mu.Unlock()
		switch {
		case r.URL.Path == "/robots.txt":
			fmt.Fprintf(w, "User-agent: *\nDisallow: /private\nCrawl-delay: %g\n", delay.Seconds())
			return
		case page != nil && page(w, r, count):
		default:
			w.Header().Set("Content-Type", "text/html")
			if r.URL.Path == "/" {
				for i := 1; i <= n; i++ {
					fmt.Fprintf(w, `<a href="/%d">%d</a> `, i, i)
				}
			}
		}
		s.pages <- r.URL.Path
	}))
	t.Cleanup(s.Close)
	return s
}

// counts returns how many times each path was requested.
func (s *pagedSite) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]int)
	for p, ts := range s.times {
		m[p] = len(ts)
	}
	return m
}

// minGap returns the shortest time between two requests to the site.
func (s *pagedSite) minGap() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	gap := time.Duration(1<<63 - 1)
	for i := 1; i < len(s.all); i++ {
		gap = min(gap, s.all[i].Sub(s.all[i-1]))
	}
	return gap
}

// TestCrawlResume: a crawl interrupted (SIGINT, SIGTERM), and one killed
// (SIGKILL), each run again with the same command, resume where they
// stopped: across the runs each page is fetched once (after the kill, the page out at the
// kill at most twice) and robots.txt once, and no two requests come closer
// than the Crawl-delay, whichever run sent them. (After a kill, the state
// holds the site until -timeout after the turn of the request that was
// out: -timeout is short here.)
func TestCrawlResume(t *testing.T) {
	t.Parallel()
	const pages = 6
	const delay = 100 * time.Millisecond
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			home := t.TempDir()
			env := cacheEnv(home)
			state := filepath.Join(home, "state.db")
			s := newPagedSite(t, pages, delay, nil)
			args := []string{"crawl", "-workers", "2", "-timeout", "2s", "-state", state, s.URL + "/"}
			c := startChild(t, env, args...)
			for range 3 { // /, /1, /2
				select {
				case <-s.pages:
				case <-time.After(time.Minute):
					t.Fatalf("no page answered in a minute\nstdout:\n%s\nstderr:\n%s", &c.stdout, &c.stderr)
				}
			}
			c.cmd.Process.Signal(sig)
			code := c.wait(t)
			if sig != syscall.SIGKILL && (code != exitFlagged || !strings.Contains(c.stdout.String(), "; interrupted, ") ||
				!strings.Contains(c.stdout.String(), "run the same command again to resume")) {
				t.Errorf("interrupted crawl = %d, want %d, saying it was interrupted and how to resume:\n%s\nstderr: %s", code, exitFlagged, &c.stdout, &c.stderr)
			}
			first := s.counts()

			again, code := runChild(t, env, args...)
			out := again.stdout.String()
			if code != exitOK || !strings.Contains(out, "; resuming the crawl stopped at ") || !strings.Contains(out, "; finished; resumed from ") {
				t.Errorf("resumed crawl = %d, want 0, resuming and finished:\n%s\nstderr: %s", code, out, &again.stderr)
			}
			got := s.counts()
			twice := 0
			for i := 0; i <= pages; i++ {
				p := "/" + fmt.Sprint(i)
				if i == 0 {
					p = "/"
				}
				want := 1
				if sig == syscall.SIGKILL && got[p] == 2 && first[p] == 1 {
					// out when the process was killed: sent again
					want = 2
					twice++
				}
				if got[p] != want {
					t.Errorf("%s fetched %d times across the runs (%d by the first), want once", p, got[p], first[p])
				}
			}
			if twice > 1 {
				t.Errorf("%d pages fetched twice; one of a site is out at a time", twice)
			}
			if n := got["/robots.txt"]; n != 1 {
				t.Errorf("robots.txt fetched %d times across the runs, want once", n)
			}
			if gap := s.minGap(); gap < delay {
				t.Errorf("two requests %v apart, closer than the Crawl-delay of %v", gap, delay)
			}
			// A crawl that ran to its end starts over when run again.
			if m, _ := filepath.Glob(state + ".crawl-*"); len(m) != 0 {
				t.Errorf("the journal of a finished crawl is left: %v", m)
			}
			if sig != syscall.SIGINT {
				return
			}
			// Run again, the crawl starts over, with robots.txt from the
			// state and its Crawl-delay kept from the run before.
			third, code := runChild(t, env, args...)
			if out := third.stdout.String(); code != exitOK || strings.Contains(out, "resuming") || !strings.Contains(out, "; finished\n") {
				t.Errorf("a finished crawl run again = %d:\n%s", code, out)
			}
			after := s.counts()
			if after["/"] != got["/"]+1 || after["/robots.txt"] != 1 {
				t.Errorf("run again, the crawl fetched / %d times more and robots.txt %d times in all; want once more, and once",
					after["/"]-got["/"], after["/robots.txt"])
			}
			if gap := s.minGap(); gap < delay {
				t.Errorf("two requests %v apart, closer than the Crawl-delay of %v", gap, delay)
			}
		})
	}
}

// TestCrawlDefaultState: the default state file is where crawl -h says,
// under the user's cache directory, and the first line of a crawl names
// it. The crawl, a child process keeping its pauses in the state file,
// retries what the site defers: a page answered 429 with Retry-After: 1 is
// fetched after the pause and counted as fetched. (Giving up after
// maxRetries, and each kind of deferral, are TestCrawlRetry's, in fake
// time.)
func TestCrawlDefaultState(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := cacheEnv(home)
	h, code := runChild(t, env, "crawl", "-h")
	m := regexp.MustCompile(`\(default "([^"]*state\.db)"\)`).FindStringSubmatch(h.stdout.String())
	if code != exitOK || m == nil {
		t.Fatalf("crawl -h = %d, without the default of -state:\n%s", code, &h.stdout)
	}
	path := m[1]
	if !strings.HasPrefix(path, home) || filepath.Base(path) != "state.db" {
		t.Errorf("default state file %s, want state.db under %s", path, home)
	}
	a := newPagedSite(t, 1, 0, func(w http.ResponseWriter, r *http.Request, count int) bool {
		if r.URL.Path == "/1" && count == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return true
		}
		return false
	})
	c, code := runChild(t, env, "crawl", "-json", a.URL+"/")
	recs, sum := decodeCrawl(t, c.stdout.String())
	first, _, _ := strings.Cut(c.stderr.String(), "\n")
	if code != exitOK || !strings.HasSuffix(first, ", state in "+path) {
		t.Errorf("crawl = %d, first line %q, want it to end with the state file %s", code, first, path)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("no state file where crawl -h says: %v", err)
	}
	byURL := map[string]crawlRecord{}
	for _, r := range recs {
		byURL[r.URL] = r
	}
	if r := byURL[a.URL+"/1"]; r.Outcome != "fetched" || r.Status != 200 || r.Retries != 1 {
		t.Errorf("the page answered 429 once: %+v, want fetched after 1 retry", r)
	}
	if sum.Fetched != 2 || sum.Retried != 1 || sum.GivenUp != 0 || sum.Stopped != "finished" {
		t.Errorf("summary %+v", sum)
	}
	for _, s := range []struct {
		site  *pagedSite
		n     int
		pause time.Duration
	}{{a, 2, time.Second}} {
		s.site.mu.Lock()
		ts := s.site.times["/1"]
		s.site.mu.Unlock()
		if len(ts) != s.n {
			t.Errorf("/1 requested %d times, want %d", len(ts), s.n)
		}
		for i := 1; i < len(ts); i++ {
			if d := ts[i].Sub(ts[i-1]); d < s.pause {
				t.Errorf("/1 requested again %v after a Retry-After of %v", d, s.pause)
			}
		}
	}
}

// TestCrawlKilledHold: a crawl killed while a request is out holds its site
// in the state file until -timeout (and a second) after that request's
// turn, and no longer: the crawl run again sends its first request then, a
// crawl-delay later, not after the hold counted as a slow answer (which
// would add twice the hold).
func TestCrawlKilledHold(t *testing.T) {
	t.Parallel()
	const delay = 100 * time.Millisecond
	const timeout = 2 * time.Second
	hold := timeout + time.Second // the crawl's TurnTimeout
	home := t.TempDir()
	env := cacheEnv(home)
	arrived := make(chan time.Time, 1)
	release := make(chan struct{})
	defer close(release)
	s := newPagedSite(t, 4, delay, func(w http.ResponseWriter, r *http.Request, count int) bool {
		if r.URL.Path != "/2" || count != 1 {
			return false
		}
		arrived <- time.Now()
		select { // the first /2 is out when the crawl is killed
		case <-release:
		case <-time.After(time.Minute):
		}
		return true
	})
	args := []string{"crawl", "-workers", "1", "-timeout", timeout.String(), "-state", filepath.Join(home, "state.db"), s.URL + "/"}
	c := startChild(t, env, args...)
	var out time.Time
	select {
	case out = <-arrived:
	case <-time.After(time.Minute):
		t.Fatalf("/2 never came\nstdout:\n%s\nstderr:\n%s", &c.stdout, &c.stderr)
	}
	time.Sleep(300 * time.Millisecond) // the state file holds the turn (boltstore writes within 100 ms)
	c.cmd.Process.Kill()
	c.wait(t)
	s.mu.Lock()
	before := len(s.all)
	s.mu.Unlock()

	again, code := runChild(t, env, args...)
	if code != exitOK {
		t.Fatalf("the crawl run again = %d\nstdout:\n%s\nstderr:\n%s", code, &again.stdout, &again.stderr)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.all) <= before {
		t.Fatal("the crawl run again sent nothing")
	}
	first := s.all[before].Sub(out)
	if first < hold {
		t.Errorf("the crawl run again sent its first request %v after the one out at the kill, before its hold of %v ended", first, hold)
	}
	// Counted as a slow answer, the hold would add twice itself: 3 holds.
	if first >= 2*hold {
		t.Errorf("the crawl run again sent its first request %v after the one out at the kill; want the hold of %v and a crawl-delay, not the hold counted as a slow answer", first, hold)
	}
}
