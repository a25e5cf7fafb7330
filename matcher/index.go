package matcher

import (
	"cmp"
	"math/bits"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/f9014239/robots/internal/memsize"
)

// index is the index of a large group, built over the group's rules
// themselves, which it sorts by literal prefix (a pattern up to its first
// '*', or the whole pattern without a final '$'). Each distinct literal
// prefix is an entry, whose rules lie side by side from its start.
// Every entry that is a prefix of a path lies on the parent chain of the
// greatest entry <= that path.
//
// The entries are cut into buckets of bucketLen, in order. A search finds
// a path's bucket by the first 16 bytes of each bucket's first literal
// after the prefix all the group's literals share, then its entry in the
// bucket by the key of each literal: its first bytes after the prefix all
// the bucket's literals share. A large file's literals often share far
// more than the group's common prefix ("/html/E10..."), and keys taken at
// one offset for all would be alike. Where keys tie, the search reads the
// literals.
//
// Keys are 4 bytes, or 8 when 4 leave many ties ("/html/E10087_01/" and
// "/html/E10087_02/" tie on "087_" in a bucket whose literals share
// "html/E10") and the group's patterns are long enough to pay for them
// (see wideKeys). Entries of more than heavyMin rules, which a file of
// many rules with one literal makes, also have a heavyRun.
type index struct {
	prints string      // of a group that is scanned instead, its prints (see appendGroupPrints); then the rest is empty
	cp     string      // the literal prefix common to all the rules
	ents   []entry     // one per entry, then one whose start ends the last
	keys4  []uint32    // the keys of the entries, when they are 4 bytes
	keys8  []uint64    // or 8 bytes
	bkts   []bucket    // entries i*bucketLen to (i+1)*bucketLen-1 are bucket i's
	heavy  []heavyRun  // sorted by entry
	groups []wildGroup // the wildcard rules of heavy runs, by the byte they need
	sets   []uint64    // of each wildcard rule of the groups, in order: foldSet of its pattern after the literal
}

// bucketLen is how many entries a bucket of an index holds, but for the
// last.
const bucketLen = 64

// bucket is bucketLen entries of an index.
type bucket struct {
	k0, k1 uint64 // key8 of its first literal after the index's cp, and of what follows that
	skip   uint32 // how many bytes after cp all its literals share
}

// entry is one literal prefix in an index.
type entry struct {
	parent int32  // the longest other entry that is a prefix of this one, or -1
	start  uint32 // its first rule, in the group; heavyBit is set when it has a heavyRun
}

// heavyBit marks in entry.start an entry with a heavyRun.
const heavyBit = 1 << 31

// heavyMin is the most rules an entry has without a heavyRun. The rules of
// such an entry, the rules without a wildcard first, each part best first,
// are all tried in turn.
const heavyMin = 8

// heavyRun locates the rules of an entry with many: its best plain rule
// at the entry's start, then its exact rules (best first) from exact, then
// its wildcard rules from wild, in groups[glo:ghi].
type heavyRun struct {
	entry, exact, wild uint32
	glo, ghi           uint32
}

// wildGroup is a group of the wildcard rules of a heavyRun that all need
// the same byte in a path: as its last byte (needTail), or anywhere
// (needHas), or nothing (needAny). A path that lacks the byte skips the
// whole group.
type wildGroup struct {
	lo, hi uint32 // rules[lo:hi], best first
	set    uint32 // sets[set:set+hi-lo] are theirs
	kind   uint8
	need   byte
}

// Kinds of wildGroup.
const (
	needAny = iota
	needTail
	needHas
)

// urlByteRank ranks bytes by how common they are in URL paths, most common
// first; bytes not listed are rarer still. A wildcard rule is filed under
// its rarest byte, which most paths then lack.
const urlByteRank = "/-.etaoinsrhldcumpfgwybvk_0123456789=?&%+xjqz"

