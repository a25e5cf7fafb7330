package matcher

import (
	"cmp"
	"encoding/binary"
	"reflect"
	"slices"

	"github.com/f9014239/robots/internal/memsize"
	"github.com/f9014239/robots/internal/usagetab"
	"github.com/f9014239/robots/usage"
)

// Usage lines: Content-Usage and Content-Signal lines say how fetched
// content may be used (see package usage). They never change whether a URL
// may be fetched.
//
// A usage line is a rule of its group whose value starts with an optional
// path pattern, matched as an allow or disallow rule's is; a line without a
// path matches every URL, least specifically. Lines before the first
// user-agent line are rules of every group. Of each kind, the most
// specific matching lines decide, and a disallowed URL has no preference.
//
// A file that states no preference holds nothing more than a nil pointer.
// A file that does keeps its usage lines as rules of their own, in an
// arena and a rule array apart from the allow and disallow rules, so that
// each kind of line of each group is matched by the same scan or index as
// the verdict is; what the lines say is a usagetab.Table.

// The fields of usage lines, after those of scan.go.
const (
	fieldContentUsage  field = fieldCrawlDelay + 1 + iota // content-usage
	fieldContentSignal                                    // content-signal
)

// usageField returns the usage field that key names, compared whole and
// without regard to ASCII case, or fieldNone. Misspellings and prefixes do
// not count: a new field gets no leniency it has not earned in the wild.
func usageField(key []byte) field {
	switch {
	case len(key) == len("content-usage") && hasPrefixFold(key, "content-usage"):
		return fieldContentUsage
	case len(key) == len("content-signal") && hasPrefixFold(key, "content-signal"):
		return fieldContentSignal
	}
	return fieldNone
}

// usageKind returns the kind of a usage field.
func usageKind(f field) usage.Kind {
	if f == fieldContentSignal {
		return usage.ContentSignal
	}
	return usage.ContentUsage
}

// usageLine is a usage line as Parse reads it.
type usageLine struct {
	line  int
	kind  usage.Kind
	value []byte // in the body; valid while Parse runs
}

// usageCollector gathers the usage lines of one Parse.
type usageCollector struct {
	lines []usageLine
	nFile int // the lines before the first user-agent line: lines[:nFile]
}

// add records the usage line s has read; file reports that it stands
// before the first user-agent line.
func (uc *usageCollector) add(s *scanner, file bool) {
	uc.lines = append(uc.lines, usageLine{line: s.num, kind: usageKind(s.field), value: s.value})
	if file {
		uc.nFile++
	}
}

// usageData is what a file's usage lines become.
type usageData struct {
	// sub holds the usage rules: its arena has, for each line, the
	// normalised pattern that rule.pat points at, then the line's
	// usagetab.ID as a uvarint. A rule's allow bit is set for a Content-Signal
	// line. sub's mutex guards the building of the indexes of big.
	sub    Robots
	t      *usagetab.Table // what the lines say
	groups []usageGroup    // of each group of the file, by index in Robots.groups
	big    []*Group        // the sets of more than linearMax rules, by lo
	file   usageGroup      // the lines before the first user-agent line
	noneU  usageGroup      // of none: no lines of its own
	none   Group           // the group of a crawler that no group names, in a file with no "*" group
	// fileZero is the file's lines without a path, of each kind, as one
	// line or set; 0 if none.
	fileZero [2]usagetab.ID
}

// usageSet is a range of sub.rules: the usage rules of one kind of one
// group, sorted best first when there are at most linearMax, else in a
// Group of their own in usageData.big, which indexes them.
type usageSet struct {
	lo, hi uint32
}

// rules returns s's rules.
func (s *usageSet) rules(d *usageData) []rule { return d.sub.rules[s.lo:s.hi] }

// find returns the index in s of the rule that decides the normalised path
// p, or -1, as Group.find does.
func (s *usageSet) find(d *usageData, p string) int {
	if s.hi-s.lo > linearMax {
		i, _ := slices.BinarySearchFunc(d.big, s.lo, func(g *Group, lo uint32) int { return int(g.lo) - int(lo) })
		return d.big[i].find(p)
	}
	return scan(d.sub.arena, d.sub.rules[s.lo:s.hi], p)
}

