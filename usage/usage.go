// Package usage reads the usage preferences of robots.txt files:
// Content-Usage lines, of the IETF AI Preferences drafts
// (draft-ietf-aipref-attach, with the vocabulary of
// draft-ietf-aipref-vocab), and Content-Signal lines, of Cloudflare's
// Content Signals Policy. They say how fetched content may be used, such
// as to train AI models; they never change whether a URL may be fetched.
//
// A usage line's value is an optional path pattern, matched as an allow or
// disallow rule's is, then a statement: a structured-field Dictionary
// (RFC 9651) such as "train-ai=n, search=y" (Content-Signal says yes and
// no: "ai-train=no, search=yes"). A label stated with another value, or a
// statement that does not parse, states nothing.
//
// # Labels
//
// The vocabulary of draft-ietf-aipref-vocab-08 has three labels: train-ai,
// the training of generative AI models (§4.1); ai-use, use as input to a
// generative AI model that its user did not provide, as in AI answers
// grounded on fetched pages (§4.2); and search (§4.3). None implies another.
// For a use that qualifies as search, search overrides the other two: a
// search engine reads search alone, even where train-ai or ai-use is "n"
// (a robots.Transport does so when its Uses name search alone).
// Content-Signal's ai-train is reported as train-ai, its ai-input as ai-use,
// and its use key (immediate, reference or full) as the label "use=<token>".
//
// Any other label is kept as written, for a crawler that knows labels
// defined later; so are the labels of earlier drafts (bots, all, tdm, ai,
// genai, train-genai, ai-output, inference), which -08 no longer defines:
// they state nothing about the three, and [Lint] says what to write
// instead.
//
// Package matcher finds the lines that apply to a URL, as it parses the
// file once; [Preference] is what they state.
package usage

import (
	"slices"
	"strings"

	"github.com/f9014239/robots/internal/usagetab"
)

func init() {
	// How package matcher makes a Preference of the lines it found to
	// apply to a URL.
	usagetab.SetOf(func(t *usagetab.Table, ids [4]usagetab.ID, more []usagetab.ID) Preference {
		return Preference{t: t, ids: ids, more: more}
	})
}

// Kind is the kind of a usage line.
type Kind uint8

const (
	ContentUsage  Kind = iota // a Content-Usage line
	ContentSignal             // a Content-Signal line
)

// String returns the line's key as written canonically: "Content-Usage" or
// "Content-Signal".
func (k Kind) String() string {
	if k == ContentSignal {
		return "Content-Signal"
	}
	return "Content-Usage"
}

// Value is what a preference says about one label.
type Value uint8

const (
	// Unknown: nothing applicable states the label.
	Unknown Value = iota
	// Allowed: the use is allowed ("y", or "yes" in Content-Signal).
	Allowed
	// Disallowed: the use is not allowed ("n", or "no").
	Disallowed
	// Immediate, Reference and Full are the values of Content-Signal's
	// use key, the label "use": how much of a page may be used (to
	// answer the request at hand, nothing stored; indexed and quoted with
	// a link back; summarised or reproduced). Where several apply, the
	// least wins.
	Immediate
	Reference
	Full
)

// String returns "unknown", "y", "n", "immediate", "reference" or "full".
func (v Value) String() string {
	switch v {
	case Allowed:
		return "y"
	case Disallowed:
		return "n"
	case Immediate:
		return "immediate"
	case Reference:
		return "reference"
	case Full:
		return "full"
	}
	return "unknown"
}

// labelUsage returns the label and value of x as Preference reports them.
func labelUsage(x usagetab.LabelValue) (string, Value) {
	if r := usagetab.UseRank(x.Label); r > 0 {
		return "use", Immediate + Value(r-1)
	}
	if x.No {
		return x.Label, Disallowed
	}
	return x.Label, Allowed
}

// Rule is a line that decides a preference.
type Rule struct {
	// Rule is the line as written, with its canonical key, as in
	// "Content-Usage: /ai-ok/ train-ai=y"; for a response's header,
	// "Content-Usage: " and its value.
	Rule string
	// Line is the 1-based line number of Rule in robots.txt, or 0 for
	// a response's header.
	Line int
}

