package matcher

import "testing"

// TestPlainPattern checks that every pattern plainPattern accepts, over
// all short strings of bytes that matter to normalisation, is its own
// normalised form and of the kind plainPattern says, and that it accepts
// the common shapes: paths, single wildcards and a final '$'.
func TestPlainPattern(t *testing.T) {
	const alphabet = "/a*$%2F ~\x80"
	var v []byte
	var walk func(n int)
	walk = func(n int) {
		if kind, ok := plainPattern(v); ok {
			norm := appendNormRule(nil, v)
			if string(norm) != string(v) || patternKind(norm) != kind {
				t.Errorf("plainPattern(%q) = %d, true; normalised %q of kind %d", v, kind, norm, patternKind(norm))
			}
		}
		if n == 0 {
			return
		}
		for i := range len(alphabet) {
			v = append(v, alphabet[i])
			walk(n - 1)
			v = v[:len(v)-1]
		}
	}
	walk(5)
	for _, c := range []struct {
		v    string
		kind uint8
	}{
		{"/", kindPlain}, {"/a/b?c=d", kindPlain}, {"/a$", kindExact}, {"*", kindWild},
		{"/*.php$", kindWild}, {"/a*b*c", kindWild}, {"*$", kindWild},
	} {
		if kind, ok := plainPattern([]byte(c.v)); !ok || kind != c.kind {
			t.Errorf("plainPattern(%q) = %d, %v; want %d, true", c.v, kind, ok, c.kind)
		}
	}
	for _, v := range []string{"/a**b", "/a$b", "/%61", "/a b", "/\x80", "/a$$"} {
		if _, ok := plainPattern([]byte(v)); ok {
			t.Errorf("plainPattern(%q) accepts a pattern that normalising changes", v)
		}
	}
}