// rarity returns how rare c is in URL paths: the higher, the rarer.
func rarity(c byte) int { return int(rarities[c]) }

// rarities holds rarity of each byte.
var rarities = func() (t [256]uint8) {
	for c := range t {
		t[c] = uint8(len(urlByteRank))
		if i := strings.IndexByte(urlByteRank, byte(c)); i >= 0 {
			t[c] = uint8(i)
		}
	}
	return t
}()

// wildNeed returns what a path needs to match a wildcard pattern whose
// literal prefix is lit bytes long: its last byte, or a byte anywhere.
func wildNeed(pat string, lit uint32) (kind uint8, need byte) {
	rest := pat[lit:]
	if strings.HasSuffix(rest, "$") {
		rest = rest[:len(rest)-1]
		if c := rest[len(rest)-1]; c != '*' {
			return needTail, c
		}
	}
	for k := 0; k < len(rest); k++ {
		if c := rest[k]; c != '*' && (kind == needAny || rarity(c) > rarity(need)) {
			kind, need = needHas, c
		}
	}
	return kind, need
}

// key8 returns the first 8 bytes of s as a big-endian number, zero-padded,
// so that comparing keys compares the strings' first 8 bytes. Normalised
// strings hold no zero byte, so padding never reorders them.
func key8[P path](s P) uint64 {
	if len(s) >= 8 {
		return uint64(s[0])<<56 | uint64(s[1])<<48 | uint64(s[2])<<40 | uint64(s[3])<<32 |
			uint64(s[4])<<24 | uint64(s[5])<<16 | uint64(s[6])<<8 | uint64(s[7])
	}
	return key8Short(s)
}

// key8Short is key8 of a string shorter than 8 bytes.
func key8Short[P path](s P) uint64 {
	var k uint64
	for i := 0; i < len(s); i++ {
		k |= uint64(s[i]) << (56 - 8*i)
	}
	return k
}

// buildIndex sorts the rules of a large group and indexes them.
func buildIndex(arena string, rules []rule) *index {
	sortByLiteral(arena, rules)
	literal := func(i int) string { return rules[i].literal(arena) }
	first, last := literal(0), literal(len(rules)-1)
	ix := &index{cp: first[:commonPrefix(first, last)]}
	nEnts := 1
	for i := 1; i < len(rules); i++ {
		if literal(i) != literal(i-1) {
			nEnts++
		}
	}
	ix.ents = make([]entry, 0, nEnts+1)
	var stack []int32 // the parent chain of the last entry
	for i := 0; i < len(rules); {
		lit := literal(i)
		j := i + 1
		for j < len(rules) && literal(j) == lit {
			j++
		}
		e := entry{parent: -1, start: uint32(i)}
		for len(stack) > 0 && !strings.HasPrefix(lit, ix.literal(arena, rules, stack[len(stack)-1])) {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			e.parent = stack[len(stack)-1]
		}
		if j-i > heavyMin {
			e.start |= heavyBit
			ix.addHeavy(arena, rules[i:j], uint32(len(ix.ents)), uint32(i), uint32(len(lit)))
		}
		stack = append(stack, int32(len(ix.ents)))
		ix.ents = append(ix.ents, e)
		i = j
	}
	ix.ents = append(ix.ents, entry{parent: -1, start: uint32(len(rules))})
	ix.heavy, ix.groups, ix.sets = slices.Clone(ix.heavy), slices.Clone(ix.groups), slices.Clone(ix.sets) // held at their lengths
	ix.setKeys(arena, rules)
	return ix
}

