package boltstore

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/f9014239/robots"
)

// TestRevalidateAcrossRestart: the validators of robots.txt survive a
// restart in the file, and the restarted crawler's refresh is a 304 that
// renews the file's copy, with the same verdicts and crawl-delay.
func TestRevalidateAcrossRestart(t *testing.T) {
	const rules = "User-agent: *\nDisallow: /private\nCrawl-delay: 0.01\n"
	var mu sync.Mutex
	var inm []string
	var notModified int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			return
		}
		mu.Lock()
		inm = append(inm, r.Header.Get("If-None-Match"))
		mu.Unlock()
		w.Header().Set("Etag", `"r1"`)
		rec := &statusRecorder{ResponseWriter: w}
		http.ServeContent(rec, r, "robots.txt", time.Time{}, strings.NewReader(rules))
		if rec.status == http.StatusNotModified {
			mu.Lock()
			notModified++
			mu.Unlock()
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	path := tempPath(t)
	newTransport := func(st *Store) (*robots.Transport, *http.Client) {
		tr := robots.NewTransport(nil, "ExampleBot")
		tr.Store, tr.Pacer, tr.NoDefaultPace, tr.TTL = st, st, true, 20*time.Millisecond
		return tr, &http.Client{Transport: tr}
	}
	refused := func(c *http.Client, u string) bool {
		resp, err := c.Get(u)
		if err == nil {
			resp.Body.Close()
		}
		return errors.Is(err, robots.ErrDisallowed)
	}

	st := openTest(t, path)
	tr, c := newTransport(st)
	if !refused(c, srv.URL+"/private") {
		t.Fatal("/private allowed")
	}
	tr.CloseIdleConnections()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond) // the copy expires

	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	origin, err := robots.OriginOf(u)
	if err != nil {
		t.Fatal(err)
	}
	st = openTest(t, path)
	e, err := st.Get(ctx, origin)
	if err != nil || e == nil || e.ETag != `"r1"` {
		t.Fatalf("entry after restart: %+v, %v", e, err)
	}
	tr, c = newTransport(st)
	defer tr.CloseIdleConnections()
	if !refused(c, srv.URL+"/private") || refused(c, srv.URL+"/public") {
		t.Fatal("verdicts changed after the 304")
	}
	mu.Lock()
	if len(inm) != 2 || inm[1] != `"r1"` || notModified != 1 {
		t.Errorf("fetches sent If-None-Match %q; %d answered 304", inm, notModified)
	}
	mu.Unlock()
	if s := tr.Stats(); s.FetchNotModified != 1 || s.FetchSuccess != 0 {
		t.Errorf("stats %+v", s)
	}
	if d, err := tr.CrawlDelay(ctx, u); err != nil || d != 10*time.Millisecond {
		t.Errorf("crawl-delay after the 304: %v, %v", d, err)
	}
	e2, err := st.Get(ctx, origin)
	if err != nil || e2 == nil || string(e2.Body) != rules || !e2.FetchedAt.After(e.FetchedAt) {
		t.Errorf("entry after the 304: %+v, %v", e2, err)
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}
