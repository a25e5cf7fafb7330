package pageterms

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/f9014239/robots/internal/agenttoken"
)

// RobotsTag is what a response's Robots-Tag and X-Robots-Tag fields say to
// one crawler (see RobotsTagOf): the union of the rules for every crawler
// ("*", or no name) and those for its own product token, as
// draft-illyes-repext-03 combines them. The Transport obeys none of it: a
// response is fetched before its header is read, and what a crawler does
// with the page (index it, quote it, follow its links, train on it) is the
// caller's.
type RobotsTag struct {
	NoIndex   bool // noindex, or none
	NoFollow  bool // nofollow, or none
	NoSnippet bool // nosnippet
	NoAI      bool // noai
	NoImageAI bool // noimageai
	None      bool // none: noindex and nofollow

	// UnavailableAfter is the earliest date of the unavailable_after
	// rules: from then on, the page is as if noindex. Zero if there is
	// none, or if no date could be read (the rule is in Rules all the
	// same, so that a caller may treat it as it sees fit).
	UnavailableAfter time.Time

	// Rules are all the rules that apply, lower-cased, each once, in the
	// order read (Robots-Tag first): "noindex", "max-snippet: 50",
	// "unavailable_after: 2026-12-31", and any other token. At most 64.
	Rules []string

	// Malformed counts the members left out: a Robots-Tag member that is
	// not a Structured Field item, one cut by the read limit, one whose
	// quoting never ends. The complete members before them are read.
	Malformed int
}

// NoIndexAt reports whether the page may not be indexed at t: noindex,
// none, or an unavailable_after date at or before t.
func (r RobotsTag) NoIndexAt(t time.Time) bool {
	return r.NoIndex || (!r.UnavailableAfter.IsZero() && !t.Before(r.UnavailableAfter))
}

// maxRobotsTagRead is how much of each of the two fields is read (all its
// lines together): 16 KiB, twice the 8 KiB draft-illyes-repext-03 asks a
// crawler to parse at least.
const maxRobotsTagRead = 16 << 10

// maxRobotsTagRules bounds RobotsTag.Rules.
const maxRobotsTagRules = 64

// RobotsTagOf returns what resp's Robots-Tag and X-Robots-Tag fields say to
// the crawler that sent it: the product token of its request's User-Agent (a
// robots.Transport sets one on every request it sends: see its UserAgent and
// Agent), or only the rules for every crawler when it has none. It reads only
// the header, and allocates nothing for a response without those fields.
//
// Robots-Tag is read as a Structured Field List (RFC 9651) of product
// tokens, or "*", with the rules as parameters: "*;nosnippet,
// ExampleBot;noindex". A member with no parameters whose token is a rule
// ("noindex") is read as that rule for every crawler, as a site that writes
// the legacy form in the new field means it. X-Robots-Tag is read in its
// legacy form: rules separated by commas, where "botname: rule" gives the
// rule, and those after it in the same line, to that crawler only, and
// "unavailable_after: date" and "max-snippet: n" are rules with values.
// Up to 16 KiB of each field is read; a member cut there, or malformed, is
// left out and counted in Malformed, and the complete members before it
// count.
func RobotsTagOf(resp *http.Response) RobotsTag {
	if resp == nil {
		return RobotsTag{}
	}
	_, has := resp.Header["Robots-Tag"]
	_, hasX := resp.Header["X-Robots-Tag"]
	if !has && !hasX {
		return RobotsTag{}
	}
	agent := ""
	if resp.Request != nil {
		agent = agenttoken.Product(resp.Request.Header.Get("User-Agent"))
	}
	return RobotsTagFor(resp.Header, agent)
}

// RobotsTagFor is RobotsTagOf for a header h and the product token agent
// ("" for the rules for every crawler only).
func RobotsTagFor(h http.Header, agent string) RobotsTag {
	var r RobotsTag
	budget := maxRobotsTagRead
	for _, v := range h.Values("Robots-Tag") {
		members, cut := splitMembers(v, &budget)
		for _, m := range members {
			r.member(m, agent)
		}
		r.Malformed += cut
	}
	budget = maxRobotsTagRead
	for _, v := range h.Values("X-Robots-Tag") {
		members, cut := splitMembers(v, &budget)
		r.legacy(members, agent)
		r.Malformed += cut
	}
	return r
}

// splitMembers splits the field line v at its commas outside quoted
// strings, reading at most *budget bytes of it (less the bytes read, after).
// cut counts what is left out: a member the budget cuts, or one whose quoted
// string never ends.
func splitMembers(v string, budget *int) (members []string, cut int) {
	if *budget <= 0 {
		if strings.TrimSpace(v) != "" {
			return nil, 1
		}
		return nil, 0
	}
	n := min(len(v), *budget)
	*budget -= n
	start, quoted := 0, false
	for i := 0; i < n; i++ {
		switch c := v[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == ',':
			if m := strings.TrimSpace(v[start:i]); m != "" {
				members = append(members, m)
			}
			start = i + 1
		}
	}
	last := strings.TrimSpace(v[start:n])
	switch {
	case last == "":
	case quoted || n < len(v):
		cut = 1 // its quote never ends, or the budget cuts it
	default:
		members = append(members, last)
	}
	return members, cut
}

