package matcher_test

import (
	"fmt"

	"github.com/f9014239/robots/matcher"
)

// Parse a robots.txt file and ask whether a crawler may fetch some URLs.
func ExampleParse() {
	r := matcher.Parse([]byte(`
User-agent: *
Disallow: /private
Allow: /private/press

User-agent: ExampleBot
Disallow: /*.pdf$

Sitemap: https://example.com/sitemap.xml
`))
	fmt.Println(r.Allowed("OtherBot", "https://example.com/private/plans"))
	fmt.Println(r.Allowed("OtherBot", "https://example.com/private/press/2024"))
	fmt.Println(r.Allowed("ExampleBot", "https://example.com/private/plans"))
	fmt.Println(r.Allowed("examplebot", "/docs/manual.pdf"))
	fmt.Println(r.Sitemaps())
	// Output:
	// false
	// true
	// true
	// false
	// [https://example.com/sitemap.xml]
}

// Pick a crawler's group once and match many URLs against it; Match names
// the rule that decided.
func ExampleGroup_Match() {
	r := matcher.Parse([]byte("User-agent: *\nDisallow: /fish\nAllow: /fish/salmon\nCrawl-delay: 2.5\n"))
	g := r.Group("ExampleBot")
	for _, u := range []string{"/fish.html", "/fish/salmon.html", "/catfish", "/robots.txt"} {
		m := g.Match(u)
		fmt.Printf("%-18s allowed=%-5v line %d %q\n", u, m.Allowed, m.Line, m.Rule)
	}
	d, ok := g.CrawlDelay()
	fmt.Println(d, ok)
	// Output:
	// /fish.html         allowed=false line 2 "Disallow: /fish"
	// /fish/salmon.html  allowed=true  line 3 "Allow: /fish/salmon"
	// /catfish           allowed=true  line 0 ""
	// /robots.txt        allowed=true  line 0 ""
	// 2.5s true
}

// URLs and rules are percent-normalised before they are compared, so the
// encoded and raw forms of a path are the same path.
func ExampleRobots_Allowed_percentEncoding() {
	r := matcher.Parse([]byte("User-agent: *\nDisallow: /café\nDisallow: /a%2fb\n"))
	fmt.Println(r.Allowed("x", "https://example.com/caf%C3%A9"))
	fmt.Println(r.Allowed("x", "https://example.com/a%2Fb"))
	fmt.Println(r.Allowed("x", "https://example.com/a/b")) // %2F is not "/"
	// Output:
	// false
	// false
	// true
}

// Lint reports the lines Parse ignores or reads leniently.
func ExampleLint() {
	rep := matcher.Lint([]byte(`Disallow: /tmp
User-agent: Googlebot/2.1
Dissallow: /private
Disallow /drafts
Crawl-delay: soon
Noindex: /secret
`))
	for _, d := range rep.Diagnostics {
		fmt.Printf("%d: %s\n", d.Line, d.Message)
	}
	for _, g := range rep.Groups {
		fmt.Printf("group at line %d for %q: %d rules\n", g.Line, g.Agents, g.Rules)
	}
	// Output:
	// 1: rule before any user-agent line ignored
	// 2: user-agent "Googlebot/2.1" counts as "Googlebot"
	// 3: key "Dissallow" read as "disallow"
	// 4: missing colon; read as "Disallow: /drafts"
	// 5: invalid crawl-delay "soon" ignored: want a non-negative number of seconds
	// 6: unknown key "Noindex" ignored
	// group at line 2 for ["googlebot"]: 2 rules
}