// usageGroup is the usage rules of one group, one set per kind.
type usageGroup struct {
	g [2]usageSet
	// zero is its rules without a path and the file's, of each kind, as
	// one line or set: they all match every URL, and tie. It is 0 when
	// there are none.
	zero [2]usagetab.ID
	// flags holds, for each kind k, bit ugZeroMany+k and so on: one byte,
	// not seven, in a file of many tiny groups.
	flags uint8
}

// Flags of a usageGroup, the first of a bit for each kind.
const (
	// ugZeroMany: its rules without a path say different things, and
	// zero is their set.
	ugZeroMany = 0
	// ugTie: two of its rules with a path have patterns of one length and
	// different preferences, so that both may decide a URL.
	ugTie = 2
	// ugZeroBoth: the group and the file both have lines without a path
	// of the kind and zero is only the group's set: the file's,
	// usageData.fileZero, decide with it.
	ugZeroBoth = 4
	// ugWithFile (one bit): g holds the file's lines too, copied, so that
	// a query scans one set of rules of each kind, not two: for a group
	// with lines of its own, when the file has few.
	ugWithFile = 6
)

// has reports whether ug has flag f for kind k (0 for ugWithFile).
func (ug *usageGroup) has(f, k int) bool { return ug.flags>>(f+k)&1 != 0 }

// set sets flag f for kind k to v.
func (ug *usageGroup) set(f, k int, v bool) {
	if v {
		ug.flags |= 1 << (f + k)
	} else {
		ug.flags &^= 1 << (f + k)
	}
}

// maxCopied is the most lines before the first group that are copied
// into each group with lines of its own (see ugWithFile).
const maxCopied = linearMax

// sets returns the sets that hold ug's rules of kind k and the file's.
func (d *usageData) sets(ug *usageGroup, k int) []*usageSet {
	if ug.has(ugWithFile, 0) || ug == &d.file {
		return []*usageSet{&ug.g[k]}
	}
	return []*usageSet{&ug.g[k], &d.file.g[k]}
}

// idOf returns the usagetab.ID of the line of usage rule r.
func (d *usageData) idOf(r *rule) usagetab.ID {
	var id usagetab.ID
	for i, s := 0, d.sub.arena[r.pat+r.n():]; ; i++ { // a uvarint
		id |= usagetab.ID(s[i]&0x7f) << (7 * i)
		if s[i] < 0x80 {
			return id
		}
	}
}

// buildUsage builds r.usage from the usage lines uc collected, if any.
// specs and ids are the groups' blocks, as build made them.
func (r *Robots) buildUsage(uc *usageCollector, blocks []block, specs []groupSpec, ids []int) {
	if len(uc.lines) == 0 {
		return
	}
	b := &usageBuilder{d: &usageData{}, uc: uc}
	d := b.d
	d.sub.star = -1
	b.setArena()
	b.setGroups(blocks, specs, ids)
	d.none = Group{r: r, ln: uint32(len(r.lines))}
	b.setZeros()
	b.combine()
	d.t = b.ub.Table()
	r.usage = d
}

// usageBuilder is the state of buildUsage.
type usageBuilder struct {
	d        *usageData
	uc       *usageCollector
	ub       usagetab.Builder
	lineRule []rule // the rule of each line
}

// setArena writes the arena of the usage rules, each line's pattern and
// ID, and adds the lines to ub.
func (b *usageBuilder) setArena() {
	var arena []byte
	b.lineRule = make([]rule, len(b.uc.lines))
	for i, l := range b.uc.lines {
		id, path := b.ub.Add(usagetab.Kind(l.kind), l.line, l.value)
		pat := uint32(len(arena))
		if path != nil {
			arena = appendNormRule(arena, path)
			if len(arena)-int(pat) > maxPattern {
				// Cut: the preference applies to at least the URLs the
				// whole path covers.
				arena, _ = capPattern(arena, int(pat), maxPattern, false)
			}
		}
		n := uint32(len(arena)) - pat
		b.lineRule[i] = makeRule(pat, arena[pat:pat+n], l.kind == usage.ContentSignal, patternKind(arena[pat:]), false, false)
		arena = binary.AppendUvarint(arena, uint64(id))
	}
	b.d.sub.arena = string(arena)
}