// sortByLiteral sorts rules by literal prefix, then by kind (plain, then
// exact, then wildcard), then best first.
func sortByLiteral(arena string, rules []rule) {
	type sortKey struct {
		key  uint64 // key8 of the literal, which settles most pairs
		lit  string
		rule rule
	}
	keys := make([]sortKey, len(rules))
	for i := range rules {
		lit := rules[i].literal(arena)
		keys[i] = sortKey{key8(lit), lit, rules[i]}
	}
	slices.SortFunc(keys, func(a, b sortKey) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		if c := strings.Compare(a.lit, b.lit); c != 0 {
			return c
		}
		if c := cmp.Compare(a.rule.kind(), b.rule.kind()); c != 0 {
			return c
		}
		return compareRules(&a.rule, &b.rule)
	})
	for i := range keys {
		rules[i] = keys[i].rule
	}
}

// setKeys sets the buckets and keys of ix, whose entries are set.
func (ix *index) setKeys(arena string, rules []rule) {
	nEnts, cp := len(ix.ents)-1, len(ix.cp)
	ix.bkts = make([]bucket, (nEnts+bucketLen-1)/bucketLen)
	keys := make([]uint64, nEnts)
	ties := 0
	for b := range ix.bkts {
		lo, hi := b*bucketLen, min((b+1)*bucketLen, nEnts)
		first := ix.literal(arena, rules, int32(lo))[cp:]
		skip := commonPrefix(first, ix.literal(arena, rules, int32(hi-1))[cp:])
		ix.bkts[b] = bucket{k0: key8(first), skip: uint32(skip)}
		if len(first) > 8 {
			ix.bkts[b].k1 = key8(first[8:])
		}
		for i := lo; i < hi; i++ {
			lit := ix.literal(arena, rules, int32(i))
			keys[i] = key8(lit[cp+skip:])
			if i > lo && keys[i]>>32 == keys[i-1]>>32 {
				ties++
			}
		}
	}
	if wideKeys(arena, rules, nEnts, ties) {
		ix.keys8 = keys
		return
	}
	ix.keys4 = make([]uint32, nEnts)
	for i, k := range keys {
		ix.keys4[i] = uint32(k >> 32)
	}
}

// wideKeys reports whether an index of rules with n entries, ties of
// which have the 4-byte key of the entry before them, takes keys of 8
// bytes: when at least 1/16 of them tie, so that a search would often
// read literals, and when the rules, their patterns and entries of 16
// bytes take at most 5/2 times the bytes of their lines, of which a
// rule's is at least its pattern as written and 6 bytes ("allow" and a
// colon), so that files of short lines, which take the most for their
// size, keep keys of 4 bytes. Indexes of fewer than 2*bucketLen entries
// keep them too: their searches read few keys.
func wideKeys(arena string, rules []rule, n, ties int) bool {
	if n < 2*bucketLen || 16*ties < n {
		return false
	}
	held, lines := 0, 0
	for i := range rules {
		held += int(rules[i].n()) + 8 + 16
		lines += rules[i].writtenLen(arena) + 6
	}
	return 2*held <= 5*lines
}

// key returns the key of entry i, in the form key8 gives it, and how
// many of its bytes count.
func (ix *index) key(i int) (k uint64, w int) {
	if ix.keys8 != nil {
		return ix.keys8[i], 8
	}
	return uint64(ix.keys4[i]) << 32, 4
}

