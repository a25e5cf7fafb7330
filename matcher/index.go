package matcher

import (
	"cmp"
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"unsafe"
)

// index is the index of a large group, built over the group's rules
// themselves, which it sorts by literal prefix (a pattern up to its first
// '*', or the whole pattern without a final '$'). Each distinct literal
// prefix is an entry, whose rules lie side by side from its start.
// Every entry that is a prefix of a path lies on the parent chain of the
// greatest entry <= that path.
//
// The entries are cut into buckets of bucketLen, in order. A search finds
// a path's bucket by the first 16 bytes of each bucket's first literal,
// then its entry in the bucket by the key of each literal: its bytes that
// follow the prefix all the bucket's literals share, as key8 makes them. A
// large file's literals often share far more than the group's common
// prefix ("/html/E10..."), and keys taken at one offset for all would be
// alike. When a literal ends within its key, the key gives its length and
// its common prefix with the path, and the search reads no literal.
//
// Keys are 4 bytes, or 8 (wide) when 4 leave many ties, which the search
// settles by reading the tied literals ("/html/E10087_01/" and
// "/html/E10087_02/" tie on "087_" in a bucket whose literals share
// "html/E10"), and when the group's lines are long enough to pay for them
// (see wideKeys). An entry costs 12 bytes, or 16 with wide keys: its key,
// and its parent and start; the keys lie apart, so that the search reads
// keys alone, in the same block as the entries. A bucket adds 24 bytes per
// bucketLen entries. Entries of more than heavyMin rules, which a file of
// many rules with one literal makes, also have a heavyRun.
type index struct {
	cp     string      // the literal prefix common to all the rules
	cpKey  uint64      // key8(cp), which decides the test of a path against cp when cp is at most 8 bytes long
	ents   []entry     // one per entry, then one whose start ends the last; its capacity holds the keys (see keys and wkeys)
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
	wide   bool   // the index has wide keys (as all its buckets say)
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
func key8(s string) uint64 {
	if len(s) >= 8 {
		return binary.BigEndian.Uint64(unsafe.Slice(unsafe.StringData(s), 8))
	}
	return key8Short(s)
}

// key8Short is key8 of a string shorter than 8 bytes.
func key8Short(s string) uint64 {
	switch n := len(s); {
	case n >= 4:
		// Two loads of 4 bytes, which overlap when n < 8.
		hi := uint64(binary.BigEndian.Uint32(unsafe.Slice(unsafe.StringData(s), 4)))
		lo := uint64(binary.BigEndian.Uint32(unsafe.Slice(unsafe.StringData(s[n-4:]), 4)))
		return hi<<32 | lo<<(64-8*n)
	case n > 0:
		return uint64(s[0])<<56 | uint64(s[n/2])<<(56-8*(n/2)) | uint64(s[n-1])<<(64-8*n)
	}
	return 0
}

// key4 is the first 4 bytes of s as key8 makes them.
func key4(s string) uint32 { return uint32(key8(s) >> 32) }

// buildIndex sorts the rules of a large group and indexes them.
func buildIndex(arena string, rules []rule) *index {
	wide := wideKeys(arena, rules) // before the rules are sorted, as indexSize saw them
	lits := make([]uint32, len(rules))
	for i := range rules {
		lits[i] = rules[i].lit(arena)
	}
	// Sort the rules by literal prefix, then by kind, then best first. Comparing the prefixes' first 8 bytes as
	// numbers settles most pairs.
	type sortKey struct {
		key uint64
		i   int32
	}
	order := make([]sortKey, len(rules))
	for i := range rules {
		order[i] = sortKey{key8(arena[rules[i].pat : rules[i].pat+lits[i]]), int32(i)}
	}
	slices.SortFunc(order, func(a, b sortKey) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		ra, rb := &rules[a.i], &rules[b.i]
		if la, lb := lits[a.i], lits[b.i]; la > 8 || lb > 8 {
			if c := strings.Compare(arena[ra.pat:ra.pat+la], arena[rb.pat:rb.pat+lb]); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(ra.kind(), rb.kind()); c != 0 {
			return c // plain, then exact, then wildcard
		}
		return compareRules(ra, rb)
	})
	sorted := make([]rule, len(rules))
	sortedLits := make([]uint32, len(rules))
	for i, o := range order {
		sorted[i], sortedLits[i] = rules[o.i], lits[o.i]
	}
	copy(rules, sorted)
	lits = sortedLits
	literal := func(i int) string { return arena[rules[i].pat : rules[i].pat+lits[i]] }

	ix := &index{}
	first, last := literal(0), literal(len(rules)-1)
	ix.cp = first[:commonPrefix(first, last)]
	ix.cpKey = key8(ix.cp)
	cp := len(ix.cp)
	nEntries := 0
	for i := range rules {
		if i == 0 || literal(i) != literal(i-1) {
			nEntries++
		}
	}
	ix.ents = make([]entry, 0, nEntries+1)
	var stack []int32 // the parent chain of the last entry
	for i := 0; i < len(rules); {
		lit := literal(i)
		j := i + 1
		for j < len(rules) && literal(j) == lit {
			j++
		}
		e := entry{parent: -1, start: uint32(i)}
		for len(stack) > 0 && !strings.HasPrefix(lit, literal(int(ix.ents[stack[len(stack)-1]].start&^heavyBit))) {
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
	nEnts := len(ix.ents) - 1
	ix.bkts = make([]bucket, (nEnts+bucketLen-1)/bucketLen)
	keys := make([]uint32, nEnts)
	for b := range ix.bkts {
		lo, hi := b*bucketLen, min((b+1)*bucketLen, nEnts)
		first := ix.literal(arena, rules, int32(lo))[cp:]
		skip := commonPrefix(first, ix.literal(arena, rules, int32(hi-1))[cp:])
		bk := bucket{k0: key8(first), skip: uint32(skip)}
		if len(first) > 8 {
			bk.k1 = key8(first[8:])
		}
		ix.bkts[b] = bk
		for i := lo; i < hi; i++ {
			keys[i] = key4(ix.literal(arena, rules, int32(i))[cp+skip:])
		}
	}
	// The entries and their keys share one block.
	keyBytes := 4
	if wide {
		keyBytes = 8
	}
	block := make([]uint64, len(ix.ents)+(keyBytes*nEnts+7)/8)
	ents := unsafe.Slice((*entry)(unsafe.Pointer(unsafe.SliceData(block))), len(block))[:len(ix.ents)]
	copy(ents, ix.ents)
	ix.ents = ents
	if wide {
		for b := range ix.bkts {
			ix.bkts[b].wide = true
		}
		wkeys := ix.wkeys()
		for b, bk := range ix.bkts {
			off := cp + int(bk.skip)
			for i := b * bucketLen; i < min((b+1)*bucketLen, nEnts); i++ {
				wkeys[i] = key8(ix.literal(arena, rules, int32(i))[off:])
			}
		}
	} else {
		copy(ix.keys(), keys)
	}
	ix.heavy, ix.groups, ix.sets = slices.Clone(ix.heavy), slices.Clone(ix.groups), slices.Clone(ix.sets) // as indexSize counts them
	return ix
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

// The keys of an index's entries follow its entries, in the capacity of
// ents, so that the index takes one slice for both.
var (
	_ [8 - unsafe.Sizeof(entry{})]byte // entries are words, as the keys after them are
	_ [unsafe.Sizeof(entry{}) - 8]byte
)

// keys returns the keys of an index without wide keys: of each entry,
// key4 of its literal after cp and its bucket's skip.
func (ix *index) keys() []uint32 {
	n := len(ix.ents) - 1
	return unsafe.Slice((*uint32)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(ix.ents)), 8*(n+1))), n)
}

// wkeys returns the keys of an index with wide keys: of each entry, key8
// of its literal after cp and its bucket's skip.
func (ix *index) wkeys() []uint64 {
	n := len(ix.ents) - 1
	return unsafe.Slice((*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(ix.ents)), 8*(n+1))), n)
}

