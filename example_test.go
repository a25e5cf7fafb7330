package robots_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/usage"
)

// newSite starts a web site whose robots.txt is rules and whose every other
// page says hello.
func newSite(rules string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, rules)
			return
		}
		io.WriteString(w, "hello from "+r.URL.Path)
	}))
}

// A Transport makes an http.Client obey robots.txt: allowed requests are
// sent as usual, the others fail with ErrDisallowed.
func ExampleTransport() {
	site := newSite("User-agent: *\nDisallow: /private\n")
	defer site.Close()

	client := &http.Client{Transport: robots.NewTransport(nil, "ExampleBot")}

	resp, err := client.Get(site.URL + "/public")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))

	_, err = client.Get(site.URL + "/private")
	fmt.Println(errors.Is(err, robots.ErrDisallowed))
	// Output:
	// 200 hello from /public
	// true
}

// A refused request's error says which line of robots.txt refused it.
func ExampleDisallowedError() {
	site := newSite("User-agent: ExampleBot\nAllow: /private/press\nDisallow: /private\n")
	defer site.Close()

	client := &http.Client{Transport: robots.NewTransport(nil, "ExampleBot")}
	_, err := client.Get(site.URL + "/private/payroll")
	if de, ok := errors.AsType[*robots.DisallowedError](err); ok {
		fmt.Println(de.URL.Path)
		fmt.Println(de.Agent)
		fmt.Printf("%s (line %d)\n", de.Rule, de.Line)
	}
	// Output:
	// /private/payroll
	// ExampleBot
	// Disallow: /private (line 3)
}

// Check gives the verdict on a URL without requesting it, for example to
// prune a crawler's frontier. Only robots.txt is fetched.
func ExampleTransport_Check() {
	site := newSite("User-agent: *\nDisallow: /search\n")
	defer site.Close()

	tr := robots.NewTransport(nil, "ExampleBot")
	for _, path := range []string{"/", "/search?q=robots", "/searching"} {
		u, _ := url.Parse(site.URL + path)
		err := tr.Check(context.Background(), u)
		fmt.Printf("%-18s allowed=%v\n", path, err == nil)
	}
	// Output:
	// /                  allowed=true
	// /search?q=robots   allowed=false
	// /searching         allowed=false
}

// To test a crawler without a network, give the Transport an httpmock
// transport as its base: robots.txt is fetched from the mock like any page.
// Every origin is paced (a second between requests to an origin that
// states no delay): NoDefaultPace keeps such a test fast on the real clock,
// or run it in a testing/synctest bubble, where the pace costs no wall
// time.
func ExampleTransport_httpmock() {
	mock := httpmock.NewMockTransport()
	mock.RegisterResponder("GET", "https://example.com/robots.txt",
		httpmock.NewStringResponder(200, "User-agent: ExampleBot\nDisallow: /admin\n"))
	mock.RegisterResponder("GET", "https://example.com/",
		httpmock.NewStringResponder(200, "home page"))

	tr := robots.NewTransport(mock, "ExampleBot")
	tr.NoDefaultPace = true // a test: no second between requests
	client := &http.Client{Transport: tr}
	for _, u := range []string{"https://example.com/", "https://example.com/admin"} {
		resp, err := client.Get(u)
		if err != nil {
			fmt.Println(errors.Is(err, robots.ErrDisallowed), err)
			continue
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode, u)
	}
	fmt.Println("robots.txt fetches:", mock.GetCallCountInfo()["GET https://example.com/robots.txt"])
	// Output:
	// 200 https://example.com/
	// true Get "https://example.com/admin": robots: robots.txt disallows https://example.com/admin for ExampleBot: "Disallow: /admin" (line 2)
	// robots.txt fetches: 1
}

// A robots.txt that the server cannot serve (here, a 503) refuses the whole
// site until a later fetch succeeds; the error says why.
func ExampleTransport_unreachable() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer site.Close()

	client := &http.Client{Transport: robots.NewTransport(nil, "ExampleBot")}
	_, err := client.Get(site.URL + "/")
	de, _ := errors.AsType[*robots.DisallowedError](err)
	fmt.Println(de.Rule == "", de.Err != nil)
	// Output:
	// true true
}

