package matcher

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"
)

// Group is the set of rules one crawler obeys: one group of a robots.txt
// file, or several combined. Get one with [Robots.Group] and use it for many
// URLs. A Group is immutable and safe for concurrent use by multiple
// goroutines.
type Group struct {
	r      *Robots
	idx    atomic.Pointer[index] // for a group that is indexed, once built; guarded by r.mu while built
	lo, hi uint32                // its rules: r.rules[lo:hi]
	ln     uint32                // the first user-agent line of each block combined: r.lines[ln:], up to the next group's ln
	delay  uint32                // 1 + its crawl-delay's index in r.delays, or 0 for none
}

// rules returns g's rules. They are sorted best first (see better) when
// the group has at most linearMax; those of a larger group are in no
// particular order until they are prepared (see prepare) or indexed, which
// sorts them.
func (g *Group) rules() []rule { return g.r.rules[g.lo:g.hi] }

// linearMax is the largest group that is always scanned rule by rule;
// larger groups up to scanMax are scanned too when few of their rules need
// the same of a path, and the others are indexed.
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
var emptyGroup = &Group{r: &Robots{robotsFields: robotsFields{star: -1}}}

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
	if gs := g.r.groups; len(gs) > 0 {
		// g's lines end where the next group's begin.
		if i := (uintptr(unsafe.Pointer(g)) - uintptr(unsafe.Pointer(&gs[0]))) / unsafe.Sizeof(*g); int(i)+1 < len(gs) {
			end = gs[i+1].ln
		}
	}
	if end == g.ln {
		return nil
	}
	lines := make([]int, end-g.ln)
	for i, l := range g.r.lines[g.ln:end] {
		lines[i] = int(l)
	}
	return lines
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

// index returns g's index, building it on first use, so that the groups of
// a file that a crawler never asks about cost nothing more than their
// rules. It sorts g's rules, which nothing reads before it returns.
func (g *Group) index() *index {
	if ix := g.idx.Load(); ix != nil {
		return ix
	}
	g.r.mu.Lock()
	defer g.r.mu.Unlock()
	ix := g.idx.Load()
	if ix == nil {
		g.r.countSize() // while the rules are in the order that Size counts
		ix = buildIndex(g.r.arena, g.rules())
		g.idx.Store(ix)
	}
	return ix
}

// scan returns the index of the first of rules, sorted best first, that
// matches the normalised path p, or -1.
func scan(arena string, rules []rule, p string) int {
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
		if r.matches(arena, p) {
			return i
		}
	}
	return -1
}

// matches reports whether r matches the normalised path p: its literal
// prefix, tested by its last byte first, where most rules that fail do,
// then the rest of its pattern.
func (r *rule) matches(arena, p string) bool {
	lit := r.lit(arena)
	if len(p) < int(lit) || lit > 0 && p[lit-1] != arena[r.pat+lit-1] || p[:lit] != arena[r.pat:r.pat+lit] {
		return false
	}
	return matchesAfter(arena, r, int(lit), p)
}

// scanMax is the largest group that is scanned, when few of its rules
// need the same of a path (see fewCandidates): a scan reads each rule's
// prints, and the arena only for the rules whose prints a path has, while
// a search of an index reads from several blocks of memory in turn.
const scanMax = 128

// maxCandidates is the most rules of a group of more than linearMax that
// one path may have to be tried against for the group to be scanned.
const maxCandidates = 2 * linearMax

// printsOf returns what a path needs for rule rl to match it: the bytes
// at offsets 1 and 2 of the path, each 0 when any byte will do. A '$'
// there is the end anchor: the path ends before that offset (see
// pathPrints). When rl needs nothing at offset 1, because a wildcard comes
// first, b2 is instead the byte the path needs anywhere, or with its high
// bit set as its last byte, or 0 for neither (see wildNeed). A normalised
// pattern holds no zero byte and only ASCII.
func printsOf(arena string, rl *rule) (b1, b2 byte) {
	pat := rl.pattern(arena)
	if len(pat) < 2 || pat[0] == '*' || pat[1] == '*' {
		if rl.kind() == kindWild {
			switch kind, need := wildNeed(pat, rl.lit(arena)); kind {
			case needTail:
				return 0, need | 0x80
			case needHas:
				return 0, need
			}
		}
		return 0, 0
	}
	if len(pat) < 3 || pat[2] == '*' {
		return pat[1], 0
	}
	return pat[1], pat[2]
}

// pathPrints returns the bytes of the normalised path p at offsets 1 and
// 2, or '$' for an offset past its end: a normalised path holds no '$'
// (it is "%24"), and a pattern's '$' at that offset needs the path to end
// there.
func pathPrints(p string) (q1, q2 byte) {
	q1, q2 = '$', '$'
	if len(p) > 1 {
		q1 = p[1]
	}
	if len(p) > 2 {
		q2 = p[2]
	}
	return q1, q2
}

