package matcher

// Percent-encoding normalisation (RFC 9309 §2.2.2 and §2.2.3, RFC 3986 §6.2.2).
//
// Rule patterns and URL paths are normalised the same way, byte by byte, and
// then compared as bytes:
//
//   - "%XX" that encodes an unreserved character (A-Z a-z 0-9 - . _ ~) is
//     decoded; any other "%XX" is kept with upper-case hex digits;
//   - a '%' not followed by two hex digits becomes "%25";
//   - controls, space, '"', '<', '>', '\', '^', '`', '{', '|', '}', DEL and
//     every byte >= 0x80 are percent-encoded;
//   - in a URL, '*' becomes "%2A" and '$' becomes "%24", so that a rule's
//     "%2A" and "%24" match them; in a rule, '*' is the wildcard (a run of
//     them counts as one), a '$' at the very end is the end anchor and any
//     other '$' is the literal "%24".
//
// Every other byte, reserved characters such as '/', '?', ':' and '=' among
// them, stays as written.

// Byte classes for normalisation.
const (
	classKeep       = iota // stays as written
	classEscape            // percent-encoded
	classPercent           // '%'
	classStar              // '*'
	classDollar            // '$'
	classUnreserved        // unreserved: a decoded "%XX" of it becomes the byte itself
	classHash              // '#', which starts a URL's fragment
)

var byteClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case c <= ' ' || c >= 0x7F:
			t[c] = classEscape
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9',
			c == '-', c == '.', c == '_', c == '~':
			t[c] = classUnreserved
		}
	}
	for _, c := range `"<>\^` + "`{|}" {
		t[c] = classEscape
	}
	t['%'] = classPercent
	t['*'] = classStar
	t['$'] = classDollar
	t['#'] = classHash // percent-encoded, if ever normalised
	return t
}()

const upperHex = "0123456789ABCDEF"

// unhex returns the value of the hex digit c, or -1.
func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// appendNormURL appends the normalised form of the URL path and query s.
func appendNormURL(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch byteClass[c] {
		case classKeep, classUnreserved:
			dst = append(dst, c)
		case classPercent:
			dst, i = appendPercent(dst, s, i)
		default: // escape, '*', '$'
			dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
		}
	}
	return dst
}

// plainPattern reports whether the rule pattern v is its own normalised
// form: bytes that stay as written, '*' wildcards that do not follow
// another, and maybe a final '$'. kind is then its kind. Wildcards are
// accepted here because about a fifth of the rules of real files have
// them, and most are otherwise as written.
func plainPattern(v []byte) (kind uint8, ok bool) {
	kind = kindPlain
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

// asWritten marks the bytes that normalisation keeps as written, and keep
// is 1 for them and 0 for the others.
var asWritten, keep = func() (t [256]bool, k [256]uint8) {
	for c, class := range byteClass {
		if class == classKeep || class == classUnreserved {
			t[c], k[c] = true, 1
		}
	}
	return t, k
}()

// appendNormRule appends the normalised form of a rule pattern. The result
// holds '*' only as the wildcard, never twice in a row, and '$' only as the
// final end anchor.
func appendNormRule(dst []byte, v []byte) []byte {
	anchored := len(v) > 0 && v[len(v)-1] == '$'
	if anchored {
		v = v[:len(v)-1]
	}
	// Copy the leading run that needs no change in one go: most patterns
	// are all of it.
	i := 0
	for i < len(v) {
		c := byteClass[v[i]]
		if c == classStar && (i+1 == len(v) || v[i+1] != '*') {
			i++
			continue
		}
		if c != classKeep && c != classUnreserved {
			break
		}
		i++
	}
	dst = append(dst, v[:i]...)
	star := i > 0 && v[i-1] == '*' // the last byte appended is a wildcard
	for ; i < len(v); i++ {
		c := v[i]
		switch byteClass[c] {
		case classKeep, classUnreserved:
			dst = append(dst, c)
		case classStar:
			if !star {
				dst = append(dst, '*')
			}
		case classPercent:
			dst, i = appendPercent(dst, v, i)
		default: // escape, '$' that is not the anchor
			dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
		}
		star = c == '*'
	}
	if anchored {
		dst = append(dst, '$')
	}
	return dst
}

// appendPercent normalises the '%' at s[i] and returns the index of the last
// byte it consumed.
func appendPercent[S string | []byte](dst []byte, s S, i int) ([]byte, int) {
	if i+2 >= len(s) {
		return append(dst, '%', '2', '5'), i
	}
	hi, lo := unhex(s[i+1]), unhex(s[i+2])
	if hi < 0 || lo < 0 {
		return append(dst, '%', '2', '5'), i
	}
	b := byte(hi<<4 | lo)
	if byteClass[b] == classUnreserved {
		return append(dst, b), i + 2
	}
	return append(dst, '%', upperHex[b>>4], upperHex[b&15]), i + 2
}

// decodedByte reports whether the normalised pattern pat has at i an
// escape "%XX" that normalisation makes of the raw byte XX (a byte it
// percent-encodes, a '%' not followed by two hex digits, or a '$' that is
// not the end anchor), and returns that byte. A rule's pattern is often
// written with such raw bytes: then decoding its normalised pattern (see
// decodesTo) gives it back, and Parse keeps no copy of it.
func decodedByte[S string | []byte](pat S, i int) (byte, bool) {
	if pat[i] != '%' || i+2 >= len(pat) {
		return 0, false
	}
	b := byte(unhex(pat[i+1])<<4 | unhex(pat[i+2]))
	switch byteClass[b] {
	case classEscape, classPercent, classDollar:
		return b, true
	}
	return 0, false
}

// decodesTo reports whether decoding the normalised pattern pat, by
// replacing each escape that decodedByte accepts with its byte, gives v.
func decodesTo(pat, v []byte) bool {
	k := 0
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		if d, ok := decodedByte(pat, i); ok {
			c = d
			i += 2
		}
		if k == len(v) || v[k] != c {
			return false
		}
		k++
	}
	return k == len(v)
}
