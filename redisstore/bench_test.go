package redisstore

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/f9014239/robots"
)

// okBase answers robots.txt with rules that allow the benchmark's page and
// every other request with one shared response, doing no other work.
type okBase struct{ page *http.Response }

func (b okBase) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path == "/robots.txt" {
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	}
	return b.page, nil
}

// BenchmarkRoundTrip measures the hot path of a process of a fleet: an
// allowed request to a cached origin through a Transport with a Store and a
// Pacer on Redis, against the same request through a Transport alone (in
// memory), for origins with no delay and with one (MinDelay, here 50 µs,
// across 1000 origins taken in turn, so that no request waits: what is
// measured is the cost of taking the turn). With no delay, the fleet's
// Transport asks Redis nothing (its copy of the pauses answers); with a
// delay, it runs one script per request: redis-ping, a PING through the
// same kind of client, is the round trip that this costs at least.
func BenchmarkRoundTrip(b *testing.B) {
	addr := redisAddr(b)
	base := okBase{page: &http.Response{StatusCode: 200, Body: http.NoBody}}
	const origins = 1000
	reqs := make([]*http.Request, origins)
	for i := range reqs {
		reqs[i], _ = http.NewRequest("GET", fmt.Sprintf("https://o%d.example/page", i), nil)
		reqs[i].Header.Set("User-Agent", "ExampleBot/1.0") // sent as it is, not cloned
	}
	ping := newClient(b, addr)
	b.Run("redis-ping", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := ping.Ping(context.Background()).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, delay := range []time.Duration{0, 50 * time.Microsecond} {
		name := "no-delay"
		if delay > 0 {
			name = "delay"
		}
		store := newStore(b, newClient(b, addr))
		store.Prefix = testPrefix(b, addr)
		for _, c := range []struct {
			name string
			tr   *robots.Transport
		}{
			{"memory", &robots.Transport{Base: base, Agent: "ExampleBot", MinDelay: delay}},
			{"fleet", &robots.Transport{Base: base, Agent: "ExampleBot", MinDelay: delay, Store: store, Pacer: store}},
		} {
			for _, req := range reqs { // warm the cache
				if _, err := c.tr.RoundTrip(req); err != nil {
					b.Fatal(err)
				}
			}
			if c.tr.Pacer != nil {
				waitLive(b, store)
			}
			time.Sleep(2 * delay) // past the turns the warm-up took
			b.Run(name+"/"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				waits := c.tr.Stats().TurnWaits
				i := 0
				for b.Loop() {
					if _, err := c.tr.RoundTrip(reqs[i%origins]); err != nil {
						b.Fatal(err)
					}
					i++
				}
				if w := c.tr.Stats().TurnWaits - waits; w > 0 {
					b.Logf("%d of %d requests waited for a turn", w, i)
				}
			})
		}
	}
}

// BenchmarkGet compares reading an entry from a MemoryStore and from Redis:
// the cost of a miss in a Transport's own cache that the Store answers.
func BenchmarkGet(b *testing.B) {
	addr := redisAddr(b)
	rs := newStore(b, newClient(b, addr))
	rs.Prefix = testPrefix(b, addr)
	ctx := context.Background()
	e := &fleet.Entry{Access: fleet.AccessSuccess, Body: []byte("User-agent: *\nDisallow: /private\n"), Expires: time.Now().Add(time.Hour)}
	for _, c := range []struct {
		name  string
		store fleet.Store
	}{
		{"memory", &fleet.MemoryStore{}},
		{"redis", rs},
	} {
		if err := c.store.Put(ctx, "https://example.com", e); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if e, err := c.store.Get(ctx, "https://example.com"); e == nil || err != nil {
					b.Fatal(e, err)
				}
			}
		})
	}
}
