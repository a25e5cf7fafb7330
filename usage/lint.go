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
// and n (yes and no for Content-Signal). It returns nil for a good value.
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
		m, _ := d.Get(k)
		val := "an inner list"
		if it, ok := m.(httpsfv.Item); ok {
			if tok, ok := it.Value.(httpsfv.Token); ok && (string(tok) == yes || string(tok) == no) {
				continue
			}
			val, _ = httpsfv.Marshal(httpsfv.NewItem(it.Value))
			if it.Value == true {
				val = "a bare key (true)"
			}
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
