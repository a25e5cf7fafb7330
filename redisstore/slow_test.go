package redisstore

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/redis/go-redis/v9"

	"github.com/f9014239/robots"
)

// slowNet puts a TCP proxy on 127.0.0.1 in front of each Redis node that a
// client dials, which holds each reply of the node for delay before it
// passes it on (requests pass at once): a Redis that answers slowly, and
// then, with delay 0, fast again. Replies are passed on in order.
type slowNet struct {
	delay atomic.Int64 // nanoseconds

	mu      sync.Mutex
	proxies map[string]string // node address → the proxy's
	closed  bool
	lns     []net.Listener
	conns   []net.Conn
	wg      sync.WaitGroup
}

func newSlowNet(t testing.TB) *slowNet {
	n := &slowNet{proxies: map[string]string{}}
	t.Cleanup(func() {
		n.mu.Lock()
		n.closed = true
		for _, ln := range n.lns {
			ln.Close()
		}
		for _, c := range n.conns {
			c.Close()
		}
		n.mu.Unlock()
		n.wg.Wait()
	})
	return n
}

// dial is a client's Dialer: it connects to the proxy of addr.
func (n *slowNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	p, err := n.proxy(addr)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, network, p)
}

// proxy returns the address of the proxy of addr, started at the first call.
func (n *slowNet) proxy(addr string) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return "", net.ErrClosed
	}
	if p, ok := n.proxies[addr]; ok {
		return p, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	n.lns = append(n.lns, ln)
	n.proxies[addr] = ln.Addr().String()
	n.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			if !n.track(c, up) {
				return
			}
			n.wg.Go(func() {
				io.Copy(up, c)
				up.Close()
				c.Close()
			})
			n.wg.Go(func() { n.replies(c, up) })
		}
	})
	return ln.Addr().String(), nil
}

// track records conns for the cleanup, and reports false (closing them) if
// it has begun.
func (n *slowNet) track(conns ...net.Conn) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	n.conns = append(n.conns, conns...)
	return true
}

// replies passes what up sends on to c, each piece delay after it came.
func (n *slowNet) replies(c, up net.Conn) {
	type piece struct {
		b   []byte
		due time.Time
	}
	ch := make(chan piece, 1024)
	go func() {
		defer close(ch)
		for {
			b := make([]byte, 32<<10)
			k, err := up.Read(b)
			if k > 0 {
				ch <- piece{b[:k], time.Now().Add(time.Duration(n.delay.Load()))}
			}
			if err != nil {
				return
			}
		}
	}()
	for p := range ch {
		time.Sleep(time.Until(p.due))
		if _, err := c.Write(p.b); err != nil {
			break
		}
	}
	c.Close()
	up.Close()
	for range ch {
	}
}

// slowClient returns a client of addr (as redisAddr returns it) whose
// connections go through n.
func slowClient(t testing.TB, addr string, n *slowNet) redis.UniversalClient {
	var c redis.UniversalClient
	if seeds, ok := strings.CutPrefix(addr, clusterTarget); ok {
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(seeds, ","), ContextTimeoutEnabled: true,
			MaxRetries: -1, Dialer: n.dial})
	} else {
		c = redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1, Dialer: n.dial})
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// lateCtx is a context whose deadline passes before it says it is done, as
// the error of a deadline can reach a caller before its context's Err is
// set: Done and Err lag lag behind the deadline.
type lateCtx struct {
	context.Context // done lag after deadline
	deadline        time.Time
}

func newLateCtx(t testing.TB, d, lag time.Duration) *lateCtx {
	deadline := time.Now().Add(d)
	ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(lag))
	t.Cleanup(cancel)
	return &lateCtx{Context: ctx, deadline: deadline}
}

