package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/f9014239/robots/matcher"
)

// lintJSON is lint's -json output.
type lintJSON struct {
	Source      string           `json:"source"`            // file name or robots.txt URL
	Status      int              `json:"status,omitempty"`  // HTTP status, for a URL
	Verdict     string           `json:"verdict,omitempty"` // for a URL: the status, or what crawlers make of it
	Size        int              `json:"size"`              // bytes read
	Truncated   bool             `json:"truncated,omitempty"`
	Diagnostics []diagnosticJSON `json:"diagnostics"`
	Groups      []lintGroupJSON  `json:"groups"`
	Sitemaps    []string         `json:"sitemaps"`
}

type diagnosticJSON struct {
	Line    int    `json:"line"`
	Text    string `json:"text"`
	Message string `json:"message"`
}

type lintGroupJSON struct {
	Line       int      `json:"line"`
	Agents     []string `json:"agents"`
	Rules      int      `json:"rules"`
	CrawlDelay *float64 `json:"crawl_delay,omitempty"` // seconds
}

func runLint(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "write the report as one JSON object")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: robotstxt lint [-json] FILE|URL\n\n"+
			"Reports the lines of a robots.txt file that crawlers ignore and why, its\n"+
			"groups, crawl-delays and sitemaps. For a URL, fetches the site's /robots.txt.\n"+
			"Exit status: 0 nothing to report, 1 diagnostics or a status that stops\n"+
			"crawlers, 2 bad usage or the file cannot be read.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitUsage
	}
	src := fs.Arg(0)

	out := lintJSON{Source: src, Diagnostics: []diagnosticJSON{}, Groups: []lintGroupJSON{}, Sitemaps: []string{}}
	var body []byte
	code := exitOK
	if isURL(src) {
		site, err := parseSite(src)
		if err != nil {
			fmt.Fprintf(stderr, "robotstxt: %v\n", err)
			return exitUsage
		}
		base := baseTransport()
		defer base.CloseIdleConnections()
		f := fetchRobots(ctx, base, site, defaultAgent, lintLimit)
		out.Source, out.Status = f.url.String(), f.status
		switch {
		case errors.Is(f.err, errTooManyRedirects):
			out.Verdict = "more than 5 redirects: crawlers treat the file as unavailable and crawl without restrictions"
			code = exitFlagged
		case f.err != nil && f.status/100 == 2:
			out.Verdict = "reading the body failed: " + errorText(f.err) + "; crawlers treat the site as unreachable and crawl nothing"
			code = exitFlagged
		case f.err != nil:
			fmt.Fprintf(stderr, "robotstxt: %s: %s\n", f.url, errorText(f.err))
			return exitUsage
		case f.status/100 == 2:
			out.Verdict = f.statusMsg
			body, out.Truncated = f.body, f.truncated
		case f.status/100 == 4 && f.status != http.StatusTooManyRequests:
			out.Verdict = "no robots.txt (" + f.statusMsg + "): crawlers crawl without restrictions"
		default:
			out.Verdict = "unreachable (" + f.statusMsg + "): crawlers treat every URL as disallowed until it is fixed"
			code = exitFlagged
		}
		if f.redirects > 0 && f.final != nil && f.err == nil {
			out.Verdict += fmt.Sprintf(" (redirected to %s)", f.final)
		}
	} else {
		var err error
		body, out.Truncated, err = readFile(src, lintLimit)
		if err != nil {
			fmt.Fprintf(stderr, "robotstxt: %v\n", err)
			return exitUsage
		}
	}

	if body != nil {
		rep := matcher.Lint(body)
		out.Size = rep.Size
		for _, d := range rep.Diagnostics {
			if harmless(d) {
				continue
			}
			out.Diagnostics = append(out.Diagnostics, diagnosticJSON{Line: d.Line, Text: d.Text, Message: d.Message})
		}
		for _, g := range rep.Groups {
			j := lintGroupJSON{Line: g.Line, Agents: g.Agents, Rules: g.Rules}
			if g.HasCrawlDelay {
				s := g.CrawlDelay.Seconds()
				j.CrawlDelay = &s
			}
			out.Groups = append(out.Groups, j)
		}
		out.Sitemaps = append(out.Sitemaps, rep.Sitemaps...)
		if len(out.Diagnostics) > 0 {
			code = exitFlagged
		}
	}

	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		enc.Encode(out)
		return code
	}
	printLint(stdout, &out, body != nil)
	return code
}

// printLint writes the report as text. read says whether a file was read.
func printLint(stdout io.Writer, out *lintJSON, read bool) {
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	fmt.Fprintf(w, "%s: ", out.Source)
	if out.Verdict != "" {
		fmt.Fprint(w, out.Verdict)
		if !read {
			fmt.Fprintln(w)
			return
		}
		fmt.Fprint(w, ", ")
	}
	size := strconv.Itoa(out.Size) + " bytes"
	if out.Truncated {
		size = "more than " + size + " (stopped reading)"
	}
	fmt.Fprintf(w, "%s, %s, %s, %s\n", size, count(len(out.Groups), "group"),
		count(len(out.Sitemaps), "sitemap"), count(len(out.Diagnostics), "problem"))

	if len(out.Diagnostics) > 0 {
		fmt.Fprintf(w, "\nproblems:\n")
		for _, d := range out.Diagnostics {
			fmt.Fprintf(w, "  line %d: %s\n", d.Line, d.Message)
			if d.Text != "" {
				fmt.Fprintf(w, "      %s\n", quoteLine(d.Text))
			}
		}
	}
	if len(out.Groups) > 0 {
		fmt.Fprintf(w, "\ngroups:\n")
		for _, g := range out.Groups {
			agents := strings.Join(g.Agents, ", ")
			if agents == "" {
				agents = "(no product token)"
			}
			fmt.Fprintf(w, "  line %d: %s: %s", g.Line, agents, count(g.Rules, "rule"))
			if g.CrawlDelay != nil {
				d := time.Duration(*g.CrawlDelay * float64(time.Second))
				fmt.Fprintf(w, ", crawl-delay %v", d)
			}
			fmt.Fprintln(w)
		}
	}
	if len(out.Sitemaps) > 0 {
		fmt.Fprintf(w, "\nsitemaps:\n")
		for _, s := range out.Sitemaps {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
}

// harmless reports whether a diagnostic of [matcher.Lint] names nothing a
// site owner needs to fix. An empty Disallow is the documented way to allow
// everything (RFC 9309 §2.2.2; "User-agent: *" then "Disallow:" is the most
// common robots.txt there is): matcher.Lint reports it as an ignored rule,
// which it is, but it is not a problem.
func harmless(d matcher.Diagnostic) bool {
	return d.Message == "empty disallow value ignored"
}

// count returns "1 rule", "2 rules".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// quoteLine shows a line of the file, quoted, with invisible and invalid
// characters escaped and at most 120 characters long.
func quoteLine(s string) string {
	r := []rune(s)
	if len(r) > 120 {
		s = string(r[:120]) + "…"
	}
	return strconv.Quote(s)
}
