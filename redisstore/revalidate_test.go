package redisstore

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/f9014239/robots"
)

// TestRevalidateFleet: two processes share the robots.txt of a site that
// serves an ETag. When the copy expires, one process revalidates it (a 304,
// no body), the renewal is put in Redis for the fleet, and the other process
// takes it from there without a request; verdicts and crawl-delay are those
// of the first fetch.
func TestRevalidateFleet(t *testing.T) {
	addr := redisAddr(t)
	prefix := testPrefix(t, addr)
	const rules = "User-agent: *\nDisallow: /private\nCrawl-delay: 0.01\n"
	var mu sync.Mutex
	var inm []string
	var notModified int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			return
		}
		w.Header().Set("Etag", `W/"r1"`)
		mu.Lock()
		inm = append(inm, r.Header.Get("If-None-Match"))
		if r.Header.Get("If-None-Match") == `W/"r1"` {
			notModified++
			mu.Unlock()
			w.WriteHeader(http.StatusNotModified)
			return
		}
		mu.Unlock()
		w.Write([]byte(rules))
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	origin, err := robots.OriginOf(u)
	if err != nil {
		t.Fatal(err)
	}
	procs := []*process{newProcess(t, addr, prefix, nil), newProcess(t, addr, prefix, nil)}
	for _, p := range procs {
		p.tr.NoDefaultPace, p.tr.TTL = true, 500*time.Millisecond
		defer p.tr.CloseIdleConnections()
	}
	refused := func(p *process, path string) bool {
		resp, err := p.client.Get(srv.URL + path)
		if err == nil {
			resp.Body.Close()
		}
		return errors.Is(err, robots.ErrDisallowed)
	}
	if !refused(procs[0], "/private") || refused(procs[0], "/public") {
		t.Fatal("wrong verdicts on the first fetch")
	}
	ctx := context.Background()
	e, err := procs[0].store.Get(ctx, origin)
	if err != nil || e == nil || e.ETag != `W/"r1"` {
		t.Fatalf("entry in Redis: %+v, %v", e, err)
	}
	time.Sleep(600 * time.Millisecond)
	if !refused(procs[0], "/private") {
		t.Fatal("/private allowed after the 304")
	}
	if refused(procs[1], "/public") || !refused(procs[1], "/private") {
		t.Fatal("wrong verdicts in the other process after the 304")
	}
	mu.Lock()
	if len(inm) != 2 || inm[1] != `W/"r1"` || notModified != 1 {
		t.Errorf("fetches sent If-None-Match %q, %d answered 304; want 2 fetches, the second a 304", inm, notModified)
	}
	mu.Unlock()
	s0, s1 := procs[0].tr.Stats(), procs[1].tr.Stats()
	if s0.FetchNotModified+s1.FetchNotModified != 1 || s0.FetchSuccess+s1.FetchSuccess != 1 {
		t.Errorf("stats %+v, %+v", s0, s1)
	}
	e2, err := procs[1].store.Get(ctx, origin)
	if err != nil || e2 == nil || string(e2.Body) != rules || !e2.FetchedAt.After(e.FetchedAt) || e2.ETag != `W/"r1"` {
		t.Errorf("entry after the 304: %+v, %v", e2, err)
	}
	for i, p := range procs {
		if d, err := p.tr.CrawlDelay(ctx, u); err != nil || d != 10*time.Millisecond {
			t.Errorf("process %d: crawl-delay %v, %v", i, d, err)
		}
	}
}
