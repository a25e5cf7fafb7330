package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/matcher"
)

// defaultAgent is the product token the command uses when -agent is not
// given. It names no group in most files, so the "*" group applies.
const defaultAgent = "robotstxt"

// maxURLLine bounds a line of standard input read by check.
const maxURLLine = 64 << 10

// verdict is one line of check's output, and its JSON form.
type verdict struct {
	URL     string      `json:"url"`
	Agent   string      `json:"agent"`
	Allowed bool        `json:"allowed"`
	Rule    string      `json:"rule,omitempty"` // the deciding rule, as in "Disallow: /private"
	Line    int         `json:"line,omitempty"` // its line number
	Groups  []groupJSON `json:"groups"`         // the groups that applied; empty when none did
	Reason  string      `json:"reason,omitempty"`
	// Usage is the usage preference of an allowed URL, from its
	// Content-Usage (IETF AIPREF) and Content-Signal lines, as in
	// "search=y, train-ai=n, use=reference"; UsageRules the lines that
	// decide it; Use the extent Content-Signal's use key allows
	// ("immediate", "reference" or "full"). All empty when robots.txt
	// states none for the URL.
	// Licenses are the URLs of the file's License lines (RSL 1.0), which
	// a crawler is asked to retrieve and comply with.
	Licenses   []string        `json:"licenses,omitempty"`
	Usage      string          `json:"usage,omitempty"`
	UsageRules []usageRuleJSON `json:"usage_rules,omitempty"`
	Use        string          `json:"use,omitempty"`
}

type usageRuleJSON struct {
	Line int    `json:"line"`
	Rule string `json:"rule"`
}

// setUsage sets v's usage preference from robots, for an allowed URL.
func (v *verdict) setUsage(r *matcher.Robots, agent, target string) {
	if r == nil || !v.Allowed {
		return
	}
	u := r.Group(agent).Usage(target)
	v.Usage = u.String()
	if v.Usage == "" {
		return
	}
	v.Use = u.Use()
	// The lines that decided what each label says (as crawl's
	// usage_sources): not every line that applied, as a line that ties
	// with one before and states nothing more, or one overridden (a
	// train-ai=y that a line saying no overrides).
	for _, l := range u.Labels() {
		for _, ur := range l.Rules {
			r := usageRuleJSON{Line: ur.Line, Rule: ur.Rule}
			if !slices.Contains(v.UsageRules, r) {
				v.UsageRules = append(v.UsageRules, r)
			}
		}
	}
	slices.SortFunc(v.UsageRules, func(a, b usageRuleJSON) int { return cmp.Compare(a.Line, b.Line) })
}

type groupJSON struct {
	Line   int      `json:"line"`
	Agents []string `json:"agents"`
}

// source is a parsed robots.txt file and what is known of how it was found.
type source struct {
	robots *matcher.Robots // nil when there is no file: nothing is restricted, or everything is
	groups []matcher.GroupInfo
	reason string // why there is no file, or ""
}

func newSource(body []byte) *source {
	return &source{robots: matcher.Parse(body), groups: matcher.Lint(body).Groups}
}

// sourceOf describes a robots.txt fetch seen by a recorder.
func sourceOf(f *fetched) *source {
	switch {
	case f.err != nil:
		return &source{reason: "robots.txt unreachable: " + errorText(f.err)}
	case f.status/100 == 2:
		return newSource(f.body)
	case f.status/100 == 4 && f.status != http.StatusTooManyRequests:
		return &source{reason: "robots.txt is unavailable (" + f.statusMsg + "): no restrictions"}
	}
	return &source{reason: "robots.txt unreachable (" + f.statusMsg + ")"}
}

