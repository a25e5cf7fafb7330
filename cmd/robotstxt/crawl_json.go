package main

import (
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
	// X-Robots-Tag that apply to the crawler (robots.RobotsTagOf); a
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