func (c *lateCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// TestCallersDeadlineNoCooldown: a command cut short by its caller's
// deadline is the caller's failure even when the error comes before the
// context says it is done: the Store does not start its Cooldown, and goes
// on asking Redis, which keeps one request in flight across two Stores.
func TestCallersDeadlineNoCooldown(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	slow := newSlowNet(t)
	log := &logRecorder{}
	a := newStore(t, slowClient(t, addr, slow))
	a.Prefix, a.Timeout, a.Cooldown, a.Logger = prefix, 5*time.Second, time.Hour, slog.New(log)
	b := newStore(t, newClient(t, addr))
	b.Prefix, b.Timeout = prefix, 5*time.Second
	ctx := context.Background()
	const origin = "https://example.com"
	r := fleet.TurnRequest{Known: true, MaxWait: time.Hour, Hold: time.Hour, ID: 1, MaxAdaptive: time.Minute}
	if tk, err := a.Reserve(ctx, origin, r); err != nil || !tk.OK || tk.ID != 1 {
		t.Fatalf("first turn %+v, %v", tk, err)
	}
	// Redis answers in 300 ms; the caller waits 50 ms, and its context
	// says so 100 ms later. The Store returns once it does, so that its
	// caller, asking the context, finds its own failure.
	slow.delay.Store(int64(300 * time.Millisecond))
	for i := range 3 {
		r.ID = uint64(10 + i)
		lctx := newLateCtx(t, 50*time.Millisecond, 100*time.Millisecond)
		_, err := a.Reserve(lctx, origin, r)
		if err == nil {
			t.Fatal("Reserve past its caller's deadline succeeded")
		}
		if lctx.Err() == nil {
			t.Errorf("Reserve %d returned before its caller's context said it was done", i)
		}
		if errors.Is(err, ErrUnavailable) {
			t.Fatalf("Reserve %d after a caller's deadline: %v; want no Cooldown", i, err)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Reserve past its caller's deadline: %v; want it to match context.DeadlineExceeded", err)
		}
	}
	// And with the contexts of the standard library, whose Err may be
	// set after the client's error came, or before.
	for i := range 5 {
		r.ID = uint64(30 + i)
		dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err := a.Reserve(dctx, origin, r)
		cancel()
		if err == nil || errors.Is(err, ErrUnavailable) {
			t.Fatalf("Reserve %d after a caller's deadline: %v; want its error, and no Cooldown", i, err)
		}
	}
	slow.delay.Store(0)
	if n := log.count(slog.LevelWarn, "redisstore: redis failed"); n != 0 {
		t.Errorf("%d warnings that redis failed after callers' deadlines, want 0", n)
	}
	// One request in flight, whichever Store asks.
	r.ID = 20
	for _, s := range []*Store{a, b} {
		tk, err := s.Reserve(ctx, origin, r)
		if err != nil || !tk.InFlight {
			t.Errorf("turn while the first is held: %+v, %v; want InFlight from Redis", tk, err)
		}
	}
}

// TestSlowRedisMomentCostsNoMore: when Redis is slow (each reply later than
// the Store's Timeout) and then fast again, the turns that the Reserves
// with no answer took in Redis are released: the next request to each site,
// from either process, is sent at its normal pace, not refused as
// "in-flight" until the holds run out.
func TestSlowRedisMomentCostsNoMore(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	slow := newSlowNet(t)
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	a := newStore(t, slowClient(t, addr, slow))
	a.Prefix, a.Timeout, a.Cooldown = prefix, 300*time.Millisecond, 50*time.Millisecond
	b := newStore(t, newClient(t, addr))
	b.Prefix = prefix
	const turnTimeout = time.Hour
	newTransport := func(s *Store) *http.Client {
		tr := &robots.Transport{Base: base, Agent: "FleetBot", Store: s, Pacer: s, TurnTimeout: turnTimeout,
			DefaultDelay: 100 * time.Millisecond}
		return &http.Client{Transport: tr}
	}
	ca, cb := newTransport(a), newTransport(b)
	sites := []*site{newSite(t, disallowPrivate), newSite(t, disallowPrivate), newSite(t, "User-agent: *\nCrawl-delay: 0.2\n")}
	ctx := context.Background()
	for _, s := range sites {
		if err := get(ctx, ca, s.URL+"/first"); err != nil {
			t.Fatal(err)
		}
	}
	// Redis slows past the Timeout: each Reserve of a gets no answer,
	// though its command lands and takes a turn that holds the origin.
	slow.delay.Store(int64(1200 * time.Millisecond))
	for _, s := range sites {
		time.Sleep(2 * a.Cooldown) // each Reserve reaches Redis
		if err := get(ctx, ca, s.URL+"/slow"); err != nil {
			t.Fatal(err)
		}
	}
	// Redis is fast again: a's commands are answered once its Cooldown
	// ends, and the replies on their way have arrived.
	time.Sleep(1200 * time.Millisecond)
	slow.delay.Store(0)
	for i, s := range sites {
		for j, c := range []*http.Client{ca, cb} {
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := get(rctx, c, s.URL+"/after")
			cancel()
			var te *robots.TurnError
			if errors.As(err, &te) || err != nil {
				t.Errorf("site %d, process %d: request after Redis recovered: %v; want it sent at its pace", i, j, err)
			}
		}
	}
}
