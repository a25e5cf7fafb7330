package matcher

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// field is the kind of a robots.txt line, after its key has been read
// leniently.
type field uint8

const (
	fieldNone       field = iota // blank line or comment only
	fieldInvalid                 // not "key: value" nor "key value"
	fieldUnknown                 // a key this package does not use
	fieldUserAgent               // user-agent
	fieldAllow                   // allow
	fieldDisallow                // disallow
	fieldSitemap                 // sitemap
	fieldCrawlDelay              // crawl-delay
)

// fieldLicense is the License line of RSL 1.0, after the fields of
// usage.go and requestrate.go.
const fieldLicense = fieldRequestRate + 1

// canonical returns the field's key as a lint message names it.
func (f field) canonical() string {
	switch f {
	case fieldUserAgent:
		return "user-agent"
	case fieldAllow:
		return "allow"
	case fieldDisallow:
		return "disallow"
	case fieldSitemap:
		return "sitemap"
	case fieldCrawlDelay:
		return "crawl-delay"
	case fieldContentUsage:
		return "content-usage"
	case fieldContentSignal:
		return "content-signal"
	case fieldRequestRate:
		return "request-rate"
	case fieldLicense:
		return "license"
	case fieldVisitTime:
		return "visit-time"
	}
	return ""
}

// lineFlag records a leniency the scanner applied to a line.
type lineFlag uint8

const (
	flagNoColon    lineFlag = 1 << iota // "key value" read as "key: value"
	flagLenientKey                      // key matched by prefix or as a known misspelling
)

// scanner splits a robots.txt body into lines and each line into a field and
// a value. It is the one tokenizer behind both Parse and Lint, so the two
// always agree on what a line means.
//
// Lines end at CR, LF or CR LF. A '#' starts a comment, and a NUL byte ends
// the line's content, as it does in C-string based parsers. White space is
// SP, HT, VT and FF.
type scanner struct {
	body []byte
	bom  int // bytes of a leading byte-order mark skipped
	pos  int // start of the next line
	nl   int // index of the next '\n' at or after pos, or len(body); cached so CR-only files scan in linear time
	// keysOnly is set by Parse, which uses no line whose key is not one
	// it knows: a line whose content cannot start with such a key is then
	// read as fieldUnknown, without splitting it or, when it is long,
	// searching it for a comment (see startsKey).
	keysOnly bool

	// Results of the last call to next.
	num   int    // 1-based line number
	start int    // offset of the line in body
	text  []byte // the whole line, without its line end
	field field
	key   []byte // the key as written, trimmed
	value []byte // the value, trimmed, without comment
	flags lineFlag
}

// init prepares s to scan body.
func (s *scanner) init(body []byte) {
	*s = scanner{body: body, nl: -1}
	// A UTF-8 byte-order mark, or a prefix of one, is skipped at the very
	// start of the file only.
	const bom = "\xEF\xBB\xBF"
	for s.pos < len(body) && s.pos < len(bom) && body[s.pos] == bom[s.pos] {
		s.pos++
	}
	s.bom = s.pos
}

// next reads the next line and reports whether there was one.
func (s *scanner) next() bool {
	if s.pos >= len(s.body) {
		return false
	}
	s.num++
	s.start = s.pos
	s.flags = 0
	if s.nl < s.pos && s.short() {
		return true
	}
	if s.nl < s.pos {
		if i := bytes.IndexByte(s.body[s.pos:], '\n'); i >= 0 {
			s.nl = s.pos + i
		} else {
			s.nl = len(s.body)
		}
	}
	line := s.body[s.pos:s.nl]
	end := s.nl + 1
	// The content ends at a '#' or NUL, the line at a CR. Short lines, the
	// usual ones, are searched in one pass; long ones, such as those of an
	// HTML page, with the vectorised IndexByte.
	content := -1
	long := len(line) > 64
	if !long {
		for i, c := range line {
			if c <= '#' && lineStop[c] {
				if c == '\r' {
					line = line[:i]
					end = s.pos + i + 1
					break
				}
				if content < 0 {
					content = i
				}
			}
		}
	} else if i := bytes.IndexByte(line, '\r'); i >= 0 {
		line = line[:i]
		end = s.pos + i + 1
	}
	if end == s.nl {
		end++ // CR LF
	}
	s.pos = end
	s.text = line
	if long {
		if s.skipped(line) {
			return true // not searched for a comment either
		}
		content = len(line)
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			content = i
		}
		if i := bytes.IndexByte(line[:content], 0); i >= 0 {
			content = i
		}
	}
	if content >= 0 && content < len(line) {
		line = line[:content]
	}
	s.split(line)
	return true
}

// keyStart marks the bytes that start the keys Parse uses: user-agent,
// allow, disallow, sitemap, crawl-delay, request-rate, content-usage and content-signal,
// license, visit-time, and their misspellings, in either case.
var keyStart = [256]bool{'u': true, 'a': true, 'd': true, 's': true, 'c': true, 'r': true, 'l': true, 'v': true,
	'U': true, 'A': true, 'D': true, 'S': true, 'C': true, 'R': true, 'L': true, 'V': true}