// setPrints writes the prints of rules[lo:hi], which are scanned: of each
// rule, the first byte printsOf returns at prints[i], and the second at
// prints[nScan+8+i].
func (r *Robots) setPrints(lo, hi uint32) {
	ps := r.prints()
	b := unsafe.Slice(unsafe.StringData(ps), len(ps))
	for i := lo; i < hi; i++ {
		rl := &r.rules[i]
		b[i], b[r.nScan+8+i] = printsOf(r.arena, rl)
	}
}

// prepare readies g, a group that is scanned, to be scanned: the rules of
// a group of more than linearMax are sorted best first and their prints
// written on first use, as index builds the index of a group that is
// indexed. No scan of another group reads g's prints: the groups of more
// than linearMax rules come first, and a scan reads no prints past its
// group's but those of the smaller groups that follow them (see
// scanPrints).
func (g *Group) prepare() {
	if g.hi-g.lo > linearMax && g.idx.Load() == nil {
		g.prepareSlow()
	}
}

// prepareSlow is prepare for a group that is not ready.
func (g *Group) prepareSlow() {
	g.r.mu.Lock()
	defer g.r.mu.Unlock()
	if g.idx.Load() == nil {
		sortBestMany(g.rules())
		g.r.setPrints(g.lo, g.hi)
		g.idx.Store(prepared)
		if r := g.r; r.star >= 0 && g == &r.groups[r.star] {
			r.starReady.Store(true)
		}
	}
}

// prepared is the idx of a scanned group that prepare has prepared.
var prepared = new(index)

// sortBestMany sorts the rules of a group of more than linearMax and at
// most scanMax best first, as sortBest does. Each rule becomes one
// number: its length and allow (the 20 bits of nf>>12) complemented, so
// that the better sorts first, then its pattern's offset, which breaks
// ties as better does, then its place in rules.
func sortBestMany(rules []rule) {
	var keys [scanMax]uint64
	var was [scanMax]rule
	copy(was[:], rules)
	for i := range rules {
		worse := ^(rules[i].nf >> 12) & (1<<20 - 1)
		keys[i] = uint64(worse)<<40 | uint64(rules[i].pat)<<8 | uint64(i)
	}
	slices.Sort(keys[:len(rules)])
	for i, k := range keys[:len(rules)] {
		rules[i] = was[uint8(k)]
	}
}

// A rule's place in a group that sortBestMany sorts fits in 8 bits.
var _ [256 - scanMax]struct{}

// fewCandidates reports whether a scan of the group of blocks ids, whose
// rules are those of the blocks in rules and whose patterns lie in
// arena, tries any path against at most maxCandidates of its rules. buf
// is scratch space, returned for reuse.
func fewCandidates(arena []byte, rules []rule, blocks []block, ids []int, buf []uint16) (bool, []uint16) {
	buf = buf[:0]
	n := 0
	for _, bi := range ids {
		n += blocks[bi].rulesHi - blocks[bi].rulesLo
	}
	if n <= maxCandidates {
		return true, buf
	}
	// The rules that need each first byte bound the rules a path is tried
	// against from above; most groups are decided by that bound alone,
	// without sorting their prints.
	var byFirst [256]uint8
	top := uint8(0) // the most that need one first byte
	for _, bi := range ids {
		for _, rl := range rules[blocks[bi].rulesLo:blocks[bi].rulesHi] {
			b1, b2 := printsOf(unsafe.String(unsafe.SliceData(arena), len(arena)), &rl)
			buf = append(buf, uint16(b1)<<8|uint16(b2))
			byFirst[b1]++ // n <= scanMax < 256
			if b1 != 0 {
				top = max(top, byFirst[b1])
			}
		}
	}
	if int(byFirst[0])+int(top) <= maxCandidates {
		return true, buf
	}
	slices.Sort(buf)
	// A path is tried against the rules that need nothing of it, those
	// that need its first byte alone, and those that need both: the most
	// for any path is the rules that need nothing, plus the most for one
	// first byte.
	anyByte, most := 0, 0
	for i := 0; i < len(buf); {
		b1 := buf[i] >> 8
		j := i
		for j < len(buf) && buf[j]>>8 == b1 {
			j++
		}
		if b1 == 0 {
			anyByte = j - i
			i = j
			continue
		}
		// buf[i:j] share b1; those with b2 = 0 sort first.
		first, run := 0, 0
		for k := i; k < j; {
			l := k
			for l < j && buf[l] == buf[k] {
				l++
			}
			if buf[k]&0xff == 0 {
				first = l - k
			} else {
				run = max(run, l-k)
			}
			k = l
		}
		most = max(most, first+run)
		i = j
	}
	return anyByte+most <= maxCandidates, buf
}

