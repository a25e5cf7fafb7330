package redisstore

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/f9014239/robots"
)

// TestCommandsPerRequest counts the Redis commands that a process of a
// fleet costs per request to a cached origin, from the client (every command
// it sends, scripts counted once) and from the server (INFO: the PINGs of
// the subscription, which no client hook sees, and total_commands_processed,
// which counts the commands that scripts call too): at most 0.05 for an
// origin with no crawl-delay and no pause with the default pace off, and at
// most 2 for an origin with the default pace or a crawl-delay (the turn
// taken, and its release at the answer). The PINGs that check the subscription are a cost per process
// (one per WatchInterval without a message), not per request: they are
// checked against that bound on their own.
func TestCommandsPerRequest(t *testing.T) {
	addr := redisAddr(t)
	admin := newClient(t, addr)
	for _, c := range []struct {
		name      string
		robotsTxt string
		n         int
		max       float64 // commands per request
		// noDefault turns the default pace off; else the default delay
		defaultDelay time.Duration
		noDefault    bool
	}{
		{"no delay", disallowPrivate, 400, 0.05, 0, true},
		{"default pace", disallowPrivate, 50, 2, 10 * time.Millisecond, false},
		{"crawl-delay 0.01", "User-agent: *\nCrawl-delay: 0.01\n", 100, 2, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSite(t, c.robotsTxt)
			p := newProcess(t, addr, testPrefix(t, addr), nil)
			p.tr.NoDefaultPace, p.tr.DefaultDelay = c.noDefault, c.defaultDelay
			var sent commandCounter
			p.store.client.AddHook(&sent)
			ctx := context.Background()
			if err := get(ctx, p.client, s.URL+"/page"); err != nil { // fetches robots.txt
				t.Fatal(err)
			}
			waitLive(t, p.store)
			sent0, st0, start := sent.n.Load(), serverStats(t, admin), time.Now()
			for range c.n {
				if err := get(ctx, p.client, s.URL+"/page"); err != nil {
					t.Fatal(err)
				}
			}
			elapsed := time.Since(start)
			st1 := serverStats(t, admin)
			sentN := sent.n.Load() - sent0
			pings := st1["cmdstat_ping"] - st0["cmdstat_ping"]
			infos := st1["cmdstat_info"] - st0["cmdstat_info"] // the first INFO, on each node
			total := st1["total_commands_processed"] - st0["total_commands_processed"] - infos
			perRequest := float64(sentN) / float64(c.n)
			t.Logf("%d requests in %v: %d commands sent, %.4f per request; %d PINGs; server: %.2f commands per request, those that scripts call included",
				c.n, elapsed.Round(time.Millisecond), sentN, perRequest, pings, float64(total)/float64(c.n))
			if perRequest > c.max {
				t.Errorf("%.4f Redis commands per request, want at most %v", perRequest, c.max)
			}
			if max := int64(elapsed/p.store.cfg.watchInterval) + 1; pings > max {
				t.Errorf("%d PINGs in %v, want at most %d (one per WatchInterval)", pings, elapsed, max)
			}
			if got := p.tr.Stats().FetchSuccess; got != 1 {
				t.Errorf("%d fetches of robots.txt, want 1", got)
			}
		})
	}
}

// fleetFiles picks files of the corpus of realistic sizes: the five first
// of 64 to 255 bytes whose body is kept compressed (before frames were
// single segments, those were written without their size and never read
// back), three of 1 to 4 KiB, the largest within robots.DefaultMaxBodySize,
// and the largest of all (a Transport keeps its first
// robots.DefaultMaxBodySize bytes); none with a crawl-delay.
func fleetFiles(t *testing.T) []corpusFile {
	files := corpus(t)
	var small, mid []corpusFile
	var large, largest corpusFile
	for _, f := range files {
		n := len(f.body)
		if bytes.Contains(bytes.ToLower(f.body), []byte("crawl-delay")) {
			continue // its pages would wait for their turns
		}
		switch {
		case n >= 64 && n <= 255 && len(small) < 5:
			if v := encode(&fleet.Entry{Access: fleet.AccessSuccess, Body: f.body}); v[len(magic)]&compressed != 0 {
				small = append(small, f)
			}
		case n >= 1<<10 && n <= 4<<10 && len(mid) < 3:
			mid = append(mid, f)
		}
		if n <= robots.DefaultMaxBodySize && n > len(large.body) {
			large = f
		}
		if n > len(largest.body) {
			largest = f
		}
	}
	if len(small) < 5 || len(mid) < 3 || len(large.body) < 100<<10 || len(largest.body) <= robots.DefaultMaxBodySize {
		t.Fatalf("the corpus lacks files of the sizes wanted: %d small, %d mid, %d and %d bytes", len(small), len(mid), len(large.body), len(largest.body))
	}
	return append(append(small, mid...), large, largest)
}

// TestFleetFetchesCorpusOnce runs two Transports on one Redis against a
// site per file of fleetFiles, serving it as robots.txt: between them, they
// fetch each robots.txt once, one process after the other and both at once,
// with no Store error.
func TestFleetFetchesCorpusOnce(t *testing.T) {
	addr := redisAddr(t)
	files := fleetFiles(t)
	for _, together := range []bool{false, true} {
		name := "one after the other"
		if together {
			name = "at once"
		}
		t.Run(name, func(t *testing.T) {
			prefix := testPrefix(t, addr)
			log := &logRecorder{}
			fleet := []*process{newProcess(t, addr, prefix, slog.New(log)), newProcess(t, addr, prefix, slog.New(log))}
			for _, p := range fleet {
				// As long as a Transport waits for its Store: a
				// loaded machine is no Redis failure.
				p.store.Timeout = 2 * time.Second
			}
			sites := make([]*site, len(files))
			for i, f := range files {
				sites[i] = newSite(t, string(f.body))
			}
			visit := func(p *process) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				for _, s := range sites {
					if err := get(ctx, p.client, s.URL+"/page"); err != nil && !errors.Is(err, robots.ErrDisallowed) {
						t.Errorf("GET %s/page: %v", s.URL, err)
					}
				}
			}
			if together {
				var wg sync.WaitGroup
				for _, p := range fleet {
					wg.Go(func() { visit(p) })
				}
				wg.Wait()
			} else {
				for _, p := range fleet {
					visit(p)
				}
			}
			for i, s := range sites {
				if n := s.fetches.Load(); n != 1 {
					t.Errorf("%s (%d bytes): robots.txt fetched %d times by 2 Transports, want 1", files[i].name, len(files[i].body), n)
				}
			}
			var fetched, hits, errs uint64
			for _, p := range fleet {
				st := p.tr.Stats()
				fetched, hits, errs = fetched+st.FetchSuccess, hits+st.StoreHits, errs+st.StoreErrors
			}
			if n := uint64(len(sites)); fetched != n || hits != n || errs != 0 {
				t.Errorf("fleet stats: %d fetches, %d store hits, %d store errors; want %d, %d, 0", fetched, hits, errs, n, n)
			}
			if n := log.count(slog.LevelWarn, ""); n != 0 {
				t.Errorf("%d warnings logged, want none", n)
			}
		})
	}
}
