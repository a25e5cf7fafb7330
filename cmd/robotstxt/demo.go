package main

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// demoCrawlDelay is the Crawl-delay of the demo site's robots.txt. Tests
// shorten it.
var demoCrawlDelay = time.Second

// demoRobots returns the demo site's robots.txt, for the site at host.
//
// The crawler's own group (robotstxt, the default -agent) shows an Allow
// that beats a shorter Disallow and two wildcard rules; BadBot is shut out;
// every other crawler obeys "*", which is not combined with the named groups.
// The crawler's group also states usage preferences, in Content-Usage lines
// (the IETF AIPREF drafts, draft-ietf-aipref-attach and
// draft-ietf-aipref-vocab) and a Content-Signal line (Cloudflare's Content
// Signals Policy): no AI training but on the blog, search, no AI answers,
// and pages used for reference only (Content-Signal's use key). The blog's
// first post says no training in its own Content-Usage header, which beats
// the blog's train-ai=y: the crawl says which source decided each label.
func demoRobots(host string, crawlDelay time.Duration) string {
	delay := strconv.FormatFloat(crawlDelay.Seconds(), 'f', -1, 64)
	return `# robots.txt of the robotstxt demo site

User-agent: robotstxt
User-agent: examplebot
Allow: /private/press/
Disallow: /private/
Disallow: /*?sort=
Disallow: /*.pdf$
Crawl-delay: ` + delay + `
Content-Usage: train-ai=n
Content-Usage: /blog/ train-ai=y
Content-Signal: search=yes, ai-input=no, use=reference

User-agent: BadBot
Disallow: /

User-agent: *
Disallow: /private/
Disallow: /blog/
Crawl-delay: ` + delay + `

Sitemap: http://` + host + `/sitemap.xml
`
}

// demoPages are the HTML pages of the demo site, by path. Every link is to
// the site itself except one, to a name that cannot resolve (RFC 2606
// .invalid), which the crawler must not follow.
var demoPages = map[string]string{
	"/": `<h1>Demo site</h1>
<ul>
<li><a href="/blog/">Blog</a>
<li><a href="/private/">Staff only</a>
<li><a href="/private/press/launch">Press release</a>
<li><a href="http://elsewhere.invalid/">Another site</a>
<li><a href="/gone">A page that is gone</a>
</ul>`,
	"/blog/": `<h1>Blog</h1>
<p>Sort by <a href="/blog/?sort=date">date</a> or <a href="?sort=title">title</a>.
<p><a href="first-post#comments">First post</a>`,
	"/blog/first-post": `<h1>First post</h1>
<p>The <a href="/files/report.pdf">full report</a> (PDF).
<p><a href="/">Home</a>, <a href="/private/team">our team</a>.`,
	"/private/":     `<h1>Staff only</h1>`,
	"/private/team": `<h1>Team</h1>`,
	"/private/press/launch": `<h1>We have launched</h1>
<p><a href="/blog/">Read the blog</a>.`,
}

// demoHandler serves the demo site.
func demoHandler(crawlDelay time.Duration) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /robots.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, demoRobots(r.Host, crawlDelay))
	})
	mux.HandleFunc("GET /sitemap.xml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
		fmt.Fprint(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`+"\n")
		for _, p := range []string{"/", "/blog/", "/blog/first-post", "/private/press/launch"} {
			fmt.Fprintf(w, "  <url><loc>http://%s%s</loc></url>\n", r.Host, p)
		}
		fmt.Fprint(w, "</urlset>\n")
	})
	mux.HandleFunc("GET /files/report.pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		fmt.Fprint(w, "%PDF-1.4\n")
	})
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		page, ok := demoPages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.URL.Path == "/blog/first-post" {
			w.Header().Set("Content-Usage", "train-ai=n")
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		title, _, _ := strings.Cut(strings.TrimPrefix(page, "<h1>"), "</h1>")
		fmt.Fprintf(w, "<!DOCTYPE html>\n<title>%s</title>\n%s\n", title, page)
	})
	return mux
}

// startDemo serves the demo site on a free port of 127.0.0.1 and returns its
// URL and a function that stops it.
func startDemo(crawlDelay time.Duration) (site *url.URL, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{
		Handler:           demoHandler(crawlDelay),
		ReadHeaderTimeout: 5 * time.Second,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Serve returns http.ErrServerClosed after stop, or an accept
		// error, which the crawl then reports as connection errors.
		srv.Serve(ln)
	}()
	stop = func() {
		srv.Close()
		<-done
	}
	return &url.URL{Scheme: "http", Host: ln.Addr().String(), Path: "/"}, stop, nil
}
