// Package matcher parses robots.txt files and matches URLs against them, as
// RFC 9309 specifies, with the leniency of Google's reference parser.
//
// The package is pure: it does no I/O and imports no net/http. A [Robots]
// never fails to parse and never panics, whatever the input.
package matcher

import "time"

// Robots is a parsed robots.txt file. It is immutable once returned by
// [Parse] and safe for concurrent use by multiple goroutines.
type Robots struct {
	// implementation pending
}

// Parse parses a robots.txt body. It never fails: lines that are not valid
// are ignored (RFC 9309 §2.2). Only the first 500 KiB of body are read.
func Parse(body []byte) *Robots { return &Robots{} }

// Allowed reports whether the crawler with product token agent may fetch url.
// url is an absolute URL or a path with an optional query, raw or
// percent-encoded.
func (r *Robots) Allowed(agent, url string) bool { return r.Group(agent).Allowed(url) }

// Match is like Allowed but also names the deciding rule.
func (r *Robots) Match(agent, url string) Match { return r.Group(agent).Match(url) }

// Group returns the rules that govern agent: the groups that name it,
// combined, or else the "*" groups, combined, or else an empty group that
// allows everything. It never returns nil.
func (r *Robots) Group(agent string) *Group { return &Group{} }

// Sitemaps returns the values of the sitemap lines, in file order.
func (r *Robots) Sitemaps() []string { return nil }

// Group is the set of rules one crawler obeys. It is immutable and safe for
// concurrent use by multiple goroutines.
type Group struct {
	// implementation pending
}

// Allowed reports whether url may be fetched under g.
func (g *Group) Allowed(url string) bool { return g.Match(url).Allowed }

// Match returns the verdict for url under g and the rule that decided it.
func (g *Group) Match(url string) Match { return Match{Allowed: true} }

// CrawlDelay returns the group's crawl-delay and whether it has one.
func (g *Group) CrawlDelay() (time.Duration, bool) { return 0, false }

// Match is a verdict and the rule that decided it.
type Match struct {
	Allowed bool
	// Rule is the deciding rule as written, with its canonical key, as in
	// "Disallow: /private". It is empty when no rule decided.
	Rule string
	// Line is the 1-based line number of Rule in the file, or 0.
	Line int
}
