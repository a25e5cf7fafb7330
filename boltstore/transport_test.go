package boltstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/f9014239/robots"
)

// get sends a GET of u through c and reads its body.
func get(t *testing.T, c *http.Client, u string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// ioCounts is what a Store has done that could touch the file.
type ioCounts struct{ reserves, gets, puts, writes, reads int64 }

func (s *Store) ioCounts() ioCounts {
	return ioCounts{s.reserves.Load(), s.gets.Load(), s.puts.Load(), s.writes.Load(), int64(s.db.Stats().TxN)}
}

// TestNoIO: a request to a cached origin with no interval to keep costs the
// Store no Reserve, no Get, no Put and no transaction, in the foreground or
// in the background; a request to a paced origin costs one Reserve, and its
// share of the writes of the flusher.
func TestNoIO(t *testing.T) {
	for _, tc := range []struct {
		name, robotsTxt string
		paced           bool
	}{
		{"no interval", "User-agent: *\nDisallow: /private\n", false},
		{"crawl-delay", "User-agent: *\nCrawl-delay: 0.001\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/robots.txt" {
					io.WriteString(w, tc.robotsTxt)
				}
			}))
			defer srv.Close()
			st := openTest(t, tempPath(t))
			tr := robots.NewTransport(nil, "ExampleBot")
			tr.Store, tr.Pacer = st, st
			// "no interval": without the default pace, as a client that is
			// not a crawler opts out of it.
			tr.NoDefaultPace = !tc.paced
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			get(t, c, srv.URL+"/first") // fetches robots.txt
			time.Sleep(3 * flushInterval)
			before, start := st.ioCounts(), time.Now()
			const n = 200
			for i := range n {
				get(t, c, fmt.Sprintf("%s/page%d", srv.URL, i))
			}
			time.Sleep(3 * flushInterval)
			after, elapsed := st.ioCounts(), time.Since(start)
			d := ioCounts{after.reserves - before.reserves, after.gets - before.gets, after.puts - before.puts,
				after.writes - before.writes, after.reads - before.reads}
			t.Logf("%d requests in %v: %+v", n, elapsed, d)
			if !tc.paced {
				if d != (ioCounts{}) {
					t.Errorf("%d requests cost the Store %+v; want nothing", n, d)
				}
				return
			}
			if d.reserves != n || d.gets != 0 || d.puts != 0 || d.reads != 0 {
				t.Errorf("%d paced requests cost the Store %+v; want %d Reserve and nothing else but writes", n, d, n)
			}
			if most := int64(elapsed/flushInterval) + 2; d.writes > most {
				t.Errorf("%d writes in %v, want at most one per flush interval (%d)", d.writes, elapsed, most)
			}
		})
	}
}

// inFlightSite is a site with no crawl-delay whose first page is answered
// 429 without Retry-After (a push-back), and every other after 20 ms; it
// records the most requests it had in flight at once.
type inFlightSite struct {
	mu            sync.Mutex
	now, most, ok int
}

func (s *inFlightSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/robots.txt":
		io.WriteString(w, "User-agent: *\nDisallow: /private\n")
		return
	case "/pushback":
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	s.mu.Lock()
	s.now++
	s.most = max(s.most, s.now)
	s.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	s.mu.Lock()
	s.now--
	s.ok++
	s.mu.Unlock()
}

