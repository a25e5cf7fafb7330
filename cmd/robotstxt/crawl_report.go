package main

// The report of a crawl: a URL's JSON record, and the summary.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/f9014239/robots/usage"
)

// crawlRecord is what crawl -json writes for one URL, one object a line.
type crawlRecord struct {
	URL string `json:"url"`

	// Outcome is "fetched" (a response came, of any status but 429 and
	// 503 after their retries), "given-up" (still 429, 503 or failing
	// after its retries; Status is the last, or Error), "disallowed" (a robots.txt rule refused
	// it), "unreachable" (refused: the site's robots.txt is unreachable) or
	// "error" (not sent, or no response).
	Outcome string `json:"outcome"`

	Status   int    `json:"status,omitempty"`   // of the response, for "fetched"
	Rule     string `json:"rule,omitempty"`     // the rule that refused it, for "disallowed"
	Line     int    `json:"line,omitempty"`     // its line in robots.txt
	Error    string `json:"error,omitempty"`    // why, for "unreachable" and "error"
	Redirect string `json:"redirect,omitempty"` // a redirect's Location
	// RobotsTag is the rules of the response's Robots-Tag and
	// X-Robots-Tag that apply to the crawler (pageterms.RobotsTagOf); a
	// nofollow page's links are not followed.
	RobotsTag []string `json:"robots_tag,omitempty"`
	// Price is what a 402 asks (crawler-price), for "fetched"
	Price string `json:"price,omitempty"`

	// RetryAt, for "unreachable", is when robots.txt is fetched again:
	// until then the site's URLs are refused.
	RetryAt *time.Time `json:"retry_at,omitempty"`

	// Retries is how many times the URL was answered 429 or 503, or
	// failed in a way that may pass, and sent again after its site's pause.
	Retries int `json:"retries,omitempty"`

	// Requeued is how many times the URL was not sent because its site's
	// turn was later (robots.ErrNotYet) and went back in the queue.
	Requeued int `json:"requeued,omitempty"`

	// Usage is the usage preference of a fetched page, as in "search=y,
	// train-ai=n, use=reference": robots.txt's Content-Usage and
	// Content-Signal lines for the URL, with the page's Content-Usage
	// header. Use is the extent Content-Signal's use key allows
	// ("immediate", "reference" or "full"), and UsageSources says which
	// source decided each label.
	Usage        string            `json:"usage,omitempty"`
	Use          string            `json:"use,omitempty"`
	UsageSources []usageSourceJSON `json:"usage_sources,omitempty"`
}

// usageSourceJSON is one label of a usage preference and what decided it:
// lines of robots.txt, the response's Content-Usage header, or both.
type usageSourceJSON struct {
	Label  string   `json:"label"` // e.g. "train-ai", or "use"
	Value  string   `json:"value"` // "y", "n", or for use "immediate", "reference" or "full"
	Lines  []int    `json:"lines,omitempty"`
	Rules  []string `json:"rules,omitempty"`  // those lines, as written
	Header bool     `json:"header,omitempty"` // the response's Content-Usage header says it
}

// crawlJSONHelp documents crawl -json for crawl -h.
const crawlJSONHelp = `
With -json, each URL is one JSON object on standard output, one a line:
  url            the URL
  outcome        "fetched", "given-up" (429, 503 or failing after its retries),
                 "disallowed" (by a rule), "unreachable" (refused: robots.txt
                 unreachable) or "error"
  status         the response's status, when fetched or given up
  retries        how many times it was answered 429 or 503 (or failed) and
                 sent again
  rule, line     the robots.txt rule that refused it, and its line
  error          why, when unreachable or an error
  retry_at       when unreachable: when robots.txt is fetched again
  redirect       a redirect's Location
  robots_tag     the rules of the response's Robots-Tag and X-Robots-Tag
                 for the crawler; a nofollow page's links are not followed
  price          what a 402 asks (crawler-price); nothing is paid
  requeued       how many times it waited in the queue for its site's turn
  usage, use     a fetched page's usage preference, and Content-Signal's use
                 key (immediate, reference or full)
  usage_sources  for each label of usage: the robots.txt lines (and rules)
                 and whether the response's Content-Usage header decided it
The last line is the summary, {"summary": {...}}: urls, fetched, statuses,
disallowed, unreachable, errors, retried, given_up, stopped ("finished",
"max", "timeout", "interrupted", "refused" or "error", with why), left (the
URLs queued when it stopped), robots_txt_fetches, requeued, state, and
resumed (visited and queued: what the runs before left) when it resumed.
The header and the summary in text go to standard error.
`