// applied returns the groups of s that the crawler with product token agent
// obeys: those the matcher combines for it (RFC 9309 §2.2.1), each with the
// product tokens of its user-agent lines. A group that s.groups does not
// describe is named by the token it was obeyed for: agent, or "*".
func (s *source) applied(agent string) []groupJSON {
	out := []groupJSON{}
	if s.robots == nil {
		return out
	}
	g := s.robots.Group(agent)
	named := []string{strings.ToLower(agent)}
	if g == s.robots.Group("*") {
		named = []string{"*"}
	}
	for _, line := range g.Lines() {
		agents := named
		if i := slices.IndexFunc(s.groups, func(gi matcher.GroupInfo) bool { return gi.Line == line }); i >= 0 {
			agents = s.groups[i].Agents
		}
		out = append(out, groupJSON{Line: line, Agents: agents})
	}
	return out
}

func runCheck(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	agent := fs.String("agent", defaultAgent, "the crawler's product `token`, or a User-Agent header that names one")
	asJSON := fs.Bool("json", false, "write one JSON object per URL, one a line")
	timeout := fs.Duration("timeout", fetchTimeout, "time limit for fetching a site's robots.txt")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: robotstxt check [-agent TOKEN] [-json] [-timeout D] FILE|URL|- [URL...]\n\n"+
			"Prints whether each URL is allowed under the robots.txt FILE (\"-\" for standard\n"+
			"input), or under the robots.txt of the site at URL (http or https). Each URL\n"+
			"to check is absolute or a path starting with \"/\". Without URLs, reads them\n"+
			"from standard input, one a line.\n"+
			"Exit status: 0 all allowed, 1 any disallowed, 2 bad usage or unreadable input.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	token, err := agentToken(*agent)
	if err != nil {
		fmt.Fprintf(stderr, "robotstxt: %v\n", err)
		return exitUsage
	}
	if *timeout <= 0 {
		fmt.Fprintf(stderr, "robotstxt: -timeout must be positive\n")
		return exitUsage
	}
	src, targets := fs.Arg(0), fs.Args()[1:]
	if src == "-" && len(targets) == 0 {
		fmt.Fprintf(stderr, "robotstxt: the robots.txt file is read from standard input, so the URLs must be arguments\n")
		return exitUsage
	}

	var c checker
	if isURL(src) {
		site, err := parseSite(src)
		if err != nil {
			fmt.Fprintf(stderr, "robotstxt: %v\n", err)
			return exitUsage
		}
		sc := newSiteChecker(site, *agent, token, *timeout)
		sc.warn = func(msg string) { fmt.Fprintf(stderr, "robotstxt: warning: %s\n", msg) }
		defer sc.close()
		c = sc
	} else {
		body, size, err := readFile(src, stdin, parseLimit+1)
		if err != nil {
			fmt.Fprintf(stderr, "robotstxt: %v\n", err)
			return exitUsage
		}
		name := src
		if src == "-" {
			name = "standard input"
		}
		if size != int64(len(body)) || len(body) > parseLimit {
			body = matcher.Truncate(body, parseLimit)
			fmt.Fprintf(stderr, "robotstxt: warning: %s is %s; like crawlers, check reads only the first 500 KiB, to line %d, and ignores the rest\n",
				name, sizeText(size), lineCount(body))
		}
		fc := &fileChecker{src: newSource(body), agent: token}
		if msg := notRobotsTxt(body, fc.src.groups); msg != "" {
			fmt.Fprintf(stderr, "robotstxt: warning: %s: %s\n", name, msg)
		}
		c = fc
	}

	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	code := exitOK
	one := func(target string) {
		v, err := c.check(ctx, target)
		if err != nil {
			w.Flush()
			fmt.Fprintf(stderr, "robotstxt: %s: %v\n", target, err)
			code = exitUsage
			return
		}
		if !v.Allowed && code == exitOK {
			code = exitFlagged
		}
		if *asJSON {
			w.Flush()
			enc.Encode(v)
		} else {
			printVerdict(w, v)
		}
	}

	if len(targets) > 0 {
		for _, t := range targets {
			one(t)
		}
		return code
	}
	err = eachLine(stdin, maxURLLine, func(n int, line []byte, tooLong bool) bool {
		if tooLong {
			w.Flush()
			fmt.Fprintf(stderr, "robotstxt: standard input, line %d: longer than %d KiB, skipped\n", n, maxURLLine>>10)
			code = exitUsage
			return true
		}
		t := strings.TrimSpace(string(line))
		if t == "" || strings.HasPrefix(t, "#") {
			return true
		}
		one(t)
		w.Flush() // stream: a verdict per line read
		return ctx.Err() == nil
	})
	if err != nil {
		w.Flush()
		fmt.Fprintf(stderr, "robotstxt: reading URLs: %v\n", err)
		return exitUsage
	}
	return code
}

