package redisstore

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/f9014239/robots"
)

// The test binary runs as a crawler process of its own when exitChildEnv
// is set: it gets the URL in it through a Transport on a Store of the Redis
// of REDIS_ADDR (or REDIS_CLUSTER_ADDRS) under the prefix in
// exitPrefixEnv, with MaxWait set (so that the Pacer hears of the answer
// on a goroutine of its own), calls Flush, closes the Store and exits.
const (
	exitChildEnv  = "REDISSTORE_TEST_EXIT_URL"
	exitPrefixEnv = "REDISSTORE_TEST_EXIT_PREFIX"
)

func init() {
	if u := os.Getenv(exitChildEnv); u != "" {
		os.Exit(exitChild(u))
	}
}

func exitChild(u string) int {
	c := childClient()
	s := New(c)
	s.Prefix = os.Getenv(exitPrefixEnv)
	tr := robots.NewTransport(&http.Transport{}, "ExitBot")
	tr.Store, tr.Pacer, tr.MaxWait = s, s, time.Minute
	resp, err := (&http.Client{Transport: tr}).Get(u)
	if err != nil {
		fmt.Printf("err %v\n", err)
	} else {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Printf("got %d\n", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	fmt.Printf("flush %v\n", tr.Flush(ctx))
	cancel()
	s.Close()
	c.Close()
	return 0
}

// childClient is the client of the Redis of REDIS_CLUSTER_ADDRS or
// REDIS_ADDR, as redisAddr and newClient make it, for a child process.
func childClient() redis.UniversalClient {
	if addrs := os.Getenv("REDIS_CLUSTER_ADDRS"); addrs != "" {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ","), ContextTimeoutEnabled: true})
	}
	return redis.NewClient(&redis.Options{Addr: os.Getenv("REDIS_ADDR"), ContextTimeoutEnabled: true})
}

// TestExitAfterFlush: a process gets "quota spent, wait 3 s", calls Flush
// and exits at once; a second process on the same Redis sends nothing to
// the site before the 3 s have passed, and finds no turn of the first
// still held.
func TestExitAfterFlush(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	var mu sync.Mutex
	var answered, second time.Time
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			io.WriteString(w, "User-agent: *\nDisallow: /private\n")
		case "/quota":
			w.Header().Set("RateLimit", `"default";r=0;t=3`)
			io.WriteString(w, "the last of the quota")
			mu.Lock()
			answered = time.Now()
			mu.Unlock()
		default:
			mu.Lock()
			second = time.Now()
			mu.Unlock()
		}
	}))
	defer site.Close()
	run := func(path string) string {
		cmd := exec.Command(os.Args[0], "-test.run", "^$")
		cmd.Env = append(os.Environ(), exitChildEnv+"="+site.URL+path, exitPrefixEnv+"="+prefix)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child for %s: %v\n%s", path, err, out)
		}
		return string(out)
	}
	out1 := run("/quota")
	out2 := run("/next")
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(out1, "got 200") || !strings.Contains(out1, "flush <nil>") || !strings.Contains(out2, "got 200") {
		t.Fatalf("first child:\n%s\nsecond child:\n%s", out1, out2)
	}
	if d := second.Sub(answered); d < 3*time.Second {
		t.Errorf("the second process's request came %v after the answer that asked for 3s", d)
	}
}
