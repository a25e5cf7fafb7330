package matcher

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math/bits"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// Group is the set of rules one crawler obeys: one group of a robots.txt
// file, or several combined. Get one with [Robots.Group] and use it for many
// URLs. A Group is immutable and safe for concurrent use by multiple
// goroutines.
type Group struct {
	r      *Robots
	idx    atomic.Pointer[index] // for a group that is indexed, once built; built under r.mu
	lo, hi uint32                // its rules: r.rules[lo:hi]
	ln     uint32                // the first user-agent line of each block combined: r.lines[ln:], up to the next group's ln
	// delay is 1 + its crawl-delay's index in r.delays, or 0 for none,
	// in its low bits (delayMask), and the flags groupScanned and
	// groupMayScan, set at parse, in its high bits: a Group is 32 bytes,
	// and a file of many tiny groups holds one for each.
	delay uint32
}

const (
	// groupScanned: its rules are sorted best first and scanned by their
	// prints in r.prints (see scanPrints).
	groupScanned = 1 << 31
	// groupMayScan: of more than linearMax and at most scanMax rules, so
	// its first use decides whether it is scanned (see indexLocked).
	groupMayScan = 1 << 30
	delayMask    = groupMayScan - 1
)

// scanned reports whether g is scanned by its prints from parse on.
func (g *Group) scanned() bool { return g.delay&groupScanned != 0 }

// mayScan reports whether g's first use decides whether it is scanned.
func (g *Group) mayScan() bool { return g.delay&groupMayScan != 0 }

// rules returns g's rules. They are sorted best first (see better) when
// the group is scanned; those of a group of more than linearMax rules are
// in file order until its first use (see index), which sorts them.
func (g *Group) rules() []rule { return g.r.rules[g.lo:g.hi] }

// linearMax is the largest group that is always scanned rule by rule.
// Larger groups of up to scanMax rules are scanned too when a scan tries
// few of their rules against any one path (see fewCandidates); the rest
// are indexed.
const linearMax = 16

// rule is one allow or disallow line, in 8 bytes: a file of the shortest
// rules holds a record for each. Its line number, which only Match reads,
// is kept apart (see Robots.lineOf).
type rule struct {
	pat uint32 // offset in arena of the normalised pattern
	// n<<13 | allow<<12 | lit<<4 | decoded<<3 | written<<2 | kind, where
	// n, the pattern's length, is the rule's priority, and lit is the
	// length of a wildcard pattern's literal prefix, or litFar when it is
	// that long or longer (see rule.lit).
	nf uint32
}

// maxPattern is the longest normalised pattern a rule holds; see
// capPattern. It is more than a 500 KiB file holds but for patterns of
// many raw bytes that percent-encoding triples.
const maxPattern = 1<<19 - 1

// litFar is the lit of a rule record whose literal prefix is at least that
// long.
const litFar = 255

// makeRule returns the rule of the normalised pattern p at pat: whether it
// allows, its kind, and how to recover its pattern as written: written when
// an edit of the normalised one into it follows that in arena (see
// rule.edit); decoded when it is the normalised one decoded (see
// decodesTo); neither when it is the normalised one.
func makeRule(pat uint32, p []byte, allow bool, kind uint8, written, decoded bool) rule {
	f := uint32(len(p))<<13 | uint32(kind)
	if kind == kindWild {
		f |= uint32(min(bytes.IndexByte(p, '*'), litFar)) << 4
	}
	if allow {
		f |= 1 << 12
	}
	if decoded {
		f |= 8
	}
	if written {
		f |= 4
	}
	return rule{pat: pat, nf: f}
}

func (r *rule) n() uint32                   { return r.nf >> 13 }
func (r *rule) allow() bool                 { return r.nf&(1<<12) != 0 }
func (r *rule) kind() uint8                 { return uint8(r.nf) & 3 }
func (r *rule) written() bool               { return r.nf&4 != 0 }
func (r *rule) decoded() bool               { return r.nf&8 != 0 }
func (r *rule) pattern(arena string) string { return arena[r.pat : r.pat+r.n()] }

// writeWritten writes r's pattern as written in the file to b.
func (r *rule) writeWritten(b *strings.Builder, arena string) {
	pat := r.pattern(arena)
	switch {
	case r.written():
		pre, suf, mid := r.edit(arena)
		b.WriteString(pat[:pre])
		b.WriteString(mid)
		b.WriteString(pat[len(pat)-suf:])
	case r.decoded():
		for i := 0; i < len(pat); i++ {
			if c, ok := decodedByte(pat, i); ok {
				b.WriteByte(c)
				i += 2
			} else {
				b.WriteByte(pat[i])
			}
		}
	default:
		b.WriteString(pat)
	}
}

