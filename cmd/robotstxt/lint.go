package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/f9014239/robots/matcher"
)

// lintJSON is lint's -json output.
type lintJSON struct {
	Source      string           `json:"source"`              // file name or robots.txt URL
	Status      int              `json:"status,omitempty"`    // HTTP status, for a URL
	Verdict     string           `json:"verdict,omitempty"`   // for a URL: the status, or what crawlers make of it
	Kind        string           `json:"kind,omitempty"`      // "html", "utf-16", "gzip" or "binary" when the file is not a text robots.txt
	Size        int64            `json:"size"`                // bytes in the file; -1 when over 1 GiB
	Read        int              `json:"read"`                // bytes crawlers read: the file up to the last line end within 500 KiB
	ReadLines   int              `json:"read_lines"`          // the lines crawlers read; the next one is the first they ignore
	Linted      int              `json:"linted"`              // bytes lint read and counted: the file, or up to the last line end within its first 4 MiB
	LintedLines int              `json:"linted_lines"`        // the lines lint read and counted
	Truncated   bool             `json:"truncated,omitempty"` // the file is longer than lint reads: what lint counts past "read" is of the first "linted" bytes only
	Diagnostics []diagnosticJSON `json:"diagnostics"`
	Groups      []lintGroupJSON  `json:"groups"`
	Sitemaps    []string         `json:"sitemaps"` // those crawlers read
	Licenses    []string         `json:"licenses"` // the License lines' URLs (RSL 1.0) that crawlers read
}

type diagnosticJSON struct {
	Line    int    `json:"line"`
	Text    string `json:"text"`
	Message string `json:"message"`
}

type lintGroupJSON struct {
	Line       int      `json:"line"`
	Agents     []string `json:"agents"`
	Rules      int      `json:"rules"`                 // rules crawlers read
	Ignored    int      `json:"ignored,omitempty"`     // rules past the 500 KiB cut, among those lint read
	CrawlDelay *float64 `json:"crawl_delay,omitempty"` // seconds, as crawlers read it
	// RequestRate is the interval of the group's Request-rate, T/n of n/T,
	// in seconds.
	RequestRate *float64 `json:"request_rate_interval,omitempty"`
	Usage       int      `json:"usage_lines,omitempty"` // Content-Usage and Content-Signal lines crawlers read
	// VisitTime is the window of the group's Visit-time, "0600-0845 UTC".
	VisitTime string `json:"visit_time,omitempty"`
}

// maxShown is how many problems lint lists without -all.
const maxShown = 20

