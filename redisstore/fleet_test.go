package redisstore

import (
	"context"
	"testing"
	"time"
)

// TestCommandsPerRequest counts the Redis commands that a process of a
// fleet costs per request to a cached origin, from the client (every command
// it sends, scripts counted once) and from the server (INFO: the PINGs of
// the subscription, which no client hook sees, and total_commands_processed,
// which counts the commands that scripts call too): at most 0.05 for an
// origin with no crawl-delay and no pause, and at most 1 for an origin with a
// crawl-delay. The PINGs that check the subscription are a cost per process
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
	}{
		{"no delay", disallowPrivate, 400, 0.05},
		{"crawl-delay 0.01", "User-agent: *\nCrawl-delay: 0.01\n", 100, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSite(t, c.robotsTxt)
			p := newProcess(t, addr, testPrefix(t, addr), nil)
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
