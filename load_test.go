package robots

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/jarcoal/httpmock"
)

func TestSingleFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n").Delay(time.Second))
		tr := NewTransport(mock, "ExampleBot")
		client := &http.Client{Transport: tr}
		const n = 200
		var wg sync.WaitGroup
		var refused atomic.Int32
		for i := range n {
			wg.Go(func() {
				path := "/public"
				if i%2 == 0 {
					path = "/private"
				}
				if errors.Is(get(client, "https://example.com"+path), ErrDisallowed) {
					refused.Add(1)
				}
			})
		}
		wg.Wait()
		if c := calls(mock, exampleRobots); c != 1 {
			t.Errorf("%d concurrent requests fetched robots.txt %d times, want 1", n, c)
		}
		if r := refused.Load(); r != n/2 {
			t.Errorf("%d refused, want %d", r, n/2)
		}
		if s := tr.Stats(); s.LoadWaits != n || s.CacheHits != 0 || s.FetchSuccess != 1 || s.Refused != n/2 {
			t.Errorf("stats %+v", s)
		}
	})
}

func TestWaitersHonourTheirContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		var fetchCtxErr atomic.Value
		mock.RegisterResponder("GET", exampleRobots, func(req *http.Request) (*http.Response, error) {
			time.Sleep(10 * time.Second)
			fetchCtxErr.Store(fmt.Sprint(req.Context().Err()))
			return httpmock.NewStringResponse(200, "User-agent: *\nDisallow: /private\n"), nil
		})
		client := &http.Client{Transport: NewTransport(mock, "ExampleBot")}

		// The first caller gives up after 1 s; a second one cancels.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		err := getCtx(ctx, client, "https://example.com/public")
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrDisallowed) {
			t.Errorf("first caller: %v, want context.DeadlineExceeded", err)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("first caller returned after %v, want 1s", d)
		}
		ctx2, cancel2 := context.WithCancel(context.Background())
		go func() {
			time.Sleep(time.Second)
			cancel2()
		}()
		if err := getCtx(ctx2, client, "https://example.com/public"); !errors.Is(err, context.Canceled) {
			t.Errorf("second caller: %v, want context.Canceled", err)
		}

		// The fetch was not canceled with them: a third caller gets its
		// result without another fetch.
		wantRefused(t, client, "https://example.com/private")
		if d := time.Since(start); d != 10*time.Second {
			t.Errorf("third caller returned after %v, want 10s", d)
		}
		if got := fetchCtxErr.Load(); got != "<nil>" {
			t.Errorf("fetch context error %v, want nil", got)
		}
		if n := calls(mock, exampleRobots); n != 1 {
			t.Errorf("fetched %d times, want 1", n)
		}

		// A caller whose context is already done starts no fetch.
		done, cancel3 := context.WithCancel(context.Background())
		cancel3()
		if err := getCtx(done, client, "https://other.example/"); err == nil {
			t.Errorf("done context: allowed")
		}
		if n := calls(mock, "https://other.example/robots.txt"); n != 0 {
			t.Errorf("done context: fetched %d times", n)
		}
	})
}

func TestExpiredEntryWaitsForRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cur atomic.Pointer[httpmock.Responder]
		respond(&cur, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /old\n"))
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, switchable(&cur))
		client := &http.Client{Transport: noDefaultPace(NewTransport(mock, "ExampleBot"))}
		wantRefused(t, client, "https://example.com/old")
		respond(&cur, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /new\n").Delay(5*time.Second))
		time.Sleep(DefaultTTL)
		start := time.Now()
		wantAllowed(t, client, "https://example.com/old")
		if waited := time.Since(start); waited != 5*time.Second {
			t.Errorf("waited %v for the refresh, want 5s", waited)
		}
		wantRefused(t, client, "https://example.com/new")
	})
}

