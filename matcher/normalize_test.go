package matcher

import (
	"slices"
	"strings"
	"testing"
)

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

// TestPlainPatternWords checks plainPattern, which reads eight bytes at a
// time, against a byte loop on patterns of 1 to 24 bytes with one or two
// bytes that are not as written at every place, so that each falls in a
// word, across two words, or in the tail that the last word overlaps.
func TestPlainPatternWords(t *testing.T) {
	byteLoop := func(v []byte) (uint8, bool) {
		kind := uint8(kindPlain)
		if len(v) > 0 && v[len(v)-1] == '$' {
			v, kind = v[:len(v)-1], kindExact
		}
		for i, c := range v {
			if !asWritten[c] {
				if c != '*' || i > 0 && v[i-1] == '*' {
					return 0, false
				}
				kind = kindWild
			}
		}
		return kind, true
	}
	specials := []byte("*$% \x80\x00")
	check := func(v []byte) {
		wantKind, wantOK := byteLoop(v)
		if kind, ok := plainPattern(v); ok != wantOK || ok && kind != wantKind {
			t.Errorf("plainPattern(%q) = %d, %v; want %d, %v", v, kind, ok, wantKind, wantOK)
		}
	}
	for n := 1; n <= 24; n++ {
		base := []byte("/" + strings.Repeat("a", n-1))
		check(base)
		for i := range n {
			for _, c := range specials {
				v := slices.Clone(base)
				v[i] = c
				check(v)
				for j := i + 1; j < n; j++ {
					for _, d := range specials {
						w := slices.Clone(v)
						w[j] = d
						check(w)
					}
				}
			}
		}
	}
}

func TestKeyFold8Places(t *testing.T) {
	// Every byte at every place, against folding one byte at a time.
	for c := range 256 {
		for n := 1; n <= 9; n++ {
			for at := range n {
				b := []byte(strings.Repeat("aZ", 5)[:n])
				b[at] = byte(c)
				var want uint64
				for i := 0; i < len(b) && i < 8; i++ {
					d := b[i]
					if 'A' <= d && d <= 'Z' {
						d += 'a' - 'A'
					}
					want |= uint64(d) << (56 - 8*i)
				}
				if got := keyFold8(string(b)); got != want {
					t.Fatalf("keyFold8(%q) = %#x want %#x", b, got, want)
				}
			}
		}
	}
}