// eachLine calls fn with each line of r and its 1-based number, without the
// line end, until fn returns false. A line longer than max bytes is not kept:
// fn gets its number and tooLong, and the lines after it follow.
func eachLine(r io.Reader, max int, fn func(n int, line []byte, tooLong bool) bool) error {
	br := bufio.NewReaderSize(r, max)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		tooLong := false
		for errors.Is(err, bufio.ErrBufferFull) {
			tooLong = true
			_, err = br.ReadSlice('\n') // skip the rest of the line
		}
		if len(line) == 0 && err == io.EOF {
			return nil
		}
		if err != nil && err != io.EOF {
			return err
		}
		if tooLong {
			line = nil
		}
		if !fn(n, bytes.TrimRight(line, "\r\n"), tooLong) || err == io.EOF {
			return nil
		}
	}
}

// checker gives the verdict for one URL.
type checker interface {
	check(ctx context.Context, target string) (*verdict, error)
}

// fileChecker checks URLs against a local robots.txt file.
type fileChecker struct {
	src   *source
	agent string
}

func (c *fileChecker) check(_ context.Context, target string) (*verdict, error) {
	if _, err := parseTarget(target); err != nil {
		return nil, err
	}
	m := c.src.robots.Group(c.agent).Match(target)
	v := &verdict{
		URL:     target,
		Agent:   c.agent,
		Allowed: m.Allowed,
		Rule:    m.Rule,
		Line:    m.Line,
		Groups:  c.src.applied(c.agent),
	}
	v.Licenses = c.src.robots.Licenses()
	v.setUsage(c.src.robots, c.agent, target)
	return v, nil
}

// siteChecker checks URLs with a [robots.Transport], which fetches and caches
// the robots.txt of each origin. The rules and their line numbers are those
// of the Transport's own copy ([robots.Transport.Origin]). A recorder
// beneath the Transport sees that one fetch too, for what the copy does not
// hold: the product tokens of each group's user-agent lines, and the status
// of a robots.txt that is unavailable.
type siteChecker struct {
	site    *url.URL
	agent   string           // the product token
	warn    func(msg string) // reports a robots.txt that is not one; may be nil
	rec     *recorder
	tr      *robots.Transport
	fetches map[string]*source // what the recorder saw of the last fetch, by origin
}

// newSiteChecker returns a siteChecker for the crawler that agent names (a
// token or a User-Agent header, sent as given), whose product token is token.
func newSiteChecker(site *url.URL, agent, token string, timeout time.Duration) *siteChecker {
	rec := &recorder{base: baseTransport(timeout), limit: parseLimit}
	tr := robots.NewTransport(rec, agent)
	tr.FetchTimeout = timeout
	return &siteChecker{
		site:    site,
		agent:   token,
		rec:     rec,
		tr:      tr,
		fetches: make(map[string]*source),
	}
}

func (c *siteChecker) close() { c.rec.CloseIdleConnections() }