// By default a Transport spaces the requests to each origin by the
// crawl-delay of the robots.txt group it obeys, here half a second, and counts the
// fetch of robots.txt as a request. Origins do not slow each other down.
func ExampleTransport_crawlDelay() {
	site := newSite("User-agent: *\nCrawl-delay: 0.5\n")
	defer site.Close()

	tr := robots.NewTransport(nil, "ExampleBot")
	client := &http.Client{Transport: tr}
	start := time.Now()
	for _, path := range []string{"/a", "/b", "/c"} {
		resp, err := client.Get(site.URL + path)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
	}
	fmt.Println("at least 1.5s:", time.Since(start) >= 1500*time.Millisecond)
	fmt.Println("requests that waited:", tr.Stats().TurnWaits)
	// Output:
	// at least 1.5s: true
	// requests that waited: 3
}

// With MaxWait set, a request whose origin's turn is further away is not
// sent: RoundTrip returns at once with a *TurnError that matches ErrNotYet
// and says when the turn comes. A crawler puts the URL back in its queue
// for that time and fetches from other sites meanwhile; examples/pool is
// a worker pool that does so.
func ExampleTransport_maxWait() {
	site := newSite("User-agent: *\nCrawl-delay: 0.2\n")
	defer site.Close()

	tr := robots.NewTransport(nil, "ExampleBot")
	tr.MaxWait = 10 * time.Millisecond
	client := &http.Client{Transport: tr}

	// The fetch of robots.txt took the site's turn: the page's turn is
	// 0.2 s later.
	_, err := client.Get(site.URL + "/page")
	fmt.Println("not yet:", errors.Is(err, robots.ErrNotYet))
	te, ok := errors.AsType[*robots.TurnError](err)
	if !ok {
		panic(err)
	}
	fmt.Println("turn at least 0.1s away:", time.Until(te.RetryAt) > 100*time.Millisecond)

	time.Sleep(time.Until(te.RetryAt)) // a crawler would fetch from other sites meanwhile
	resp, err := client.Get(site.URL + "/page")
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "at its turn; requests refused for now:", tr.Stats().NotYet)
	// Output:
	// not yet: true
	// turn at least 0.1s away: true
	// 200 at its turn; requests refused for now: 1
}

// A robots.txt that cannot be reached refuses everything for now: the
// refusal matches ErrUnreachable as well as ErrDisallowed, and says when a
// retry makes sense. A refusal by a rule is final.
func ExampleErrUnreachable() {
	mock := httpmock.NewMockTransport()
	mock.RegisterResponder("GET", "https://down.example/robots.txt", httpmock.NewStringResponder(503, ""))
	mock.RegisterResponder("GET", "https://up.example/robots.txt", httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n"))
	client := &http.Client{Transport: robots.NewTransport(mock, "ExampleBot")}

	for _, u := range []string{"https://down.example/page", "https://up.example/private", "ftp://up.example/file"} {
		_, err := client.Get(u)
		switch de, _ := errors.AsType[*robots.DisallowedError](err); {
		case errors.Is(err, robots.ErrUnreachable):
			fmt.Println(u, "→ retry in about", time.Until(de.RetryAt).Round(time.Minute))
		case errors.Is(err, robots.ErrDisallowed):
			fmt.Println(u, "→ drop:", de.Rule)
		default:
			fmt.Println(u, "→ not a robots.txt refusal")
		}
	}
	// Output:
	// https://down.example/page → retry in about 1m0s
	// https://up.example/private → drop: Disallow: /private
	// ftp://up.example/file → not a robots.txt refusal
}

// A Transport tells what robots.txt says from its cache: one fetch serves the
// sitemaps, the crawl-delay, the verdict for another token and the requests.
func ExampleTransport_Origin() {
	site := newSite("User-agent: *\nCrawl-delay: 2\nDisallow: /drafts/\n\nUser-agent: Google-Extended\nDisallow: /\n\nSitemap: https://example.com/sitemap.xml\n")
	defer site.Close()
	t := robots.NewTransport(nil, "ExampleBot")
	ctx := context.Background()
	u, _ := url.Parse(site.URL + "/article")

	rt, _ := t.Origin(ctx, u)
	fmt.Println(rt.Access, rt.File.Sitemaps())
	d, _ := t.CrawlDelay(ctx, u)
	fmt.Println("crawl-delay", d)
	fmt.Println("ExampleBot allowed:", t.Check(ctx, u) == nil)
	fmt.Println("Google-Extended allowed:", t.Check(robots.WithAgent(ctx, "Google-Extended"), u) == nil)
	fmt.Println("fetches:", t.Stats().FetchSuccess)
	// Output:
	// success [https://example.com/sitemap.xml]
	// crawl-delay 2s
	// ExampleBot allowed: true
	// Google-Extended allowed: false
	// fetches: 1
}

// An agent may be given as a User-Agent string; requests without a
// User-Agent leave with it.
func ExampleNewTransport() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: examplebot\nDisallow: /private\n")
			return
		}
		io.WriteString(w, r.UserAgent())
	}))
	defer site.Close()
	t := robots.NewTransport(nil, "ExampleBot/1.0 (+https://example.com/bot)")
	client := &http.Client{Transport: t}

	resp, _ := client.Get(site.URL + "/page")
	ua, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(string(ua))
	_, err := client.Get(site.URL + "/private")
	fmt.Println(errors.Is(err, robots.ErrDisallowed))
	// Output:
	// ExampleBot/1.0 (+https://example.com/bot)
	// true
}