// usageSources returns each label of u and what decided it.
func usageSources(u usage.Preference) []usageSourceJSON {
	var out []usageSourceJSON
	for _, l := range u.Labels() {
		s := usageSourceJSON{Label: l.Label, Value: l.Value.String()}
		for _, r := range l.Rules {
			if r.Line == 0 {
				s.Header = true
				continue
			}
			s.Lines = append(s.Lines, r.Line)
			s.Rules = append(s.Rules, r.Rule)
		}
		out = append(out, s)
	}
	return out
}

// usageText describes a usage preference with what decided each label, the
// labels decided alike together, as in "ai-use=n, search=y from robots.txt
// line 12 (Content-Signal); train-ai=n from the response's Content-Usage
// header".
func usageText(srcs []usageSourceJSON) string {
	type part struct {
		labels []string
		from   string
	}
	var parts []part
	for _, s := range srcs {
		from := sourceText(s)
		i := slices.IndexFunc(parts, func(p part) bool { return p.from == from })
		if i < 0 {
			parts = append(parts, part{from: from})
			i = len(parts) - 1
		}
		parts[i].labels = append(parts[i].labels, s.Label+"="+s.Value)
	}
	texts := make([]string, len(parts))
	for i, p := range parts {
		texts[i] = strings.Join(p.labels, ", ")
		if p.from != "" {
			texts[i] += " from " + p.from
		}
	}
	return strings.Join(texts, "; ")
}

// sourceText says what decided one label, as in "robots.txt line 12
// (Content-Signal) and the response's Content-Usage header".
func sourceText(s usageSourceJSON) string {
	var from []string
	if len(s.Lines) > 0 {
		lines := make([]string, len(s.Lines))
		for i, l := range s.Lines {
			field, _, _ := strings.Cut(s.Rules[i], ":")
			lines[i] = strconv.Itoa(l) + " (" + field + ")"
		}
		word := "line "
		if len(lines) > 1 {
			word = "lines "
		}
		from = append(from, "robots.txt "+word+strings.Join(lines, ", "))
	}
	if s.Header {
		from = append(from, "the response's Content-Usage header")
	}
	return strings.Join(from, " and ")
}

// Why a crawl stopped: the values of crawlSummary.Stopped.
const (
	stopFinished    = "finished"    // nothing left to crawl
	stopMax         = "max"         // links were left out because of -max
	stopTimeout     = "timeout"     // every URL left waits for a pause beyond -timeout
	stopInterrupted = "interrupted" // SIGINT or SIGTERM
	stopRefused     = "refused"     // every site refused the crawler: nothing fetched
	stopError       = "error"       // the journal could not be written
)

// crawlSummary is what a crawl did, for its last lines; crawl -json writes
// it as the last line of standard output, as {"summary": …}.
type crawlSummary struct {
	URLs        int            `json:"urls"` // visited by this run: fetched, refused or failed
	Seconds     float64        `json:"seconds"`
	Fetched     int            `json:"fetched"`
	Statuses    map[string]int `json:"statuses,omitempty"` // fetched, by status
	Disallowed  int            `json:"disallowed"`         // by a rule
	Unreachable int            `json:"unreachable"`        // refused: robots.txt unreachable
	Errors      int            `json:"errors"`
	Retried     int            `json:"retried"`  // answers 429 or 503, or failures, sent again after the site's pause
	GivenUp     int            `json:"given_up"` // URLs still 429, 503 or failing after their retries

	// Stopped is why the crawl stopped: "finished", "max", "timeout",
	// "interrupted", "refused" or "error" (the journal could not be
	// written); Why says more, for "timeout" and "error".
	Stopped string `json:"stopped"`
	Why     string `json:"why,omitempty"`
	Max     int    `json:"max"`
	Left    int    `json:"left"` // URLs queued or out when it stopped

	RobotsTxtFetches uint64 `json:"robots_txt_fetches"`
	Requeued         uint64 `json:"requeued"` // requests refused for now and queued again

	// State is the state file, if any; Resumed, what this run took over
	// from the runs before it, if it resumed a crawl.
	State   string       `json:"state,omitempty"`
	Resumed *resumedJSON `json:"resumed,omitempty"`
}

// resumedJSON is what a resumed crawl took over.
type resumedJSON struct {
	Visited int `json:"visited"` // URLs visited by the runs before
	Queued  int `json:"queued"`  // URLs queued or out when the last run stopped
}