// setGroups lays out the usage rules of each group, each kind side by
// side, and of the file.
func (b *usageBuilder) setGroups(blocks []block, specs []groupSpec, ids []int) {
	d, uc := b.d, b.uc
	nRules := uc.nFile
	own := make([]bool, len(specs))
	for gi, sp := range specs {
		for _, b := range ids[sp.lo:sp.hi] {
			n := blocks[b].usageHi - blocks[b].usageLo
			nRules += n
			own[gi] = own[gi] || n > 0
		}
		if own[gi] && uc.nFile <= maxCopied {
			nRules += uc.nFile
		}
	}
	d.sub.rules = make([]rule, 0, nRules)
	addGroup := func(ug *usageGroup, ranges func(yield func(lo, hi int))) {
		for k := range ug.g {
			g := &ug.g[k]
			g.lo = uint32(len(d.sub.rules))
			ranges(func(lo, hi int) {
				for i := lo; i < hi; i++ {
					if int(uc.lines[i].kind) == k {
						d.sub.rules = append(d.sub.rules, b.lineRule[i])
					}
				}
			})
			g.hi = uint32(len(d.sub.rules))
			rs := d.sub.rules[g.lo:g.hi]
			ug.set(ugTie, k, b.mayTie(rs))
			if len(rs) <= linearMax {
				sortBest(rs)
			} else {
				d.big = append(d.big, &Group{r: &d.sub, lo: g.lo, hi: g.hi})
			}
		}
	}
	addGroup(&d.file, func(yield func(lo, hi int)) { yield(0, uc.nFile) })
	d.groups = make([]usageGroup, len(specs))
	for gi, sp := range specs {
		ug := &d.groups[gi]
		ug.set(ugWithFile, 0, own[gi] && uc.nFile > 0 && uc.nFile <= maxCopied)
		addGroup(ug, func(yield func(lo, hi int)) {
			if ug.has(ugWithFile, 0) {
				yield(0, uc.nFile)
			}
			for _, b := range ids[sp.lo:sp.hi] {
				yield(blocks[b].usageLo, blocks[b].usageHi)
			}
		})
	}
}

// mayTie reports whether two of rules have patterns of one length and
// different preferences.
func (b *usageBuilder) mayTie(rules []rule) bool {
	var s []rule
	for i := range rules {
		if rules[i].n() > 0 { // those without a path are combined beforehand
			s = append(s, rules[i])
		}
	}
	slices.SortFunc(s, func(x, y rule) int { return cmp.Compare(x.n(), y.n()) })
	for i, first := 1, 0; i < len(s); i++ {
		if s[i].n() != s[first].n() {
			first = i
		} else if !b.ub.Same(b.d.idOf(&s[i]), b.d.idOf(&s[first])) {
			return true
		}
	}
	return false
}

// setZeros sets what the lines without a path say, combined: the file's
// once, then each group's with the file's. A group whose own and the
// file's are not combined beforehand (the file has too many to copy)
// leaves it to the query.
func (b *usageBuilder) setZeros() {
	d := b.d
	// The file's lines are a set when they decide together with a
	// group's, or say different things.
	var fileMany, fileSet [2]bool
	for gi := range d.groups {
		for k := range fileSet {
			fileSet[k] = fileSet[k] || !d.groups[gi].has(ugWithFile, 0) && slices.ContainsFunc(d.groups[gi].g[k].rules(d), func(r rule) bool { return r.n() == 0 })
		}
	}
	for k := range d.fileZero {
		d.fileZero[k], fileMany[k] = b.zeroOf(&d.file.g[k], fileSet[k])
	}
	for gi := -1; gi < len(d.groups); gi++ {
		ug := &d.noneU
		if gi >= 0 {
			ug = &d.groups[gi]
		}
		for k := range ug.zero {
			both := !ug.has(ugWithFile, 0) && d.fileZero[k] != 0
			z, many := b.zeroOf(&ug.g[k], both)
			switch {
			case !both:
			case z == 0:
				z, many = d.fileZero[k], fileMany[k]
			default:
				ug.set(ugZeroBoth, k, true)
			}
			ug.zero[k] = z
			ug.set(ugZeroMany, k, many)
		}
	}
}

// zeroOf returns the rules of g without a path, as one line, or as their
// set when they say different things or set is true; 0 if there are none.
// many reports whether they say different things.
func (b *usageBuilder) zeroOf(g *usageSet, set bool) (zero usagetab.ID, many bool) {
	var ids []usagetab.ID
	for i := range g.rules(b.d) {
		if r := &g.rules(b.d)[i]; r.n() == 0 {
			id := b.d.idOf(r)
			many = many || len(ids) > 0 && !b.ub.Same(ids[0], id)
			ids = append(ids, id)
		}
	}
	switch {
	case len(ids) == 0:
		return 0, false
	case many || set:
		return b.ub.Union(ids), many
	}
	return ids[0], false
}

