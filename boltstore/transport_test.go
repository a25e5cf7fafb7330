package boltstore

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
			// An origin with no interval takes no turn only without
			// the default pace.
			tr.NoDefaultPace = true
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