// member reads one member of a Robots-Tag List.
func (r *RobotsTag) member(m string, agent string) {
	it, err := httpsfv.UnmarshalItem([]string{m})
	if err != nil {
		// Parameter keys are lower case in a Structured Field; a site
		// that writes "ExampleBot;NoIndex" means the rule all the same.
		if it, err = httpsfv.UnmarshalItem([]string{lowerASCII(m)}); err != nil {
			r.Malformed++
			return
		}
	}
	var name string
	switch v := it.Value.(type) {
	case httpsfv.Token:
		name = string(v)
	case string:
		name = v
	default:
		r.Malformed++
		return
	}
	params := it.Params.Names()
	if len(params) == 0 {
		if knownRule(lowerASCII(name)) {
			r.rule(lowerASCII(name), "")
		}
		return
	}
	if name != "*" && (agent == "" || !strings.EqualFold(name, agent)) {
		return
	}
	for _, k := range params {
		v, _ := it.Params.Get(k)
		switch v := v.(type) {
		case bool:
			if v {
				r.rule(k, "")
			}
		case httpsfv.Token:
			r.rule(k, string(v))
		case string:
			r.rule(k, v)
		case int64:
			r.rule(k, strconv.FormatInt(v, 10))
		case time.Time:
			r.rule(k, v.UTC().Format(time.RFC3339))
		default:
			r.rule(k, "")
		}
	}
}

// legacy reads the members of one X-Robots-Tag line.
func (r *RobotsTag) legacy(members []string, agent string) {
	applies := true // before any "botname:", a rule is for every crawler
	for i := 0; i < len(members); i++ {
		m := members[i]
		if strings.Contains(m, ";") && !strings.Contains(m, ":") {
			// the Structured Field form, under the legacy name
			r.member(m, agent)
			continue
		}
		name, value, hasColon := strings.Cut(m, ":")
		name = lowerASCII(strings.TrimSpace(name))
		value = strings.TrimSpace(value)
		if hasColon && !ruleWithValue(name) && !strings.ContainsAny(name, " \t") {
			// "botname: rule"
			applies = name == "*" || (agent != "" && strings.EqualFold(name, agent))
			m = value
			name, value, hasColon = strings.Cut(m, ":")
			name = lowerASCII(strings.TrimSpace(name))
			value = strings.TrimSpace(value)
		}
		if name == "unavailable_after" && i+1 < len(members) && parseTagDate(value).IsZero() {
			// an RFC 850 date holds a comma: "Friday, 25-Jun-10 ..."
			if joined := value + ", " + members[i+1]; !parseTagDate(joined).IsZero() {
				value = joined
				i++
			}
		}
		if !applies || name == "" {
			continue
		}
		if !hasColon {
			value = ""
		}
		r.rule(name, value)
	}
}

// knownRule reports whether name is a rule that robots meta tags and
// X-Robots-Tag use without a value.
func knownRule(name string) bool {
	switch name {
	case "noindex", "nofollow", "none", "nosnippet", "noai", "noimageai", "noarchive",
		"notranslate", "noimageindex", "all", "indexifembedded", "nocache":
		return true
	}
	return false
}

// ruleWithValue reports whether name is a rule written "name: value".
func ruleWithValue(name string) bool {
	switch name {
	case "unavailable_after", "max-snippet", "max-image-preview", "max-video-preview":
		return true
	}
	return false
}

// rule records the rule name (lower case) with value.
func (r *RobotsTag) rule(name, value string) {
	name = lowerASCII(name)
	switch name {
	case "noindex":
		r.NoIndex = true
	case "nofollow":
		r.NoFollow = true
	case "none":
		r.None, r.NoIndex, r.NoFollow = true, true, true
	case "nosnippet":
		r.NoSnippet = true
	case "noai":
		r.NoAI = true
	case "noimageai":
		r.NoImageAI = true
	case "unavailable_after":
		if t := parseTagDate(value); !t.IsZero() && (r.UnavailableAfter.IsZero() || t.Before(r.UnavailableAfter)) {
			r.UnavailableAfter = t
		}
	}
	text := name
	if value != "" {
		text += ": " + truncate(value, 128)
	}
	for _, x := range r.Rules {
		if x == text {
			return
		}
	}
	if len(r.Rules) < maxRobotsTagRules {
		r.Rules = append(r.Rules, text)
	}
}

// tagDateLayouts are the date forms unavailable_after is written in: RFC
// 3339 and ISO 8601 dates, RFC 822, 850 and 1123, and the forms Google's
// documentation shows.
var tagDateLayouts = []string{
	time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02",
	time.RFC1123, time.RFC1123Z, time.RFC850, time.RFC822, time.RFC822Z, time.ANSIC,
	"2 Jan 2006 15:04:05 MST", "02 Jan 2006 15:04:05 MST", "2 January 2006 15:04:05 MST",
	"Monday, 02-Jan-06 15:04:05 MST", "2 Jan 2006", "2006-01-02 15:04:05",
}

// parseTagDate reads an unavailable_after date, or returns the zero time.
func parseTagDate(s string) time.Time {
	s = strings.TrimSpace(strings.Trim(s, `"`))
	if s == "" || len(s) > 64 {
		return time.Time{}
	}
	for _, l := range tagDateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

// lowerASCII returns s with its ASCII letters in lower case and every other
// byte as it is (strings.ToLower would turn an invalid UTF-8 byte into three).
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
