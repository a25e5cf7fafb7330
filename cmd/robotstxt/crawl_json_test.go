package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestCrawlJSON: crawl -json writes one JSON object per URL on standard
// output, and nothing else there.
func TestCrawlJSON(t *testing.T) {
	s := newSite(t, demoHandler(10*time.Millisecond))
	code, stdout, stderr := runCmd(t, "", "crawl", "-json", s.URL+"/")
	if code != exitOK {
		t.Errorf("crawl -json = %d, stderr %s", code, stderr)
	}
	byPath := map[string]crawlRecord{}
	recs, sum := decodeCrawl(t, stdout)
	for _, r := range recs {
		byPath[strings.TrimPrefix(r.URL, s.URL)] = r
	}
	if n := strings.Count(stdout, "\n"); n != len(byPath)+1 || n != 11 {
		t.Errorf("%d lines for %d URLs, want one per URL (10) and the summary:\n%s", n, len(byPath), stdout)
	}
	if sum.URLs != 10 || sum.Fetched != 5 || sum.Statuses["200"] != 4 || sum.Statuses["404"] != 1 || sum.Disallowed != 5 ||
		sum.Stopped != "finished" || sum.Left != 0 || sum.RobotsTxtFetches != 1 || sum.Max != 50 {
		t.Errorf("summary %+v", sum)
	}
	if r := byPath["/private/team"]; r.Outcome != "disallowed" || r.Rule != "Disallow: /private/" || r.Line != 6 || r.Status != 0 {
		t.Errorf("/private/team: %+v", r)
	}
	if r := byPath["/gone"]; r.Outcome != "fetched" || r.Status != 404 || r.Rule != "" {
		t.Errorf("/gone: %+v", r)
	}
	r := byPath["/blog/first-post"]
	if r.Outcome != "fetched" || r.Status != 200 || r.Usage != "ai-use=n, search=y, train-ai=n, use=reference" || r.Use != "reference" {
		t.Errorf("/blog/first-post: %+v", r)
	}
	want := map[string]string{"ai-use=n": "[12] false", "search=y": "[12] false", "train-ai=n": "[] true", "use=reference": "[12] false"}
	for _, l := range r.UsageSources {
		if got := fmt.Sprint(l.Lines, l.Header); got != want[l.Label+"="+l.Value] {
			t.Errorf("/blog/first-post: %s=%s from lines %v, header %v", l.Label, l.Value, l.Lines, l.Header)
		}
	}
	if len(r.UsageSources) != len(want) {
		t.Errorf("/blog/first-post: usage sources %+v", r.UsageSources)
	}
	if !strings.Contains(stderr, "obeying the group of user-agent: robotstxt (line 3)") || !strings.Contains(stderr, "10 URLs in ") {
		t.Errorf("crawl -json: the header and summary are not on stderr:\n%s", stderr)
	}

	// A site whose robots.txt is unreachable: each URL says when to retry.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer down.Close()
	code, stdout, _ = runCmd(t, "", "crawl", "-json", down.URL+"/")
	recs, sum = decodeCrawl(t, stdout)
	if len(recs) != 1 || code != exitFlagged || sum.Stopped != "refused" || sum.Unreachable != 1 {
		t.Fatalf("crawl -json of a site that is down = %d, %+v\n%s", code, sum, stdout)
	}
	u := recs[0]
	if u.Outcome != "unreachable" || u.Error != "503 Service Unavailable" || u.RetryAt == nil || u.RetryAt.Before(time.Now()) {
		t.Errorf("unreachable: %+v", u)
	}
}

// decodeCrawl decodes the output of crawl -json: an object per URL, then
// the summary.
func decodeCrawl(t *testing.T, stdout string) ([]crawlRecord, crawlSummary) {
	t.Helper()
	var recs []crawlRecord
	var sum struct {
		Summary *crawlSummary `json:"summary"`
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("decoding: %v\n%s", err, stdout)
		}
		if sum.Summary != nil {
			t.Fatalf("a line after the summary: %s", raw)
		}
		if err := json.Unmarshal(raw, &sum); err != nil {
			t.Fatalf("decoding %s: %v", raw, err)
		}
		if sum.Summary != nil {
			continue
		}
		var r crawlRecord
		if err := json.Unmarshal(raw, &r); err != nil || r.URL == "" {
			t.Fatalf("decoding %s: %v", raw, err)
		}
		recs = append(recs, r)
	}
	if sum.Summary == nil {
		t.Fatalf("no summary:\n%s", stdout)
	}
	return recs, *sum.Summary
}
