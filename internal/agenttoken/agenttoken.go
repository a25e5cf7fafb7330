// Package agenttoken finds a crawler's product token in a User-Agent header,
// for package robots (the group a Transport obeys) and package pageterms (the
// Robots-Tag rules for the crawler that sent a request).
package agenttoken

import "strings"

// Product finds the crawler's product token in a User-Agent header, or
// returns "".
func Product(ua string) string {
	if tok := Compatible(ua); tok != "" {
		return tok
	}
	return firstProduct(ua)
}

// Compatible returns the crawler's product token that a "compatible"
// comment names, "(compatible; Bot/1.0; …)", or "".
func Compatible(ua string) string {
	for rest := ua; ; {
		open := strings.IndexByte(rest, '(')
		if open < 0 {
			break
		}
		end := strings.IndexByte(rest[open:], ')')
		var comment string
		if end < 0 {
			comment, rest = rest[open+1:], ""
		} else {
			comment, rest = rest[open+1:open+end], rest[open+end+1:]
		}
		compatible := false
		for item := range strings.SplitSeq(comment, ";") {
			item = strings.TrimSpace(item)
			if !compatible {
				compatible = strings.EqualFold(item, "compatible")
				continue
			}
			name, _, _ := strings.Cut(item, "/")
			if tok := Prefix(name); tok != "" && tok == name && !browserish(tok) {
				return tok
			}
		}
	}
	return ""
}

// firstProduct returns the first product outside comments of the User-Agent
// header ua that is not a browser's, with or without a version (RFC 9110
// §10.1.5), or "".
func firstProduct(ua string) string {
	depth := 0
	for f := range strings.FieldsSeq(ua) {
		if depth > 0 || strings.HasPrefix(f, "(") {
			depth += strings.Count(f, "(") - strings.Count(f, ")")
			continue
		}
		name, _, versioned := strings.Cut(f, "/")
		tok := Prefix(name)
		if !versioned && tok != name {
			continue // a bare product ("ExampleBot") counts only whole
		}
		if tok != "" && !browserish(tok) {
			return tok
		}
	}
	return ""
}

// Prefix returns the leading run of letters, digits, '-' and '_' of s.
func Prefix(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return s[:i]
		}
	}
	return s
}

// browserish reports whether tok is a product of browsers' User-Agent
// headers rather than a crawler's name.
func browserish(tok string) bool {
	switch strings.ToLower(tok) {
	case "mozilla", "applewebkit", "chrome", "chromium", "safari", "gecko", "firefox",
		"version", "mobile", "edge", "edg", "edga", "edgios", "opr", "opera", "presto",
		"trident", "khtml", "crios", "fxios", "samsungbrowser", "ucbrowser", "yabrowser",
		"msie", "headlesschrome":
		return true
	}
	return false
}
