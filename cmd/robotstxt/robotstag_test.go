package main

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"
)

// TestCrawlNoFollow: crawl follows no link of a page whose Robots-Tag or
// X-Robots-Tag says nofollow for it, follows those of the others, and
// reports the rules in -json.
func TestCrawlNoFollow(t *testing.T) {
	s := newSite(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/robots.txt":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "User-agent: *\nCrawl-delay: 0.01\n")
		case "/":
			io.WriteString(w, `<a href="/nf">x</a> <a href="/sf">x</a> <a href="/other">x</a> <a href="/f">x</a>`)
		case "/nf":
			w.Header().Set("X-Robots-Tag", "examplebot: nofollow, noindex")
			io.WriteString(w, `<a href="/hidden1">x</a>`)
		case "/sf":
			w.Header().Set("Robots-Tag", "*;nosnippet, ExampleBot;nofollow")
			io.WriteString(w, `<a href="/hidden2">x</a>`)
		case "/other":
			// nofollow for another crawler only
			w.Header().Set("X-Robots-Tag", "otherbot: nofollow")
			io.WriteString(w, `<a href="/shown1">x</a>`)
		case "/f":
			io.WriteString(w, `<a href="/shown2">x</a> <a href="/paid">x</a>`)
		case "/paid":
			w.Header().Set("Crawler-Price", "USD 0.01")
			w.WriteHeader(http.StatusPaymentRequired)
		default:
			io.WriteString(w, `page`)
		}
	}))
	_, stdout, stderr := runCmd(t, "", "crawl", "-agent", "ExampleBot", "-json", "-workers", "1", "-max", "20", s.URL+"/")
	for _, p := range []string{"/hidden1", "/hidden2"} {
		if n := s.count(p); n != 0 {
			t.Errorf("%s, linked from a nofollow page, requested %d times", p, n)
		}
	}
	for _, p := range []string{"/shown1", "/shown2"} {
		if n := s.count(p); n != 1 {
			t.Errorf("%s requested %d times, want once; stderr %s", p, n, stderr)
		}
	}
	tags := map[string][]string{}
	for _, l := range lines(stdout) {
		var rec crawlRecord
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		tags[rec.URL] = rec.RobotsTag
		if rec.URL == s.URL+"/paid" && (rec.Status != 402 || rec.Price != "USD 0.01" || rec.Retries != 0) {
			t.Errorf("/paid: %+v", rec)
		}
	}
	if n := s.count("/paid"); n != 1 {
		t.Errorf("/paid requested %d times: a 402 is not retried", n)
	}
	if got := tags[s.URL+"/nf"]; !slices.Equal(got, []string{"nofollow", "noindex"}) {
		t.Errorf("/nf robots_tag %q", got)
	}
	if got := tags[s.URL+"/sf"]; !slices.Equal(got, []string{"nosnippet", "nofollow"}) {
		t.Errorf("/sf robots_tag %q", got)
	}
	if got := tags[s.URL+"/other"]; len(got) != 0 {
		t.Errorf("/other robots_tag %q, want none for ExampleBot", got)
	}
}