func (c *siteChecker) check(ctx context.Context, target string) (*verdict, error) {
	ref, err := parseTarget(target)
	if err != nil {
		return nil, err
	}
	u := c.site.ResolveReference(ref)
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("not an http or https URL")
	}
	err = c.tr.Check(ctx, u)
	de, refused := errors.AsType[*robots.DisallowedError](err)
	if err != nil && !refused {
		return nil, err
	}
	rt, err := c.tr.Origin(ctx, u) // the copy Check decided by: no second fetch
	if err != nil {
		return nil, err
	}
	origin := originOf(u)
	if f := c.rec.take(); f != nil {
		c.fetches[origin] = sourceOf(f)
		if src := c.fetches[origin]; src.robots != nil && c.warn != nil {
			if msg := notRobotsTxt(f.body, src.groups); msg != "" {
				where := f.url
				if f.final != nil {
					where = f.final
				}
				c.warn(where.String() + ": " + msg)
			}
		}
	}
	seen := c.fetches[origin]
	if seen == nil {
		seen = &source{}
	}
	src := &source{robots: rt.File, groups: seen.groups}
	switch rt.Access {
	case fleet.AccessUnavailable:
		src.reason = "robots.txt is unavailable: no restrictions"
		if strings.HasPrefix(seen.reason, "robots.txt is unavailable") {
			src.reason = seen.reason // with its status
		}
	case fleet.AccessUnreachable:
		src.reason = "robots.txt unreachable"
		if rt.Err != nil {
			src.reason += ": " + errorText(rt.Err)
		}
	}

	v := &verdict{URL: u.String(), Agent: c.agent, Allowed: !refused, Groups: src.applied(c.agent), Licenses: rt.Licenses}
	if refused {
		v.Rule, v.Line = de.Rule, de.Line
		if v.Rule == "" {
			v.Reason = src.reason
			if de.Err != nil {
				v.Reason = "robots.txt unreachable: " + errorText(de.Err)
			}
			if v.Reason == "" {
				v.Reason = "robots.txt unreachable"
			}
		}
		return v, nil
	}
	if src.robots != nil {
		if m := src.robots.Group(c.agent).Match(u.String()); m.Allowed {
			v.Rule, v.Line = m.Rule, m.Line
		}
	}
	v.setUsage(src.robots, c.agent, u.String())
	v.Reason = src.reason
	return v, nil
}

// parseTarget parses a URL to check: an absolute URL, or a reference
// whose path, if any, starts with "/". A path without its leading "/"
// ("private/a", or a host such as "example.com/a") is an error: matched as
// it is, it would start no rule's path, and resolved against a site, it
// would depend on the site URL's last segment.
func parseTarget(target string) (*url.URL, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "" && u.Host == "" && u.Path != "" && !strings.HasPrefix(u.Path, "/") {
		hint := "/" + target
		if host, _, _ := strings.Cut(u.Path, "/"); strings.Contains(host, ".") {
			hint += " or https://" + target
		}
		return nil, fmt.Errorf("the path does not start with \"/\": give a path from the site's root or an absolute URL, as in %s", hint)
	}
	return u, nil
}

// printVerdict writes v as one line of text.
func printVerdict(w io.Writer, v *verdict) {
	word := "allowed"
	if !v.Allowed {
		word = "disallowed"
	}
	var why string
	switch {
	case v.Rule != "":
		why = v.Rule + " (line " + strconv.Itoa(v.Line) + ")"
	case v.Reason != "":
		why = v.Reason
	default:
		why = "no rule matched"
	}
	if v.Reason == "" || v.Rule != "" {
		why += "; " + groupText(v.Groups)
	}
	if v.Usage != "" {
		lines := make([]string, 0, len(v.UsageRules))
		for _, r := range v.UsageRules {
			if r.Line > 0 {
				lines = append(lines, strconv.Itoa(r.Line))
			}
		}
		why += "; usage " + v.Usage
		if len(lines) == 1 {
			why += " (line " + lines[0] + ")"
		} else if len(lines) > 1 {
			why += " (lines " + strings.Join(lines, ", ") + ")"
		}
	}
	if len(v.Licenses) > 0 {
		why += "; license " + strings.Join(v.Licenses, ", ")
	}
	fmt.Fprintf(w, "%-10s  %s  %s\n", word, v.URL, why)
}

// groupText describes the groups that applied.
func groupText(gs []groupJSON) string {
	if len(gs) == 0 {
		return "no group applies"
	}
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = strings.Join(g.Agents, ", ") + " (line " + strconv.Itoa(g.Line) + ")"
	}
	if len(gs) == 1 {
		return "group " + parts[0]
	}
	return "groups " + strings.Join(parts, " + ")
}

// errorText returns err's message without the "Get URL:" prefix that
// http.Client adds.
func errorText(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	return err.Error()
}