// addHeavy records the heavyRun of entry e, whose rules, sorted without
// wildcard first, are run, from rule start on, with a literal prefix of
// lit bytes. It sorts the wildcard rules into groups.
func (ix *index) addHeavy(arena string, run []rule, e, start, lit uint32) {
	h := heavyRun{entry: e, exact: start, wild: start + uint32(len(run))}
	for k := range run {
		switch run[k].kind() {
		case kindPlain:
			h.exact = start + uint32(k) + 1
		case kindWild:
			if h.wild == start+uint32(len(run)) {
				h.wild = start + uint32(k)
			}
		}
	}
	wild := run[h.wild-start:]
	type needKey struct{ kind, need uint8 }
	needs := make([]needKey, len(wild))
	for k := range wild {
		needs[k].kind, needs[k].need = wildNeed(wild[k].pattern(arena), lit)
	}
	nGroups := distinctNeeds(needs, func(a, b needKey) bool { return a == b })
	h.glo = uint32(len(ix.groups))
	if !worthGrouping(nGroups, len(wild)) {
		if len(wild) > 0 {
			ix.groups = append(ix.groups, wildGroup{lo: h.wild, hi: start + uint32(len(run)), set: uint32(len(ix.sets)), kind: needAny})
		}
	} else {
		// Sort the wildcard rules by what they need, best first within.
		idx := make([]int, len(wild))
		for k := range idx {
			idx[k] = k
		}
		slices.SortStableFunc(idx, func(a, b int) int {
			if c := cmp.Compare(needs[a].kind, needs[b].kind); c != 0 {
				return c
			}
			return cmp.Compare(needs[a].need, needs[b].need)
		})
		moved := make([]rule, len(wild))
		for k, o := range idx {
			moved[k] = wild[o]
		}
		copy(wild, moved)
		for k, o := range idx {
			n := needs[o]
			if k == 0 || n != needs[idx[k-1]] {
				ix.groups = append(ix.groups, wildGroup{lo: h.wild + uint32(k), set: uint32(len(ix.sets)) + uint32(k), kind: n.kind, need: n.need})
			}
			ix.groups[len(ix.groups)-1].hi = h.wild + uint32(k) + 1
		}
	}
	for k := range wild {
		ix.sets = append(ix.sets, foldSet(wild[k].pattern(arena)[lit:]))
	}
	h.ghi = uint32(len(ix.groups))
	ix.heavy = append(ix.heavy, h)
}

// distinctNeeds returns how many distinct values s holds.
func distinctNeeds[T any](s []T, eq func(a, b T) bool) int {
	n := 0
	for i := range s {
		seen := false
		for j := range i {
			if eq(s[i], s[j]) {
				seen = true
				break
			}
		}
		if !seen {
			n++
		}
	}
	return n
}

// worthGrouping reports whether n wildcard rules that need groups
// distinct bytes are worth grouping by them: each group should hold two
// rules on average.
func worthGrouping(groups, n int) bool { return 2*groups <= n }

// foldSet returns the set of the bytes of s other than '*' and '$' in 64
// bits: byte c sets bit c&63. Normalised paths and patterns are ASCII.
func foldSet(s string) uint64 {
	var set uint64
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '*' && c != '$' {
			set |= 1 << (c & 63)
		}
	}
	return set
}

// literal returns the literal prefix of entry i.
func (ix *index) literal(arena string, rules []rule, i int32) string {
	return rules[ix.ents[i].start&^heavyBit].literal(arena)
}

// heavyOf returns the heavyRun of entry i.
func (ix *index) heavyOf(i int32) *heavyRun {
	return &ix.heavy[sort.Search(len(ix.heavy), func(k int) bool { return ix.heavy[k].entry >= uint32(i) })]
}

// heldBytes returns no less than the bytes ix holds.
func (ix *index) heldBytes() int {
	return memsize.Alloc(int(reflect.TypeFor[index]().Size())) + memsize.Alloc(len(ix.prints)) + memsize.Slice(ix.ents) + memsize.Slice(ix.keys4) + memsize.Slice(ix.keys8) +
		memsize.Slice(ix.bkts) + memsize.Slice(ix.heavy) + memsize.Slice(ix.groups) + memsize.Slice(ix.sets)
}

// find returns the index in rules, which ix indexes, of the rule that
// decides the normalised path p, or -1 when no rule matches.
func (ix *index) find(arena string, rules []rule, p string) int {
	return indexFind(ix, arena, rules, p)
}