// One Transport can run several identities: a request under WithAgent is
// decided as that crawler, and leaves with it as its User-Agent.
func ExampleWithAgent() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: NewsBot\nDisallow: /archive\n\nUser-agent: *\nDisallow: /drafts\n")
			return
		}
		io.WriteString(w, r.UserAgent())
	}))
	defer site.Close()
	client := &http.Client{Transport: robots.NewTransport(nil, "ExampleBot/1.0")}

	for _, agent := range []string{"", "NewsBot/2.0"} {
		ctx := context.Background()
		if agent != "" {
			ctx = robots.WithAgent(ctx, agent)
		}
		for _, path := range []string{"/archive", "/drafts"} {
			req, _ := http.NewRequestWithContext(ctx, "GET", site.URL+path, nil)
			resp, err := client.Do(req)
			if err != nil {
				fmt.Println(path, "refused")
				continue
			}
			ua, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			fmt.Println(path, "fetched as", string(ua))
		}
	}
	// Output:
	// /archive fetched as ExampleBot/1.0
	// /drafts refused
	// /archive refused
	// /drafts fetched as NewsBot/2.0
}

// Forget drops what the Transport knows of a site's robots.txt: the next
// request fetches it again, here to find the rules changed.
func ExampleTransport_Forget() {
	var rules atomic.Value
	rules.Store("User-agent: *\nDisallow: /new\n")
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, rules.Load().(string))
		}
	}))
	defer site.Close()
	t := robots.NewTransport(nil, "ExampleBot")
	ctx := context.Background()
	u, _ := url.Parse(site.URL + "/new")

	fmt.Println("allowed:", t.Check(ctx, u) == nil)
	rules.Store("User-agent: *\nAllow: /\n") // the site changes its robots.txt
	fmt.Println("allowed, from the cache:", t.Check(ctx, u) == nil)
	t.Forget(u)
	fmt.Println("allowed, after Forget:", t.Check(ctx, u) == nil)
	// Output:
	// allowed: false
	// allowed, from the cache: false
	// allowed, after Forget: true
}

// UsageOf tells a crawler how it may use what it fetched (see "Usage
// preferences" in the package documentation): the robots.txt of the site, as
// it was when the page was fetched, and the page's own Content-Usage header.
// Uses goes further: the crawler names the uses it makes, and pages the site
// marks "n" for one of them are not fetched at all.
func ExampleUsageOf() {
	site := newSite("Content-Signal: search=yes\n" +
		"User-agent: *\nDisallow: /private\nContent-Usage: train-ai=n\nContent-Usage: /open-data/ train-ai=y\n")
	defer site.Close()

	client := &http.Client{Transport: robots.NewTransport(nil, "ExampleBot")}
	for _, path := range []string{"/article", "/open-data/set"} {
		resp, err := client.Get(site.URL + path)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		pref := robots.UsageOf(resp)
		fmt.Printf("%s: %s; may train: %v\n", path, pref, pref.Get("train-ai") != usage.Disallowed)
	}

	trainer := &http.Client{Transport: &robots.Transport{Agent: "ExampleBot", Uses: []string{"train-ai"}}}
	_, err := trainer.Get(site.URL + "/article")
	fmt.Println(errors.Is(err, robots.ErrDisallowed))
	var de *robots.DisallowedError
	if errors.As(err, &de) {
		fmt.Printf("%s refused by line %d: %s\n", de.Use, de.Line, de.Rule)
	}
	// Output:
	// /article: search=y, train-ai=n; may train: false
	// /open-data/set: search=y, train-ai=y; may train: true
	// true
	// train-ai refused by line 4: Content-Usage: train-ai=n
}