// TestEvictedBeforeLoad: a site evicted between a request's lookup and the
// start of its load is not loaded; the request waits for the origin's
// current site, so that one origin has one load, and one fetch of
// robots.txt, at a time.
func TestEvictedBeforeLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeOrigins{robots: func(string) string { return "User-agent: *\nCrawl-delay: 1\n" }}
		tr := &Transport{Base: srv, Agent: "ExampleBot", MaxOrigins: 1}
		client := &http.Client{Transport: tr}
		var wg sync.WaitGroup
		first := true
		tr.onMiss(func(k originKey) {
			if k.host != "c.example" || !first {
				return
			}
			first = false
			// Between the lookup of c and its load: a.example evicts
			// c's site, and another request for c adds a new one.
			if err := get(client, "https://a.example/x"); err != nil {
				t.Errorf("GET a.example: %v", err)
			}
			wg.Go(func() {
				if err := get(client, "https://c.example/y"); err != nil {
					t.Errorf("GET c.example/y: %v", err)
				}
			})
		})
		if err := get(client, "https://c.example/x"); err != nil {
			t.Errorf("GET c.example/x: %v", err)
		}
		wg.Wait()
		srv.check(t, func(string) time.Duration { return time.Second })
		if n := srv.count("https://c.example:443"); n != 3 {
			t.Errorf("%d arrivals at c.example, want robots.txt once and 2 pages: %v", n, srv.arrivals("https://c.example:443"))
		}
	})
}

func TestStoreSharedBetweenTransports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200,
			"User-agent: ABot\nDisallow: /a\n\nUser-agent: BBot\nDisallow: /b\n").Delay(time.Second))
		store := &fleet.MemoryStore{}
		a := &Transport{Base: mock, Agent: "ABot", Store: store}
		b := &Transport{Base: mock, Agent: "BBot", Store: store}
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Go(func() {
				tr, path, refused := a, "/a", true
				switch i % 4 {
				case 1:
					path, refused = "/b", false
				case 2:
					tr = b
				case 3:
					tr, path = b, "/b"
				}
				if i%4 == 2 {
					refused = false
				}
				err := get(&http.Client{Transport: tr}, "https://example.com"+path)
				if errors.Is(err, ErrDisallowed) != refused {
					t.Errorf("request %d: %v, want refused=%v", i, err, refused)
				}
			})
		}
		wg.Wait()
		if n := calls(mock, exampleRobots); n != 1 {
			t.Errorf("two Transports on one fleet.Store fetched %d times, want 1", n)
		}
		if sa, sb := a.Stats(), b.Stats(); sa.FetchSuccess+sb.FetchSuccess != 1 || sa.StoreHits+sb.StoreHits != 1 {
			t.Errorf("stats a=%+v b=%+v, want one fetch and one store hit", sa, sb)
		}

		// A fresh Transport finds the entry in the Store.
		c := &Transport{Base: mock, Agent: "ABot", Store: store}
		wantRefused(t, &http.Client{Transport: c}, "https://example.com/a")
		if n := calls(mock, exampleRobots); n != 1 {
			t.Errorf("fetched %d times, want 1", n)
		}

		// An expired entry in the Store is fetched again, and put back.
		time.Sleep(DefaultTTL)
		refetch := time.Now()
		wantRefused(t, &http.Client{Transport: c}, "https://example.com/a")
		if n := calls(mock, exampleRobots); n != 2 {
			t.Errorf("fetched %d times, want 2", n)
		}
		e, _ := store.Get(context.Background(), "https://example.com")
		if e == nil || e.Access != fleet.AccessSuccess || e.FetchedAt.Before(refetch) {
			t.Errorf("store entry %+v, want the new fetch", e)
		}
	})
}

// failingStore is a Store whose every call fails.
type failingStore struct{ calls atomic.Int32 }

func (s *failingStore) Get(context.Context, string) (*fleet.Entry, error) {
	s.calls.Add(1)
	return nil, errors.New("store down")
}

func (s *failingStore) Put(context.Context, string, *fleet.Entry) error {
	s.calls.Add(1)
	return errors.New("store down")
}

func TestStoreErrorsAreNotFatal(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n"))
	store := &failingStore{}
	client := &http.Client{Transport: &Transport{NoDefaultPace: true, Base: mock, Agent: "ExampleBot", Store: store}}
	wantRefused(t, client, "https://example.com/private")
	wantAllowed(t, client, "https://example.com/public")
	if n := store.calls.Load(); n != 2 {
		t.Errorf("store called %d times, want a Get and a Put", n)
	}
}

// stuckStore is a Store and Locker whose every call blocks until its
// context is done, as a store on a server that stopped answering would.
type stuckStore struct{}

// TestStuckStoreDelaysLittle checks that a store that does not answer delays a load by
// a few short timeouts at most, not by the FetchTimeout, and changes no
// verdict.
func TestStuckStoreDelaysLittle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n"))
		client := &http.Client{Transport: &Transport{Base: mock, Agent: "ExampleBot", Store: stuckStore{}}}
		start := time.Now()
		wantRefused(t, client, "https://example.com/private")
		// A Get, a TryLock and a Put.
		if d := time.Since(start); d > 3*storeTimeout {
			t.Errorf("a stuck store delayed the first request by %v, want at most %v", d, 3*storeTimeout)
		}
		wantAllowed(t, client, "https://example.com/page")
		if n := calls(mock, exampleRobots); n != 1 {
			t.Errorf("robots.txt fetched %d times, want 1", n)
		}
	})
}