// short reads a line that ends within the next 64 bytes, eight bytes at a
// time. It reports false, having changed nothing, when the line is longer:
// next then searches it with the vectorised IndexByte.
func (s *scanner) short() bool {
	rest := s.body[s.pos:]
	if len(rest) > 64 {
		rest = rest[:64]
	}
	content := -1
	i := 0
	for ; i+8 <= len(rest); i += 8 {
		m := stops8(binary.LittleEndian.Uint64(rest[i:]))
		for m != 0 {
			k := i + bits.TrailingZeros64(m)>>3
			m &= m - 1
			switch c := rest[k]; {
			case c == '\n' || c == '\r':
				return s.endShort(rest[:k], content)
			case lineStop[c] && content < 0: // bits above the lowest may stand for other bytes
				content = k
			}
		}
	}
	for ; i < len(rest); i++ {
		if c := rest[i]; lineStop[c] {
			if c == '\n' || c == '\r' {
				return s.endShort(rest[:i], content)
			}
			if content < 0 {
				content = i
			}
		}
	}
	if len(rest) < 64 { // the last line, without a line end
		return s.endShort(rest, content)
	}
	return false
}

// stops8 returns a mask whose lowest set bit is the high bit of the first of
// the eight bytes of x (little-endian) that is a CR, LF, '#' or NUL, or of
// a byte before it that is another control below CR (such as a tab), or 0
// when there is none. Bits above the lowest may be set for other bytes.
func stops8(x uint64) uint64 {
	hash := x ^ '#'*ones8
	return below8(x, '\r'+1) | below8(hash, 1)
}

// ones8 is 1 in each byte of a word.
const ones8 = 0x0101010101010101

// below8 returns a mask whose lowest set bit is the high bit of the first
// of the eight bytes of x (little-endian) below c, which is at most 0x80,
// or 0 when none is. A byte above it may have its bit set too: bytes at or
// above c do not borrow, bytes below do.
func below8(x uint64, c byte) uint64 { return (x - uint64(c)*ones8) &^ x & 0x8080808080808080 }

// endShort ends the line of short: line is its bytes before the line end
// that follows it, content the offset in line of its first '#' or NUL, or
// -1.
func (s *scanner) endShort(line []byte, content int) bool {
	end := s.pos + len(line) + 1
	if end <= len(s.body) && s.body[end-1] == '\r' && end < len(s.body) && s.body[end] == '\n' {
		end++
	}
	s.pos = end
	s.text = line
	if content >= 0 {
		line = line[:content]
	}
	if s.skipped(line) {
		return true
	}
	s.split(line)
	return true
}

// skipped reports whether the line, whose content starts line, is of no
// use to Parse, as the lines of an HTML page served as robots.txt are,
// when keysOnly is set: it is then read as fieldUnknown, without being
// split.
func (s *scanner) skipped(line []byte) bool {
	if !s.keysOnly || startsKey(line) {
		return false
	}
	s.field, s.key, s.value = fieldUnknown, nil, nil
	return true
}

// startsKey reports whether the content of a line, after white space,
// starts with a byte that starts a key Parse uses (see keyStart).
func startsKey(line []byte) bool {
	j := 0
	for j < len(line) && isSpace(line[j]) {
		j++
	}
	return j < len(line) && keyStart[line[j]]
}

// lineStop marks the bytes that end a line (CR, LF) or its content ('#',
// NUL).
var lineStop = [256]bool{'\r': true, '\n': true, '#': true, 0: true}

// split sets field, key and value from the content of one line.
func (s *scanner) split(line []byte) {
	if s.common(line) {
		return
	}
	s.key, s.value = nil, nil
	line = trimSpace(line)
	if len(line) == 0 {
		s.field = fieldNone
		return
	}
	var key, value []byte
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		key, value = trimSpace(line[:i]), trimSpace(line[i+1:])
	} else {
		// Without a colon, exactly two words are read as "key value".
		i := indexSpace(line)
		if i < 0 {
			s.field = fieldInvalid
			return
		}
		key, value = line[:i], trimSpace(line[i:])
		if indexSpace(value) >= 0 {
			s.field = fieldInvalid
			return
		}
		s.flags |= flagNoColon
	}
	if len(key) == 0 {
		s.field = fieldInvalid
		return
	}
	s.key, s.value = key, value
	var exact bool
	s.field, exact = classify(key)
	if s.flags&flagNoColon != 0 && (s.field == fieldContentUsage || s.field == fieldContentSignal) {
		// A usage line needs its colon: its value may hold spaces (a
		// path, then a statement), which the colon-less form cannot.
		s.field, s.flags = fieldInvalid, s.flags&^flagNoColon
		return
	}
	if !exact && s.field != fieldUnknown {
		s.flags |= flagLenientKey
	}
}

