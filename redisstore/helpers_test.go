package redisstore

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/f9014239/robots"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// clusterTarget begins the target that redisAddr returns for a Redis
// Cluster, before its seed addresses.
const clusterTarget = "cluster:"

// redisAddr returns the Redis the tests run against: a Redis Cluster if
// REDIS_CLUSTER_ADDRS holds the comma-separated addresses of some of its
// nodes, else the redis-server at REDIS_ADDR; or it skips t. Give the result
// to newClient.
func redisAddr(t testing.TB) string {
	if addrs := os.Getenv("REDIS_CLUSTER_ADDRS"); addrs != "" {
		return clusterTarget + addrs
	}
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		t.Skip("redisstore: set REDIS_ADDR=host:port (or REDIS_CLUSTER_ADDRS=host:port,...) to run tests against a real redis-server")
	}
	return addr
}

// newClient returns a client of addr (an address, or a target from
// redisAddr) that the test closes at its end.
func newClient(t testing.TB, addr string) redis.UniversalClient {
	var c redis.UniversalClient
	if seeds, ok := strings.CutPrefix(addr, clusterTarget); ok {
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(seeds, ","), ContextTimeoutEnabled: true})
	} else {
		c = redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// eachNode calls f with a client of each master of c, if c is a cluster
// client, or else with c.
func eachNode(ctx context.Context, c redis.UniversalClient, f func(ctx context.Context, c *redis.Client) error) error {
	if cc, ok := c.(*redis.ClusterClient); ok {
		var mu sync.Mutex // ForEachMaster calls f concurrently
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return f(ctx, c)
		})
	}
	return f(ctx, c.(*redis.Client))
}

// testPrefix returns a key prefix of its own for t, and deletes the keys
// under it when t ends.
func testPrefix(t testing.TB, addr string) string {
	prefix := "robots-test:" + strings.ReplaceAll(t.Name(), " ", "_") + ":" + rand.Text()[:8] + ":"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	admin := newClient(t, addr)
	if err := admin.Ping(ctx).Err(); err != nil {
		t.Fatalf("%s: %v", addr, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := eachNode(ctx, admin, func(ctx context.Context, c *redis.Client) error {
			iter := c.Scan(ctx, 0, prefix+"*", 100).Iterator()
			for iter.Next(ctx) {
				c.Del(ctx, iter.Val())
			}
			return iter.Err()
		})
		if err != nil {
			t.Errorf("deleting test keys: %v", err)
		}
	})
	return prefix
}

// process is one member of a fleet: a Transport with its own Redis client,
// Store and connections, as a separate crawler process would have.
type process struct {
	store  *Store
	tr     *robots.Transport
	client *http.Client
}

// newProcess returns a process whose Store uses addr and prefix.
func newProcess(t testing.TB, addr, prefix string, logger *slog.Logger) *process {
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	store := newStore(t, newClient(t, addr))
	store.Prefix = prefix
	store.Logger = logger
	tr := &robots.Transport{Base: base, Agent: "FleetBot", Store: store, Pacer: store, Logger: logger}
	return &process{store: store, tr: tr, client: &http.Client{Transport: tr}}
}

// site is a loopback web site that counts its robots.txt fetches and
// records when each request, robots.txt included, arrived.
type site struct {
	*httptest.Server
	robots  atomic.Pointer[string]
	fetches atomic.Int32
	onFetch func() // if non-nil, called in each robots.txt fetch

	mu       sync.Mutex
	arrivals []time.Time // guarded by mu: every request's, robots.txt included
}

func newSite(t testing.TB, robotsTxt string) *site {
	s := &site{}
	s.robots.Store(&robotsTxt)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.arrivals = append(s.arrivals, time.Now())
		s.mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			s.fetches.Add(1)
			if s.onFetch != nil {
				s.onFetch()
			}
			io.WriteString(w, *s.robots.Load())
			return
		}
		io.WriteString(w, "page")
	}))
	t.Cleanup(s.Close)
	return s
}

// origin returns the site's origin as a Store names it.
func (s *site) origin() string { return s.URL }

func (s *site) arrived() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.arrivals...)
}

// get sends GET u through c and returns the error, reading and closing the
// body of a response.
func get(ctx context.Context, c *http.Client, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// checkVerdicts fails t unless u+"/private" is refused and u+"/page" is
// allowed through c, as the robots.txt of the tests' sites say.
func checkVerdicts(t testing.TB, c *http.Client, u string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := get(ctx, c, u+"/private"); !errors.Is(err, robots.ErrDisallowed) {
		t.Errorf("GET %s/private: %v, want ErrDisallowed", u, err)
	}
	if err := get(ctx, c, u+"/page"); err != nil {
		t.Errorf("GET %s/page: %v, want allowed", u, err)
	}
}

const disallowPrivate = "User-agent: *\nDisallow: /private\n"

// logRecorder is a slog.Handler that keeps every record.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record // guarded by mu
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

// count returns the number of records at level or above whose message
// begins with prefix.
func (h *logRecorder) count(level slog.Level, prefix string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.recs {
		if r.Level >= level && strings.HasPrefix(r.Message, prefix) {
			n++
		}
	}
	return n
}

// blackHole is a loopback TCP server that accepts connections and reads
// them, but never answers: a Redis that has stopped responding.
type blackHole struct {
	ln net.Listener
	wg sync.WaitGroup

	mu     sync.Mutex
	conns  []net.Conn // guarded by mu
	closed bool       // guarded by mu
}

func newBlackHole(t testing.TB) *blackHole {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackHole{ln: ln}
	b.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			if b.closed {
				c.Close()
			}
			b.conns = append(b.conns, c)
			b.mu.Unlock()
			b.wg.Go(func() { io.Copy(io.Discard, c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		b.closed = true
		for _, c := range b.conns {
			c.Close()
		}
		b.mu.Unlock()
		b.wg.Wait()
	})
	return b
}

func (b *blackHole) addr() string { return b.ln.Addr().String() }

// closedAddr returns a loopback address on which nothing listens.
func closedAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// newStore returns a Store on c that the test closes at its end.
func newStore(t testing.TB, c redis.UniversalClient) *Store {
	s := New(c)
	t.Cleanup(func() { s.Close() })
	return s
}

// reserveArgs calls p.Reserve for a turn that holds nothing, with the
// arguments of a TurnRequest in order.
func reserveArgs(p fleet.Pacer, ctx context.Context, origin string, every time.Duration, known bool, maxWait time.Duration) (time.Duration, bool, error) {
	r, err := p.Reserve(ctx, origin, fleet.TurnRequest{Every: every, Known: known, MaxWait: maxWait})
	return r.Wait, r.OK, err
}