// lateStore is a MemoryStore into which another user of the store puts a
// fresh entry and releases the lock between this Transport's Get and its
// TryLock, the first time.
type lateStore struct {
	fleet.MemoryStore
	once sync.Once
}

func (s *lateStore) TryLock(ctx context.Context, origin string, ttl time.Duration) (func(), bool, error) {
	s.once.Do(func() {
		now := time.Now()
		s.Put(ctx, origin, &fleet.Entry{Access: fleet.AccessSuccess, Body: []byte("User-agent: *\nDisallow: /other\n"),
			FetchedAt: now, Expires: now.Add(time.Hour)})
	})
	return s.MemoryStore.TryLock(ctx, origin, ttl)
}

// TestStoreEntryPutBeforeLock checks that a Transport that takes the fetch
// lock just after another holder put the entry and let it go uses that
// entry instead of fetching again.
func TestStoreEntryPutBeforeLock(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n"))
	store := &lateStore{}
	client := &http.Client{Transport: &Transport{NoDefaultPace: true, Base: mock, Agent: "ExampleBot", Store: store}}
	wantRefused(t, client, "https://example.com/other")
	wantAllowed(t, client, "https://example.com/private")
	if n := calls(mock, exampleRobots); n != 0 {
		t.Errorf("robots.txt fetched %d times, want 0: the entry was in the store", n)
	}
	unlock, ok, _ := store.MemoryStore.TryLock(context.Background(), "https://example.com", time.Minute)
	if !ok {
		t.Fatal("the fetch lock was not released")
	}
	unlock()
}

// TestStoreBodyCutToMaxBodySize guards against this: MaxBodySize is "how many
// bytes of a robots.txt body are read and parsed", and MaxBytes "bounds the
// bytes the cache holds". In a fleet where one Transport allows larger files
// (a bigger MaxBodySize) and shares a MemoryStore, another Transport takes
// its entries whole: it obeys rules past its own limit and holds far more
// than its MaxBytes (each state is kept even when it alone exceeds the
// budget).
func TestStoreBodyCutToMaxBodySize(t *testing.T) {
	var b strings.Builder
	b.WriteString("User-agent: *\n")
	for j := 0; b.Len() < 2<<20; j++ {
		fmt.Fprintf(&b, "Disallow: /%x\n", j)
	}
	b.WriteString("Disallow: /late\n") // past 500 KiB
	body := b.String()
	srv := &fakeOrigins{handle: func(req *http.Request) (int, http.Header, string) {
		if req.URL.Path == "/robots.txt" {
			return 200, nil, body
		}
		return 200, nil, "page"
	}}
	store := &fleet.MemoryStore{}
	big := &Transport{NoDefaultPace: true, Base: srv, Agent: "ExampleBot", Store: store, MaxBodySize: 4 << 20}
	const maxBytes = 4 << 20
	small := &Transport{NoDefaultPace: true, Base: srv, Agent: "ExampleBot", Store: store, MaxBytes: maxBytes}
	var lateRefused int
	for i := range 4 {
		u, _ := url.Parse(fmt.Sprintf("https://h%d.example/late", i))
		big.Check(context.Background(), u)
		if err := small.Check(context.Background(), u); errors.Is(err, ErrDisallowed) {
			lateRefused++
		}
	}
	if lateRefused > 0 {
		t.Errorf("%d of 4 origins refused /late by a rule past the Transport's MaxBodySize (500 KiB)", lateRefused)
	}
	var held int64
	for i := range small.cache.shards {
		sh := &small.cache.shards[i]
		sh.mu.Lock()
		held += sh.bytes
		sh.mu.Unlock()
	}
	if held > maxBytes {
		t.Errorf("the cache holds %d MiB, MaxBytes is %d MiB", held>>20, maxBytes>>20)
	}
}

// panicStore is a Store whose Get or Put panics.
type panicStore struct {
	fleet.MemoryStore
	onGet, onPut bool
}

func (s *panicStore) Get(ctx context.Context, origin string) (*fleet.Entry, error) {
	if s.onGet {
		panic("store kaput")
	}
	return s.MemoryStore.Get(ctx, origin)
}