// fullKey returns the key of entry i as key8 makes them: of its literal
// after cp and its bucket's skip, its first 8 bytes when the index has
// wide keys (as its buckets say), its first 4 when not.
func (ix *index) fullKey(i int32, wide bool) uint64 {
	if wide {
		return ix.wkeys()[i]
	}
	return uint64(ix.keys()[i]) << 32
}

// heavyOf returns the heavyRun of entry i.
func (ix *index) heavyOf(i int32) *heavyRun {
	lo, hi := 0, len(ix.heavy)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ix.heavy[m].entry < uint32(i) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return &ix.heavy[lo]
}

// indexSize returns how many bytes the index of a group of rules will
// take. It counts the distinct literal prefixes by their hashes in an
// open-addressed table, and the wildcard rules of the literals with more
// than heavyMin rules, which need groups. buf is scratch space, returned
// for reuse.
func indexSize(arena string, rules []rule, buf []uint64) (int, []uint64) {
	// A slot holds a literal's hash above countBits and how many rules
	// have it below, saturated; 0 is an empty slot.
	const countBits, countMax = 10, 1<<10 - 1
	slots := 1 << bits.Len(uint(2*len(rules)-1)) // at least twice the rules: short probes
	mask := slots - 1
	if cap(buf) < slots {
		buf = make([]uint64, slots)
	} else {
		buf = buf[:slots]
		clear(buf)
	}
	find := func(h uint64) int {
		j := int(h>>countBits) & mask
		for buf[j] != 0 && buf[j]>>countBits != h>>countBits {
			j = (j + 1) & mask
		}
		return j
	}
	nEntries, nHeavy := 0, 0
	for i := range rules {
		r := &rules[i]
		h := maphash.String(litSeed, arena[r.pat:r.pat+r.lit(arena)]) &^ countMax
		j := find(h)
		if r.kind() == kindWild {
			buf = append(buf, uint64(j)<<32|uint64(i)) // its slot, for heavy literals below
		}
		switch c := buf[j] & countMax; {
		case c == 0:
			buf[j] = h | 1
			nEntries++
		case c < countMax:
			buf[j]++
			if c == heavyMin {
				nHeavy++
			}
		}
	}
	nGroups, nSets := 0, 0
	if nHeavy > 0 {
		// The wildcard rules of heavy literals: their slot, kind and
		// need, sorted to count the distinct needs.
		nWild := len(buf) - slots
		for _, w := range buf[slots:] {
			j, r := int(w>>32), &rules[uint32(w)]
			if buf[j]&countMax <= heavyMin {
				continue
			}
			kind, need := wildNeed(r.pattern(arena), r.lit(arena))
			buf = append(buf, uint64(j)<<16|uint64(kind)<<8|uint64(need))
		}
		wild := buf[slots+nWild:]
		slices.Sort(wild)
		nSets = len(wild)
		for i := 0; i < len(wild); {
			j, distinct := i+1, 1
			for ; j < len(wild) && wild[j]>>16 == wild[i]>>16; j++ {
				if wild[j] != wild[j-1] {
					distinct++
				}
			}
			if worthGrouping(distinct, j-i) {
				nGroups += distinct
			} else {
				nGroups++
			}
			i = j
		}
	}
	keyBytes := 4
	if wideKeys(arena, rules) {
		keyBytes = 8
	}
	size := allocSize(int(unsafe.Sizeof(index{}))) +
		allocSize(int(unsafe.Sizeof(entry{}))*(nEntries+1)+(keyBytes*nEntries+7)&^7) + // one block
		allocSize(int(unsafe.Sizeof(bucket{}))*((nEntries+bucketLen-1)/bucketLen))
	if nHeavy > 0 {
		size += allocSize(int(unsafe.Sizeof(heavyRun{}))*nHeavy) +
			allocSize(int(unsafe.Sizeof(wildGroup{}))*nGroups) +
			allocSize(8*nSets)
	}
	return size, buf
}