// zeroBytes returns x with the high bit of each of its zero bytes set and
// every other bit clear.
func zeroBytes(x uint64) uint64 {
	const low7 = 0x7f7f7f7f7f7f7f7f
	return ^((x&low7 + low7) | x | low7)
}

// scanPrints returns the index in rules[lo:hi], a group that is scanned,
// sorted best first, of the first rule that matches the normalised path
// p, or -1. It tries only the rules whose prints p has, eight at a time: a
// rule's print matches p's byte when it is that byte or zero. The group
// of more than linearMax rules must be prepared.
func (r *Robots) scanPrints(lo, hi uint32, p string) int {
	if lo == hi {
		return -1
	}
	w1, w2 := r.firstPrints(lo)
	return r.scanPrintsFirst(lo, hi, p, w1, w2)
}

// firstPrints returns the first words of the prints of the scanned rules
// from rules[lo] on: those at offset 1, then those at offset 2 (see
// setPrints).
func (r *Robots) firstPrints(lo uint32) (w1, w2 uint64) {
	ps := r.prints()
	return le64(ps[lo:]), le64(ps[r.nScan+8+lo:])
}

// scanPrintsFirst is scanPrints given the first words of the group's
// prints, first1 at prints[lo:] and first2 at prints[nScan+8+lo:].
func (r *Robots) scanPrintsFirst(lo, hi uint32, p string, first1, first2 uint64) int {
	rules, arena := r.rules[lo:hi], r.arena
	if len(rules) == 0 {
		return -1
	}
	q1, q2 := pathPrints(p)
	b1, b2 := uint64(q1)*ones8, uint64(q2)*ones8
	ps := r.prints()
	p1, p2 := ps[lo:], ps[r.nScan+8+lo:]
	for k := 0; k < len(rules); k += 8 {
		var w1, w2 uint64
		n := len(rules) - k
		if k == 0 {
			w1, w2 = first1, first2
		} else if n >= 8 {
			w1, w2 = le64(p1[k:]), le64(p2[k:])
		} else {
			// The last prints of a group of 8 or more, read as the word
			// that ends with them, so as not to read past them.
			w1, w2 = le64(p1[k+n-8:])>>(64-8*n), le64(p2[k+n-8:])>>(64-8*n)
		}
		z1 := zeroBytes(w1)
		m := (zeroBytes(w1^b1) | z1) & (zeroBytes(w2^b2) | zeroBytes(w2) | z1)
		if n < 8 {
			m &= 1<<(8*n) - 1
		}
		for ; m != 0; m &= m - 1 {
			j := bits.TrailingZeros64(m) &^ 7
			if need := byte(w2 >> j); z1>>j&0x80 != 0 && need != 0 {
				// A wildcard first, and a byte the path needs.
				if need < 0x80 && strings.IndexByte(p, need) < 0 || need >= 0x80 && p[len(p)-1] != need&0x7f {
					continue
				}
			}
			if i := k + j>>3; rules[i].matches(arena, p) {
				return i
			}
		}
	}
	return -1
}

// matchWild reports whether the pattern rest, which starts with '*', matches
// s, the part of the path after the pattern's literal prefix. Matching each
// '*'-separated segment at its leftmost position is correct for patterns
// whose only wildcard is '*', and takes linear time: there is no
// backtracking.
func matchWild(rest, s string) bool {
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
				return strings.HasSuffix(s, rest)
			}
			return strings.Contains(s, rest)
		}
		if seg := rest[:i]; seg != "" {
			j := strings.Index(s, seg)
			if j < 0 {
				return false
			}
			s = s[j+len(seg):]
		}
		rest = rest[i+1:]
	}
}

// decide returns the index of the rule that decides url, or -1.
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

// decideNormalized is decide for a path and query p that need normalising.
// It is a function of its own so that only such paths pay for zeroing the
// buffer.
func (g *Group) decideNormalized(p string) int {
	var buf [512]byte // on the stack: find does not retain the path
	s, robots := normalizeTo(buf[:0], p)
	if robots {
		return -1
	}
	return g.find(s)
}

// scanDecide is decide for a group that is scanned, whose rules are
// rules[lo:hi], given urlHead(url).
func (r *Robots) scanDecide(lo, hi uint32, url string, head uint64) int {
	// The group's first prints before the URL's path, which lies elsewhere
	// in memory: reading both at once, a query waits for memory once.
	var w1, w2 uint64
	if lo < hi {
		w1, w2 = r.firstPrints(lo)
	}
	return r.scanDecideFirst(lo, hi, url, head, w1, w2)
}

// scanDecideFirst is scanDecide given the first words of the group's
// prints.
func (r *Robots) scanDecideFirst(lo, hi uint32, url string, head, w1, w2 uint64) int {
	p, normal := pathQueryHead(url, head)
	if !normal {
		return r.scanDecideNormalized(lo, hi, p)
	}
	if p == "/robots.txt" {
		return -1
	}
	return r.scanPrintsFirst(lo, hi, p, w1, w2)
}

