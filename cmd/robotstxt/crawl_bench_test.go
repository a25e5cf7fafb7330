package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
)

// BenchmarkCrawlState measures what the state file and the journal cost a
// crawl of 50 pages on a loopback site with Crawl-delay 0, against the same
// crawl with -state "" in the same run:
//
//	go test -run '^$' -bench CrawlState -benchmem ./cmd/robotstxt
func BenchmarkCrawlState(b *testing.B) {
	const pages = 49
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: *\nCrawl-delay: 0\n")
			return
		}
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/" {
			for i := 1; i <= pages; i++ {
				fmt.Fprintf(w, `<a href="/%d">%d</a> `, i, i)
			}
		}
	}))
	defer s.Close()
	for _, withState := range []bool{false, true} {
		b.Run(fmt.Sprintf("state=%v", withState), func(b *testing.B) {
			state := ""
			if withState {
				state = filepath.Join(b.TempDir(), "state.db")
			}
			for b.Loop() {
				code := run([]string{"crawl", "-state", state, "-max", "50", s.URL + "/"}, nil, io.Discard, io.Discard)
				if code != exitOK {
					b.Fatalf("crawl = %d", code)
				}
			}
		})
	}
}