// summary returns what the crawl did: done URLs visited in d.
func (c *crawler) summary(done int, d time.Duration) crawlSummary {
	s := crawlSummary{
		URLs:        done,
		Seconds:     d.Seconds(),
		Disallowed:  c.refused,
		Unreachable: c.unreachable,
		Errors:      c.errors,
		Retried:     c.retried,
		GivenUp:     c.givenUp,
		Max:         c.max,
		Left:        c.front.Len(),
		Resumed:     c.resumed,
	}
	for status, n := range c.statuses {
		if s.Statuses == nil {
			s.Statuses = make(map[string]int)
		}
		s.Statuses[strconv.Itoa(status)] = n
		s.Fetched += n
	}
	switch {
	case c.interrupted:
		s.Stopped = stopInterrupted
	case c.stopped != nil:
		s.Stopped, s.Why = stopError, c.stopped.Error()
		if _, ok := errors.AsType[*stalledError](c.stopped); ok {
			s.Stopped = stopTimeout
		}
	case s.Fetched == 0 && s.Disallowed+s.Unreachable > 0 && s.Errors == 0:
		s.Stopped = stopRefused
	case c.capped:
		s.Stopped = stopMax
	default:
		s.Stopped = stopFinished
	}
	st := c.tr.Stats()
	s.RobotsTxtFetches = st.FetchSuccess + st.FetchUnavailable + st.FetchUnreachable
	s.Requeued = c.front.Counts().NotYet
	s.State = c.statePath
	return s
}

// printSummary prints s: with -json, as the last line of standard output,
// and as text (on standard error with -json).
func (c *crawler) printSummary(s crawlSummary) {
	if c.json != nil {
		c.json.Encode(struct {
			Summary crawlSummary `json:"summary"`
		}{s})
	}
	var parts []string
	for _, status := range slices.Sorted(maps.Keys(c.statuses)) {
		parts = append(parts, fmt.Sprintf("%d × %d", c.statuses[status], status))
	}
	fmt.Fprintf(c.out, "\n%s in %v: %d fetched", count(s.URLs, "URL"), time.Duration(s.Seconds*float64(time.Second)).Round(10*time.Millisecond), s.Fetched)
	if len(parts) > 0 {
		fmt.Fprintf(c.out, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintf(c.out, ", %d disallowed by rules", s.Disallowed)
	if s.Unreachable > 0 {
		fmt.Fprintf(c.out, ", %d refused: robots.txt unreachable", s.Unreachable)
	}
	fmt.Fprintf(c.out, ", %s", count(s.Errors, "error"))
	if s.Retried > 0 || s.GivenUp > 0 {
		fmt.Fprintf(c.out, ", %s after a 429, a 503 or an error, %d given up", retriesText(s.Retried), s.GivenUp)
	}
	switch s.Stopped {
	case stopFinished:
		fmt.Fprintf(c.out, "; finished")
	case stopMax:
		fmt.Fprintf(c.out, "; stopped at -max %d", s.Max)
	case stopInterrupted:
		fmt.Fprintf(c.out, "; interrupted, %s left", count(s.Left, "URL"))
	case stopTimeout, stopError:
		fmt.Fprintf(c.out, "; stopped: %s; %s left", s.Why, count(s.Left, "URL"))
	case stopRefused:
		fmt.Fprintf(c.out, "; stopped: every site refused the crawler")
	}
	if r := s.Resumed; r != nil {
		fmt.Fprintf(c.out, "; resumed from %s visited and %s left by the runs before", count(r.Visited, "URL"), count(r.Queued, "URL"))
	}
	fmt.Fprintln(c.out)

	st := c.tr.Stats()
	parts = parts[:0]
	for _, p := range []struct {
		n    uint64
		what string
	}{{st.FetchSuccess, "ok"}, {st.FetchUnavailable, "unavailable"}, {st.FetchUnreachable, "unreachable"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	fmt.Fprintf(c.out, "robots.txt fetched %s", count(int(s.RobotsTxtFetches), "time"))
	if len(parts) > 0 {
		fmt.Fprintf(c.out, " (%s)", strings.Join(parts, ", "))
	} else if s.State != "" && s.URLs > 0 {
		fmt.Fprintf(c.out, " (kept in the state file)")
	}
	fmt.Fprintf(c.out, "; %s refused for now and queued again\n", count(int(s.Requeued), "request"))
	c.printResume(s)
}
