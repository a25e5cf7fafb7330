package matcher

import (
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/f9014239/robots/usage"
)

// MaxSize is the number of bytes of a robots.txt file that crawlers must
// read at least (RFC 9309 §2.5: 500 KiB). Google ignores what follows, and
// so does the robots package when it fetches a file. [Lint] reports a body
// that is longer.
const MaxSize = 500 << 10

// Report describes how [Parse] reads a robots.txt body: which lines it
// ignores or reads leniently, the groups it finds, the sitemaps and the
// licenses.
type Report struct {
	Diagnostics []Diagnostic // in line order
	Groups      []GroupInfo  // in file order
	Sitemaps    []string
	Licenses    []string // the License lines' absolute URLs (RSL 1.0), as Robots.Licenses
	Size        int      // bytes in the body; a body larger than MaxSize gets a Diagnostic
}

// Diagnostic is a line that Parse ignores, or reads only by being lenient.
type Diagnostic struct {
	Line    int    // 1-based
	Text    string // the line as written, trimmed
	Message string // why the line is ignored, or what leniency was applied
}

// String formats d as "line 3: message: text".
func (d Diagnostic) String() string {
	return fmt.Sprintf("line %d: %s: %q", d.Line, d.Message, d.Text)
}

// GroupInfo describes one group as written in the file: its user-agent lines
// and the rules that follow them.
type GroupInfo struct {
	Line          int      // the line of the group's first user-agent line
	Agents        []string // the product tokens as they count, in lower case, e.g. "googlebot", "*"
	Rules         int      // allow and disallow rules that can match something
	Usage         int      // Content-Usage and Content-Signal lines
	CrawlDelay    time.Duration
	HasCrawlDelay bool
	// RequestRate is the interval of its request-rate lines, T/n of
	// "Request-rate: n/T", the longest if several (see Group.RequestRate).
	RequestRate    time.Duration
	HasRequestRate bool
	// VisitTime is the window of its first valid visit-time line, as
	// "0600-0845 UTC", or "" (see Group.VisitTime).
	VisitTime string
}

// Lint parses body as [Parse] does and reports what it finds. It is slower
// than Parse and meant for people writing robots.txt files and the tools
// that check them. Of Content-Usage and Content-Signal lines, it reports statements that do not parse, keys in upper case,
// values other than y and n (yes and no for Content-Signal), and paths that
// do not start with "/".
func Lint(body []byte) *Report {
	l := &linter{rep: &Report{Size: len(body)}}
	l.s.init(body)
	for l.s.next() {
		l.line(body)
	}
	return l.rep
}

// linter is the state of Lint.
type linter struct {
	rep     *Report
	s       scanner
	cur     *GroupInfo
	inRules bool // cur has had a rule line, so the next user-agent line starts a group
}

// add reports msg about the current line.
func (l *linter) add(msg string) {
	l.rep.Diagnostics = append(l.rep.Diagnostics, Diagnostic{Line: l.s.num, Text: string(trimSpace(l.s.text)), Message: msg})
}