// Label is what a preference says about one label, and the lines that say
// it.
type Label struct {
	Label string // e.g. "train-ai"
	Value Value  // Allowed or Disallowed, or for "use" Immediate, Reference or Full
	Rules []Rule
}

// Preference is the usage preference that applies to one URL for one
// crawler: what the lines that decide it state, combined label by label,
// most restrictive first ("n" over "y", the least use), and with a
// response's own Content-Usage header if one was added with
// [Preference.WithHeader], and lines added with [Preference.WithRule]. Package matcher says which lines decide.
//
// The zero Preference states nothing. A Preference is a small value, safe
// for concurrent use; getting one from package matcher and its String does
// not allocate for an ASCII URL that matching does not allocate for, save
// where lines with paths of equal specificity say different things.
type Preference struct {
	t    *usagetab.Table
	ids  [4]usagetab.ID // lines and sets that decide it; zero for none
	more []usagetab.ID  // further lines that decide it
	hdr  *header
}

// header is what was added to the lines that the matcher found: a
// Content-Usage header of a response, and lines added with WithRule.
type header struct {
	lv    []usagetab.LabelValue // all of it, combined, sorted
	hlv   []usagetab.LabelValue // the header's, sorted; nil for none
	text  string                // the header's field lines as received, joined by ", "
	lines []source              // lines added with WithRule, in the order added
}

// String returns the canonical text of p: the labels stated, sorted, each
// as "label=y" or "label=n" ("use=reference" for Content-Signal's use
// key), joined by ", ", as in "ai-use=n, search=y, train-ai=n"; "" when
// p states nothing.
func (p Preference) String() string {
	if p.hdr != nil || p.more != nil {
		return usagetab.CanonicalText(p.merged())
	}
	var ps [4]uint32
	n := 0
	for _, id := range p.ids {
		if id == 0 {
			continue
		}
		if q := p.t.PrefOf(id); !slices.Contains(ps[:n], q) {
			ps[n] = q
			n++
		}
	}
	switch n {
	case 0:
		return ""
	case 1:
		return p.t.TextOf(ps[0])
	}
	return p.t.TextOfPrefs(ps[:n])
}

// IsZero reports whether p states nothing: String would return "".
func (p Preference) IsZero() bool { return p.String() == "" }

// Get returns what p says about label, e.g. "train-ai".
func (p Preference) Get(label string) Value {
	v := Unknown
	see := func(no bool) {
		if no {
			v = Disallowed
		} else if v == Unknown {
			v = Allowed
		}
	}
	if p.t != nil {
		if l, ok := p.t.LabelID(label); ok {
			p.each(func(q uint32) {
				for _, e := range p.t.EntsOf(q) {
					if e>>1 == uint32(l) {
						see(e&1 != 0)
					}
				}
			})
		}
	}
	if p.hdr != nil {
		for _, x := range p.hdr.lv {
			if x.Label == label {
				see(x.No)
			}
		}
	}
	return v
}

// each calls f with the preference of each line and set that decides p.
func (p *Preference) each(f func(pref uint32)) {
	for _, id := range p.ids {
		if id != 0 {
			f(p.t.PrefOf(id))
		}
	}
	for _, id := range p.more {
		f(p.t.PrefOf(id))
	}
}

// merged returns what p says, label by label.
func (p *Preference) merged() []usagetab.LabelValue {
	var lv []usagetab.LabelValue
	p.each(func(q uint32) { lv = append(lv, p.t.LabelsOf(p.t.EntsOf(q))...) })
	if p.hdr != nil {
		lv = append(lv, p.hdr.lv...)
	}
	return usagetab.MergeLabels(lv)
}

// Use returns how much of the page Content-Signal's use key allows:
// "immediate", "reference" or "full", the least of those that apply; "" if
// none does. (String reports it as the label "use=<token>".)
func (p Preference) Use() string {
	for _, x := range p.merged() {
		if usagetab.UseRank(x.Label) > 0 {
			return x.Label[len("use="):]
		}
	}
	return ""
}