// common splits the most common lines, "disallow:", "allow:" and
// "user-agent:" lines with the key first and canonical but for case, as
// split does, and reports whether line was one.
func (s *scanner) common(line []byte) bool {
	// Setting bit 5 folds a letter to lower case; '-' has it set, and
	// only CR, which no line holds, folds to it.
	const fold = 0x2020202020202020
	var n int
	switch {
	case len(line) >= 9 && line[8] == ':' && binary.LittleEndian.Uint64(line)|fold == disallow8:
		n, s.field = 8, fieldDisallow
	case len(line) >= 6 && line[5] == ':' && binary.LittleEndian.Uint32(line)|0x20202020 == allow4 && line[4]|0x20 == 'w':
		n, s.field = 5, fieldAllow
	case len(line) >= 11 && line[10] == ':' && binary.LittleEndian.Uint64(line)|fold == userAge8 && binary.LittleEndian.Uint16(line[8:])|0x2020 == nt2:
		n, s.field = 10, fieldUserAgent
	default:
		return false
	}
	s.key, s.value = line[:n], trimSpace(line[n+1:])
	return true
}

// The keys of common lines, as little-endian words.
var (
	disallow8 = binary.LittleEndian.Uint64([]byte("disallow"))
	allow4    = binary.LittleEndian.Uint32([]byte("allo"))
	userAge8  = binary.LittleEndian.Uint64([]byte("user-age"))
	nt2       = binary.LittleEndian.Uint16([]byte("nt"))
)

// classify reads a key leniently: case-insensitively, by prefix, and with the
// misspellings Google's parser accepts. exact reports whether key is the
// canonical spelling.
func classify(key []byte) (f field, exact bool) {
	var names []string
	switch key[0] | 0x20 {
	case 'u':
		f, names = fieldUserAgent, userAgentKeys
	case 'a':
		f, names = fieldAllow, allowKeys
	case 'd':
		f, names = fieldDisallow, disallowKeys
	case 's':
		f, names = fieldSitemap, sitemapKeys
	case 'l':
		f, names = fieldLicense, licenseKeys
	case 'c':
		if f := usageField(key); f != fieldNone {
			return f, true
		}
		f, names = fieldCrawlDelay, crawlDelayKeys
	case 'r':
		if f := rateField(key); f != fieldNone {
			return f, true
		}
		return fieldUnknown, false
	case 'v':
		if f := visitField(key); f != fieldNone {
			return f, true
		}
		return fieldUnknown, false
	default:
		return fieldUnknown, false
	}
	for i, name := range names {
		if hasPrefixFold(key, name) {
			return f, i == 0 && len(key) == len(name)
		}
	}
	return fieldUnknown, false
}

// Accepted spellings of each key, canonical first; each also matches as a
// prefix ("disallowed" is a disallow key).
var (
	userAgentKeys  = []string{"user-agent", "useragent", "user agent"}
	allowKeys      = []string{"allow"}
	disallowKeys   = []string{"disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"}
	sitemapKeys    = []string{"sitemap", "site-map"}
	licenseKeys    = []string{"license", "licence"}
	crawlDelayKeys = []string{"crawl-delay", "crawldelay", "crawl delay"}
)

// hasPrefixFold reports whether b begins with the lower-case ASCII prefix,
// ignoring ASCII case.
func hasPrefixFold(b []byte, prefix string) bool {
	if len(b) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// isSpace reports whether c is robots.txt white space: SP, HT, VT or FF.
func isSpace(c byte) bool { return spaces[c] }

// spaces marks robots.txt white space.
var spaces = [256]bool{' ': true, '\t': true, '\v': true, '\f': true}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// indexSpace returns the index of the first white space in b, or -1.
func indexSpace(b []byte) int {
	i := 0
	// Eight bytes at a time: white space is below '!', as few other
	// bytes are.
	for ; i+8 <= len(b); i += 8 {
		m := below8(binary.LittleEndian.Uint64(b[i:]), '!')
		for m != 0 {
			// The lowest bit set is a byte below '!'; the bits above it may
			// stand for other bytes.
			k := i + bits.TrailingZeros64(m)>>3
			if isSpace(b[k]) {
				return k
			}
			m &= m - 1
		}
	}
	for ; i < len(b); i++ {
		if isSpace(b[i]) {
			return i
		}
	}
	return -1
}

// productToken returns the part of a user-agent value that names a crawler:
// "*" for the "*" group (a value that is "*" or "*" followed by white space),
// else the leading run of a-zA-Z0-9_- characters, which may be empty.
func productToken(value []byte) (token []byte, star bool) {
	if len(value) > 0 && value[0] == '*' && (len(value) == 1 || isSpace(value[1])) {
		return value[:1], true
	}
	i := 0
	for i < len(value) && isTokenByte(value[i]) {
		i++
	}
	return value[:i], false
}

func isTokenByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}
