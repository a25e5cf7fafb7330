package redisstore

import (
	"context"
	"net/http"
	"testing"
	"time"

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

// BenchmarkRoundTrip compares an allowed request to a cached origin through
// a Transport alone, with a Store on Redis (which a cached origin does not
// consult), and with a Pacer on Redis (which every request consults).
func BenchmarkRoundTrip(b *testing.B) {
	addr := redisAddr(b)
	prefix := testPrefix(b, addr)
	base := okBase{page: &http.Response{StatusCode: 200, Body: http.NoBody}}
	store := newStore(b, newClient(b, addr))
	store.Prefix = prefix
	req, _ := http.NewRequest("GET", "https://example.com/page", nil)
	for _, c := range []struct {
		name string
		tr   *robots.Transport
	}{
		{"memory", &robots.Transport{Base: base, Agent: "ExampleBot"}},
		{"redis-store", &robots.Transport{Base: base, Agent: "ExampleBot", Store: store}},
		{"redis-store-pacer", &robots.Transport{Base: base, Agent: "ExampleBot", Store: store, Pacer: store}},
	} {
		if _, err := c.tr.RoundTrip(req); err != nil { // warm the cache
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.tr.RoundTrip(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGet compares reading an entry from a MemoryStore and from Redis:
// the cost of a miss in a Transport's own cache that the Store answers.
func BenchmarkGet(b *testing.B) {
	addr := redisAddr(b)
	rs := newStore(b, newClient(b, addr))
	rs.Prefix = testPrefix(b, addr)
	ctx := context.Background()
	e := &robots.Entry{Access: robots.AccessSuccess, Body: []byte("User-agent: *\nDisallow: /private\n"), Expires: time.Now().Add(time.Hour)}
	for _, c := range []struct {
		name  string
		store robots.Store
	}{
		{"memory", &robots.MemoryStore{}},
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
