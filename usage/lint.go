package usage

import (
	"fmt"
	"strings"

	"github.com/dunglas/httpsfv"

	"github.com/f9014239/robots/internal/usagetab"
)

// Lint returns what is wrong with the value of a usage line of kind k, one
// message a problem: a path that does not start with "/", a statement that
// is missing or does not parse, a key in upper case, a value other than y
// and n (yes and no for Content-Signal), and a label of an earlier draft
// of the vocabulary, which draft-ietf-aipref-vocab-08 no longer defines, or
// of the other kind of line: crawlers ignore it, and the message says what
// to write instead. It returns nil for a good value.
func Lint(k Kind, value []byte) []string {
	name := "content-usage"
	yes, no := "y", "n"
	if k == ContentSignal {
		name = "content-signal"
		yes, no = "yes", "no"
	}
	var msgs []string
	path, hasPath, stmt := usagetab.Split(value)
	if hasPath && path[0] != '/' {
		msgs = append(msgs, fmt.Sprintf("%s path %q does not start with \"/\"", name, path))
	}
	if len(stmt) == 0 {
		return append(msgs, name+" line has no statement; it states nothing")
	}
	d, err := httpsfv.UnmarshalDictionary([]string{string(stmt)})
	if err != nil {
		switch first, _, _ := strings.Cut(string(stmt), " "); {
		case !hasPath && strings.Contains(first, "/"):
			msgs = append(msgs, fmt.Sprintf("%s path %q does not start with \"/\": it is read as part of the statement, which does not parse and states nothing", name, first))
		case hasUpperKey(string(stmt)):
			msgs = append(msgs, fmt.Sprintf("%s statement has a key in upper case (keys are lower case): it does not parse and states nothing", name))
		default:
			msgs = append(msgs, fmt.Sprintf("%s statement does not parse as a structured-field dictionary (%v): it states nothing", name, err))
		}
		return msgs
	}
	for _, k := range d.Names() {
		if msg := lintLabel(name, k); msg != "" {
			msgs = append(msgs, msg)
		}
		m, _ := d.Get(k)
		val := "an inner list"
		if it, ok := m.(httpsfv.Item); ok {
			if tok, ok := it.Value.(httpsfv.Token); ok && (string(tok) == yes || string(tok) == no) {
				continue
			}
			if tok, ok := it.Value.(httpsfv.Token); ok && name == "content-signal" && k == "use" && usagetab.UseRank("use="+string(tok)) > 0 {
				continue // how much of a page may be used
			}
			val, _ = httpsfv.Marshal(httpsfv.NewItem(it.Value))
			if it.Value == true {
				val = "a bare key (true)"
			}
		}
		if name == "content-signal" && k == "use" {
			msgs = append(msgs, fmt.Sprintf("%s value of %q is %s, not immediate, reference or full: unknown", name, k, val))
			continue
		}
		msgs = append(msgs, fmt.Sprintf("%s value of %q is %s, not %s or %s: unknown", name, k, val, yes, no))
	}
	return msgs
}

// hasUpperKey reports whether statement, lower-cased, parses: its keys
// were in upper case.
func hasUpperKey(statement string) bool {
	_, err := httpsfv.UnmarshalDictionary([]string{strings.ToLower(statement)})
	return err == nil && strings.ToLower(statement) != statement
}

// lintLabel returns a message for label key of a line whose lint name is
// name ("content-usage" or "content-signal") when key is one that crawlers
// reading draft-ietf-aipref-vocab-08 or Content-Signal ignore though a
// known label says what was meant; "" otherwise.
func lintLabel(name, key string) string {
	if name == "content-signal" {
		// Content-Signal's own keys, with the vocabulary's names for
		// what they mean: search, ai-train (train-ai), ai-input (ai-use),
		// and use.
		switch key {
		case "search", "ai-train", "ai-input", "use":
			return ""
		case "train-ai", "ai-use":
			// Read as written, it happens to name the same label,
			// but it is not Content-Signal's.
			return fmt.Sprintf("content-signal label %q is the IETF vocabulary's name, not Content-Signal's: instead write %s, or use a Content-Usage line", key, signalName(key))
		}
		if instead, ok := usagetab.Legacy(key); ok {
			return fmt.Sprintf("content-signal label %q is not Content-Signal's: crawlers ignore it; instead write %s", key, signalName(instead))
		}
		return ""
	}
	instead, ok := usagetab.Legacy(key)
	switch {
	case !ok:
		return ""
	case usagetab.SignalLabel(key) != key:
		return fmt.Sprintf("content-usage label %q is Content-Signal's name, not the IETF vocabulary's: crawlers ignore it in a Content-Usage line; instead write %s", key, instead)
	}
	return fmt.Sprintf("content-usage label %q is from an earlier draft: draft-ietf-aipref-vocab-08 does not define it, so crawlers ignore it; instead write %s", key, instead)
}

// signalName returns what Legacy says to write, in Content-Signal's names.
func signalName(instead string) string {
	switch instead {
	case "train-ai":
		return "ai-train"
	case "ai-use":
		return "ai-input"
	case "search":
		return "search"
	}
	return "each use it covered: search, ai-train and ai-input"
}