// wideKeys reports whether an index of rules, in the order they were
// parsed in, takes wide keys, 4 more bytes an entry: when many of their
// patterns differ from the one before only in their last 4 bytes, so that
// 4-byte keys would often tie, as those of a large documentation site do
// when sorted in their file ("/html/E10087_01/", "/html/E10087_02/"); and
// when the rules, their patterns and entries of 16 bytes take at most 5/2
// times the bytes of their lines, of which a rule's is at least its
// pattern as written and 6 bytes ("allow" and a colon or a space), so
// that files of short lines, which take the most for their size, keep
// keys of 4 bytes. Indexes of fewer than wideMin rules keep them too.
func wideKeys(arena string, rules []rule) bool {
	if len(rules) < wideMin {
		return false
	}
	held, lines, late := 0, 0, 0
	prev := ""
	for i := range rules {
		r := &rules[i]
		n := int(r.n())
		held += n
		if r.written() || r.decoded() {
			lines += r.writtenLen(arena) - n // n is added to both below
		}
		// Patterns, not literals, which would take a search for '*'.
		pat := arena[r.pat : int(r.pat)+n]
		if d := n - len(prev); d <= 4 && d >= -4 && n >= 8 && len(prev) >= 8 && commonPrefix(pat, prev)+4 >= max(n, len(prev)) {
			late++
		}
		prev = pat
	}
	lines += held + 6*len(rules)
	held += len(rules) * (int(unsafe.Sizeof(rule{})) + 16)
	return late >= len(rules)/wideLate && 2*held <= 5*lines
}

