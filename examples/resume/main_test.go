package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain runs the crawler, as a child process of the test, when the test
// asks it to.
func TestMain(m *testing.M) {
	if dir := os.Getenv("RESUME_CHILD_DIR"); dir != "" {
		// The test's site is paced at 10 ms, and a request out at a kill
		// holds it for a second: the test waits on no default pace.
		if err := crawl(context.Background(), dir, strings.Fields(os.Getenv("RESUME_CHILD_URLS")), os.Stdout, 10*time.Millisecond, time.Second); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestKillResume: the crawler, killed with SIGKILL mid-crawl while a page's
// request is out, is run again with the same directory: across the two
// runs every page is fetched once but the one out at the kill, which is
// fetched again, and robots.txt once.
func TestKillResume(t *testing.T) {
	const pages = 40
	var (
		mu      sync.Mutex
		fetched = map[string]int{}
		child   *exec.Cmd
		killed  string
		done    = make(chan struct{})
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		fetched[r.URL.Path]++
		n := 0
		for p, k := range fetched {
			if p != "/robots.txt" {
				n += k
			}
		}
		if n == pages/2 && killed == "" {
			// Mid-crawl, this page's request out: kill the crawler.
			killed = r.URL.Path
			child.Process.Kill()
			mu.Unlock()
			<-done
			return
		}
		mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
			return
		}
		var i int
		fmt.Sscanf(r.URL.Path, "/p/%d", &i)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<a href=/private/x>x</a>")
		for _, k := range []int{2*i + 1, 2*i + 2, i + 1} {
			if k < pages {
				fmt.Fprintf(w, "<a href=/p/%d#top>%d</a>", k, k)
			}
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	run := func() (string, error) {
		mu.Lock()
		child = exec.Command(os.Args[0], "-test.run=^$")
		child.Env = append(os.Environ(), "RESUME_CHILD_DIR="+dir, "RESUME_CHILD_URLS="+srv.URL+"/p/0")
		var out bytes.Buffer
		child.Stdout, child.Stderr = &out, &out
		err := child.Start()
		mu.Unlock()
		if err == nil {
			err = child.Wait()
		}
		return out.String(), err
	}

	t0 := time.Now()
	out, err := run()
	t.Logf("first run %v", time.Since(t0))
	t0 = time.Now()
	close(done)
	if killed == "" || err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the first run was not killed (%v):\n%s", err, out)
	}
	out, err = run()
	t.Logf("second run %v", time.Since(t0))
	if err != nil {
		t.Fatalf("the second run: %v\n%s", err, out)
	}
	if !strings.Contains(out, "resuming:") {
		t.Errorf("the second run did not resume:\n%s", out)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range pages {
		p := fmt.Sprintf("/p/%d", i)
		want := 1
		if p == killed {
			want = 2
		}
		if fetched[p] != want {
			t.Errorf("%s fetched %d times, want %d (killed out: %s)", p, fetched[p], want, killed)
		}
	}
	if fetched["/robots.txt"] != 1 || fetched["/private/x"] != 0 {
		t.Errorf("robots.txt fetched %d times, /private/x %d; want 1 and 0", fetched["/robots.txt"], fetched["/private/x"])
	}
	if _, err := os.Stat(dir + "/journal"); !os.IsNotExist(err) {
		t.Errorf("the journal of a crawl run to its end is kept: %v", err)
	}
	t.Logf("killed with %s out; second run:\n%s", killed, out)
}