func (s *panicStore) Put(ctx context.Context, origin string, e *fleet.Entry) error {
	if s.onPut {
		panic("store kaput")
	}
	return s.MemoryStore.Put(ctx, origin, e)
}

// panicPacer is a Pacer whose Reserve panics.
type panicPacer struct{ noHold }

// TestStorePacerPanicDuringFetch: a Store or Pacer that panics during the
// fetch of robots.txt makes the origin unreachable, with or without a
// deadline, and the flight ends (the next request is answered at once).
func TestStorePacerPanicDuringFetch(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(tr *Transport)
	}{
		{"Store.Get", func(tr *Transport) { tr.Store = &panicStore{onGet: true} }},
		{"Store.Put", func(tr *Transport) { tr.Store = &panicStore{onPut: true} }},
		{"Pacer.Reserve", func(tr *Transport) { tr.Pacer = panicPacer{} }},
	} {
		for _, deadline := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/deadline %v", c.name, deadline), func(t *testing.T) {
				tr := &Transport{NoDefaultPace: true, Base: newMock(), Agent: "FaultBot"}
				c.set(tr)
				checkRefusedForPanic(t, tr, "https://example.com/page", deadline, "request")
				s := tr.cache.shard(originKey{"https", "example.com"}).get(originKey{"https", "example.com"})
				if s == nil || s.loading() {
					t.Errorf("the origin's flight did not end")
				}
			})
		}
	}
}

// checkRefusedForPanic checks u through tr, with a deadline of noHang or
// none, and fails unless the answer comes within noHang as a refusal for an
// unreachable robots.txt that names the panic ("kaput") that caused it.
func checkRefusedForPanic(t *testing.T, tr *Transport, u string, deadline bool, what string) {
	t.Helper()
	ctx := context.Background()
	if deadline {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, noHang)
		defer cancel()
	}
	done := make(chan error, 1)
	go func() { done <- tr.Check(ctx, mustURL(u)) }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "kaput") {
			t.Errorf("%s: Check = %v, want an unreachable refusal that names the panic", what, err)
		}
	case <-time.After(noHang):
		t.Fatalf("%s: no answer within %v", what, noHang)
	}
}

func (stuckStore) Get(ctx context.Context, _ string) (*fleet.Entry, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (stuckStore) Put(ctx context.Context, _ string, _ *fleet.Entry) error {
	<-ctx.Done()
	return ctx.Err()
}

func (stuckStore) TryLock(ctx context.Context, _ string, _ time.Duration) (func(), bool, error) {
	<-ctx.Done()
	return nil, false, ctx.Err()
}

func (panicPacer) Reserve(context.Context, string, fleet.TurnRequest) (fleet.Turn, error) {
	panic("pacer kaput")
}

func (panicPacer) Pause(context.Context, string, time.Time, string) error { return nil }

// failingLocker is a failingStore whose TryLock fails too.
type failingLocker struct{ failingStore }

func (s *failingLocker) TryLock(context.Context, string, time.Duration) (func(), bool, error) {
	s.calls.Add(1)
	return nil, false, errors.New("lock down")
}

// TestStoreErrorsCounted checks that each failed Get, TryLock and Put of a
// Store is counted in Stats.StoreErrors and logged, and that the fetch goes
// on.
func TestStoreErrorsCounted(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n"))
	var buf syncBuffer
	tr := &Transport{NoDefaultPace: true, Base: mock, Agent: "ExampleBot", Store: &failingLocker{},
		Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	client := &http.Client{Transport: tr}
	wantRefused(t, client, "https://example.com/private")
	if st := tr.Stats(); st.StoreErrors != 3 || st.FetchSuccess != 1 {
		t.Errorf("StoreErrors %d, FetchSuccess %d; want 3 (a Get, a TryLock, a Put) and 1", st.StoreErrors, st.FetchSuccess)
	}
	out := buf.String()
	for _, want := range []string{
		`msg="robots: store get failed" origin=https://example.com err="store down"`,
		`msg="robots: store lock failed" origin=https://example.com err="lock down"`,
		`msg="robots: store put failed" origin=https://example.com err="store down"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}

	// A Store without a Locker: a Get and a Put.
	tr = &Transport{NoDefaultPace: true, Base: mock, Agent: "ExampleBot", Store: &failingStore{}, Logger: slog.New(slog.DiscardHandler)}
	wantAllowed(t, &http.Client{Transport: tr}, "https://example.com/public")
	if n := tr.Stats().StoreErrors; n != 2 {
		t.Errorf("StoreErrors %d, want 2", n)
	}
}
