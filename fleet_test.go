package robots

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"
)

// stuckStore is a Store and Locker whose every call blocks until its
// context is done, as a store on a server that stopped answering would.
type stuckStore struct{}

func (stuckStore) Get(ctx context.Context, _ string) (*Entry, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (stuckStore) Put(ctx context.Context, _ string, _ *Entry) error {
	<-ctx.Done()
	return ctx.Err()
}

func (stuckStore) TryLock(ctx context.Context, _ string, _ time.Duration) (func(), bool, error) {
	<-ctx.Done()
	return nil, false, ctx.Err()
}

// TestStuckStore checks that a store that does not answer delays a load by
// a few short timeouts at most, not by the FetchTimeout, and changes no
// verdict.
func TestStuckStore(t *testing.T) {
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
	MemoryStore
	once sync.Once
}

func (s *lateStore) TryLock(ctx context.Context, origin string, ttl time.Duration) (func(), bool, error) {
	s.once.Do(func() {
		now := time.Now()
		s.Put(ctx, origin, &Entry{Access: AccessSuccess, Body: []byte("User-agent: *\nDisallow: /other\n"),
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
	client := &http.Client{Transport: &Transport{Base: mock, Agent: "ExampleBot", Store: store}}
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

// TestFailingPacerPacesInMemory checks that when the Pacer fails, the
// Transport still spaces the requests to an origin by its crawl-delay.
func TestFailingPacerPacesInMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		a := pacedOrigin(mock, "User-agent: *\nCrawl-delay: 3\n")
		p := &fakePacer{err: errors.New("pacer down")}
		var log strings.Builder
		logger := slog.New(slog.NewTextHandler(&log, nil))
		client := &http.Client{Transport: &Transport{Base: mock, Agent: "ExampleBot", Pacer: p, Logger: logger}}
		for i := range 4 {
			wantAllowed(t, client, fmt.Sprintf("https://example.com/page%d", i))
		}
		// Once a minute at most, not once a request.
		if n := strings.Count(log.String(), "pacer failed"); n != 1 {
			t.Errorf("%d records of the Pacer failing in 4 requests, want 1:\n%s", n, log.String())
		}
		time.Sleep(time.Minute)
		wantAllowed(t, client, "https://example.com/page4")
		if n := strings.Count(log.String(), "pacer failed"); n != 2 {
			t.Errorf("%d records of the Pacer failing, want 2 after a minute", n)
		}
		if g := a.minGap(); g < 3*time.Second {
			t.Errorf("requests %v apart with a failing Pacer, want at least 3s (robots.txt included)", g)
		}
		if n := a.count(); n != 6 {
			t.Errorf("%d arrivals, want 6", n)
		}
	})
}

// ctxPacer is a Pacer that waits for its context to be done, if it can be.
type ctxPacer struct{}

func (ctxPacer) Reserve(ctx context.Context, _ string, _, _ time.Duration) (time.Duration, bool, error) {
	if ctx.Done() == nil {
		return 0, true, nil
	}
	<-ctx.Done()
	return 0, false, ctx.Err()
}

func (ctxPacer) Pause(context.Context, string, time.Time) error { return nil }

// TestPacerErrorAfterContextDone checks that a request whose context ends
// while the Pacer waits is not sent.
func TestPacerErrorAfterContextDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nCrawl-delay: 3\n"))
		client := &http.Client{Transport: &Transport{Base: mock, Agent: "ExampleBot", Pacer: ctxPacer{}}}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := getCtx(ctx, client, "https://example.com/page"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want context.DeadlineExceeded", err)
		}
		if n := calls(mock, "https://example.com/page"); n != 0 {
			t.Errorf("page sent %d times after its context ended, want 0", n)
		}
	})
}

// watchPacer is an atkPacer that is a PauseWatcher, whose copy of the
// pauses the test sets, and that counts its Reserve calls.
type watchPacer struct {
	atkPacer
	reserves atomic.Int32
	stale    atomic.Bool
	mu       sync.Mutex
	watched  map[string]time.Time // guarded by mu
}

func (p *watchPacer) Reserve(ctx context.Context, origin string, every, maxWait time.Duration) (time.Duration, bool, error) {
	p.reserves.Add(1)
	return p.atkPacer.Reserve(ctx, origin, every, maxWait)
}

func (p *watchPacer) WatchedPause(origin string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.watched[origin], !p.stale.Load()
}

// TestPauseWatcherSkipsReserve checks that a Transport whose Pacer is a
// PauseWatcher does not call Reserve for requests with no interval to an
// origin that the copy says is not paused, and does call it (and waits)
// when the copy holds a pause, when the copy may be stale, and when the
// origin has a crawl-delay.
func TestPauseWatcherSkipsReserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n"))
		mock.RegisterResponder("GET", "https://slow.example/robots.txt", httpmock.NewStringResponder(200, "User-agent: *\nCrawl-delay: 1\n"))
		p := &watchPacer{atkPacer: atkPacer{epoch: time.Now()}, watched: map[string]time.Time{}}
		client := &http.Client{Transport: &Transport{Base: mock, Agent: "ExampleBot", Pacer: p}}
		for range 10 {
			wantAllowed(t, client, "https://example.com/page")
		}
		if n := p.reserves.Load(); n != 1 {
			t.Errorf("%d Reserve calls for a robots.txt fetch and 10 requests with no interval, want 1 (the fetch)", n)
		}

		// A pause in the copy (set by another process): the request
		// asks the Pacer, which holds it back until the pause ends.
		until := time.Now().Add(3 * time.Second)
		p.mu.Lock()
		p.watched["https://example.com"] = until
		p.mu.Unlock()
		p.Pause(context.Background(), "https://example.com", until)
		p.reserves.Store(0)
		wantAllowed(t, client, "https://example.com/page")
		if n := p.reserves.Load(); n == 0 {
			t.Error("no Reserve call for an origin paused in the copy")
		}
		if now := time.Now(); now.Before(until) {
			t.Errorf("request sent %v before the end of the watched pause", until.Sub(now))
		}

		// Once the pause has ended, no call again.
		p.reserves.Store(0)
		wantAllowed(t, client, "https://example.com/page")
		if n := p.reserves.Load(); n != 0 {
			t.Errorf("%d Reserve calls after the watched pause ended, want 0", n)
		}

		// A stale copy is not trusted.
		p.stale.Store(true)
		for range 3 {
			wantAllowed(t, client, "https://example.com/page")
		}
		if n := p.reserves.Load(); n != 3 {
			t.Errorf("%d Reserve calls for 3 requests while the copy is stale, want 3", n)
		}
		p.stale.Store(false)

		// An origin with a crawl-delay takes a turn per request.
		p.reserves.Store(0)
		for range 3 {
			wantAllowed(t, client, "https://slow.example/page")
		}
		if n := p.reserves.Load(); n != 4 {
			t.Errorf("%d Reserve calls for a robots.txt fetch and 3 paced requests, want 4", n)
		}
	})
}