// writtenLen returns the length of r's pattern as written in the file.
func (r *rule) writtenLen(arena string) int {
	switch {
	case r.written():
		pre, suf, mid := r.edit(arena)
		return pre + len(mid) + suf
	case r.decoded():
		pat, n := r.pattern(arena), int(r.n())
		for i := 0; i < len(pat); i++ {
			if _, ok := decodedByte(pat, i); ok {
				n -= 2
				i += 2
			}
		}
		return n
	}
	return int(r.n())
}

// edit returns the edit that turns r's normalised pattern into the one
// written, which follows it in arena when r.written(): the pattern as
// written is the first pre bytes of the normalised one, then mid, then its
// last suf bytes. In arena, pre, suf and len(mid) are uvarints, then mid.
func (r *rule) edit(arena string) (pre, suf int, mid string) {
	rest := arena[r.pat+r.n():]
	pre, rest = uvarint(rest)
	suf, rest = uvarint(rest)
	n, rest := uvarint(rest)
	return pre, suf, rest[:n]
}

// appendEdit appends to arena the edit that turns the normalised pattern
// pat into v, for rule.edit.
func appendEdit(arena, pat, v []byte) []byte {
	pre := 0
	for pre < len(pat) && pre < len(v) && pat[pre] == v[pre] {
		pre++
	}
	suf := 0
	for suf < len(pat)-pre && suf < len(v)-pre && pat[len(pat)-1-suf] == v[len(v)-1-suf] {
		suf++
	}
	mid := v[pre : len(v)-suf]
	arena = binary.AppendUvarint(arena, uint64(pre))
	arena = binary.AppendUvarint(arena, uint64(suf))
	arena = binary.AppendUvarint(arena, uint64(len(mid)))
	return append(arena, mid...)
}

// uvarint decodes the uvarint at the start of s, and returns it and the
// rest of s.
func uvarint(s string) (int, string) {
	var x uint64
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		c := s[i]
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int(x), s[i+1:]
		}
	}
	return 0, "" // not reached: Parse writes whole uvarints
}

// Kinds of pattern.
const (
	kindPlain = iota // a literal prefix
	kindExact        // a literal followed by the '$' anchor
	kindWild         // has a '*' after the literal prefix
)

// patternKind returns the kind of the normalised pattern pat.
func patternKind(pat []byte) uint8 {
	switch {
	case bytes.IndexByte(pat, '*') >= 0:
		return kindWild
	case len(pat) > 0 && pat[len(pat)-1] == '$':
		return kindExact
	default:
		return kindPlain
	}
}

// lit returns the length of r's literal prefix: its pattern up to the
// first '*', or without a final '$'.
func (r *rule) lit(arena string) uint32 {
	switch r.kind() {
	case kindPlain:
		return r.n()
	case kindExact:
		return r.n() - 1
	}
	if l := r.nf >> 4 & 255; l < litFar {
		return l
	}
	return uint32(strings.IndexByte(arena[r.pat:r.pat+r.n()], '*'))
}

// literal returns r's literal prefix.
func (r *rule) literal(arena string) string { return arena[r.pat : r.pat+r.lit(arena)] }

// emptyGroup allows everything.
var emptyGroup = &Group{r: &Robots{star: -1}}

// better reports whether rule a wins over rule b when both match: the longer
// pattern wins, allow wins a tie, and the earlier line breaks what is left.
// Patterns lie in arena in file order, so the earlier pattern is the
// earlier line.
func better(a, b *rule) bool {
	// The length, then allow, as one number.
	if ka, kb := a.nf>>12, b.nf>>12; ka != kb {
		return ka > kb
	}
	return a.pat < b.pat
}

func compareRules(a, b *rule) int {
	if better(a, b) {
		return -1
	}
	if better(b, a) {
		return 1
	}
	return 0
}

// Lines returns the 1-based line number of the first user-agent line of each
// group of the file that g combines, in file order: the lines that
// [GroupInfo.Line] reports. It returns nil when no group of the file applies
// and g allows everything.
func (g *Group) Lines() []int {
	end := uint32(len(g.r.lines))
	if i, ok := g.r.groupIndex(g); ok && i+1 < len(g.r.groups) {
		end = g.r.groups[i+1].ln // g's lines end where the next group's begin
	}
	lines := make([]int, 0, end-g.ln)
	for _, l := range g.r.lines[g.ln:end] {
		lines = append(lines, int(l))
	}
	if len(lines) == 0 {
		return nil
	}
	return lines
}