func runLint(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lint", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "write the report as one JSON object, with every problem")
	all := fs.Bool("all", false, fmt.Sprintf("list every problem, not only the first %d", maxShown))
	timeout := fs.Duration("timeout", fetchTimeout, "time limit for fetching robots.txt")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: robotstxt lint [-json] [-all] [-timeout D] FILE|URL|-\n\n"+
			"Reports the lines of a robots.txt file that crawlers ignore and why, its\n"+
			"groups, crawl-delays and sitemaps. For a URL, fetches the site's /robots.txt;\n"+
			"\"-\" reads the file from standard input.\n"+
			"Exit status: 0 nothing to report, 1 diagnostics or a status that stops\n"+
			"crawlers, 2 bad usage or the file cannot be read.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitUsage
	}
	if *timeout <= 0 {
		fmt.Fprintf(stderr, "robotstxt: -timeout must be positive\n")
		return exitUsage
	}
	src := fs.Arg(0)

	out := lintJSON{Source: src, Diagnostics: []diagnosticJSON{}, Groups: []lintGroupJSON{}, Sitemaps: []string{}, Licenses: []string{}}
	var body []byte
	code := exitOK
	if isURL(src) {
		site, err := parseSite(src)
		if err != nil {
			fmt.Fprintf(stderr, "robotstxt: %v\n", err)
			return exitUsage
		}
		base := baseTransport(*timeout)
		defer base.CloseIdleConnections()
		f := fetchRobots(ctx, base, site, defaultAgent, lintLimit, *timeout)
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
			body, out.Size = f.body, f.size
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
		body, out.Size, err = readFile(src, stdin, lintLimit)
		if err != nil {
			fmt.Fprintf(stderr, "robotstxt: %v\n", err)
			return exitUsage
		}
	}

	if body != nil {
		lintBody(&out, body)
		if len(out.Diagnostics) > 0 || out.Kind != "" {
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
	shown := maxShown
	switch {
	case *all:
		shown = len(out.Diagnostics)
	case out.Kind != "":
		shown = 0 // the kind of file says it all; -all lists the lines
	}
	printLint(stdout, &out, body != nil, shown)
	return code
}

// lintBody fills in the report of out for body, the first lintLimit bytes
// (or all) of a file of out.Size bytes.
func lintBody(out *lintJSON, body []byte) {
	out.Truncated = out.Size != int64(len(body))
	whole := body // what lint reads and counts
	if out.Truncated {
		// body is the first lintLimit bytes of a longer file: its last
		// line may be cut, as "Disallow: /p" of "Disallow: /private/", and
		// is not counted. (matcher.Truncate would need the byte after.)
		whole = body[:bytes.LastIndexAny(body, "\r\n")+1]
	}
	out.Linted, out.LintedLines = len(whole), lineCount(whole)
	// What crawlers read: the file up to the last line end within 500 KiB.
	read := matcher.Truncate(body, parseLimit)
	out.Read, out.ReadLines = len(read), lineCount(read)
	cut := len(read) < len(body)

	rep := matcher.Lint(whole)
	readRep := rep
	if cut {
		readRep = matcher.Lint(read)
	}
	for _, d := range rep.Diagnostics {
		// matcher.Lint's size warning gives the size of what lint read,
		// not of the file: it is replaced by the one below.
		if strings.HasPrefix(d.Message, "file is ") {
			continue
		}
		out.Diagnostics = append(out.Diagnostics, diagnosticJSON{Line: d.Line, Text: d.Text, Message: d.Message})
	}

	readRules := make(map[int]*matcher.GroupInfo, len(readRep.Groups))
	for i := range readRep.Groups {
		readRules[readRep.Groups[i].Line] = &readRep.Groups[i]
	}
	ignored := 0
	for _, g := range rep.Groups {
		j := lintGroupJSON{Line: g.Line, Agents: g.Agents}
		if r := readRules[g.Line]; r != nil {
			j.Rules, j.Usage = r.Rules, r.Usage
			if r.HasCrawlDelay {
				s := r.CrawlDelay.Seconds()
				j.CrawlDelay = &s
			}
			if r.HasRequestRate {
				s := r.RequestRate.Seconds()
				j.RequestRate = &s
			}
			j.VisitTime = r.VisitTime
		}
		j.Ignored = g.Rules - j.Rules
		ignored += j.Ignored
		out.Groups = append(out.Groups, j)
	}
	out.Sitemaps = append(out.Sitemaps, readRep.Sitemaps...)
	out.Licenses = append(out.Licenses, readRep.Licenses...)
	rules := 0
	for _, g := range out.Groups {
		rules += g.Rules
	}
	out.Kind = kindOf(body, rules)

	if cut {
		msg := fmt.Sprintf("the file is %s; crawlers read only the first 500 KiB (%d bytes), which end at line %d: this line and the rest are ignored",
			sizeText(out.Size), parseLimit, out.ReadLines)
		atLeast := "" // the counts are of what lint read
		if out.Truncated {
			atLeast = "at least "
		}
		if ignored > 0 {
			msg += fmt.Sprintf(", %s%s among them", atLeast, count(ignored, "rule"))
		}
		if n := len(rep.Sitemaps) - len(readRep.Sitemaps); n > 0 {
			msg += fmt.Sprintf(", and %s%s", atLeast, count(n, "sitemap"))
		}
		if out.Truncated {
			msg += fmt.Sprintf(" (lint read only the first 4 MiB, to line %d)", out.LintedLines)
		}
		d := diagnosticJSON{Line: out.ReadLines + 1, Message: msg}
		i, _ := slices.BinarySearchFunc(out.Diagnostics, d.Line, func(e diagnosticJSON, line int) int { return e.Line - line })
		out.Diagnostics = slices.Insert(out.Diagnostics, i, d)
	}
}

// sizeText returns a file size as in "853123 bytes".
func sizeText(size int64) string {
	if size < 0 {
		return "over 1 GiB"
	}
	return count(int(size), "byte")
}

// fileKind tells a file that is not a robots.txt at all, from its first
// bytes: "html", "utf-16", "gzip" or "binary"; "" for a text file.
func fileKind(body []byte) string {
	head := body[:min(len(body), 1024)]
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return "gzip"
	case bytes.HasPrefix(head, []byte{0xff, 0xfe}), bytes.HasPrefix(head, []byte{0xfe, 0xff}):
		return "utf-16"
	}
	if bytes.IndexByte(head, 0) >= 0 {
		// UTF-16 without a byte-order mark has a NUL in every other
		// byte of ASCII text.
		var nul [2]int
		for i, c := range head {
			if c == 0 {
				nul[i%2]++
			}
		}
		if max(nul[0], nul[1]) > len(head)/3 && min(nul[0], nul[1]) < len(head)/20 {
			return "utf-16"
		}
		return "binary"
	}
	text := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(text) > 0 && text[0] == '<' {
		lower := bytes.ToLower(head)
		for _, tag := range []string{"<!doctype html", "<html", "<head", "<body"} {
			if bytes.Contains(lower, []byte(tag)) {
				return "html"
			}
		}
	}
	return ""
}

// kindOf returns [fileKind] of body, in which crawlers read rules rules,
// except that binary data with rules is a robots.txt: one with a run of NUL
// bytes in it, as some servers send, whose rules around them still count.
func kindOf(body []byte, rules int) string {
	kind := fileKind(body)
	if kind == "binary" && rules > 0 {
		return ""
	}
	return kind
}

