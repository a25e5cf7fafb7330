package redisstore_test

// The fleet's pacing on a real Redis (REDIS_ADDR), from the outside: two
// Stores (two clients) on one Redis, each the Store and Pacer of its own
// Transport, against a loopback site that records when each request arrived
// and was answered. Only load-proof properties are asserted: at most one
// request in flight, gaps of at least the delay, measured at the site; never
// an upper bound on time.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/redisstore"
)

type svVisit struct {
	path              string
	arrived, answered time.Time
}

// svSite is a loopback site: robots.txt, then pages that take latency and
// answer status(n) (n: the 1-based count of pages so far).
type svSite struct {
	*httptest.Server
	robots  string
	latency time.Duration
	status  func(n int) (int, string) // status and Retry-After; nil: 200
	hang    chan struct{}             // /hang waits for it (or the request's end)

	mu     sync.Mutex
	pages  int
	flying int
	most   int
	visits []svVisit
}

func newSVSite(t *testing.T, robotsTxt string, latency time.Duration) *svSite {
	s := &svSite{robots: robotsTxt, latency: latency, hang: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		s.mu.Lock()
		s.flying++
		s.most = max(s.most, s.flying)
		n := 0
		if r.URL.Path != "/robots.txt" {
			s.pages++
			n = s.pages
		}
		s.mu.Unlock()
		if r.URL.Path == "/hang" {
			select {
			case <-s.hang:
			case <-r.Context().Done():
			}
		}
		time.Sleep(s.latency)
		status, ra := 200, ""
		if n > 0 && s.status != nil {
			status, ra = s.status(n)
		}
		s.mu.Lock()
		s.flying--
		s.visits = append(s.visits, svVisit{r.URL.Path, arrived, time.Now()})
		s.mu.Unlock()
		if ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		w.WriteHeader(status)
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, s.robots)
		}
	}))
	t.Cleanup(func() {
		select {
		case <-s.hang:
		default:
			close(s.hang)
		}
		s.Close()
	})
	return s
}

func (s *svSite) log() []svVisit {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := slices.Clone(s.visits)
	slices.SortFunc(v, func(a, b svVisit) int { return a.arrived.Compare(b.arrived) })
	return v
}

func (s *svSite) checkSpaced(t *testing.T, v []svVisit, delay time.Duration) {
	t.Helper()
	for i := 1; i < len(v); i++ {
		if v[i].arrived.Before(v[i-1].answered) {
			t.Errorf("%s arrived before the answer to %s: in flight together", v[i].path, v[i-1].path)
		} else if gap := v[i].arrived.Sub(v[i-1].answered); gap < delay {
			t.Errorf("%s arrived %v after the answer to %s, want at least %v", v[i].path, gap, v[i-1].path, delay)
		}
	}
}

// svFleet returns n Transports, each with a Store of its own client on the
// Redis at REDIS_ADDR, sharing a fresh key prefix.
func svFleet(t *testing.T, n int, mk func(*robots.Transport)) []*robots.Transport {
	trs, _ := svFleetClients(t, n, mk)
	return trs
}

// svFleetClients is svFleet that also returns each Transport's client.
func svFleetClients(t *testing.T, n int, mk func(*robots.Transport)) ([]*robots.Transport, []*redis.Client) {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		t.Skip("set REDIS_ADDR")
	}
	prefix := "robots-polite:" + rand.Text()[:10] + ":"
	var trs []*robots.Transport
	var clients []*redis.Client
	for range n {
		c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		if err := c.Ping(context.Background()).Err(); err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		st := redisstore.New(c)
		st.Prefix = prefix
		base := &http.Transport{}
		tr := &robots.Transport{Base: base, Agent: "FleetBot", Store: st, Pacer: st}
		if mk != nil {
			mk(tr)
		}
		trs = append(trs, tr)
		clients = append(clients, c)
		t.Cleanup(func() {
			base.CloseIdleConnections()
			st.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			iter := c.Scan(ctx, 0, prefix+"*", 100).Iterator()
			for iter.Next(ctx) {
				c.Del(ctx, iter.Val())
			}
			c.Close()
		})
	}
	return trs, clients
}

// svCounter is a redis.Hook that counts the commands a client sends.
type svCounter struct{ n atomic.Int64 }

