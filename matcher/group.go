package matcher

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"hash/maphash"
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
	lo, hi uint32                // its rules: r.rules[lo:hi]
	idx    atomic.Pointer[index] // for groups of more than linearMax rules, once built; guarded by r.mu while built
	ln, nl uint32                // the first user-agent line of each block combined: r.lines[ln:ln+nl]
	delay  time.Duration         // the crawl-delay, or -1
}

// rules returns g's rules. They are sorted best first (see better) when
// the group is small enough to be scanned; the rules of a larger group are
// in no particular order until its index is built, which sorts them.
func (g *Group) rules() []rule { return g.r.rules[g.lo:g.hi] }

// index is the index of a large group. entries holds the distinct literal
// prefixes of the rules (a pattern up to its first '*', or the whole
// pattern without a final '$'), sorted; keys holds their first 16 bytes.
// Every entry that is a prefix of a path lies on the parent chain of the
// greatest entry <= that path.
type index struct {
	keys    []key16
	entries []entry
	runs    []wildRun
	wild    []wildRule // grouped by run
}

// linearMax is the largest group that is scanned rule by rule instead of
// being indexed.
const linearMax = 16

// rule is one allow or disallow line.
type rule struct {
	pat  uint32 // offset in arena of the normalised pattern
	n    uint32 // its length, which is the rule's priority
	lit  uint32 // length of the literal prefix: the pattern up to the first '*', or without a final '$'
	meta uint32 // line<<4 | written<<3 | kind<<1 | allow
}

// makeMeta packs a rule's line (up to maxLine), whether it allows, its kind
// and whether the pattern as written differs from the normalised one and
// follows it in arena, after its length as a uvarint.
func makeMeta(line int, allow bool, kind uint8, written bool) uint32 {
	m := uint32(min(line, maxLine))<<4 | uint32(kind)<<1
	if allow {
		m |= 1
	}
	if written {
		m |= 8
	}
	return m
}

func (r *rule) allow() bool                 { return r.meta&1 != 0 }
func (r *rule) kind() uint8                 { return uint8(r.meta>>1) & 3 }
func (r *rule) written() bool               { return r.meta&8 != 0 }
func (r *rule) line() int                   { return int(r.meta >> 4) }
func (r *rule) pattern(arena string) string { return arena[r.pat : r.pat+r.n] }

// asWritten returns r's pattern as written in the file.
func (r *rule) asWritten(arena string) string {
	if !r.written() {
		return r.pattern(arena)
	}
	rest := arena[r.pat+r.n:]
	n, k := binary.Uvarint([]byte(rest[:min(len(rest), binary.MaxVarintLen64)]))
	return rest[k : k+int(n)]
}

// Kinds of pattern.
const (
	kindPlain = iota // a literal prefix
	kindExact        // a literal followed by the '$' anchor
	kindWild         // has a '*' after the literal prefix
)

// setKind sets r.lit from the normalised pattern pat and returns its kind.
func (r *rule) setKind(pat []byte) uint8 {
	switch i := bytes.IndexByte(pat, '*'); {
	case i >= 0:
		r.lit = uint32(i)
		return kindWild
	case len(pat) > 0 && pat[len(pat)-1] == '$':
		r.lit = uint32(len(pat) - 1)
		return kindExact
	default:
		r.lit = uint32(len(pat))
		return kindPlain
	}
}

// entry is one literal prefix in a Group's index.
type entry struct {
	off, n  uint32 // the prefix, in arena
	parent  int32  // the longest other entry that is a prefix of this one, or -1
	maxPrio uint32 // the highest priority of a rule here or at an ancestor
	plain   int32  // the best rule whose pattern is exactly the prefix, or -1
	exact   int32  // the best rule whose pattern is the prefix followed by '$', or -1
	runLo   uint32 // runs[runLo:runHi] hold the rules with a '*' after the prefix
	runHi   uint32
}

// wildRun is a run of wildcard rules at one entry that all need the same
// byte in a path: as its last byte (runTail), or anywhere (runHas), or
// nothing (runAny). A path that lacks the byte skips the whole run.
type wildRun struct {
	lo, hi uint32 // wild[lo:hi], best first
	kind   uint8
	need   byte
}

// Kinds of wildRun.
const (
	runAny = iota
	runTail
	runHas
)

