package redisstore

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/redis/go-redis/v9"

	"github.com/f9014239/robots"
)

// countingPacer is a Store that counts the calls to Reserve.
type countingPacer struct {
	*Store
	reserves atomic.Int64
}

func (p *countingPacer) Reserve(ctx context.Context, origin string, r fleet.TurnRequest) (fleet.Turn, error) {
	p.reserves.Add(1)
	return p.Store.Reserve(ctx, origin, r)
}

// flushAll empties the Redis the tests run against, as an operator's
// FLUSHALL or a restart without persistence does.
func flushAll(t *testing.T, c redis.UniversalClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := eachNode(ctx, c, func(ctx context.Context, c *redis.Client) error { return c.FlushAll(ctx).Err() }); err != nil {
		t.Fatal(err)
	}
}

// TestFleetPaceSurvivesLoss: when Redis loses an origin's pace (FLUSHALL, a
// restart, an eviction of the key), the next request is still spaced from
// the last one this process sent.
func TestFleetPaceSurvivesLoss(t *testing.T) {
	for _, loss := range []string{"FLUSHALL", "DEL"} {
		t.Run(loss, func(t *testing.T) {
			addr := redisAddr(t)
			prefix := testPrefix(t, addr)
			admin := newClient(t, addr)
			s := newSite(t, "User-agent: *\nCrawl-delay: 1\n")
			p := newProcess(t, addr, prefix, nil)
			if err := get(context.Background(), p.client, s.URL+"/page0"); err != nil {
				t.Fatal(err)
			}
			if loss == "FLUSHALL" {
				flushAll(t, admin)
			} else if err := admin.Del(context.Background(), p.store.paceKey(s.origin())).Err(); err != nil {
				t.Fatal(err)
			}
			if err := get(context.Background(), p.client, s.URL+"/page1"); err != nil {
				t.Fatal(err)
			}
			arrived := s.arrived()
			if len(arrived) != 3 {
				t.Fatalf("%d requests arrived, want robots.txt and 2 pages", len(arrived))
			}
			checkSpacing(t, arrived, time.Second)
		})
	}
}

// TestFleetKnownPauseHolds: a pause the process knows of holds when Redis
// no longer does, and the wait for it asks Redis a bounded few times.
func TestFleetKnownPauseHolds(t *testing.T) {
	t.Run("own pause, key evicted", func(t *testing.T) {
		addr := redisAddr(t)
		prefix := testPrefix(t, addr)
		admin := newClient(t, addr)
		var mu sync.Mutex
		var pages []time.Time
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/robots.txt":
				io.WriteString(w, disallowPrivate)
			case "/busy":
				w.Header().Set("Retry-After", "2")
				w.WriteHeader(http.StatusServiceUnavailable)
			default:
				mu.Lock()
				pages = append(pages, time.Now())
				mu.Unlock()
			}
		}))
		defer srv.Close()
		p := newProcess(t, addr, prefix, nil)
		pacer := &countingPacer{Store: p.store}
		p.tr.Pacer = pacer
		// The process meets a Retry-After of 2 s itself: the pause is
		// in memory and in Redis. Then Redis loses it.
		if err := get(context.Background(), p.client, srv.URL+"/busy"); err != nil {
			t.Fatal(err)
		}
		until := time.Now().Add(2 * time.Second)
		if err := admin.Del(context.Background(), p.store.pauseKey(srv.URL)).Err(); err != nil {
			t.Fatal(err)
		}
		before := pacer.reserves.Load()
		if err := get(context.Background(), p.client, srv.URL+"/page"); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(pages) != 1 || pages[0].Before(until.Add(-waitTolerance)) {
			t.Errorf("page sent at %v, want after the pause the process knows of, %v", pages, until)
		}
		if n := pacer.reserves.Load() - before; n > 3 {
			t.Errorf("%d Reserve calls for one request in a pause, want at most 3", n)
		}
	})
	t.Run("pause from the fleet, key evicted", func(t *testing.T) {
		addr := redisAddr(t)
		prefix := testPrefix(t, addr)
		admin := newClient(t, addr)
		s := newSite(t, disallowPrivate)
		p := newProcess(t, addr, prefix, nil)
		checkVerdicts(t, p.client, s.URL)
		other := newStore(t, newClient(t, addr))
		other.Prefix = prefix
		until := time.Now().Add(2 * time.Second)
		if err := other.Pause(context.Background(), s.origin(), until, "retry-after"); err != nil {
			t.Fatal(err)
		}
		waitWatched(t, p.store, s.origin(), DefaultWatchInterval+DefaultTimeout)
		if err := admin.Del(context.Background(), p.store.pauseKey(s.origin())).Err(); err != nil {
			t.Fatal(err)
		}
		if err := get(context.Background(), p.client, s.URL+"/page"); err != nil {
			t.Fatal(err)
		}
		arrived := s.arrived()
		if last := arrived[len(arrived)-1]; last.Before(until.Add(-waitTolerance)) {
			t.Errorf("sent at %v, %v before the end of the pause in the process's copy", last, until.Sub(last))
		}
	})
}