// wideMin is the fewest rules of an index with wide keys: a search of a
// small index reads few keys, and its rules are counted faster without.
const wideMin = 2 * bucketLen

// wideLate sets how many rules of an index, at least 1/wideLate of them,
// must differ from the rule before only in their last 4 bytes for the
// index to take wide keys.
const wideLate = 16

// litSeed seeds the hashes by which indexSize counts literal prefixes.
var litSeed = maphash.MakeSeed()

// allocSize returns how many bytes the allocator takes for an object of n
// bytes that holds no pointers: its size class, which may be up to about a
// sixth larger than n, or whole pages for a large object.
func allocSize(n int) int {
	if n == 0 {
		return 0
	}
	return sizeClass(n)
}

// allocSizePtr is allocSize for an object that holds pointers, which
// carries an 8-byte header when it is larger than 512 bytes.
func allocSizePtr(n int) int {
	if n > 512 {
		n += 8
	}
	return allocSize(n)
}

// sizeClass returns n rounded up to its size class, or to whole pages.
func sizeClass(n int) int {
	if n > maxSmall {
		return (n + 8191) &^ 8191
	}
	classes := sizeClasses()
	if classes == nil {
		return overClass(n)
	}
	i, _ := slices.BinarySearch(classes, uint16(n))
	return int(classes[i])
}

// overClass returns a size no less than n's size class in the allocators
// Go has had, which are at most about a sixth apart: n and a quarter more,
// and a little.
func overClass(n int) int { return (n + n/4 + 16) &^ 15 }

// maxSmall is the size of the largest size class.
const maxSmall = 32 << 10

// sizeClasses returns the allocator's size classes up to maxSmall, in
// increasing order, or nil if it cannot tell them.
var sizeClasses = sync.OnceValue(func() []uint16 {
	// Appending n bytes to a nil slice allocates n bytes rounded up to
	// their size class, which is the new slice's capacity. The runtime
	// has had about 70 classes: many more means that appends no longer
	// round, and the probe is abandoned.
	var classes []uint16
	for n := 1; n <= maxSmall; {
		if len(classes) > 256 {
			return nil
		}
		c := cap(append([]byte(nil), make([]byte, n)...))
		classes = append(classes, uint16(min(c, maxSmall)))
		n = c + 1
	}
	return classes
})