// kindMessage says what a file of the kind, not a robots.txt, is and what
// crawlers read of it, in which they read rules rules.
func kindMessage(kind string, rules int) string {
	return kindText[kind] + ": crawlers will read " + rulesRead(rules)
}

// notRobotsTxt returns, for body, a robots.txt file read as crawlers read
// it, with groups as [matcher.Lint] gives them, what lint says of a file
// that is not a robots.txt at all (an HTML page, UTF-16 text, gzip or other
// binary data); "" for a robots.txt.
func notRobotsTxt(body []byte, groups []matcher.GroupInfo) string {
	rules := 0
	for _, g := range groups {
		rules += g.Rules
	}
	if kind := kindOf(body, rules); kind != "" {
		return kindMessage(kind, rules)
	}
	return ""
}

// kindText says what a file of the kind is, for the report.
var kindText = map[string]string{
	"html":   "this is an HTML page, not a robots.txt",
	"utf-16": "this is UTF-16 text; robots.txt must be UTF-8",
	"gzip":   "this is gzip-compressed data, not a robots.txt",
	"binary": "this is binary data, not a robots.txt",
}

// printLint writes the report as text, listing at most shown problems. read
// says whether a file was read.
func printLint(stdout io.Writer, out *lintJSON, read bool, shown int) {
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
	rules, ignored := 0, 0
	for _, g := range out.Groups {
		rules += g.Rules
		ignored += g.Ignored
	}
	cut := out.Read < int(out.Size) || out.Size < 0
	rulesText := count(rules, "rule")
	if cut {
		rulesText += " read by crawlers"
	}
	fmt.Fprintf(w, "%s, %s, %s, %s, %s\n", sizeText(out.Size), count(len(out.Groups), "group"),
		rulesText, count(len(out.Sitemaps), "sitemap"), count(len(out.Diagnostics), "problem"))
	if out.Kind != "" {
		fmt.Fprintln(w, kindMessage(out.Kind, rules))
	}
	atLeast := "" // the counts past 500 KiB are of what lint read
	if out.Truncated {
		rest := "rest"
		if out.Size >= 0 {
			rest = sizeText(out.Size-int64(out.Linted)) + " after them"
		}
		fmt.Fprintf(w, "the file is longer than lint reads: it read the first 4 MiB, lines 1–%d (%s), and counted nothing in the %s\n",
			out.LintedLines, count(out.Linted, "byte"), rest)
		atLeast = "at least "
	}
	if cut {
		fmt.Fprintf(w, "crawlers read the first 500 KiB, lines 1–%d (%s, %s), and ignore the rest",
			out.ReadLines, count(out.Read, "byte"), count(rules, "rule"))
		if ignored > 0 {
			fmt.Fprintf(w, " (%s%s)", atLeast, count(ignored, "rule"))
		}
		fmt.Fprintln(w)
	}

	if len(out.Diagnostics) > 0 && shown == 0 {
		fmt.Fprintf(w, "\nproblems of its lines: %d, not listed (-all lists them)\n", len(out.Diagnostics))
	} else if len(out.Diagnostics) > 0 {
		fmt.Fprintf(w, "\nproblems:\n")
		for _, d := range out.Diagnostics[:min(shown, len(out.Diagnostics))] {
			fmt.Fprintf(w, "  line %d: %s\n", d.Line, d.Message)
			if d.Text != "" {
				fmt.Fprintf(w, "      %s\n", quoteLine(d.Text))
			}
		}
		if n := len(out.Diagnostics) - shown; n > 0 {
			fmt.Fprintf(w, "  … and %d more; -all to show all\n", n)
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
			if g.Ignored > 0 {
				fmt.Fprintf(w, " read by crawlers, %s%d more past line %d", atLeast, g.Ignored, out.ReadLines)
			}
			if g.CrawlDelay != nil {
				d := time.Duration(*g.CrawlDelay * float64(time.Second))
				fmt.Fprintf(w, ", crawl-delay %v", d)
			}
			if g.RequestRate != nil {
				d := time.Duration(*g.RequestRate * float64(time.Second))
				fmt.Fprintf(w, ", request-rate one each %v", d)
			}
			if g.Usage > 0 {
				fmt.Fprintf(w, ", %s", count(g.Usage, "usage line"))
			}
			if g.VisitTime != "" {
				fmt.Fprintf(w, ", visits only %s", g.VisitTime)
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
	if len(out.Licenses) > 0 {
		fmt.Fprintf(w, "\nlicenses:\n")
		for _, s := range out.Licenses {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
}

// rulesRead returns "no rules", or "only the 2 rules that happen to parse".
func rulesRead(n int) string {
	if n == 0 {
		return "no rules"
	}
	return "only the " + count(n, "rule") + " that happen to parse"
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