// indexFind is index.find for a path held as a string or as bytes.
func indexFind[P path](ix *index, arena string, rules []rule, p P) int {
	i, l := greatest(ix, arena, rules, p)
	if i < 0 {
		return -1
	}
	// Its ancestors no longer than its common prefix with p are exactly
	// the entries that are prefixes of p.
	n := int(rules[ix.ents[i].start&^heavyBit].lit(arena))
	for n > l {
		if i = ix.ents[i].parent; i < 0 {
			return -1
		}
		n = int(rules[ix.ents[i].start&^heavyBit].lit(arena))
	}
	m := matcher{arena: arena, best: -1}
	for {
		e := ix.ents[i]
		start, end := e.start&^heavyBit, ix.ents[i+1].start&^heavyBit
		if e.start&heavyBit == 0 {
			for k := start; k < end; k++ {
				if r := &rules[k]; m.better(r) && matchesAfter(arena, r, n, p) {
					m.take(k, r)
				}
			}
		} else {
			findHeavy(ix, &m, rules, ix.heavyOf(i), start, n, p)
		}
		if i = e.parent; i < 0 {
			return int(m.best)
		}
		n = int(rules[ix.ents[i].start&^heavyBit].lit(arena))
	}
}

// greatest returns the entry whose literal is the greatest <= the
// normalised path p, or -1 when p has no literal as a prefix, and the
// length of the common prefix of its literal and p.
func greatest[P path](ix *index, arena string, rules []rule, p P) (int32, int) {
	if !hasPrefix(p, ix.cp) {
		return -1, 0 // no literal is a prefix of p
	}
	// The last bucket whose first literal is <= p.
	cp, q := len(ix.cp), p[len(ix.cp):]
	q0, q1 := key8(q), uint64(0)
	if len(q) > 8 {
		q1 = key8(q[8:])
	}
	b := sort.Search(len(ix.bkts), func(b int) bool {
		if bk := &ix.bkts[b]; bk.k0 != q0 || bk.k1 != q1 {
			return bk.k0 > q0 || bk.k0 == q0 && bk.k1 > q1
		}
		return ix.literal(arena, rules, int32(b*bucketLen))[cp:] > string(q)
	}) - 1
	if b < 0 {
		return -1, 0 // p is before the first literal
	}
	lo, end := b*bucketLen, min((b+1)*bucketLen, len(ix.ents)-1)
	// The bucket's first literal is <= p: when p does not have the prefix
	// all its literals share, p is after all of them. The bucket's keys
	// tell for a prefix of up to 16 bytes.
	bk, shares := &ix.bkts[b], false
	switch skip, x0, x1 := int(ix.bkts[b].skip), bk.k0^q0, bk.k1^q1; {
	case skip <= 8:
		shares = x0>>(64-8*skip) == 0 // true when skip is 0: a shift by 64 gives 0
	case skip <= 16:
		shares = x0 == 0 && x1>>(128-8*skip) == 0
	default:
		shares = hasPrefix(q, ix.literal(arena, rules, int32(lo))[cp:cp+skip])
	}
	if !shares {
		return int32(end - 1), commonPrefix(ix.literal(arena, rules, int32(end-1)), p)
	}
	// The last entry <= p, by keys, and by literals where they tie.
	base := cp + int(bk.skip)
	qk := key8(p[base:])
	tie := func(i int) bool { return literalLE(ix, arena, rules, lo+i, base, p) }
	var n int
	if ix.keys8 != nil {
		n = countLE(ix.keys8[lo:end], qk, tie)
	} else {
		n = countLE(ix.keys4[lo:end], uint32(qk>>32), tie)
	}
	i := lo + n - 1 // n > 0: the bucket's first entry is <= p
	return int32(i), common(ix, arena, rules, i, base, p, qk)
}

// The literals of a bucket's entries after the bytes they all share are
// often no longer than their keys, which then hold all of them: a search
// compares such a literal with a path by its key alone, without reading
// it.

// literalLE reports whether the literal of entry i, whose key is that of
// the path p at base, is <= p.
func literalLE[P path](ix *index, arena string, rules []rule, i, base int, p P) bool {
	_, w := ix.key(i)
	if int(rules[ix.ents[i].start&^heavyBit].lit(arena)) <= base+w {
		return true // all in its key: a prefix of p
	}
	return ix.literal(arena, rules, int32(i))[base:] <= string(p[base:])
}