// line lints the line l.s has scanned, of body.
func (l *linter) line(body []byte) {
	s, add := &l.s, l.add
	if s.num == 1 && s.bom > 0 {
		add("byte-order mark skipped")
	}
	if len(body) > MaxSize && s.start <= MaxSize && MaxSize < s.pos {
		add(fmt.Sprintf("file is %d bytes; crawlers read only the first %d (500 KiB), so what follows may be ignored", len(body), MaxSize))
	}
	if !utf8.Valid(s.text) {
		add("not valid UTF-8")
	}
	if s.flags&flagLenientKey != 0 {
		add(fmt.Sprintf("key %q read as %q", s.key, s.field.canonical()))
	}
	if s.flags&flagNoColon != 0 {
		add(fmt.Sprintf("missing colon; read as \"%s: %s\"", s.key, s.value))
	}
	v := s.value
	switch s.field {
	case fieldInvalid:
		add("unparseable line ignored: not \"key: value\"")
	case fieldUnknown:
		add(fmt.Sprintf("unknown key %q ignored", s.key))
	case fieldUserAgent:
		l.userAgent(v)
	case fieldAllow, fieldDisallow:
		switch {
		case l.cur == nil:
			add("rule before any user-agent line ignored")
		case len(v) == 0 && s.field == fieldDisallow:
			// "Disallow:" with no value is the documented way
			// to allow everything (RFC 9309 §2.2.2): no problem.
		case len(v) == 0:
			add(fmt.Sprintf("empty %s value ignored", s.field.canonical()))
		case v[0] != '/' && v[0] != '*':
			add("path does not start with \"/\" or \"*\"; the rule matches nothing")
		default:
			l.cur.Rules++
			if enc, ok := encodePath(v); !ok {
				add(fmt.Sprintf("path has non-ASCII characters or spaces: percent-encode them, as %s", enc))
			}
		}
		l.inRules = true
	case fieldContentUsage, fieldContentSignal:
		for _, msg := range usage.Lint(usageKind(s.field), v) {
			add(msg)
		}
		if l.cur != nil {
			l.cur.Usage++
			l.inRules = true // a rule of its group
		}
	case fieldLicense:
		switch {
		case len(v) == 0:
			add("empty license value ignored")
		case !isAbsURL(v):
			add("license is not an absolute http or https URL; ignored (RSL 1.0)")
		default:
			l.rep.Licenses = append(l.rep.Licenses, string(v))
		}
	case fieldSitemap:
		if len(v) == 0 {
			add("empty sitemap value ignored")
			break
		}
		if u, err := url.Parse(string(v)); err != nil || !u.IsAbs() || u.Host == "" {
			add("sitemap is not an absolute URL")
		}
		l.rep.Sitemaps = append(l.rep.Sitemaps, string(v))
	case fieldCrawlDelay:
		d, ok := parseDelay(v)
		switch {
		case !ok:
			add(fmt.Sprintf("invalid crawl-delay %q ignored: want a non-negative number of seconds", v))
		case l.cur == nil:
			add("crawl-delay before any user-agent line ignored")
		case !l.cur.HasCrawlDelay || d > l.cur.CrawlDelay:
			l.cur.CrawlDelay, l.cur.HasCrawlDelay = d, true
		}
	case fieldRequestRate:
		l.requestRate(v)
	case fieldVisitTime:
		l.visitTime(v)
	}
}

// userAgent lints a user-agent line of value v.
func (l *linter) userAgent(v []byte) {
	if l.cur == nil || l.inRules {
		l.rep.Groups = append(l.rep.Groups, GroupInfo{Line: l.s.num})
		l.cur = &l.rep.Groups[len(l.rep.Groups)-1]
		l.inRules = false
	}
	tok, star := productToken(v)
	switch {
	case len(v) == 0:
		l.add("empty user-agent value; it names no crawler")
	case len(tok) == 0:
		l.add("user-agent value has no product token; it names no crawler")
	case !star && len(tok) < len(v):
		l.add(fmt.Sprintf("user-agent %q counts as %q", v, tok))
	}
	l.cur.Agents = append(l.cur.Agents, strings.ToLower(string(tok)))
}

// encodePath returns path with its non-ASCII bytes (UTF-8 or not) and its
// spaces and tabs percent-encoded, and whether it had none: Google's
// robots.txt documentation asks for paths so written, which every parser
// reads alike. Parse matches either form (it normalises the path), but
// other parsers may not.
func encodePath(path []byte) (string, bool) {
	clean := true
	for _, c := range path {
		if c >= 0x80 || c == ' ' || c == '\t' {
			clean = false
			break
		}
	}
	if clean {
		return "", true
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for _, c := range path {
		if c >= 0x80 || c == ' ' || c == '\t' {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		} else {
			b.WriteByte(c)
		}
	}
	return b.String(), false
}