// wildRule is a rule with a wildcard, with what a path needs to match it.
type wildRule struct {
	// every byte of the pattern's literal segments, folded to 64 bits (a
	// byte and the byte 64 apart share a bit) and split in two halves, so
	// that a wildRule takes 12 bytes
	lo, hi uint32
	rule   int32
}

// urlByteRank ranks bytes by how common they are in URL paths, most common
// first; bytes not listed are rarer still. A wildcard rule is filed under
// its rarest byte, which most paths then lack.
const urlByteRank = "/-.etaoinsrhldcumpfgwybvk_0123456789=?&%+xjqz"

// rarity returns how rare c is in URL paths: the higher, the rarer.
func rarity(c byte) int {
	if i := strings.IndexByte(urlByteRank, c); i >= 0 {
		return i
	}
	return len(urlByteRank)
}

// byteSet is a set of ASCII bytes. Normalised patterns and paths are ASCII.
type byteSet [2]uint64

func (s *byteSet) add(c byte) {
	c &= 127
	s[c>>6] |= 1 << (c & 63)
}

func (s *byteSet) addString(str string) {
	// Accumulate in registers: adding to s byte by byte would make each
	// byte wait for the previous one's store.
	lo, hi := s[0], s[1]
	for i := 0; i < len(str); i++ {
		c := str[i]
		bit := uint64(1) << (c & 63)
		m := -uint64(c >> 6 & 1) // all ones for 64..127 (and for 192..255, folded like add)
		lo |= bit &^ m
		hi |= bit & m
	}
	s[0], s[1] = lo, hi
}

func (s *byteSet) has(c byte) bool {
	c &= 127
	return s[c>>6]&(1<<(c&63)) != 0
}

// fold returns s in 64 bits: bit c&63 is set for each byte c in s.
func (s *byteSet) fold() uint64 { return s[0] | s[1] }

// subsetOf reports whether every byte of s is in t.
func (s *byteSet) subsetOf(t *byteSet) bool {
	return s[0]&^t[0] == 0 && s[1]&^t[1] == 0
}

// emptyGroup allows everything.
var emptyGroup = &Group{r: &Robots{star: -1}, delay: -1}

