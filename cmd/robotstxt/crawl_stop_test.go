package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// serveFake serves h to crawl's base transport on an in-memory network,
// for a crawl in a synctest bubble, until the test ends.
func serveFake(t *testing.T, h http.Handler) {
	pn := newPipeNet()
	srv := &http.Server{Handler: h}
	go srv.Serve(pn)
	t.Cleanup(func() { srv.Close() })
	old := crawlBase
	crawlBase = func(time.Duration) http.RoundTripper { return &http.Transport{DialContext: pn.DialContext} }
	t.Cleanup(func() { crawlBase = old })
}

// pagesHandler serves a site whose robots.txt states a Crawl-delay of
// delay and whose home page links to n pages, /1 to /n; the requests it
// answers are counted in seen, by path.
func pagesHandler(delay time.Duration, n int, mu *sync.Mutex, seen map[string]int, page func(w http.ResponseWriter, r *http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			fmt.Fprintf(w, "User-agent: *\nDisallow: /private\nCrawl-delay: %g\n", delay.Seconds())
			return
		}
		if page != nil && page(w, r) {
			return
		}
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/" {
			for i := 1; i <= n; i++ {
				fmt.Fprintf(w, `<a href="/%d">%d</a>`, i, i)
			}
		}
	})
}

// TestCrawlInterrupted: a crawl interrupted says so, and how many URLs were
// left, not that it stopped at -max; in text and JSON; exit status 1.
func TestCrawlInterrupted(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[string]int{}
			serveFake(t, pagesHandler(time.Second, 10, &mu, seen, nil))
			// robots.txt at 0 s, / at 1 s, /1 at 2 s, /2 at 3 s.
			ctx, cancel := context.WithTimeout(t.Context(), 3500*time.Millisecond)
			defer cancel()
			args := []string{"crawl", "http://site.test/"}
			if asJSON {
				args = []string{"crawl", "-json", "http://site.test/"}
			}
			var out, errOut strings.Builder
			code := runContext(ctx, args, nil, &out, &errOut)
			if code != exitFlagged {
				t.Errorf("an interrupted crawl exits %d, want %d", code, exitFlagged)
			}
			if asJSON {
				recs, sum := decodeCrawl(t, out.String())
				if sum.Stopped != "interrupted" || sum.URLs != 3 || len(recs) != 3 || sum.Left != 8 {
					t.Errorf("summary %+v, want interrupted after 3 URLs, 8 left", sum)
				}
				return
			}
			got := lines(out.String())
			if sum := got[len(got)-2]; !strings.HasPrefix(sum, "3 URLs in ") || !strings.HasSuffix(sum, "; interrupted, 8 URLs left") {
				t.Errorf("summary = %q, want 3 URLs; interrupted, 8 URLs left", sum)
			}
		})
	}
}

// TestCrawlStalled: when every URL left waits for a pause further away than
// -timeout (a Retry-After of a day), the crawl stops at once with that
// reason, and exit status 1, rather than waiting; it does not wait for a
// turn its Crawl-delay sets, however long.
func TestCrawlStalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		seen := map[string]int{}
		serveFake(t, pagesHandler(time.Minute, 3, &mu, seen, func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path == "/1" {
				w.Header().Set("Retry-After", "86400")
				w.WriteHeader(http.StatusServiceUnavailable)
				return true
			}
			return false
		}))
		begin := time.Now()
		code, stdout, stderr := runCmd(t, "", "crawl", "-json", "-timeout", "20s", "http://site.test/")
		recs, sum := decodeCrawl(t, stdout)
		if code != exitFlagged || sum.Stopped != "timeout" || !strings.Contains(sum.Why, "further away than twice -timeout 20s") {
			t.Errorf("crawl = %d, summary %+v; want 1 and stopped by -timeout\nstderr: %s", code, sum, stderr)
		}
		// robots.txt at 0, / at 1 min, /1 at 2 min; then a day's pause.
		if d := time.Since(begin); d > 3*time.Minute {
			t.Errorf("the crawl took %v: it waited for the pause", d)
		}
		mu.Lock()
		defer mu.Unlock()
		if seen["/2"] != 0 || seen["/3"] != 0 {
			t.Errorf("requests %v: sent during the site's pause", seen)
		}
		if len(recs) != 1 || sum.Left != 3 {
			t.Errorf("records %+v, %d left; want / visited, /1 (deferred), /2 and /3 left", recs, sum.Left)
		}
		if !strings.Contains(stderr, "; stopped: every URL left waits for its site's pause, further away than twice -timeout 20s (the soonest, of http://site.test, at ") {
			t.Errorf("the text summary does not say why it stopped:\n%s", stderr)
		}
	})
}