func (c *svCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *svCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c *svCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

func svGet(ctx context.Context, tr http.RoundTripper, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := tr.RoundTrip(req)
	if resp != nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

// svRetry sends u, retrying at TurnError.RetryAt.
func svRetry(ctx context.Context, tr http.RoundTripper, u string) error {
	for range 2000 {
		_, err := svGet(ctx, tr, u)
		var te *robots.TurnError
		if !errors.As(err, &te) {
			return err
		}
		time.Sleep(time.Until(te.RetryAt))
	}
	return fmt.Errorf("%s: still refused after 2000 tries", u)
}

// TestFleetPoliteOneInFlightBlocking: two Transports on two
// Stores of one Redis, blocking workers, a site slower than its crawl-delay:
// one request at a time, each at least the crawl-delay after the answer to
// the one before (robots.txt included, fetched once).
func TestFleetPoliteOneInFlightBlocking(t *testing.T) {
	svFleetOneInFlight(t, 0)
}

// TestFleetPoliteOneInFlightMaxWait: the same with workers under MaxWait
// that retry at TurnError.RetryAt (package frontier's way). A Reserve call whose
// round trip outlasts what is left of MaxWait is cut short and the request
// refused for now, not sent on a turn taken in memory, which knows nothing
// of the other process's request in flight (the root package's
// TestPoliteSlowPacerUnderMaxWait is a deterministic version).
func TestFleetPoliteOneInFlightMaxWait(t *testing.T) {
	for _, mw := range []time.Duration{50 * time.Millisecond, 2 * time.Millisecond} {
		t.Run(mw.String(), func(t *testing.T) { svFleetOneInFlight(t, mw) })
	}
}

func svFleetOneInFlight(t *testing.T, maxWait time.Duration) {
	const delay = 100 * time.Millisecond
	site := newSVSite(t, "User-agent: *\nCrawl-delay: 0.1\n", 150*time.Millisecond)
	trs := svFleet(t, 2, nil)
	var wg sync.WaitGroup
	for i := range 6 {
		tr := trs[i%2]
		wg.Go(func() {
			ctx := robots.WithMaxWait(context.Background(), maxWait)
			for j := range 3 {
				if err := svRetry(ctx, tr, fmt.Sprintf("%s/p%d-%d", site.URL, i, j)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	v := site.log()
	if site.most > 1 {
		t.Errorf("%d requests in flight at once, want 1", site.most)
	}
	site.checkSpaced(t, v, delay)
	n := 0
	for _, x := range v {
		if x.path == "/robots.txt" {
			n++
		}
	}
	if n != 1 || len(v) != 19 {
		t.Errorf("%d requests, %d of robots.txt; want 19, 1", len(v), n)
	}
	for i, tr := range trs {
		t.Logf("Transport %d: %+v", i, tr.Stats())
	}
}

// TestFleetPoliteBackoffOneAtATime: an origin with no crawl-delay
// answers one 503 without Retry-After: after the back-off's pause (First:
// 300 ms here), "until a back-off is forgiven, the origin gets one request
// at a time" (an hour, Forgive's default). Through one Transport on Redis,
// and through the two Transports of the fleet.
func TestFleetPoliteBackoffOneAtATime(t *testing.T) {
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d Transports", n), func(t *testing.T) {
			site := newSVSite(t, "User-agent: *\nDisallow: /private\n", 200*time.Millisecond)
			site.status = func(n int) (int, string) {
				if n == 2 {
					return 503, ""
				}
				return 200, ""
			}
			trs := svFleet(t, n, func(tr *robots.Transport) { tr.Backoff = robots.Backoff{First: 300 * time.Millisecond} })
			for _, tr := range trs {
				if _, err := tr.Origin(context.Background(), must(site.URL)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := svGet(context.Background(), trs[0], site.URL+"/first"); err != nil {
				t.Fatal(err)
			}
			resp, err := svGet(context.Background(), trs[0], site.URL+"/pushback")
			if err != nil || resp.StatusCode != 503 {
				t.Fatalf("%v %v", resp, err)
			}
			if st := trs[0].Stats(); st.Backoffs != 1 {
				t.Fatalf("Stats.Backoffs %d, want 1", st.Backoffs)
			}
			time.Sleep(time.Second) // the pause (300 ms to 330 ms) ends; not forgiven for an hour
			k := len(site.log())
			var wg sync.WaitGroup
			for i := range 6 {
				tr := trs[i%len(trs)]
				wg.Go(func() {
					if err := svRetry(context.Background(), tr, fmt.Sprintf("%s/after%d", site.URL, i)); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			site.checkSpaced(t, site.log()[k:], 0)
		})
	}
}

// TestFleetPoliteHungRequestPollsRedis: a request through one Transport
// whose answer does not come (the site holds it) holds the origin for
// TurnTimeout: the other Transport's blocking request arrives no sooner than
// TurnTimeout plus the crawl-delay after the hung one was sent, and while it
// waits it polls Redis less and less often, not every millisecond.
func TestFleetPoliteHungRequestPollsRedis(t *testing.T) {
	svHung(t, 0)
}

// TestFleetPoliteHungRequestMaxWait: the same, the other Transport's caller
// under MaxWait 100 ms retrying at At: a Reserve cut short by MaxWait does
// not send the request on a turn taken in memory while the hung one is in
// flight.
func TestFleetPoliteHungRequestMaxWait(t *testing.T) {
	svHung(t, 100*time.Millisecond)
}

func svHung(t *testing.T, maxWait time.Duration) {
	const delay, turnTimeout = 200 * time.Millisecond, time.Second
	site := newSVSite(t, "User-agent: *\nCrawl-delay: 0.2\n", 0)
	var cmds svCounter
	trs, clients := svFleetClients(t, 2, func(tr *robots.Transport) { tr.TurnTimeout = turnTimeout })
	clients[1].AddHook(&cmds)
	for _, tr := range trs {
		if _, err := tr.Origin(context.Background(), must(site.URL)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(delay)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	hung := make(chan struct{})
	go func() {
		defer close(hung)
		svGet(ctx, trs[0], site.URL+"/hang")
	}()
	for {
		site.mu.Lock()
		f := site.flying
		site.mu.Unlock()
		if f > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cmds0 := cmds.n.Load()
	if err := svRetry(robots.WithMaxWait(context.Background(), maxWait), trs[1], site.URL+"/next"); err != nil {
		t.Fatal(err)
	}
	v := site.log()
	last := v[len(v)-1]
	if last.path != "/next" {
		t.Fatalf("last %s", last.path)
	}
	if got := last.arrived.Sub(start); got < turnTimeout+delay {
		t.Errorf("/next arrived %v after /hang was sent, want at least TurnTimeout + crawl-delay = %v", got, turnTimeout+delay)
	}
	if n := cmds.n.Load() - cmds0; n > 50 && maxWait == 0 {
		t.Errorf("%d Redis commands from the waiting Transport while a turn was held for %v: it polls Redis about every %v",
			n, turnTimeout, turnTimeout/time.Duration(n))
	} else {
		t.Logf("%d Redis commands from the waiting Transport", n)
	}
	close(site.hang)
	cancel()
	<-hung
}

// TestFleetPoliteRetryAfterReachesFleet: a 429 with Retry-After: 1
// through one Transport pauses the other: its next request arrives no sooner
// than a second after the 429 was answered.
func TestFleetPoliteRetryAfterReachesFleet(t *testing.T) {
	site := newSVSite(t, "User-agent: *\nDisallow: /private\n", 0)
	site.status = func(n int) (int, string) {
		if n == 1 {
			return 429, "1"
		}
		return 200, ""
	}
	trs := svFleet(t, 2, nil)
	for _, tr := range trs {
		if _, err := tr.Origin(context.Background(), must(site.URL)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svGet(context.Background(), trs[0], site.URL+"/429"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			if err := svRetry(robots.WithMaxWait(context.Background(), 50*time.Millisecond), trs[1], fmt.Sprintf("%s/n%d", site.URL, i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	var answered time.Time
	for _, v := range site.log() {
		switch {
		case v.path == "/429":
			answered = v.answered
		case strings.HasPrefix(v.path, "/n") && v.arrived.Sub(answered) < time.Second:
			t.Errorf("%s arrived %v after the 429 with Retry-After: 1", v.path, v.arrived.Sub(answered))
		}
	}
}

func must(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}