// better reports whether rule a wins over rule b when both match: the longer
// pattern wins, allow wins a tie, and the earlier line breaks what is left.
// Patterns lie in arena in file order, so the earlier pattern is the
// earlier line.
func better(a, b *rule) bool {
	if a.n != b.n {
		return a.n > b.n
	}
	if a.allow() != b.allow() {
		return a.allow()
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

func (e *entry) literal(arena string) string { return arena[e.off : e.off+e.n] }

// key8 returns the first 8 bytes of s as a big-endian number, zero-padded,
// so that comparing keys compares the strings' first 8 bytes. Normalised
// strings hold no zero byte, so padding never reorders them.
func key8(s string) uint64 {
	if len(s) >= 8 {
		_ = s[7]
		return uint64(s[0])<<56 | uint64(s[1])<<48 | uint64(s[2])<<40 | uint64(s[3])<<32 |
			uint64(s[4])<<24 | uint64(s[5])<<16 | uint64(s[6])<<8 | uint64(s[7])
	}
	var k uint64
	for i := range 8 {
		k <<= 8
		if i < len(s) {
			k |= uint64(s[i])
		}
	}
	return k
}

// key16 holds the first 16 bytes of a string, zero-padded, as two
// big-endian numbers: comparing keys compares those bytes, so that the
// index search rarely reads a literal itself.
type key16 struct{ hi, lo uint64 }

func makeKey16(s string) key16 {
	if len(s) <= 8 {
		return key16{key8(s), 0}
	}
	return key16{key8(s), key8(s[8:])}
}

func (k key16) compare(o key16) int {
	if k.hi != o.hi {
		return cmp.Compare(k.hi, o.hi)
	}
	return cmp.Compare(k.lo, o.lo)
}

// commonPrefix returns how many of the 16 bytes k and o share, counting
// padding as bytes.
func (k key16) commonPrefix(o key16) uint32 {
	if x := k.hi ^ o.hi; x != 0 {
		return uint32(bits.LeadingZeros64(x) / 8)
	}
	return 8 + uint32(bits.LeadingZeros64(k.lo^o.lo)/8)
}

// Lines returns the 1-based line number of the first user-agent line of each
// group of the file that g combines, in file order: the lines that
// [GroupInfo.Line] reports. It returns nil when no group of the file applies
// and g allows everything.
func (g *Group) Lines() []int {
	if g.nl == 0 {
		return nil
	}
	lines := make([]int, g.nl)
	for i, l := range g.r.lines[g.ln : g.ln+g.nl] {
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
		ix = buildIndex(g.r.arena, g.rules())
		g.idx.Store(ix)
	}
	return ix
}

// buildIndex sorts the rules of a large group and indexes them.
func buildIndex(arena string, rules []rule) *index {
	// Sort the rules by literal prefix, best rule first within a prefix.
	// Comparing the prefixes' first 16 bytes as numbers settles most pairs.
	type sortKey struct {
		key key16
		i   int32
	}
	order := make([]sortKey, len(rules))
	for i := range rules {
		r := &rules[i]
		order[i] = sortKey{makeKey16(arena[r.pat : r.pat+r.lit]), int32(i)}
	}
	slices.SortFunc(order, func(a, b sortKey) int {
		if c := a.key.compare(b.key); c != 0 {
			return c
		}
		ra, rb := &rules[a.i], &rules[b.i]
		if ra.lit > 16 || rb.lit > 16 {
			if c := strings.Compare(arena[ra.pat:ra.pat+ra.lit], arena[rb.pat:rb.pat+rb.lit]); c != 0 {
				return c
			}
		}
		return compareRules(ra, rb)
	})
	sorted := make([]rule, len(rules))
	for i, o := range order {
		sorted[i] = rules[o.i]
	}
	copy(rules, sorted)
	nEntries, nWild := 0, 0
	for i := range rules {
		if i == 0 || arena[rules[i].pat:rules[i].pat+rules[i].lit] != arena[rules[i-1].pat:rules[i-1].pat+rules[i-1].lit] {
			nEntries++
		}
		if rules[i].kind() == kindWild {
			nWild++
		}
	}
	// The index's arrays share one allocation, in the order a query reads
	// them, so that a query touches fewer cache lines and pages. Each
	// starts on a cache line, so that no entry straddles two.
	block := make([]uint64, indexWords(nEntries, nWild))
	ix := &index{
		keys:    carve[key16](&block, nEntries),
		entries: carve[entry](&block, nEntries),
		runs:    carve[wildRun](&block, nWild),
		wild:    carve[wildRule](&block, nWild),
	}
	type pending struct {
		kind uint8
		need byte
		w    wildRule
	}
	var wilds []pending // the wildcard rules of one entry
	var stack []int32   // the parent chain of the last entry
	for i := 0; i < len(rules); {
		lit := arena[rules[i].pat : rules[i].pat+rules[i].lit]
		e := entry{off: rules[i].pat, n: uint32(len(lit)), parent: -1, plain: -1, exact: -1}
		j := i
		wilds = wilds[:0]
		for ; j < len(rules) && arena[rules[j].pat:rules[j].pat+rules[j].lit] == lit; j++ {
			r := &rules[j]
			switch r.kind() {
			case kindWild:
				p := pending{kind: runAny, w: wildRule{rule: int32(j)}}
				var set byteSet
				rest := r.pattern(arena)[r.lit:]
				if strings.HasSuffix(rest, "$") {
					rest = rest[:len(rest)-1]
					if c := rest[len(rest)-1]; c != '*' {
						p.kind, p.need = runTail, c
					}
				}
				for k := 0; k < len(rest); k++ {
					if c := rest[k]; c != '*' {
						set.add(c)
						if p.kind != runTail && (p.kind == runAny || rarity(c) > rarity(p.need)) {
							p.kind, p.need = runHas, c
						}
					}
				}
				f := set.fold()
				p.w.lo, p.w.hi = uint32(f), uint32(f>>32)
				wilds = append(wilds, p)
			case kindExact:
				if e.exact < 0 {
					e.exact = int32(j)
				}
			default:
				if e.plain < 0 {
					e.plain = int32(j)
				}
			}
			e.maxPrio = max(e.maxPrio, r.n)
		}
		// Group the wildcard rules into runs, keeping each run best first.
		slices.SortStableFunc(wilds, func(a, b pending) int {
			if a.kind != b.kind {
				return cmp.Compare(a.kind, b.kind)
			}
			return cmp.Compare(a.need, b.need)
		})
		e.runLo = uint32(len(ix.runs))
		for k, p := range wilds {
			if k == 0 || p.kind != wilds[k-1].kind || p.need != wilds[k-1].need {
				ix.runs = append(ix.runs, wildRun{lo: uint32(len(ix.wild)), kind: p.kind, need: p.need})
			}
			ix.wild = append(ix.wild, p.w)
			ix.runs[len(ix.runs)-1].hi = uint32(len(ix.wild))
		}
		e.runHi = uint32(len(ix.runs))
		for len(stack) > 0 && !strings.HasPrefix(lit, ix.entries[stack[len(stack)-1]].literal(arena)) {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			e.parent = stack[len(stack)-1]
			e.maxPrio = max(e.maxPrio, ix.entries[e.parent].maxPrio)
		}
		stack = append(stack, int32(len(ix.entries)))
		ix.entries = append(ix.entries, e)
		ix.keys = append(ix.keys, makeKey16(lit))
		i = j
	}
	return ix
}

// indexSize returns how many bytes the index of a group of rules will
// take. It counts the distinct literal prefixes by their hashes, sorted in
// buf, which it returns for reuse.
func indexSize(arena string, rules []rule, buf []uint64) (int, []uint64) {
	buf = buf[:0]
	nWild := 0
	for i := range rules {
		r := &rules[i]
		buf = append(buf, maphash.String(litSeed, arena[r.pat:r.pat+r.lit]))
		if r.kind() == kindWild {
			nWild++
		}
	}
	slices.Sort(buf)
	nEntries := 0
	for i, h := range buf {
		if i == 0 || h != buf[i-1] {
			nEntries++
		}
	}
	return allocSize(int(unsafe.Sizeof(index{}))) + allocSize(8*indexWords(nEntries, nWild)), buf
}

// litSeed seeds the hashes by which indexSize counts literal prefixes.
var litSeed = maphash.MakeSeed()

// indexWords returns how many uint64 words the arrays of an index take.
func indexWords(nEntries, nWild int) int {
	return words[key16](nEntries) + words[entry](nEntries) + words[wildRun](nWild) + words[wildRule](nWild) + 4*(lineWords-1)
}

// allocSize returns about how many bytes the allocator takes for an object
// of n bytes: never less, and at most an eighth more than it does.
func allocSize(n int) int {
	switch {
	case n == 0:
		return 0
	case n <= 16:
		return (n + 7) &^ 7
	case n <= 256:
		return (n + 15) &^ 15
	case n <= 32<<10:
		// Size classes are at most an eighth apart.
		step := 1 << (bits.Len(uint(n)) - 3)
		return (n + step - 1) &^ (step - 1)
	default:
		return (n + 8191) &^ 8191 // whole pages
	}
}

// words returns how many uint64 words n values of type T take.
func words[T any](n int) int {
	var v T
	return (int(unsafe.Sizeof(v))*n + 7) / 8
}

// lineWords is the number of uint64 words in a cache line.
const lineWords = 8

// carve returns an empty slice of capacity n of values of type T, which
// must hold no pointers, made of *block from its first cache-line
// boundary on, and removes the words it used from *block.
func carve[T any](block *[]uint64, n int) []T {
	if n == 0 {
		return nil
	}
	b := *block
	skip := int(-uintptr(unsafe.Pointer(&b[0])) / 8 % lineWords) // words to the next line
	b = b[skip:]
	s := unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)[:0]
	*block = b[words[T](n):]
	return s
}

// find returns the index of the rule that decides the normalised path p, or
// -1 when no rule matches.
func (g *Group) find(p string) int {
	arena, rules := g.r.arena, g.rules()
	if len(rules) <= linearMax {
		return scan(arena, rules, p)
	}
	ix := g.index()
	// The greatest entry <= p.
	pk := makeKey16(p)
	lo, n := 0, len(ix.keys)
	for n > 0 {
		half := n >> 1
		m := lo + half
		k := &ix.keys[m]
		le := k.hi < pk.hi
		if k.hi == pk.hi {
			le = k.lo < pk.lo || k.lo == pk.lo && (ix.entries[m].n <= 16 || ix.entries[m].literal(arena) <= p)
		}
		// Written so that the compiler can use conditional moves.
		next := half
		if le {
			lo = m + 1
			next = n - half - 1
		}
		n = next
	}
	i := int32(lo - 1)
	if i < 0 {
		return -1
	}
	// Its ancestors no longer than the common prefix with p are exactly the
	// entries that are prefixes of p.
	var l uint32
	if e := &ix.entries[i]; e.n <= 16 {
		l = min(ix.keys[i].commonPrefix(pk), e.n)
	} else {
		l = uint32(commonPrefix(e.literal(arena), p))
	}
	for i >= 0 && ix.entries[i].n > l {
		i = ix.entries[i].parent
	}
	best := int32(-1)
	var bestRule *rule
	var pathBytes byteSet
	var pathFold uint64
	haveBytes := false
	for i >= 0 {
		e := &ix.entries[i]
		if bestRule != nil && e.maxPrio < bestRule.n {
			break // nothing at or above this entry can win
		}
		if e.plain >= 0 && (bestRule == nil || better(&rules[e.plain], bestRule)) {
			best, bestRule = e.plain, &rules[e.plain]
		}
		if e.exact >= 0 && int(e.n) == len(p) && (bestRule == nil || better(&rules[e.exact], bestRule)) {
			best, bestRule = e.exact, &rules[e.exact]
		}
		for k := e.runLo; k < e.runHi; k++ {
			run := &ix.runs[k]
			if !haveBytes {
				pathBytes.addString(p)
				pathFold = pathBytes.fold()
				haveBytes = true
			}
			switch {
			case run.kind == runTail && (len(p) == 0 || p[len(p)-1] != run.need),
				run.kind == runHas && !pathBytes.has(run.need):
				continue // the path lacks the byte all the run's rules need
			}
			for k := run.lo; k < run.hi; k++ {
				w := &ix.wild[k]
				r := &rules[w.rule]
				if bestRule != nil && !better(r, bestRule) {
					break // the rest of the run are worse still
				}
				if (w.lo&^uint32(pathFold)|w.hi&^uint32(pathFold>>32)) == 0 && matchWild(r.pattern(arena)[e.n:], p[e.n:]) {
					best, bestRule = w.rule, r
					break
				}
			}
		}
		i = e.parent
	}
	return int(best)
}

// scan returns the index of the first of rules, sorted best first, that
// matches the normalised path p, or -1.
func scan(arena string, rules []rule, p string) int {
	for i := range rules {
		r := &rules[i]
		// Most rules that fail, fail on the literal's last byte: test it first.
		if len(p) < int(r.lit) || r.lit > 0 && p[r.lit-1] != arena[r.pat+r.lit-1] || p[:r.lit] != arena[r.pat:r.pat+r.lit] {
			continue
		}
		switch r.kind() {
		case kindPlain:
			return i
		case kindExact:
			if len(p) == int(r.lit) {
				return i
			}
		default:
			if matchWild(r.pattern(arena)[r.lit:], p[r.lit:]) {
				return i
			}
		}
	}
	return -1
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
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
	b := buf[:0]
	if p == "" || p[0] == '?' {
		b = append(b, '/') // an empty path is "/"
	}
	b = appendNormURL(b, p)
	s := unsafe.String(unsafe.SliceData(b), len(b))
	if s == "/robots.txt" {
		return -1
	}
	return g.find(s)
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
	return Match{Allowed: r.allow(), Rule: key + r.asWritten(g.r.arena), Line: r.line()}
}

// CrawlDelay returns the group's crawl-delay and whether it has one. When
// several groups are combined, the largest delay is returned.
func (g *Group) CrawlDelay() (time.Duration, bool) {
	if g.delay < 0 {
		return 0, false
	}
	return g.delay, true
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
	// A path needs neither of the first two steps: "/" that is not "//".
	if len(url) == 0 || url[0] != '/' {
		if n := schemeLen(url); n > 0 {
			url = url[n:] // after "scheme:"
		}
	}
	if len(url) >= 2 && url[0] == '/' && url[1] == '/' {
		i := 2
		for i < len(url) && url[i] != '/' && url[i] != '?' && url[i] != '#' {
			i++
		}
		url = url[i:] // the authority ends at the path, query or fragment
	}
	// Find the fragment and whether any byte needs normalising.
	i := 0
	for i < len(url) && plainByte[url[i]] {
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

// plainByte marks the bytes that normalisation leaves as they are.
var plainByte = func() (t [256]bool) {
	for c := range t {
		t[c] = byteClass[c] == classKeep || byteClass[c] == classUnreserved
	}
	return t
}()

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