// Labels returns what p says about each label it states, sorted by label,
// with the lines that say it: for a disallowed label, those that disallow
// it; for an allowed one, those that allow it.
func (p Preference) Labels() []Label {
	merged := p.merged()
	out := make([]Label, len(merged))
	for i, x := range merged {
		out[i].Label, out[i].Value = labelUsage(x)
	}
	for _, src := range p.sources() {
		for _, x := range src.lv {
			l, v := labelUsage(x)
			for i := range out {
				if out[i].Label == l && out[i].Value == v {
					out[i].Rules = append(out[i].Rules, src.rule)
				}
			}
		}
	}
	return out
}

// Rules returns the lines that decide p, in file order, then a response's
// header.
func (p Preference) Rules() []Rule {
	srcs := p.sources()
	out := make([]Rule, len(srcs))
	for i, s := range srcs {
		out[i] = s.rule
	}
	return out
}

// source is a deciding line and what it says.
type source struct {
	rule Rule
	lv   []usagetab.LabelValue
}

// sources returns p's deciding lines, in file order, then the header.
func (p *Preference) sources() []source {
	var out []source
	add := func(id usagetab.ID) {
		rule, line := p.t.Rule(id)
		out = append(out, source{Rule{rule, line}, p.t.LabelsOf(p.t.EntsOf(p.t.PrefOf(id)))})
	}
	for _, id := range p.ids {
		switch {
		case id == 0:
		case p.t.IsSet(id):
			for _, m := range p.t.Members(id) {
				add(m)
			}
		default:
			add(id)
		}
	}
	for _, id := range p.more {
		add(id)
	}
	if p.hdr != nil {
		out = append(out, p.hdr.lines...)
	}
	slices.SortStableFunc(out, func(a, b source) int { return a.rule.Line - b.rule.Line })
	if p.hdr != nil && p.hdr.hlv != nil {
		out = append(out, source{Rule{ContentUsage.String() + ": " + p.hdr.text, 0}, p.hdr.hlv})
	}
	return out
}

// WithHeader returns p combined with the Content-Usage header of the
// response that p is for, given as its field lines: each label most
// restrictive first, as draft-ietf-aipref-attach has a response's header
// and robots.txt combine. A header that does not parse as a Dictionary, or
// that states no label, changes nothing.
func (p Preference) WithHeader(lines []string) Preference {
	if len(lines) == 0 {
		return p
	}
	text := strings.Join(lines, ", ")
	lv, err := usagetab.ParseStatement(usagetab.ContentUsage, text)
	if err != nil || len(lv) == 0 {
		return p
	}
	h := header{hlv: lv, text: text}
	if p.hdr != nil {
		h = *p.hdr
		if h.hlv != nil {
			h.hlv = usagetab.MergeLabels(append(slices.Clone(h.hlv), lv...))
			h.text += ", " + text
		} else {
			h.hlv, h.text = lv, text
		}
	}
	p.hdr = h.combined()
	return p
}

// WithRule returns p combined with what another line of robots.txt, rule,
// says of label: v, Allowed or Disallowed, most restrictive first. It is
// how a robots.Transport reports what the group of a policy token says of
// the use that the token stands for
// (draft-kelley-aipref-training-preference-signal): label "train-ai", v
// whether the group allows the URL, and rule the deciding allow or disallow
// line. Labels and Rules name rule for label. Any other v, or an empty
// label, changes nothing.
func (p Preference) WithRule(label string, v Value, rule Rule) Preference {
	if label == "" || v != Allowed && v != Disallowed {
		return p
	}
	var h header
	if p.hdr != nil {
		h = *p.hdr
	}
	h.lines = append(slices.Clip(h.lines), source{rule, []usagetab.LabelValue{{Label: label, No: v == Disallowed}}})
	p.hdr = h.combined()
	return p
}

// combined returns h with lv set to all it says, label by label.
func (h header) combined() *header {
	lv := slices.Clone(h.hlv)
	for _, l := range h.lines {
		lv = append(lv, l.lv...)
	}
	h.lv = usagetab.MergeLabels(lv)
	return &h
}