// groupIndex returns the index of g in r.groups, and whether g is one of
// them. The groups' first lines increase.
func (r *Robots) groupIndex(g *Group) (int, bool) {
	i := sort.Search(len(r.groups), func(i int) bool { return r.groups[i].ln >= g.ln })
	return i, i < len(r.groups) && &r.groups[i] == g
}

// sortBest sorts a small group's rules best first, by insertion.
func sortBest(rules []rule) {
	for i := 1; i < len(rules); i++ {
		r := rules[i]
		j := i
		for ; j > 0 && better(&r, &rules[j-1]); j-- {
			rules[j] = rules[j-1]
		}
		rules[j] = r
	}
}

// indexed reports whether g's rules are found through g.index(), built on
// first use, rather than scanned rule by rule or by r.prints: whether it
// has more than linearMax rules. The index of a group that Parse marked
// mayScan may hold prints instead (see buildScanOrIndex); a group of usage
// lines is never marked so.
func (g *Group) indexed() bool { return !g.scanned() && g.hi-g.lo > linearMax }

// index returns g's index, building it on first use, so that the groups of
// a file that a crawler never asks about cost nothing more than their
// rules. It sorts g's rules, which nothing reads before it returns. The
// index of a group of up to scanMax rules that a scan tries few of against
// any path (see fewCandidates) holds only their prints: the group is
// scanned by them.
func (g *Group) index() *index {
	if ix := g.idx.Load(); ix != nil {
		return ix
	}
	g.r.mu.Lock()
	defer g.r.mu.Unlock()
	return g.indexLocked()
}

// indexLocked is index with g.r.mu held.
func (g *Group) indexLocked() *index {
	ix := g.idx.Load()
	if ix == nil {
		ix = buildScanOrIndex(g.r.arena, g.rules(), g.mayScan())
		// The rules, sorted, and ix are published together: a reader
		// reads g's rules only after it has loaded ix.
		g.idx.Store(ix)
		if r := g.r; g.mayScan() && ix.prints != "" && r.star >= 0 && g == &r.groups[r.star] {
			r.starIx.Store(ix) // for Robots.Allowed
		}
	}
	return ix
}

// buildScanOrIndex sorts rules and returns the index that find uses:
// their prints, when mayScan and a scan of them tries few against any
// path, else an index of their literal prefixes.
func buildScanOrIndex(arena string, rules []rule, mayScan bool) *index {
	if mayScan {
		var buf [scanMax]uint16
		if few, _ := fewCandidates(arena, rules, buf[:0]); few {
			sortBestMany(rules)
			var ps [2 * (scanMax + 8)]byte
			return &index{prints: string(appendGroupPrints(ps[:0], arena, rules))}
		}
	}
	return buildIndex(arena, rules)
}

// find returns the index in g's rules of the rule that decides the
// normalised path p, or -1 when no rule matches.
func (g *Group) find(p string) int { return findIn(g, p) }

// findIn is find for a normalised path held as a string or as bytes.
func findIn[P path](g *Group, p P) int {
	if g.scanned() {
		return scanPrints(g.r, g.lo, g.hi, p)
	}
	if !g.indexed() {
		return scanRules(g.r.arena, g.rules(), p)
	}
	ix := g.index()
	if ix.prints != "" {
		rules := g.rules()
		return scanPrintsOf(rules, g.r.arena, ix.prints, ix.prints[len(rules)+8:], p)
	}
	return indexFind(ix, g.r.arena, g.rules(), p)
}

// scan returns the index of the first of rules, sorted best first, that
// matches the normalised path p, or -1.
func scan(arena string, rules []rule, p string) int { return scanRules(arena, rules, p) }

// scanRules is scan for a path held as a string or as bytes.
func scanRules[P path](arena string, rules []rule, p P) int {
	for i := range rules {
		r := &rules[i]
		// Most rules that fail, fail on their second byte, which a
		// pattern of two bytes or more has in its literal unless it is a
		// '*' (a '$' there ends a pattern that only "/" matches): test it
		// before finding the literal, which takes a search in a
		// wildcard's pattern.
		if len(p) >= 2 && r.n() >= 2 {
			if c := arena[r.pat+1]; c != p[1] && c != '*' && arena[r.pat] != '*' {
				continue
			}
		}
		if matches(r, arena, p) {
			return i
		}
	}
	return -1
}

// matches reports whether r matches the normalised path p: its literal
// prefix, tested by its last byte first, where most rules that fail do,
// then the rest of its pattern.
func matches[P path](r *rule, arena string, p P) bool {
	lit := r.lit(arena)
	if len(p) < int(lit) || lit > 0 && p[lit-1] != arena[r.pat+lit-1] || string(p[:lit]) != arena[r.pat:r.pat+lit] {
		return false
	}
	return matchesAfter(arena, r, int(lit), p)
}

