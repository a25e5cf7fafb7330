package boltstore_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/boltstore"
)

// A crawler that keeps its Transport's state in a file fetches each
// robots.txt once across its runs, and keeps each origin's pace across them:
// the second run sends its first request a crawl-delay after the last
// request of the first.
func Example() {
	var fetches atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fetches.Add(1)
			io.WriteString(w, "User-agent: *\nCrawl-delay: 0.1\n")
		}
	}))
	defer site.Close()
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	for run := 1; run <= 2; run++ {
		st, err := boltstore.Open(filepath.Join(dir, "robots.db"))
		if err != nil {
			log.Fatal(err) // another process has it (ErrLocked), or it is damaged (ErrCorrupt)
		}
		t := robots.NewTransport(nil, "ExampleBot")
		t.Store, t.Pacer = st, st
		client := &http.Client{Transport: t}
		resp, err := client.Get(site.URL + "/page")
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		t.CloseIdleConnections()
		if err := st.Close(); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("run %d: %s, robots.txt fetched %d time(s) in all\n", run, resp.Status, fetches.Load())
	}
	// Output:
	// run 1: 200 OK, robots.txt fetched 1 time(s) in all
	// run 2: 200 OK, robots.txt fetched 1 time(s) in all
}