// TestCrawlStartRedirect: a start URL that redirects to another origin is
// followed, as a start URL, and that origin's robots.txt decides; a page's
// redirect to another origin is not followed.
func TestCrawlStartRedirect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		seen := map[string]int{}
		serveFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[r.Host+r.URL.Path]++
			mu.Unlock()
			switch r.Host + r.URL.Path {
			case "example.test/robots.txt", "www.example.test/robots.txt":
				fmt.Fprint(w, "User-agent: *\nDisallow: /private\n")
			case "example.test/":
				http.Redirect(w, r, "http://www.example.test/", http.StatusMovedPermanently)
			case "www.example.test/":
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprint(w, `<a href="/private">p</a> <a href="/a">a</a> <a href="/away">away</a>`)
			case "www.example.test/away":
				http.Redirect(w, r, "http://elsewhere.test/", http.StatusFound)
			default:
				fmt.Fprint(w, "page")
			}
		}))
		code, stdout, stderr := runCmd(t, "", "crawl", "http://example.test/")
		got := lines(stdout)
		for _, want := range []string{
			"301 / redirect to http://www.example.test/, another site: followed, as a start URL",
			"http://www.example.test: obeying the * group (line 1), no crawl-delay: the default pace, 1s",
			"200 http://www.example.test/",
			"refused http://www.example.test/private Disallow: /private (line 2)",
			"200 http://www.example.test/a",
			"302 http://www.example.test/away redirect to http://elsewhere.test/, another site: not followed",
		} {
			if !contains(got, want) {
				t.Errorf("output lacks %q:\n%s\nstderr: %s", want, stdout, stderr)
			}
		}
		if code != exitOK || !strings.HasSuffix(got[len(got)-2], "; finished") {
			t.Errorf("crawl = %d, summary %q", code, got[len(got)-2])
		}
		mu.Lock()
		defer mu.Unlock()
		if seen["www.example.test/robots.txt"] != 1 || seen["www.example.test/private"] != 0 || seen["elsewhere.test/"] != 0 {
			t.Errorf("requests %v", seen)
		}
	})
}

// TestCrawlRetry: a page answered 429 is sent again once the site's pause
// (Retry-After) has ended, and counted as fetched; one answered 503 every
// time, one answered 429 every time, and one whose connection is cut every
// time, are sent maxRetries times more, each after the pause, then given
// up. No request comes before the pause the site asked for.
func TestCrawlRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		seen := map[string]int{}
		type req struct {
			at    time.Time
			pause time.Duration // the Retry-After answered
		}
		var reqs []req // but robots.txt
		serveFake(t, pagesHandler(0, 4, &mu, seen, func(w http.ResponseWriter, r *http.Request) bool {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.URL.Path == "/1" && seen["/1"] == 1:
				reqs = append(reqs, req{time.Now(), 2 * time.Second})
				w.Header().Set("Retry-After", "2")
				w.WriteHeader(http.StatusTooManyRequests)
				return true
			case r.URL.Path == "/2":
				reqs = append(reqs, req{time.Now(), time.Second})
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				return true
			case r.URL.Path == "/4":
				reqs = append(reqs, req{time.Now(), time.Second})
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				return true
			case r.URL.Path == "/3":
				// The connection is cut: a failure that may pass.
				reqs = append(reqs, req{at: time.Now()})
				conn, _, _ := w.(http.Hijacker).Hijack()
				conn.Close()
				return true
			}
			reqs = append(reqs, req{at: time.Now()})
			return false
		}))
		code, stdout, stderr := runCmd(t, "", "crawl", "-workers", "2", "http://site.test/")
		got := lines(stdout)
		for _, want := range []string{
			"200 /1",
			"given up /2 503 after 3 retries",
			"given up /3 EOF after 3 retries",
			"given up /4 429 after 3 retries",
		} {
			if !contains(got, want) {
				t.Errorf("output lacks %q:\n%s", want, stdout)
			}
		}
		if code != exitOK || !strings.HasSuffix(got[len(got)-2], ": 2 fetched (2 × 200), 0 disallowed by rules, 0 errors, 10 retries after a 429, a 503 or an error, 3 given up; finished") {
			t.Errorf("crawl = %d, summary %q; stderr %s", code, got[len(got)-2], stderr)
		}
		mu.Lock()
		defer mu.Unlock()
		// (net/http itself sends a GET again once when a connection it
		// reused is cut before an answer.)
		if seen["/1"] != 2 || seen["/2"] != 1+maxRetries || seen["/4"] != 1+maxRetries || seen["/3"] < 1+maxRetries || seen["/3"] > 2*(1+maxRetries) || seen["/robots.txt"] != 1 {
			t.Errorf("requests %v; want /1 twice, /2 and /4 %d times, /3 as many (or up to twice as many)", seen, 1+maxRetries)
		}
		// No request comes during a pause the site asked for.
		for i := 1; i < len(reqs); i++ {
			if d := reqs[i].at.Sub(reqs[i-1].at); d < reqs[i-1].pause {
				t.Errorf("request %d came %v after one answered Retry-After %v", i, d, reqs[i-1].pause)
			}
		}
	})
}

// TestCrawlOriginOf: the crawl names origins as the Transport does
// (robots.OriginOf): a start URL in upper case with its default port and
// a link written otherwise are one site, crawled as one.
func TestCrawlOriginOf(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		seen := map[string]int{}
		serveFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[r.URL.Path]++
			mu.Unlock()
			switch r.URL.Path {
			case "/robots.txt":
				fmt.Fprint(w, "User-agent: *\nCrawl-delay: 1\n")
			case "/":
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprint(w, `<a href="http://site.test/1">1</a> <a href="HTTP://SITE.test:80/2">2</a>`)
			}
		}))
		code, stdout, _ := runCmd(t, "", "crawl", "http://Site.TEST:80/")
		got := lines(stdout)
		for _, want := range []string{"obeying the * group (line 1), crawl-delay 1s", "200 /", "200 /1", "200 /2"} {
			if !contains(got, want) {
				t.Errorf("output lacks %q:\n%s", want, stdout)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if code != exitOK || seen["/robots.txt"] != 1 || seen["/1"] != 1 || seen["/2"] != 1 {
			t.Errorf("crawl = %d, requests %v", code, seen)
		}
	})
}