// maxCombined is the most lines of each kind that a group's combined
// preferences are prepared for (see usagetab.Builder.Combine, which prepares
// a few hundred in a file).
const maxCombined = 256

// combine prepares what each group's Content-Usage and Content-Signal
// lines say together, for the common files that have few of either.
func (b *usageBuilder) combine() {
	d := b.d
	var filePaths [2][]usagetab.ID
	for k := range filePaths {
		filePaths[k] = d.pathIDs(nil, &d.file.g[k])
	}
	for gi := -1; gi < len(d.groups); gi++ {
		ug := &d.noneU
		if gi >= 0 {
			ug = &d.groups[gi]
			if ug.g[0].hi == ug.g[0].lo && ug.g[1].hi == ug.g[1].lo {
				continue // no lines of its own: as noneU
			}
		}
		var sets [2][]usagetab.ID
		for k := range sets {
			if ug.g[k].hi-ug.g[k].lo+uint32(len(filePaths[k])) > maxCombined {
				return
			}
			sets[k] = d.pathIDs(nil, &ug.g[k])
			if !ug.has(ugWithFile, 0) {
				sets[k] = append(sets[k], filePaths[k]...)
			}
			if ug.zero[k] != 0 {
				sets[k] = append(sets[k], ug.zero[k])
			}
		}
		b.ub.Combine(sets[0], sets[1])
	}
}

// pathIDs appends to dst the lines of g's rules with a path.
func (d *usageData) pathIDs(dst []usagetab.ID, g *usageSet) []usagetab.ID {
	for i := range g.rules(d) {
		if r := &g.rules(d)[i]; r.n() > 0 {
			dst = append(dst, d.idOf(r))
		}
	}
	return dst
}

// heldBytes returns no less than the bytes d holds, building the indexes
// of its large groups.
func (d *usageData) heldBytes() int {
	d.sub.mu.Lock()
	defer d.sub.mu.Unlock()
	n := memsize.Alloc(int(reflect.TypeFor[usageData]().Size())) + d.sub.heldBytes() + memsize.Slice(d.groups) +
		memsize.Slice(d.big) + d.t.Size()
	for _, g := range d.big {
		n += memsize.Alloc(int(reflect.TypeFor[Group]().Size())) + g.indexLocked().heldBytes()
	}
	return n
}

// usageGroup returns the usage data of g's file and g's usage rules, or
// nil, nil when the file states no preference.
func (g *Group) usageGroup() (*usageData, *usageGroup) {
	d := g.r.usage
	if d == nil {
		return nil, nil
	}
	i, ok := g.r.groupIndex(g)
	if g == &d.none || !ok {
		return d, &d.noneU
	}
	return d, &d.groups[i]
}

// decide returns the usage rule of kind k, among ug's and the file's, that
// decides the normalised path p, or -1; the lines or sets that decide with
// it, as usagetab.Of takes them; and whether another rule with a path
// may tie with it.
func (d *usageData) decide(ug *usageGroup, k int, p string) (best int32, ids [2]usagetab.ID, ties bool) {
	best = -1
	var bestN uint32
	if g := &ug.g[k]; g.hi > g.lo {
		if i := g.find(d, p); i >= 0 {
			best, ties = int32(g.lo)+int32(i), ug.has(ugTie, k)
			bestN = d.sub.rules[best].n()
		}
	}
	if f := &d.file.g[k]; f.hi > f.lo && !ug.has(ugWithFile, 0) {
		if i := f.find(d, p); i >= 0 {
			j := int32(f.lo) + int32(i)
			switch n := d.sub.rules[j].n(); {
			case best < 0 || n > bestN:
				best, bestN, ties = j, n, d.file.has(ugTie, k)
			case n == bestN:
				ties = ties || d.file.has(ugTie, k) || !d.t.Same(d.idOf(&d.sub.rules[j]), d.idOf(&d.sub.rules[best]))
			}
		}
	}
	switch {
	case best < 0:
		return -1, ids, false
	case bestN == 0 && ug.has(ugZeroBoth, k):
		return best, [2]usagetab.ID{ug.zero[k], d.fileZero[k]}, false
	case bestN == 0 && ug.has(ugZeroMany, k):
		return best, [2]usagetab.ID{ug.zero[k]}, false
	case bestN == 0:
		ties = false // the rules without a path say one thing
	}
	return best, [2]usagetab.ID{d.idOf(&d.sub.rules[best])}, ties
}