// find returns the index of the rule that decides the normalised path p, or
// -1 when no rule matches.
func (g *Group) find(p string) int {
	if g.hi <= g.r.nScan {
		g.prepare()
		return g.r.scanPrints(g.lo, g.hi, p)
	}
	arena, rules := g.r.arena, g.rules()
	if len(rules) <= linearMax {
		return scan(arena, rules, p) // a group of usage lines
	}
	ix := g.index()
	cp := len(ix.cp)
	if len(p) < cp {
		return -1
	}
	if cp <= 8 {
		// Without reading cp, which lies elsewhere in memory.
		if cp > 0 && (key8(p)^ix.cpKey)>>(64-8*cp) != 0 {
			return -1 // no literal is a prefix of p
		}
	} else if p[:cp] != ix.cp {
		return -1
	}
	// The greatest entry <= p: first the last bucket whose first literal
	// is <= p.
	q := p[cp:]
	q0, q1 := key8(q), uint64(0)
	if len(q) > 8 {
		q1 = key8(q[8:])
	}
	lo, n := 0, len(ix.bkts)
	for n > 0 {
		half := n >> 1
		m := lo + half
		bk := &ix.bkts[m]
		// (k0, k1) <= (q0, q1), without branches.
		_, c := bits.Sub64(q1, bk.k1, 0)
		_, c = bits.Sub64(q0, bk.k0, c)
		next := half
		if c == 0 {
			lo = m + 1
			next = n - half - 1
		}
		n = next
	}
	if lo > 0 && ix.bkts[lo-1].k0 == q0 && ix.bkts[lo-1].k1 == q1 {
		// Buckets whose first literals have p's first 16 bytes: search
		// again, by the literals where the keys tie.
		lo, n = 0, len(ix.bkts)
		for n > 0 {
			half := n >> 1
			m := lo + half
			bk := &ix.bkts[m]
			_, c := bits.Sub64(bk.k1, q1, 0)
			_, c = bits.Sub64(bk.k0, q0, c)
			le := c != 0
			if bk.k0 == q0 && bk.k1 == q1 {
				lit := ix.literal(arena, rules, int32(m*bucketLen))
				le = len(lit) <= cp+16 || lit[cp:] <= q
			}
			next := half
			if le {
				lo = m + 1
				next = n - half - 1
			}
			n = next
		}
	}
	if lo == 0 {
		return -1 // p is before the first literal
	}
	b := lo - 1
	bk := &ix.bkts[b]
	lo, end := b*bucketLen, min((b+1)*bucketLen, len(ix.ents)-1)
	// The bucket's first literal is <= p: when p does not have the prefix
	// all its literals share, p is after all of them.
	skip := int(bk.skip)
	var shares bool
	switch x0, x1 := bk.k0^q0, bk.k1^q1; {
	case skip <= 8:
		shares = x0>>(64-8*skip) == 0 // true when skip is 0: a shift by 64 gives 0
	case skip <= 16:
		shares = x0 == 0 && x1>>(128-8*skip) == 0
	default:
		shares = len(q) >= skip && q[:skip] == ix.literal(arena, rules, int32(lo))[cp:cp+skip]
	}
	// The entry that is the greatest <= p, and its literal's length n and
	// common prefix l with p, which its key gives when its literal ends
	// within it.
	var i int32
	var l int
	if !shares {
		i = int32(end - 1)
		lit := ix.literal(arena, rules, i)
		n, l = len(lit), commonPrefix(lit, p)
	} else {
		// The last entry whose key is <= p's. Keys compare as their
		// literals' first w bytes after cp+skip do.
		qs := q[skip:]
		qk, w := key8(qs), 4
		if !bk.wide {
			qk &^= 1<<32 - 1
			lo = pastLE(ix.keys()[:end], lo, uint32(qk>>32))
		} else {
			w = 8
			lo = pastLE(ix.wkeys()[:end], lo, qk)
		}
		// The bucket's first entry is <= p, so lo > its start.
		i = int32(lo - 1)
		k := ix.fullKey(i, bk.wide)
		// A literal holds no zero byte, and its key is padded with them.
		z := 8 - bits.TrailingZeros64(k)/8 // its bytes in the key
		off := cp + skip + w
		if z < w {
			n = cp + skip + z
			l = cp + skip + min(z, bits.LeadingZeros64(k^qk)/8)
		} else if r := &rules[ix.ents[i].start&^heavyBit]; r.kind() != kindWild && int(r.lit(arena)) == off {
			// It ends with its key: its rule, which the search reads
			// next, says so (without a search for '*', which only a
			// wildcard rule needs).
			n = off
			l = cp + skip + min(w, bits.LeadingZeros64(k^qk)/8)
		} else {
			lit := r.literal(arena)
			if k == qk && lit[off:] > p[off:] {
				// A tie: the entries with p's key share off bytes with
				// p, or end before and are prefixes of p; the last of
				// them <= p is found by their literals. (The bucket's
				// first entry is <= p, so one is.)
				hi := int(i)
				for lo, n = b*bucketLen, hi-b*bucketLen; n > 0; {
					half := n >> 1
					m := lo + half
					lt := ix.fullKey(int32(m), bk.wide) < qk
					next := half
					if lt {
						lo = m + 1
						next = n - half - 1
					}
					n = next
				}
				for n = hi - lo; n > 0; {
					half := n >> 1
					m := lo + half
					lit := ix.literal(arena, rules, int32(m))
					le := len(lit) <= off || lit[off:] <= p[off:]
					next := half
					if le {
						lo = m + 1
						next = n - half - 1
					}
					n = next
				}
				i = int32(lo - 1)
				lit = ix.literal(arena, rules, i)
			}
			n, l = len(lit), commonPrefix(lit, p)
		}
	}
	// Its ancestors no longer than the common prefix with p are exactly the
	// entries that are prefixes of p.
	for n > l {
		if i = ix.ents[i].parent; i < 0 {
			return -1
		}
		n = int(rules[ix.ents[i].start&^heavyBit].lit(arena))
	}
	best := int32(-1)
	var bestRule *rule
	var pathBytes [2]uint64
	var pathFold uint64
	haveBytes := false
	for {
		e := ix.ents[i]
		start, end := e.start&^heavyBit, ix.ents[i+1].start&^heavyBit
		if e.start&heavyBit == 0 {
			for k := start; k < end; k++ {
				r := &rules[k]
				if (bestRule == nil || better(r, bestRule)) && matchesAfter(arena, r, n, p) {
					best, bestRule = int32(k), r
				}
			}
		} else {
			h := ix.heavyOf(i)
			if start < h.exact {
				if r := &rules[start]; bestRule == nil || better(r, bestRule) {
					best, bestRule = int32(start), r
				}
			}
			if h.exact < h.wild && len(p) == n {
				if r := &rules[h.exact]; bestRule == nil || better(r, bestRule) {
					best, bestRule = int32(h.exact), r
				}
			}
			for _, wg := range ix.groups[h.glo:h.ghi] {
				switch wg.kind {
				case needTail:
					if len(p) == 0 || p[len(p)-1] != wg.need {
						continue
					}
				}
				if !haveBytes {
					for k := 0; k < len(p); k++ {
						c := p[k] & 127
						pathBytes[c>>6] |= 1 << (c & 63)
					}
					pathFold = pathBytes[0] | pathBytes[1]
					haveBytes = true
				}
				if wg.kind == needHas && pathBytes[wg.need>>6&1]&(1<<(wg.need&63)) == 0 {
					continue // the path lacks the byte all the group's rules need
				}
				sets := ix.sets[wg.set : wg.set+wg.hi-wg.lo]
				for k := wg.lo; k < wg.hi; k++ {
					r := &rules[k]
					if bestRule != nil && !better(r, bestRule) {
						break // the rest of the group are worse still
					}
					if sets[k-wg.lo]&^pathFold == 0 && matchWild(r.pattern(arena)[n:], p[n:]) {
						best, bestRule = int32(k), r
						break
					}
				}
			}
		}
		if i = e.parent; i < 0 {
			return int(best)
		}
		n = int(rules[ix.ents[i].start&^heavyBit].lit(arena))
	}
}

// pastLE returns the index past the last of keys[lo:], which are sorted,
// that is <= q, or lo if none is.
func pastLE[K uint32 | uint64](keys []K, lo int, q K) int {
	for n := len(keys) - lo; n > 0; {
		half := n >> 1
		m := lo + half
		le := keys[m] <= q
		// Written so that the compiler can use conditional moves.
		next := half
		if le {
			lo = m + 1
			next = n - half - 1
		}
		n = next
	}
	return lo
}

// matchesAfter reports whether r, whose literal prefix of n bytes is a
// prefix of the path p, matches p.
func matchesAfter(arena string, r *rule, n int, p string) bool {
	switch r.kind() {
	case kindPlain:
		return true
	case kindExact:
		return len(p) == n
	}
	return matchWild(r.pattern(arena)[n:], p[n:])
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := le64(a[i:]) ^ le64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// le64 returns the first 8 bytes of s as a little-endian number.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