// matchWild reports whether the pattern rest, which starts with '*', matches
// s, the part of the path after the pattern's literal prefix. Matching each
// '*'-separated segment at its leftmost position is correct for patterns
// whose only wildcard is '*', and takes linear time: there is no
// backtracking.
func matchWild[P path](rest string, s P) bool {
	anchored := strings.HasSuffix(rest, "$")
	if anchored {
		rest = rest[:len(rest)-1]
	}
	rest = rest[1:]
	for {
		i := strings.IndexByte(rest, '*')
		if i < 0 {
			// The last segment: a suffix of s when anchored, else anywhere.
			if anchored {
				return len(s) >= len(rest) && string(s[len(s)-len(rest):]) == rest
			}
			return indexIn(s, rest) >= 0
		}
		if seg := rest[:i]; seg != "" {
			j := indexIn(s, seg)
			if j < 0 {
				return false
			}
			s = s[j+len(seg):]
		}
		rest = rest[i+1:]
	}
}

// decide returns the index in g's rules of the rule that decides url, or
// -1.
func (g *Group) decide(url string) int {
	p, normal := pathQuery(url)
	if !normal {
		return g.decideNormalized(p)
	}
	if p == "/robots.txt" {
		return -1
	}
	return g.find(p)
}

// decideNormalized is decide for the path and query p, which are not in
// their normalised form. That form lies in a buffer on the stack or from
// normPool, so that a query does not allocate.
func (g *Group) decideNormalized(p string) int {
	var stack [256]byte
	buf, pooled := normBuffer(stack[:0], p)
	b := normalizeTo(buf, p)
	i := -1
	if string(b) != "/robots.txt" {
		i = findIn(g, b)
	}
	putNormBuffer(pooled)
	return i
}

// decideScanned is decide for a scanned group of rules, of prints p1 and
// p2 (see scanPrintsOf).
func decideScanned(rules []rule, arena, p1, p2, url string) int {
	p, normal := pathQuery(url)
	if !normal {
		return decideScannedNormalized(rules, arena, p1, p2, p)
	}
	if p == "/robots.txt" {
		return -1
	}
	return scanPrintsOf(rules, arena, p1, p2, p)
}

// decideScannedNormalized is decideNormalized for decideScanned.
func decideScannedNormalized(rules []rule, arena, p1, p2, p string) int {
	var stack [256]byte
	buf, pooled := normBuffer(stack[:0], p)
	b := normalizeTo(buf, p)
	i := -1
	if string(b) != "/robots.txt" {
		i = scanPrintsOf(rules, arena, p1, p2, b)
	}
	putNormBuffer(pooled)
	return i
}

// normalizeTo appends to buf the normalised form of the path and query p.
func normalizeTo(buf []byte, p string) []byte {
	if p == "" || p[0] == '?' {
		buf = append(buf, '/') // an empty path is "/"
	}
	return appendNormURL(buf, p)
}

// Allowed reports whether url may be fetched under g. url is an absolute URL
// or a path with an optional query, raw or percent-encoded; see [Group.Match].
func (g *Group) Allowed(url string) bool {
	i := g.decide(url)
	return i < 0 || g.r.rules[g.lo+uint32(i)].allow()
}

// Match returns the verdict for url under g and the rule that decided it.
//
// url is an absolute URL (scheme://authority/path?query#fragment) or a path
// with an optional query, as sent in a request line or as written. Only the
// path and query are compared; the fragment is dropped, an empty path is "/",
// and dot segments are not removed. A url that starts with "//" is a
// network-path reference: what follows up to the next '/' or '?' is its
// authority. Both the URL and the rules are
// percent-normalised before comparison (RFC 9309 §2.2.2). The most specific
// matching rule, the one with the longest pattern, decides, and allow wins a
// tie; when no rule matches, or url is /robots.txt, the URL is allowed.
func (g *Group) Match(url string) Match {
	i := g.decide(url)
	if i < 0 {
		return Match{Allowed: true}
	}
	r := &g.r.rules[g.lo+uint32(i)]
	key := "Disallow: "
	if r.allow() {
		key = "Allow: "
	}
	var b strings.Builder
	b.Grow(len(key) + r.writtenLen(g.r.arena))
	b.WriteString(key)
	r.writeWritten(&b, g.r.arena)
	return Match{Allowed: r.allow(), Rule: b.String(), Line: g.r.lineOf(r)}
}