// scanDecideNormalized is scanDecide for a path and query p that need
// normalising.
func (r *Robots) scanDecideNormalized(lo, hi uint32, p string) int {
	var buf [512]byte // on the stack: scanPrints does not retain the path
	s, robots := normalizeTo(buf[:0], p)
	if robots {
		return -1
	}
	return r.scanPrints(lo, hi, s)
}

// normalizeTo returns the normalised form of the path and query p, as a
// string made of buf with its bytes appended, and whether it is
// /robots.txt.
func normalizeTo(buf []byte, p string) (string, bool) {
	if p == "" || p[0] == '?' {
		buf = append(buf, '/') // an empty path is "/"
	}
	buf = appendNormURL(buf, p)
	s := unsafe.String(unsafe.SliceData(buf), len(buf))
	return s, s == "/robots.txt"
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
	if g.delay == 0 {
		return 0, false
	}
	return g.r.delays[g.delay-1], true
}

// normalPath returns the normalised path and query of url: url's own bytes
// when they need no change, else a string made of buf with the normalised
// bytes appended.
func normalPath(url string, buf []byte) string {
	p, normal := pathQuery(url)
	if normal {
		return p
	}
	if p == "" || p[0] == '?' {
		buf = append(buf, '/') // an empty path is "/"
	}
	buf = appendNormURL(buf, p)
	return unsafe.String(unsafe.SliceData(buf), len(buf))
}

// pathQuery returns the path and query of url, which is an absolute URL, a
// network-path reference ("//host/path") or a path, and reports whether
// they are their own normalised form. It does not add the "/" that an empty
// path stands for, and reports such a path as not normal.
func pathQuery(url string) (p string, normal bool) {
	return pathQueryHead(url, urlHead(url))
}

// urlHead returns the first eight bytes of url as a little-endian word, or
// 0 when it is shorter. Allowed reads it first, before the fields of its
// Robots, which lie elsewhere in memory, so that a query waits for both at
// once: a branch on those fields that the processor mispredicts would
// otherwise delay the read of the URL until they arrive.
func urlHead(url string) uint64 {
	if len(url) < 8 {
		return 0
	}
	return le64(url)
}

// httpsHead is urlHead of a URL that starts with "https://".
const httpsHead = 0x2f2f3a7370747468

// pathQueryHead is pathQuery given urlHead(url).
func pathQueryHead(url string, head uint64) (p string, normal bool) {
	// A path needs neither of the first two steps: "/" that is not "//".
	switch {
	case head == httpsHead:
		url = url[6:] // the schemes a crawler meets, without a call
	case len(url) >= 7 && url[:7] == "http://":
		url = url[5:]
	case len(url) == 0 || url[0] != '/':
		if n := schemeLen(url); n > 0 {
			url = url[n:] // after "scheme:"
		}
	}
	if len(url) >= 2 && url[0] == '/' && url[1] == '/' {
		url = url[authorityEnd(url):]
	}
	// Find the fragment and whether any byte needs normalising: most
	// paths of eight bytes or more are read as words, the last one
	// overlapping the one before, and found plain.
	i := 0
	for ; i+8 <= len(url); i += 8 {
		if !plain8(url[i:]) {
			break
		}
	}
	if i+8 > len(url) && len(url) >= 8 && plain8(url[len(url)-8:]) {
		i = len(url)
	}
	for i < len(url) && plainByte[url[i]] != 0 {
		i++
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

// plain8 reports whether the first eight bytes of s are all plain.
func plain8(s string) bool {
	_ = s[7]
	return plainByte[s[0]]&plainByte[s[1]]&plainByte[s[2]]&plainByte[s[3]]&
		plainByte[s[4]]&plainByte[s[5]]&plainByte[s[6]]&plainByte[s[7]] != 0
}

// plainByte is 1 for the bytes that normalisation leaves as they are, 0
// for the others: a path is checked eight bytes at a time.
var plainByte = func() (t [256]uint8) {
	for c := range t {
		if byteClass[c] == classKeep || byteClass[c] == classUnreserved {
			t[c] = 1
		}
	}
	return t
}()

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
	k := key8(s)
	// Add 0x20 to each byte in 'A'..'Z', eight at a time: a byte's high bit
	// in ge is set when it is >= 'A', in gt when it is > 'Z'; bytes >= 0x80
	// are left alone, and no sum carries into the next byte.
	const ones = 0x0101010101010101
	low7 := k & (0x7f * ones)
	ge := low7 + (0x80-'A')*ones
	gt := low7 + (0x7f-'Z')*ones
	upper := ge &^ gt &^ k & (0x80 * ones)
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