// common returns the length of the common prefix of the literal of entry
// i, whose first base bytes p shares, and p, whose key at base is qk.
func common[P path](ix *index, arena string, rules []rule, i, base int, p P, qk uint64) int {
	k, w := ix.key(i)
	r := &rules[ix.ents[i].start&^heavyBit]
	if x := (k ^ qk) >> (64 - 8*w) << (64 - 8*w); x != 0 {
		// They differ within the key. (A literal holds no zero byte,
		// and a key ends with zeros where its literal ends.)
		return base + bits.LeadingZeros64(x)/8
	}
	if n := int(r.lit(arena)); n <= base+w {
		return n // all in its key: a prefix of p
	}
	return commonPrefix(r.literal(arena), p)
}

// countLE returns how many of keys, sorted, are less than q, or equal to
// it and tie(i) holds, where tie holds for a prefix of those equal to q.
func countLE[K uint32 | uint64](keys []K, q K, tie func(i int) bool) int {
	n, _ := slices.BinarySearch(keys, q)
	for n < len(keys) && keys[n] == q && tie(n) {
		n++
	}
	return n
}

// matcher is the best rule found so far for a path p.
type matcher struct {
	arena    string
	best     int32 // its index, or -1
	bestRule *rule
}

// better reports whether r is better than the best rule found so far.
func (m *matcher) better(r *rule) bool { return m.bestRule == nil || better(r, m.bestRule) }

// take makes rule k, r, the best found so far.
func (m *matcher) take(k uint32, r *rule) { m.best, m.bestRule = int32(k), r }

// findHeavy tries the rules of the heavy run h, from rule start on, whose
// literal of n bytes is a prefix of the path p: its best plain rule, its
// best exact rule, and its wildcard rules, by group.
func findHeavy[P path](ix *index, m *matcher, rules []rule, h *heavyRun, start uint32, n int, p P) {
	if start < h.exact {
		if r := &rules[start]; m.better(r) {
			m.take(start, r)
		}
	}
	if h.exact < h.wild && len(p) == n {
		if r := &rules[h.exact]; m.better(r) {
			m.take(h.exact, r)
		}
	}
	var bytes [2]uint64 // the ASCII bytes p holds, as bits c>>6 and c&63, once needed
	for _, wg := range ix.groups[h.glo:h.ghi] {
		if wg.kind == needTail && (len(p) == 0 || p[len(p)-1] != wg.need) {
			continue
		}
		if bytes == [2]uint64{} {
			for k := 0; k < len(p); k++ {
				c := p[k] & 127
				bytes[c>>6] |= 1 << (c & 63)
			}
		}
		if wg.kind == needHas && bytes[wg.need>>6&1]&(1<<(wg.need&63)) == 0 {
			continue // the path lacks the byte all the group's rules need
		}
		fold := bytes[0] | bytes[1]
		sets := ix.sets[wg.set : wg.set+wg.hi-wg.lo]
		for k := wg.lo; k < wg.hi; k++ {
			r := &rules[k]
			if !m.better(r) {
				break // the rest of the group are worse still
			}
			if sets[k-wg.lo]&^fold == 0 && matchWild(r.pattern(m.arena)[n:], p[n:]) {
				m.take(k, r)
				break
			}
		}
	}
}

// matchesAfter reports whether r, whose literal prefix of n bytes is a
// prefix of the path p, matches p.
func matchesAfter[P path](arena string, r *rule, n int, p P) bool {
	switch r.kind() {
	case kindPlain:
		return true
	case kindExact:
		return len(p) == n
	}
	return matchWild(r.pattern(arena)[n:], p[n:])
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix[A, B path](a A, b B) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := key8(a[i:]) ^ key8(b[i:]); x != 0 {
			return i + bits.LeadingZeros64(x)/8
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}