// TestBackingOffOneInFlight: after a push-back from an origin with no
// crawl-delay and no default pace (NoDefaultPace), the origin gets one request at a time until the back-off is
// forgiven, whichever Transport on the Store sends them: a second one on
// the same Store, or one on the Store opened again after Close.
func TestBackingOffOneInFlight(t *testing.T) {
	for _, reopen := range []bool{false, true} {
		name := "second Transport"
		if reopen {
			name = "after Close and Open"
		}
		t.Run(name, func(t *testing.T) {
			site := &inFlightSite{}
			srv := httptest.NewServer(site)
			defer srv.Close()
			path := tempPath(t)
			st := openTest(t, path)
			b := robots.Backoff{First: 50 * time.Millisecond, Max: 100 * time.Millisecond, Forgive: time.Hour}
			newTransport := func() *robots.Transport {
				tr := robots.NewTransport(nil, "ExampleBot")
				tr.Store, tr.Pacer = st, st
				tr.Backoff = b
				// No interval but the back-off's: the requests the
				// Transport would send without asking the Pacer.
				tr.NoDefaultPace = true
				tr.MaxWait = time.Minute
				return tr
			}
			first := newTransport()
			resp, err := (&http.Client{Transport: first}).Get(srv.URL + "/pushback")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			first.CloseIdleConnections()
			if resp.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("status %d, want 429", resp.StatusCode)
			}
			// The Transport tells the Pacer of the push-back as the
			// response returns: wait until the Store has it.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
				if _, _, ok := st.WatchedPause(srv.URL); !ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the Store never heard of the push-back")
				}
			}
			if reopen {
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
				st = openTest(t, path)
			}
			second := newTransport()
			defer second.CloseIdleConnections()
			c := &http.Client{Transport: second}
			var wg sync.WaitGroup
			const workers, each = 8, 2
			for w := range workers {
				wg.Go(func() {
					for i := range each {
						resp, err := c.Get(fmt.Sprintf("%s/page%d-%d", srv.URL, w, i))
						if err != nil {
							t.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				})
			}
			wg.Wait()
			site.mu.Lock()
			defer site.mu.Unlock()
			if site.ok != workers*each || site.most != 1 {
				t.Errorf("%d pages answered, at most %d in flight at once; want %d, one at a time", site.ok, site.most, workers*each)
			}
		})
	}
}

// TestRestartInFlightReason: a request in flight when the Store was closed
// still holds its origin after Open (its answer may yet come), and a
// request held back meanwhile is refused for "in-flight", as a Transport
// alone or a fleet on Redis says, not for the origin's crawl-delay.
func TestRestartInFlightReason(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			io.WriteString(w, "User-agent: *\nCrawl-delay: 0.5\n")
		case "/hang":
			arrived <- struct{}{}
			<-release
		}
	}))
	defer srv.Close()
	defer close(release)
	newTransport := func(st *Store) *robots.Transport {
		tr := robots.NewTransport(nil, "ExampleBot")
		if st != nil {
			tr.Store, tr.Pacer = st, st
		}
		return tr
	}
	check := func(t *testing.T, tr *robots.Transport) {
		t.Helper()
		ctx := robots.WithMaxWait(context.Background(), 300*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/page", nil)
		resp, err := tr.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		var te *robots.TurnError
		if !errors.As(err, &te) || te.Reason != robots.ReasonInFlight {
			t.Errorf("a request while another is in flight: %v; want a TurnError for %q", err, robots.ReasonInFlight)
		}
	}
	hang := func(t *testing.T, tr *robots.Transport) chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err := (&http.Client{Transport: tr}).Get(srv.URL + "/hang")
			if err == nil {
				resp.Body.Close()
			}
		}()
		select {
		case <-arrived:
		case <-done:
			t.Fatal("the request to /hang did not reach the site")
		}
		return done
	}

	t.Run("memory", func(t *testing.T) {
		tr := newTransport(nil)
		defer tr.CloseIdleConnections()
		done := hang(t, tr)
		check(t, tr)
		release <- struct{}{}
		<-done
	})
	t.Run("boltstore", func(t *testing.T) {
		path := tempPath(t)
		st := openTest(t, path)
		tr := newTransport(st)
		defer tr.CloseIdleConnections()
		done := hang(t, tr)
		time.Sleep(3 * flushInterval) // the turn is in the file
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		st2 := openTest(t, path)
		tr2 := newTransport(st2)
		defer tr2.CloseIdleConnections()
		check(t, tr2)
		release <- struct{}{}
		<-done
	})
}
