package main

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// site is a loopback web site that counts the requests for each path.
type site struct {
	*httptest.Server
	mu       sync.Mutex
	requests map[string]int // by path and query
}

func newSite(t *testing.T, robotsStatus int, robotsTxt string, pages map[string]string) *site {
	t.Helper()
	s := &site{requests: make(map[string]int)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests[r.URL.RequestURI()]++
		s.mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			w.WriteHeader(robotsStatus)
			io.WriteString(w, robotsTxt)
			return
		}
		page, ok := pages[r.URL.RequestURI()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *site) paths() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.requests)
}

const robotsTxt = `User-agent: examplebot
Disallow: /private/
Allow: /private/ok
Disallow: /*.pdf$

User-agent: *
Disallow: /
`

var pages = map[string]string{
	"/": `<a href="/a">a</a> <a href="/private/x">x</a> <a href="/private/ok">ok</a>
<a href="/doc.pdf">pdf</a> <a href="/gone">gone</a> <a href="http://elsewhere.invalid/">away</a>`,
	"/a":          `<a href="/">home</a> <a href="/private/y">y</a> <a href="/doc.pdf?page=2">pdf, page 2</a>`,
	"/private/ok": `<a href="/private/z">z</a>`,
}

// TestCrawl checks, on the server, that no URL robots.txt disallows was
// requested, and that each of them reached OnError as ErrDisallowed.
func TestCrawl(t *testing.T) {
	s := newSite(t, http.StatusOK, robotsTxt, pages)
	var out strings.Builder
	res, err := crawl([]string{s.URL + "/"}, options{agent: "examplebot", max: 50}, nil, &out)
	if err != nil {
		t.Fatalf("crawl: %v\n%s", err, out.String())
	}

	requested := s.paths()
	wantRefused := map[string]string{
		"/private/x": "Disallow: /private/",
		"/private/y": "Disallow: /private/",
		"/private/z": "Disallow: /private/",
		"/doc.pdf":   "Disallow: /*.pdf$",
	}
	for p, rule := range wantRefused {
		if n := requested[p]; n != 0 {
			t.Errorf("%s requested %d times; robots.txt disallows it", p, n)
		}
		if got, ok := res.Refused[s.URL+p]; !ok || got != rule {
			t.Errorf("OnError for %s: refused %v, rule %q; want refused by %q", p, ok, got, rule)
		}
	}
	if len(res.Refused) != len(wantRefused) {
		t.Errorf("refused %v, want only %v", res.Refused, slices.Sorted(maps.Keys(wantRefused)))
	}

	wantFetched := []string{"/", "/a", "/private/ok", "/gone", "/doc.pdf?page=2"}
	for _, p := range wantFetched {
		if n := requested[p]; n != 1 {
			t.Errorf("%s requested %d times, want once", p, n)
		}
		if !slices.Contains(res.Fetched, s.URL+p) {
			t.Errorf("%s not among the fetched URLs %v", p, res.Fetched)
		}
	}
	if n := requested["/robots.txt"]; n != 1 {
		t.Errorf("robots.txt requested %d times, want once", n)
	}
	if len(requested) != len(wantFetched)+1 || len(res.Failed) != 0 {
		t.Errorf("requests %v, failed %v; want only robots.txt and %v", requested, res.Failed, wantFetched)
	}
	if !strings.Contains(out.String(), "refused "+s.URL+"/doc.pdf (Disallow: /*.pdf$)") {
		t.Errorf("output lacks the refusal of /doc.pdf:\n%s", out.String())
	}
}

// TestCrawlOtherAgent crawls as an agent that robots.txt shuts out.
func TestCrawlOtherAgent(t *testing.T) {
	s := newSite(t, http.StatusOK, robotsTxt, pages)
	res, err := crawl([]string{s.URL + "/"}, options{agent: "otherbot", max: 50}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rule := res.Refused[s.URL+"/"]; rule != "Disallow: /" || len(res.Fetched) != 0 {
		t.Errorf("as otherbot: refused %v, fetched %v; want / refused by Disallow: /", res.Refused, res.Fetched)
	}
	if requested := s.paths(); len(requested) != 1 || requested["/robots.txt"] != 1 {
		t.Errorf("as otherbot: requests %v, want only robots.txt", requested)
	}
}

// TestCrawlUnreachable crawls a site whose robots.txt answers 503: RFC 9309
// §2.3.1.4 says to crawl nothing.
func TestCrawlUnreachable(t *testing.T) {
	s := newSite(t, http.StatusServiceUnavailable, "", pages)
	res, err := crawl([]string{s.URL + "/"}, options{agent: "examplebot", max: 50}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rule, ok := res.Refused[s.URL+"/"]; !ok || rule != "robots.txt unreachable: 503 Service Unavailable" || len(res.Fetched) != 0 {
		t.Errorf("robots.txt 503: refused %v, fetched %v; want / refused as unreachable", res.Refused, res.Fetched)
	}
	for p := range s.paths() {
		if p != "/robots.txt" {
			t.Errorf("robots.txt 503, yet %s was requested", p)
		}
	}
}

func TestCrawlMax(t *testing.T) {
	s := newSite(t, http.StatusOK, robotsTxt, pages)
	res, err := crawl([]string{s.URL + "/"}, options{agent: "examplebot", max: 2}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Fetched) > 2 {
		t.Errorf("-max 2: fetched %v", res.Fetched)
	}
}