// CrawlDelay returns the group's crawl-delay and whether it has one. When
// several groups are combined, the largest delay is returned.
func (g *Group) CrawlDelay() (time.Duration, bool) {
	d := g.delay & delayMask
	if d == 0 {
		return 0, false
	}
	return g.r.delays[d-1], true
}

// normalPath returns the normalised path and query of url.
func normalPath(url string) string {
	p, normal := pathQuery(url)
	if normal {
		return p
	}
	return string(normalizeTo(nil, p))
}

// pathQuery returns the path and query of url, which is an absolute URL, a
// network-path reference ("//host/path") or a path, and reports whether
// they are their own normalised form. It does not add the "/" that an empty
// path stands for, and reports such a path as not normal.
func pathQuery(url string) (p string, normal bool) {
	switch {
	case len(url) >= 8 && le64(url) == httpsHead:
		url = url[6:] // the scheme a crawler meets most, without a call
	case url == "" || url[0] != '/':
		url = url[schemeLen(url):] // after "scheme:"
	}
	if len(url) >= 2 && url[0] == '/' && url[1] == '/' {
		url = url[authorityEnd(url):]
	}
	// Find the fragment and whether any byte needs normalising: bytes as
	// written, eight at a time where they all are, and escapes that
	// normalising keeps.
	i := 0
	for i < len(url) {
		if s := url[i:min(i+8, len(url))]; len(s) == 8 && keep[s[0]]&keep[s[1]]&keep[s[2]]&keep[s[3]]&keep[s[4]]&keep[s[5]]&keep[s[6]]&keep[s[7]] != 0 {
			i += 8
		} else if c := url[i]; asWritten[c] {
			i++
		} else if c == '%' && keptEscape(url, i) {
			i += 3
		} else {
			break
		}
	}
	normal = true
	if i < len(url) {
		normal = url[i] == '#'
		if j := strings.IndexByte(url[i:], '#'); j >= 0 {
			url = url[:i+j]
		}
	}
	return url, normal && url != "" && url[0] != '?'
}

// httpsHead is le64 of "https://".
const httpsHead = 0x2f2f3a7370747468

// authorityEnd returns where the authority of url, which starts with "//",
// ends: at its path, query or fragment, or at its end. It reads eight bytes
// at a time.
func authorityEnd(url string) int {
	const slash, quest, hash = '/' * ones8, '?' * ones8, '#' * ones8
	i := 2
	for ; i+8 <= len(url); i += 8 {
		w := le64(url[i:])
		if m := zeroBytes(w^slash) | zeroBytes(w^quest) | zeroBytes(w^hash); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(url) && url[i] != '/' && url[i] != '?' && url[i] != '#' {
		i++
	}
	return i
}

// keptEscape reports whether the '%' at s[i] starts an escape that
// normalising keeps as it is: two upper-case hex digits of a byte that is
// not unreserved.
func keptEscape(s string, i int) bool {
	if i+2 >= len(s) || !isUpperHex(s[i+1]) || !isUpperHex(s[i+2]) {
		return false
	}
	return byteClass[unhex(s[i+1])<<4|unhex(s[i+2])] != classUnreserved
}

// isUpperHex reports whether c is a hex digit, in upper case if a letter.
func isUpperHex(c byte) bool { return '0' <= c && c <= '9' || 'A' <= c && c <= 'F' }

// schemeLen returns the length of the "scheme:" at the start of url, or 0.
func schemeLen(url string) int {
	for i := 0; i < len(url); i++ {
		c := url[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9', c == '+', c == '-', c == '.':
			if i == 0 {
				return 0
			}
		case c == ':':
			if i == 0 {
				return 0
			}
			return i + 1
		default:
			return 0
		}
	}
	return 0
}

// keyFold8 is key8 of s with ASCII letters in lower case.
func keyFold8(s string) uint64 {
	var k uint64
	if len(s) >= 8 {
		k = bits.ReverseBytes64(le64(s))
	} else {
		k = key8Short(s)
	}
	// Set bit 5 of each upper-case letter, eight bytes at once: adding
	// to the low 7 bits of a byte carries into its high bit, and never
	// into the next byte, when it is at least 'A', or at least '['.
	const low7, high = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	x := k & low7
	upper := (x + (0x80-'A')*ones8) &^ (x + (0x80-'[')*ones8) &^ k & high
	return k | upper>>2
}

// compareFold compares the caller's agent with a lower-case token, ignoring
// ASCII case in agent.
func compareFold(agent, token string) int {
	n := min(len(agent), len(token))
	for i := 0; i < n; i++ {
		c := agent[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != token[i] {
			return cmp.Compare(c, token[i])
		}
	}
	return cmp.Compare(len(agent), len(token))
}