// tied appends to ties the lines of the rules of kind k other than best,
// among ug's and the file's, that match p as specifically as best, if any
// says something else than best.
func (d *usageData) tied(ties []usagetab.ID, ug *usageGroup, k int, p string, best int32) []usagetab.ID {
	br := &d.sub.rules[best]
	bid := d.idOf(br)
	start := len(ties)
	differ := false
	for _, g := range d.sets(ug, k) {
		for i := g.lo; i < g.hi; i++ {
			r := &d.sub.rules[i]
			if int32(i) == best || r.n() != br.n() || !ruleMatches(d.sub.arena, r, p) {
				continue
			}
			ties = append(ties, d.idOf(r))
			differ = differ || !d.t.Same(d.idOf(r), bid)
		}
	}
	if !differ {
		return ties[:start]
	}
	return ties
}

// ruleMatches reports whether r matches the normalised path p.
func ruleMatches(arena string, r *rule, p string) bool {
	lit := r.lit(arena)
	return len(p) >= int(lit) && p[:lit] == arena[r.pat:r.pat+lit] && matchesAfter(arena, r, int(lit), p)
}

// Usage returns the usage preference that applies to url for the crawler
// agent; see [Group.Usage].
func (r *Robots) Usage(agent, url string) usage.Preference {
	if r.usage == nil {
		return usage.Preference{} // the common file: no preference, no need to match
	}
	return r.Group(agent).Usage(url)
}

// PolicyGroup returns the group that answers for a policy token, a product
// token that stands for a use rather than a crawler, as
// draft-kelley-aipref-training-preference-signal binds a use such as AI
// training to the groups that name its token: the groups that name token,
// combined, as [Robots.Group] finds them; or else, if star is true, the "*"
// groups, combined, as for a crawler (RFC 9309 §2.2.1); or else nil, when
// the file says nothing to the token. Its Allowed says whether the use is
// allowed for a URL. It does not allocate.
func (r *Robots) PolicyGroup(token string, star bool) *Group {
	g, all := r.Group(token), r.Group("*")
	switch {
	case g != all:
		return g // a group names token
	case !star || all == emptyGroup || r.usage != nil && all == &r.usage.none:
		return nil // no group names it, and no "*" group answers
	}
	return all
}

// HasUsage reports whether the file has a Content-Usage or Content-Signal
// line, so that a caller can skip asking about usage when it has none.
func (r *Robots) HasUsage() bool { return r.usage != nil }

// Usage returns the usage preference that applies to url under g: nothing
// if url is disallowed; else, of the Content-Usage lines and of the
// Content-Signal lines each, what the most specific lines whose patterns
// match url state (a line without a path matches every URL, least
// specifically; lines that match as specifically combine); the two
// combined. The lines before the first user-agent line count as rules of
// every group. url is read as [Group.Match] reads it.
func (g *Group) Usage(url string) usage.Preference {
	d, ug := g.usageGroup()
	if d == nil {
		return usage.Preference{}
	}
	p, normal := pathQuery(url)
	if !normal {
		var buf [512]byte
		return g.usageAt(d, ug, string(normalizeTo(buf[:0], p))) // on the stack when at most 32 bytes long
	}
	return g.usageAt(d, ug, p)
}

// usageAt is Usage for the normalised path and query p.
func (g *Group) usageAt(d *usageData, ug *usageGroup, p string) usage.Preference {
	if p != "/robots.txt" {
		if i := g.find(p); i >= 0 && !g.r.rules[g.lo+uint32(i)].allow() {
			return usage.Preference{} // disallowed: no preference applies
		}
	}
	var ids [4]usagetab.ID
	var ties []usagetab.ID
	for k := range 2 {
		if ug.g[k].hi == ug.g[k].lo && (ug.has(ugWithFile, 0) || d.file.g[k].hi == d.file.g[k].lo) {
			continue // no line of this kind applies
		}
		best, dec, tie := d.decide(ug, k, p)
		if best < 0 {
			continue
		}
		ids[2*k], ids[2*k+1] = dec[0], dec[1]
		if tie {
			ties = d.tied(ties, ug, k, p, best)
		}
	}
	return usagetab.Of[usage.Preference](d.t, ids, ties)
}
