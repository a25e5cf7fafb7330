package usagetab

import (
	"slices"
	"strings"

	"github.com/dunglas/httpsfv"
)

// Kind is the kind of a usage line, as usage.Kind, whose values it shares.
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

// Split splits a usage line's value into its path pattern, if any, and its
// statement: a value that starts with '/' or '*' starts with a path, which
// ends at the first white space.
func Split(v []byte) (path []byte, hasPath bool, stmt []byte) {
	if len(v) == 0 || v[0] != '/' && v[0] != '*' {
		return nil, false, v
	}
	i := 0
	for i < len(v) && v[i] != ' ' && v[i] != '\t' {
		i++
	}
	path, stmt = v[:i], v[i:]
	for len(stmt) > 0 && (stmt[0] == ' ' || stmt[0] == '\t') {
		stmt = stmt[1:]
	}
	return path, true, stmt
}

// LabelValue is one label of a preference and whether it is disallowed
// ("n"); a label that is allowed has No false.
type LabelValue struct {
	Label string
	No    bool
}

// ParseStatement reads a statement of kind k: an RFC 9651 Dictionary whose
// members that are the tokens y or n (yes or no for Content-Signal) state
// a label. It returns the labels stated, sorted, each once; a label stated
// twice (Content-Signal's ai-train and train-ai) is disallowed if either
// says so. It fails when the statement does not parse, which states
// nothing.
func ParseStatement(k Kind, stmt string) ([]LabelValue, error) {
	d, err := httpsfv.UnmarshalDictionary([]string{stmt})
	if err != nil {
		return nil, err
	}
	var lv []LabelValue
	for _, name := range d.Names() {
		m, _ := d.Get(name)
		it, ok := m.(httpsfv.Item)
		if !ok {
			continue // an inner list: unknown
		}
		tok, ok := it.Value.(httpsfv.Token)
		if !ok {
			continue // a boolean, string, number, …: unknown
		}
		if k == ContentSignal && name == "use" {
			// How much of a page may be used, not whether: kept as
			// the label "use=<token>", the least of which wins.
			if UseRank("use="+string(tok)) > 0 {
				lv = append(lv, LabelValue{Label: "use=" + string(tok)})
			}
			continue
		}
		var no bool
		switch {
		case k == ContentUsage && tok == "y", k == ContentSignal && tok == "yes":
		case k == ContentUsage && tok == "n", k == ContentSignal && tok == "no":
			no = true
		default:
			continue // any other token: unknown
		}
		if k == ContentSignal {
			name = SignalLabel(name)
		}
		lv = append(lv, LabelValue{name, no})
	}
	return MergeLabels(lv), nil
}

// SignalLabel returns the label that a Content-Signal key states: its
// ai-train is the vocabulary's train-ai (draft-ietf-aipref-vocab-08 §4.1)
// and its ai-input, use as live input to AI answers, the vocabulary's
// ai-use (§4.2); any other key is itself.
func SignalLabel(key string) string {
	switch key {
	case "ai-train":
		return "train-ai"
	case "ai-input":
		return "ai-use"
	}
	return key
}

// Legacy returns, for a label of a draft before draft-ietf-aipref-vocab-08
// that -08 no longer defines, what to write instead, and whether label is
// such a label. Under -08 such a label is unknown: it is kept as written
// and states nothing about any use of -08. Content-Signal's own names in
// a Content-Usage line (ai-train, ai-input) are reported here too.
func Legacy(label string) (instead string, ok bool) {
	switch label {
	case "bots", "all", "tdm":
		// Broad categories of earlier drafts: -08 has no label that
		// covers every use.
		return "each use it covered: train-ai, ai-use and search", true
	case "ai", "genai", "train-genai", "ai-train":
		return "train-ai", true // §4.1: training of generative AI models
	case "ai-output", "inference", "ai-input":
		return "ai-use", true // §4.2: use as input to a generative AI model
	}
	return "", false
}

// MergeLabels sorts lv by label and combines each label's values, most
// restrictive first: "n" over "y", and the least use of Content-Signal's
// use key.
func MergeLabels(lv []LabelValue) []LabelValue {
	slices.SortFunc(lv, func(a, b LabelValue) int { return strings.Compare(a.Label, b.Label) })
	out := lv[:0]
	for _, x := range lv {
		if n := len(out); n > 0 && out[n-1].Label == x.Label {
			out[n-1].No = out[n-1].No || x.No
			continue
		}
		out = append(out, x)
	}
	return leastUse(out)
}

// UseRank returns the rank of a label that Content-Signal's use key states,
// "use=immediate" < "use=reference" < "use=full", from 1; 0 for any other
// label.
func UseRank(label string) int {
	switch label {
	case "use=immediate":
		return 1
	case "use=reference":
		return 2
	case "use=full":
		return 3
	}
	return 0
}

// leastUse returns lv, sorted labels, with only the least of the labels of
// Content-Signal's use key, if it holds several. It reuses lv.
func leastUse(lv []LabelValue) []LabelValue {
	least, n := 0, 0
	for _, x := range lv {
		if r := UseRank(x.Label); r > 0 {
			n++
			if least == 0 || r < least {
				least = r
			}
		}
	}
	if n < 2 {
		return lv
	}
	out := lv[:0]
	for _, x := range lv {
		if r := UseRank(x.Label); r == 0 || r == least {
			out = append(out, x)
			if r != 0 {
				least = -1 // once
			}
		}
	}
	return out
}

// CanonicalText returns the canonical text of sorted labels: "label=y" or
// "label=n", joined by ", ", and the least of the labels of
// Content-Signal's use key as it is, "use=reference".
func CanonicalText(lv []LabelValue) string {
	if useLabels(lv) > 1 {
		lv = leastUse(slices.Clone(lv))
	}
	var b strings.Builder
	for i, x := range lv {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(x.Label)
		switch {
		case UseRank(x.Label) > 0:
		case x.No:
			b.WriteString("=n")
		default:
			b.WriteString("=y")
		}
	}
	return b.String()
}

// useLabels returns how many labels of lv Content-Signal's use key states.
func useLabels(lv []LabelValue) int {
	n := 0
	for _, x := range lv {
		if UseRank(x.Label) > 0 {
			n++
		}
	}
	return n
}
