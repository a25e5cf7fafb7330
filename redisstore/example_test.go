package redisstore_test

import (
	"net/http"

	"github.com/redis/go-redis/v9"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/redisstore"
)

// Each process of a fleet gives its Transport a Store on the same Redis:
// between them, they fetch each robots.txt once per lifetime, and send the
// requests to each origin one per crawl-delay. A Redis Cluster serves as
// well: give New a redis.NewClusterClient (or redis.NewUniversalClient with
// the addresses of a few of its nodes).
func Example() {
	rdb := redis.NewClient(&redis.Options{
		Addr:                  "127.0.0.1:6379",
		ContextTimeoutEnabled: true, // so that Store.Timeout bounds each command
	})
	defer rdb.Close()

	store := redisstore.New(rdb)
	defer store.Close() // stops its watch of the fleet's pauses
	t := robots.NewTransport(nil, "ExampleBot")
	t.Store, t.Pacer = store, store
	client := &http.Client{Transport: t}
	_ = client // crawl with client
}
