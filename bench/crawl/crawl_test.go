package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"
)

// smallWeb returns a web of n origins with short delays, served in this
// process, and its address; it skips t when the corpus is absent.
func smallWeb(t *testing.T, n int, seed uint64) (*web, string) {
	t.Helper()
	w, err := newWeb(webConfig{corpus: "../../../shared/corpus", origins: n, faults: 0.12, scale: 0.005, seed: seed, rules: 6, timeout: 1500 * time.Millisecond})
	if errors.Is(err, errNoCorpus) {
		t.Skipf("%v: the corpus lives beside the repository; skipping", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: newServer(w)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return w, ln.Addr().String()
}

// crawlSmall runs crawler name with n workers on a small web and returns
// its figures.
func crawlSmall(t *testing.T, name string, n int) figures {
	t.Helper()
	w, addr := smallWeb(t, 50, 1)
	o := options{web: webConfig{seed: 1}, workers: []int{n}, crawlers: name, slack: 3 * time.Millisecond, maxWait: 2 * time.Millisecond}
	fs := run(context.Background(), addr, w, o, t.Output())
	if len(fs) != 1 {
		t.Fatalf("got %d results, want 1", len(fs))
	}
	f := fs[0]
	t.Logf("%s W=%d: makespan %v, bound %v, pages %d, violations %d/%d, disallowed %d, unreachable %d, robots.txt %.2f/%d/%d",
		name, n, f.makespan, f.bound, f.pages, f.violLeft, f.violSeen, f.disallowed, f.unreachable, f.robotsMean, f.robotsMax, f.robotsExtra)
	for _, e := range f.examples {
		t.Log(e)
	}
	if f.err != nil {
		t.Fatal(f.err)
	}
	return f
}

func TestBlockingDbg(t *testing.T) {
	crawlSmall(t, "a", 8)
}