// cancelAfter is a Base that cancels the request's context as the response
// comes back, as a crawler that gives up at that moment does.
type cancelAfter struct {
	base   http.RoundTripper
	cancel context.CancelFunc
}

func (c *cancelAfter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if req.URL.Path != "/robots.txt" {
		c.cancel()
	}
	return resp, err
}

// TestPauseOutlivesRequest: a Retry-After on a response whose request is
// cancelled as it comes back still pauses the fleet.
func TestPauseOutlivesRequest(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	s := newSite(t, disallowPrivate)
	p := newProcess(t, addr, prefix, nil)
	checkVerdicts(t, p.client, s.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A Base that answers 503 with Retry-After: 30 and cancels the
	// request's context.
	p.tr = &robots.Transport{Base: &cancelAfter{base: retryAfter503{}, cancel: cancel}, Agent: "FleetBot", Store: p.store, Pacer: p.store}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/page", nil)
	resp, err := p.tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// Read in Redis itself: the Store's copy of the pauses may not have
	// heard of it yet.
	ttl, err := newClient(t, addr).PTTL(context.Background(), p.store.pauseKey(s.origin())).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl < 25*time.Second {
		t.Errorf("the fleet's pause key expires in %v, want about 30s", ttl)
	}
}

// retryAfter503 is a Base whose pages answer 503 with Retry-After: 30, and
// whose robots.txt allows everything.
type retryAfter503 struct{}

func (retryAfter503) RoundTrip(req *http.Request) (*http.Response, error) {
	resp := &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Retry-After": {"30"}},
		Body: http.NoBody, Request: req, ProtoMajor: 1, ProtoMinor: 1}
	if req.URL.Path == "/robots.txt" {
		resp.StatusCode, resp.Header = http.StatusNotFound, http.Header{}
	}
	return resp, nil
}

// TestFleetMaxWait: with a Pacer on Redis, a request whose turn is further
// than MaxWait away is refused at once with the time of its turn, takes no
// turn in Redis, and a retry then is sent.
func TestFleetMaxWait(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	s := newSite(t, "User-agent: *\nCrawl-delay: 1\n")
	fleet := []*process{newProcess(t, addr, prefix, nil), newProcess(t, addr, prefix, nil)}
	for _, p := range fleet {
		p.tr.MaxWait = 100 * time.Millisecond
	}
	// The first request fetches robots.txt; its own turn is 1 s later.
	start := time.Now()
	err := get(context.Background(), fleet[0].client, s.URL+"/page0")
	te, ok := errors.AsType[*robots.TurnError](err)
	if !ok || !errors.Is(err, robots.ErrNotYet) {
		t.Fatalf("GET page0: %v, want a TurnError", err)
	}
	if d := time.Since(start); d > time.Second/2 {
		t.Errorf("refused after %v, want at once", d)
	}
	if d := te.RetryAt.Sub(start); d < time.Second-waitTolerance || d > time.Second+waitTolerance {
		t.Errorf("At is %v after the request, want the crawl-delay, 1s", d)
	}
	// The other process is refused too, with the same turn: the refused
	// request took none in Redis.
	err = get(context.Background(), fleet[1].client, s.URL+"/page1")
	te1, ok := errors.AsType[*robots.TurnError](err)
	if !ok {
		t.Fatalf("GET page1: %v, want a TurnError", err)
	}
	if d := te1.RetryAt.Sub(te.RetryAt); d < -waitTolerance || d > waitTolerance {
		t.Errorf("the other process's At is %v from the first's, want the same turn", d)
	}
	time.Sleep(time.Until(te.RetryAt))
	if err := get(context.Background(), fleet[1].client, s.URL+"/page1"); err != nil {
		t.Errorf("GET page1 at At: %v, want sent", err)
	}
	arrived := s.arrived()
	if len(arrived) != 2 {
		t.Fatalf("%d requests arrived, want robots.txt and one page", len(arrived))
	}
	checkSpacing(t, arrived, time.Second)
}
