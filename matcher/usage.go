package matcher

import (
	"encoding/binary"
	"reflect"
	"slices"
	"strings"

	"github.com/dunglas/httpsfv"
)

// Usage preferences (SPEC.md section 10): Content-Usage (IETF AIPREF) and
// Content-Signal lines say how fetched content may be used. They never
// change whether a URL may be fetched.
//
// A file that states no preference holds nothing more than a nil pointer.
// A file that does keeps its usage lines as rules of their own, in an
// arena and a rule array apart from the allow and disallow rules, so that
// each kind of line of each group is matched by the same scan or index as
// the verdict is. Statements are interned: each distinct preference is a
// run of label ids (sorted as the labels are) and its canonical text.

// The fields of usage lines, after those of scan.go.
const (
	fieldContentUsage  field = fieldCrawlDelay + 1 + iota // content-usage (SPEC 10.1)
	fieldContentSignal                                    // content-signal (SPEC 10.1)
)

// Kinds of usage line.
const (
	kindUsage  = 0 // Content-Usage
	kindSignal = 1 // Content-Signal
)

// usageKeys are the canonical spellings of the usage fields, by kind.
var usageKeys = [2]string{"Content-Usage", "Content-Signal"}

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

// usageLine is a usage line as Parse reads it.
type usageLine struct {
	line  int
	kind  uint8
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
	kind := uint8(kindUsage)
	if s.field == fieldContentSignal {
		kind = kindSignal
	}
	uc.lines = append(uc.lines, usageLine{line: s.num, kind: kind, value: s.value})
	if file {
		uc.nFile++
	}
}

// splitUsage splits a usage line's value into its path pattern, if any, and
// its statement (SPEC 10.1).
func splitUsage(v []byte) (path []byte, hasPath bool, stmt []byte) {
	if len(v) == 0 || v[0] != '/' && v[0] != '*' {
		return nil, false, v
	}
	i := 0
	for i < len(v) && v[i] != ' ' && v[i] != '\t' {
		i++
	}
	path, stmt = v[:i], v[i:]
	for len(stmt) > 0 && (stmt[0] == ' ' || stmt[0] == '\t') {
		stmt = stmt[1:]
	}
	return path, true, stmt
}

// labelValue is one label of a preference and whether it is disallowed
// ("n"); a label that is allowed has no = false.
type labelValue struct {
	label string
	no    bool
}

// parseStatement reads a statement of the given kind: an RFC 9651
// Dictionary whose members that are the tokens y or n (yes or no for
// Content-Signal) state a label. It returns the labels stated, sorted,
// each once; a label stated twice (Content-Signal's ai-train and train-ai)
// is disallowed if either says so. It fails when the statement does not
// parse, which states nothing.
func parseStatement(kind uint8, stmt string) ([]labelValue, error) {
	d, err := httpsfv.UnmarshalDictionary([]string{stmt})
	if err != nil {
		return nil, err
	}
	var lv []labelValue
	for _, k := range d.Names() {
		m, _ := d.Get(k)
		it, ok := m.(httpsfv.Item)
		if !ok {
			continue // an inner list: unknown
		}
		tok, ok := it.Value.(httpsfv.Token)
		if !ok {
			continue // a boolean, string, number, …: unknown
		}
		if kind == kindSignal && k == "use" {
			// How much of a page may be used, not whether: kept as
			// the label "use=<token>", the least of which wins.
			if useRank("use="+string(tok)) > 0 {
				lv = append(lv, labelValue{label: "use=" + string(tok)})
			}
			continue
		}
		var no bool
		switch {
		case kind == kindUsage && tok == "y", kind == kindSignal && tok == "yes":
		case kind == kindUsage && tok == "n", kind == kindSignal && tok == "no":
			no = true
		default:
			continue // any other token: unknown
		}
		if kind == kindSignal && k == "ai-train" {
			k = "train-ai" // the same category (SPEC 10.2)
		}
		lv = append(lv, labelValue{k, no})
	}
	return mergeLabels(lv), nil
}

// mergeLabels sorts lv by label and combines each label's values, most
// restrictive first (SPEC 10.3): "n" over "y", and the least use of
// Content-Signal's use key.
func mergeLabels(lv []labelValue) []labelValue {
	slices.SortFunc(lv, func(a, b labelValue) int { return strings.Compare(a.label, b.label) })
	out := lv[:0]
	for _, x := range lv {
		if n := len(out); n > 0 && out[n-1].label == x.label {
			out[n-1].no = out[n-1].no || x.no
			continue
		}
		out = append(out, x)
	}
	return leastUse(out)
}

// useRank returns the rank of a label that Content-Signal's use key states,
// "use=immediate" < "use=reference" < "use=full", from 1; 0 for any other
// label.
func useRank(label string) int {
	switch label {
	case "use=immediate":
		return 1
	case "use=reference":
		return 2
	case "use=full":
		return 3
	}
	return 0
}

// leastUse returns lv, sorted labels, with only the least of the labels of
// Content-Signal's use key, if it holds several. It reuses lv.
func leastUse(lv []labelValue) []labelValue {
	least, n := 0, 0
	for _, x := range lv {
		if r := useRank(x.label); r > 0 {
			n++
			if least == 0 || r < least {
				least = r
			}
		}
	}
	if n < 2 {
		return lv
	}
	out := lv[:0]
	for _, x := range lv {
		if r := useRank(x.label); r == 0 || r == least {
			out = append(out, x)
			if r != 0 {
				least = -1 // once
			}
		}
	}
	return out
}

// canonicalText returns the canonical text of sorted labels:
// "label=y" or "label=n", joined by ", ", and the least of the labels of
// Content-Signal's use key as it is, "use=reference".
func canonicalText(lv []labelValue) string {
	if useLabels(lv) > 1 {
		lv = leastUse(slices.Clone(lv))
	}
	var b strings.Builder
	for i, x := range lv {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(x.label)
		switch {
		case useRank(x.label) > 0:
		case x.no:
			b.WriteString("=n")
		default:
			b.WriteString("=y")
		}
	}
	return b.String()
}

// useLabels returns how many labels of lv Content-Signal's use key states.
func useLabels(lv []labelValue) int {
	n := 0
	for _, x := range lv {
		if useRank(x.label) > 0 {
			n++
		}
	}
	return n
}

// usageData is what a file's usage lines become.
type usageData struct {
	// sub holds the usage rules: its arena has, for each line, its line
	// byte (see Robots.lineOf), the normalised pattern that rule.pat
	// points at, its preference as 4 bytes, then the pattern as written
	// and the statement as written, each after its length as a uvarint. A rule's allow bit
	// is set for a Content-Signal line. sub's mutex guards the building
	// of the usage groups' indexes.
	sub    Robots
	groups []usageGroup // of each group of the file, by index in Robots.groups
	big    []*Group     // the sets of more than linearMax rules, by lo
	file   usageGroup   // the lines before the first user-agent line
	noneU  usageGroup   // of none: no lines of its own
	none   Group        // the group of a crawler that no group names, in a file with no "*" group

	prefs   []pref            // then one whose ent and txt end the last's
	ents    []uint32          // the labels of each pref: id<<1 | 1 when disallowed
	labelAt []uint32          // every label stated, sorted, as the offset in text of one of its uses, up to the '=' that follows; a label's id is its index
	labels  []string          // the labels as labelAt has them, while buildUsage sets labelAt
	text    string            // the canonical texts of prefs
	combos  map[string]uint32 // the prefs that combine two others, by their ents as bytes
	// fileZero is 1 + the preference of the file's lines without a
	// path, of each kind, combined; 0 if none.
	fileZero [2]uint32
}

// pref is one distinct preference: ents[ent:], text[txt:], each up to
// where the next pref's start.
type pref struct {
	ent, txt uint32
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
	// zero is 1 + the preference of its rules without a path and the
	// file's, of each kind, combined: they all match every URL, and tie.
	// It is 0 when there are none.
	zero [2]uint32
	// flags holds, for each kind k, bit ugZeroMany+k and so on: one byte,
	// not seven, in a file of many tiny groups.
	flags uint8
}

// Flags of a usageGroup, the first of a bit for each kind.
const (
	// ugZeroMany: its rules without a path say different things.
	ugZeroMany = 0
	// ugTie: two of its rules with a path have patterns of one length and
	// different preferences, so that both may decide a URL.
	ugTie = 2
	// ugZeroBoth: the group and the file both have lines without a path
	// of the kind and zero holds only the group's: the file's,
	// usageData.fileZero, are combined with it at query time.
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

// sets returns the Groups of sub that hold ug's rules of kind k and the
// file's.
func (d *usageData) sets(ug *usageGroup, k int) []*usageSet {
	if ug.has(ugWithFile, 0) || ug == &d.file {
		return []*usageSet{&ug.g[k]}
	}
	return []*usageSet{&ug.g[k], &d.file.g[k]}
}

// maxCombos bounds the combined preferences a file precomputes, so that
// a query that matches a Content-Usage and a Content-Signal rule needs
// not build the text of what they say together.
const maxCombos = 256

// buildUsage builds r.usage from the usage lines uc collected, if any.
// specs and ids are the groups' blocks, as build made them.
func (r *Robots) buildUsage(uc *usageCollector, blocks []block, specs []groupSpec, ids []int) {
	if len(uc.lines) == 0 {
		return
	}
	b := &usageBuilder{d: &usageData{prefs: []pref{{}}}, uc: uc, byText: make(map[string]uint32)}
	d := b.d
	d.sub.star = -1
	b.internLines()
	b.setArena()
	b.setGroups(blocks, specs, ids)
	d.none = Group{r: r, ln: uint32(len(r.lines))}
	b.setZeros()
	// Precompute what a group's Content-Usage and Content-Signal rules say
	// together, for the common files that have few of either.
	var filePrefs [2][]uint32
	for k := range filePrefs {
		filePrefs[k] = d.pathPrefs(nil, &d.file.g[k])
	}
	budget := maxCombos
	for gi := -1; gi < len(d.groups) && budget > 0; gi++ {
		ug := &d.noneU
		if gi >= 0 {
			ug = &d.groups[gi]
			if ug.g[0].hi == ug.g[0].lo && ug.g[1].hi == ug.g[1].lo {
				continue // no lines of its own: as noneU
			}
		}
		budget = d.addCombos(ug, budget, &filePrefs, &b.text)
	}
	// Held at their lengths: the builders grew by doubling.
	d.text = strings.Clone(b.text.String())
	d.prefs, d.ents = slices.Clone(d.prefs), slices.Clone(d.ents)
	r.usage = d
}

// usageBuilder is the state of buildUsage.
type usageBuilder struct {
	d        *usageData
	uc       *usageCollector
	byText   map[string]uint32 // the preferences, by canonical text
	text     strings.Builder   // the canonical texts of the preferences, as d.text will hold them
	linePref []uint32          // the preference of each line
	lineRule []rule            // the rule of each line
}

// intern returns the preference of sorted labels lv, adding it if it is
// new.
func (b *usageBuilder) intern(lv []labelValue) uint32 {
	t := canonicalText(lv)
	p, ok := b.byText[t]
	if !ok {
		p = b.d.addPref(lv, &b.text)
		b.byText[t] = p
	}
	return p
}

// internLines interns the statements of the lines, by kind and text as
// written, then by canonical text, and numbers their labels.
func (b *usageBuilder) internLines() {
	d := b.d
	byRaw := make(map[string]uint32)
	var prefLabels [][]labelValue
	b.linePref = make([]uint32, len(b.uc.lines))
	for i, l := range b.uc.lines {
		_, _, stmt := splitUsage(l.value)
		raw := string(rune('0'+l.kind)) + string(stmt)
		p, ok := byRaw[raw]
		if !ok {
			lv, _ := parseStatement(l.kind, string(stmt)) // a statement that does not parse states nothing
			text := canonicalText(lv)
			if p, ok = b.byText[text]; !ok {
				p = uint32(len(prefLabels))
				b.byText[text] = p
				prefLabels = append(prefLabels, lv)
			}
			byRaw[raw] = p
		}
		b.linePref[i] = p
	}
	// Label ids, in the labels' order.
	var labels []string
	for _, lv := range prefLabels {
		for _, x := range lv {
			labels = append(labels, x.label)
		}
	}
	slices.Sort(labels)
	d.labels = slices.Compact(labels)
	for _, lv := range prefLabels {
		d.addPref(lv, &b.text)
	}
	// The labels, as the texts hold them.
	d.text = b.text.String()
	d.labelAt = make([]uint32, len(d.labels))
	for p := range prefLabels {
		t, off := d.textOf(uint32(p)), d.prefs[p].txt
		for _, e := range d.entsOf(uint32(p)) {
			d.labelAt[e>>1] = off
			k := len(t)
			if j := strings.Index(t, ", "); j >= 0 {
				k = j + len(", ")
			}
			t, off = t[k:], off+uint32(k)
		}
	}
	d.labels = nil
}

// setArena writes the arena of the usage rules: each line's preference,
// pattern and text.
func (b *usageBuilder) setArena() {
	var arena []byte
	var lines lineMarker
	b.lineRule = make([]rule, len(b.uc.lines))
	for i, l := range b.uc.lines {
		path, hasPath, stmt := splitUsage(l.value)
		arena = lines.add(arena, l.line)
		pat := uint32(len(arena))
		if hasPath {
			arena = appendNormRule(arena, path)
			if len(arena)-int(pat) > maxPattern {
				// Cut: the preference applies to at least the URLs the
				// whole path covers.
				arena, _ = capPattern(arena, int(pat), maxPattern, false)
			}
		}
		n := uint32(len(arena)) - pat
		b.lineRule[i] = makeRule(pat, arena[pat:pat+n], l.kind == kindSignal, patternKind(arena[pat:]), false, false)
		arena = binary.LittleEndian.AppendUint32(arena, b.linePref[i])
		arena = binary.AppendUvarint(arena, uint64(len(path)))
		arena = append(arena, path...)
		arena = binary.AppendUvarint(arena, uint64(len(stmt)))
		arena = append(arena, stmt...)
	}
	b.d.sub.arena = string(arena)
	b.d.sub.marks = slices.Clip(lines.marks)
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
					if uc.lines[i].kind == uint8(k) {
						d.sub.rules = append(d.sub.rules, b.lineRule[i])
					}
				}
			})
			g.hi = uint32(len(d.sub.rules))
			rs := d.sub.rules[g.lo:g.hi]
			ug.set(ugTie, k, d.mayTie(rs))
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

// setZeros sets what the lines without a path say, combined: the file's
// once, then each group's with the file's. A group whose own and the
// file's are not combined beforehand (the file has too many to copy)
// leaves it to the query, as a tie.
func (b *usageBuilder) setZeros() {
	d := b.d
	fileZero := &d.fileZero
	var fileZeroMany [2]bool
	for k := range fileZero {
		fileZero[k], fileZeroMany[k] = b.zeroOf(&d.file.g[k])
	}
	for gi := -1; gi < len(d.groups); gi++ {
		ug := &d.noneU
		if gi >= 0 {
			ug = &d.groups[gi]
		}
		for k := range ug.zero {
			z, many := b.zeroOf(&ug.g[k])
			switch {
			case ug.has(ugWithFile, 0) || fileZero[k] == 0:
			case z == 0:
				z, many = fileZero[k], fileZeroMany[k]
			default:
				ug.set(ugZeroBoth, k, true)
			}
			ug.zero[k] = z
			ug.set(ugZeroMany, k, many)
		}
	}
}

// zeroOf returns 1 + the preference of the rules of g without a path,
// combined, or 0 if it has none, and whether they say different things.
func (b *usageBuilder) zeroOf(g *usageSet) (zero uint32, many bool) {
	d := b.d
	var lv []labelValue
	var first uint32
	for i := range g.rules(d) {
		if r := &g.rules(d)[i]; r.n() == 0 {
			p := d.prefOf(r)
			if zero == 0 {
				first, zero = p, 1
			} else if p != first {
				many = true
			}
			if many || len(lv) == 0 {
				lv = append(lv, d.labelsOf(d.entsOf(p))...)
			}
		}
	}
	switch {
	case zero == 0:
		return 0, false
	case many:
		return 1 + b.intern(mergeLabels(lv)), true
	}
	return 1 + first, false
}

// addPref appends a preference of sorted labels lv, whose labels are
// known (see labelID), and its canonical text, which follows d.text in
// text.
func (d *usageData) addPref(lv []labelValue, text *strings.Builder) uint32 {
	if useLabels(lv) > 1 {
		lv = leastUse(slices.Clone(lv)) // as the text has it
	}
	for _, x := range lv {
		id, _ := d.labelID(x.label)
		e := uint32(id) << 1
		if x.no {
			e |= 1
		}
		d.ents = append(d.ents, e)
	}
	text.WriteString(canonicalText(lv))
	// The last pref ends here: the start of the next.
	d.prefs = append(d.prefs, pref{ent: uint32(len(d.ents)), txt: uint32(text.Len())})
	return uint32(len(d.prefs) - 2)
}

// labelID returns the id of label and whether it is one that d's
// preferences state.
func (d *usageData) labelID(label string) (int, bool) {
	if d.labels != nil { // while buildUsage sets labelAt
		return slices.BinarySearch(d.labels, label)
	}
	return slices.BinarySearchFunc(d.labelAt, label, func(off uint32, l string) int { return strings.Compare(d.labelOf(off), l) })
}

// label returns the label of id.
func (d *usageData) label(id uint32) string { return d.labelOf(d.labelAt[id]) }

// labelOf returns the label at offset off in d.text.
func (d *usageData) labelOf(off uint32) string {
	t := d.text[off:]
	i := strings.IndexByte(t, '=')
	if t[:i] == "use" {
		// Content-Signal's use key is the label "use=<token>" (a
		// Content-Usage label "use" has "y" or "n").
		for _, l := range [...]string{"use=immediate", "use=reference", "use=full"} {
			if strings.HasPrefix(t, l) {
				return l
			}
		}
	}
	return t[:i]
}

// mayTie reports whether two of rules have patterns of one length and
// different preferences.
func (d *usageData) mayTie(rules []rule) bool {
	type np struct{ n, p uint32 }
	s := make([]np, 0, len(rules))
	for i := range rules {
		if rules[i].n() > 0 { // those without a path are combined beforehand
			s = append(s, np{rules[i].n(), d.prefOf(&rules[i])})
		}
	}
	slices.SortFunc(s, func(a, b np) int {
		if a.n != b.n {
			return int(a.n) - int(b.n)
		}
		return int(a.p) - int(b.p)
	})
	for i := 1; i < len(s); i++ {
		if s[i].n == s[i-1].n && s[i].p != s[i-1].p {
			return true
		}
	}
	return false
}

// pathPrefs appends to dst the distinct preferences of g's rules with a
// path, sorted.
func (d *usageData) pathPrefs(dst []uint32, g *usageSet) []uint32 {
	lo := len(dst)
	for i := range g.rules(d) {
		if r := &g.rules(d)[i]; r.n() > 0 {
			dst = append(dst, d.prefOf(r))
		}
	}
	slices.Sort(dst[lo:])
	return append(dst[:lo], slices.Compact(dst[lo:])...)
}

// addCombos adds what each preference of ug's and the file's Content-Usage
// rules says together with each of their Content-Signal rules, while
// budget lasts, and returns what is left of it. filePrefs are the file's
// path preferences of each kind.
func (d *usageData) addCombos(ug *usageGroup, budget int, filePrefs *[2][]uint32, text *strings.Builder) int {
	var sets [2][]uint32
	for k := range sets {
		sets[k] = d.pathPrefs(nil, &ug.g[k])
		if !ug.has(ugWithFile, 0) {
			sets[k] = append(sets[k], filePrefs[k]...)
		}
		if ug.zero[k] != 0 {
			sets[k] = append(sets[k], ug.zero[k]-1)
		}
		if len(sets[k]) > budget {
			return budget
		}
	}
	if len(sets[0])*len(sets[1]) > budget {
		return budget
	}
	for k := range sets {
		slices.Sort(sets[k])
		sets[k] = slices.Compact(sets[k])
	}
	var buf [32]uint32
	for _, a := range sets[0] {
		for _, b := range sets[1] {
			m, sameA, sameB := d.merge(buf[:0], a, b)
			if sameA || sameB {
				continue
			}
			key := string(comboKey(nil, m))
			if _, ok := d.combos[key]; ok {
				continue
			}
			if d.combos == nil {
				d.combos = make(map[string]uint32)
			}
			d.combos[key] = d.addPref(d.labelsOf(m), text)
			budget--
		}
	}
	return budget
}

// heldBytes returns no less than the bytes d holds, building the indexes
// of its large groups.
func (d *usageData) heldBytes() int {
	d.sub.mu.Lock()
	defer d.sub.mu.Unlock()
	n := allocBytes(int(reflect.TypeFor[usageData]().Size())) + d.sub.heldBytes() + sliceBytes(d.groups) +
		sliceBytes(d.big) + sliceBytes(d.prefs) + sliceBytes(d.ents) + sliceBytes(d.labelAt) + allocBytes(len(d.text))
	for _, g := range d.big {
		n += allocBytes(int(reflect.TypeFor[Group]().Size())) + g.indexLocked().heldBytes()
	}
	if d.combos != nil {
		// A map slot holds a 16-byte key and a 4-byte value, in groups
		// of 8 slots with a control word, at most 7/8 full.
		n += allocBytes(64 + len(d.combos)*32)
		for k := range d.combos {
			n += allocBytes(len(k))
		}
	}
	return n
}

// prefOf returns the preference of usage rule r.
func (d *usageData) prefOf(r *rule) uint32 {
	a := d.sub.arena[r.pat+r.n() : r.pat+r.n()+4]
	return uint32(a[0]) | uint32(a[1])<<8 | uint32(a[2])<<16 | uint32(a[3])<<24
}

// asWritten returns usage rule r as written: its canonical key, its
// pattern and its statement.
func (d *usageData) asWritten(r *rule) string {
	rest := d.sub.arena[r.pat+r.n()+4:]
	n, k := binary.Uvarint([]byte(rest[:min(len(rest), binary.MaxVarintLen64)]))
	path := rest[k : k+int(n)]
	rest = rest[k+int(n):]
	n, k = binary.Uvarint([]byte(rest[:min(len(rest), binary.MaxVarintLen64)]))
	stmt := rest[k : k+int(n)]
	kind := kindUsage
	if r.allow() {
		kind = kindSignal
	}
	s := usageKeys[kind] + ": " + path
	if path != "" && stmt != "" {
		s += " "
	}
	return s + stmt
}

// entsOf returns the labels of preference p.
func (d *usageData) entsOf(p uint32) []uint32 {
	return d.ents[d.prefs[p].ent:d.prefs[p+1].ent]
}

// textOf returns the canonical text of preference p.
func (d *usageData) textOf(p uint32) string {
	return d.text[d.prefs[p].txt:d.prefs[p+1].txt]
}

// labelsOf returns ents as labels.
func (d *usageData) labelsOf(ents []uint32) []labelValue {
	lv := make([]labelValue, len(ents))
	for i, e := range ents {
		lv[i] = labelValue{d.label(e >> 1), e&1 != 0}
	}
	return lv
}

// merge appends to buf what preferences a and b say together, most
// restrictive first, and reports whether that is what a says alone, or b.
func (d *usageData) merge(buf []uint32, a, b uint32) (m []uint32, sameA, sameB bool) {
	return mergeEnts(buf, d.entsOf(a), d.entsOf(b))
}

// mergeEnts appends to buf what ents ea and eb say together, most
// restrictive first, and reports whether that is what ea says alone, or eb.
func mergeEnts(buf, ea, eb []uint32) (m []uint32, sameA, sameB bool) {
	i, j := 0, 0
	sameA, sameB = true, true
	for i < len(ea) || j < len(eb) {
		switch {
		case j == len(eb) || i < len(ea) && ea[i]>>1 < eb[j]>>1:
			buf = append(buf, ea[i])
			sameB = false
			i++
		case i == len(ea) || eb[j]>>1 < ea[i]>>1:
			buf = append(buf, eb[j])
			sameA = false
			j++
		default:
			e := ea[i] | eb[j]
			sameA = sameA && e == ea[i]
			sameB = sameB && e == eb[j]
			buf = append(buf, e)
			i++
			j++
		}
	}
	return buf, sameA, sameB
}

// comboKey appends to buf ents as bytes, its key in usageData.combos.
func comboKey(buf []byte, ents []uint32) []byte {
	for _, e := range ents {
		buf = binary.LittleEndian.AppendUint32(buf, e)
	}
	return buf
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
// decides the normalised path p, or -1; 1 + the preference it decides
// with, combined with the rules without a path when it has none, or 0;
// 1 + a second preference to combine with it, or 0; and whether another
// rule with a path may tie with it.
func (d *usageData) decide(ug *usageGroup, k int, p string) (best int32, pref, pref2 uint32, ties bool) {
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
				ties = ties || d.file.has(ugTie, k) || d.prefOf(&d.sub.rules[j]) != d.prefOf(&d.sub.rules[best])
			}
		}
	}
	switch {
	case best < 0:
		return -1, 0, 0, false
	case bestN == 0 && ug.has(ugZeroBoth, k):
		return best, ug.zero[k], d.fileZero[k], false
	case bestN == 0:
		return best, ug.zero[k], 0, false
	}
	return best, 1 + d.prefOf(&d.sub.rules[best]), 0, ties
}

// tied appends to ties the rules of kind k other than best, among ug's and
// the file's, that match p as specifically as best, if any says something
// else than best.
func (d *usageData) tied(ties []int32, ug *usageGroup, k int, p string, best int32) []int32 {
	br := &d.sub.rules[best]
	bp := d.prefOf(br)
	start := len(ties)
	differ := false
	for _, g := range d.sets(ug, k) {
		for i := g.lo; i < g.hi; i++ {
			r := &d.sub.rules[i]
			if int32(i) == best || r.n() != br.n() || !ruleMatches(d.sub.arena, r, p) {
				continue
			}
			ties = append(ties, int32(i))
			differ = differ || d.prefOf(r) != bp
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

// UsageValue is what a usage preference says about one label.
type UsageValue uint8

const (
	// UsageUnknown: nothing applicable states the label.
	UsageUnknown UsageValue = iota
	// UsageAllowed: the use is allowed ("y", or "yes" in Content-Signal).
	UsageAllowed
	// UsageDisallowed: the use is not allowed ("n", or "no").
	UsageDisallowed
	// UsageImmediate, UsageReference and UsageFull are the values of
	// Content-Signal's use key, the label "use": how much of a page may
	// be used (to answer the request at hand, nothing stored; indexed
	// and quoted with a link back; summarised or reproduced). Where
	// several apply, the least wins.
	UsageImmediate
	UsageReference
	UsageFull
)

// String returns "unknown", "y", "n", "immediate", "reference" or "full".
func (v UsageValue) String() string {
	switch v {
	case UsageAllowed:
		return "y"
	case UsageDisallowed:
		return "n"
	case UsageImmediate:
		return "immediate"
	case UsageReference:
		return "reference"
	case UsageFull:
		return "full"
	}
	return "unknown"
}

// labelUsage returns the label and value of x as Usage reports them.
func labelUsage(x labelValue) (string, UsageValue) {
	if r := useRank(x.label); r > 0 {
		return "use", UsageImmediate + UsageValue(r-1)
	}
	if x.no {
		return x.label, UsageDisallowed
	}
	return x.label, UsageAllowed
}

// Usage is the usage preference that applies to one URL for one crawler
// (SPEC.md section 10.3): what the most specific matching Content-Usage
// rules and Content-Signal rules say, combined per label, most restrictive
// first, and with a response's own Content-Usage header if one was added
// with [Usage.WithHeader]. The zero Usage states nothing. A Usage is a
// small value; getting one and its String does not allocate for an ASCII
// URL that matching does not allocate for (see the package documentation),
// save where rules with paths of equal specificity say different things.
type Usage struct {
	d     *usageData
	ug    *usageGroup
	rule  [2]uint32 // 1 + the deciding rule of each kind, in d.sub.rules; 0 for none
	pref  [2]uint32 // 1 + the preference of each kind; 0 for none, or when ties list the rules
	pref2 [2]uint32 // 1 + a preference of each kind to combine with pref; 0 for none
	ties  []int32   // further deciding rules with paths, of rules of one kind that tie; nil if none
	hdr   *headerUsage
}

// headerUsage is a Content-Usage header of a response.
type headerUsage struct {
	lv   []labelValue // sorted
	text string       // its field lines as received, joined by ", "
}

// UsageRule is a line that decides a usage preference.
type UsageRule struct {
	// Rule is the line as written, with its canonical key, as in
	// "Content-Usage: /ai-ok/ train-ai=y"; for a response's header,
	// its value after "Content-Usage: ".
	Rule string
	// Line is the 1-based line number of Rule in robots.txt, or 0 for
	// a response's header.
	Line int
}

// LabelUsage is what a usage preference says about one label, and the
// lines that say it.
type LabelUsage struct {
	Label string     // e.g. "train-ai"
	Value UsageValue // UsageAllowed or UsageDisallowed
	Rules []UsageRule
}

// Usage returns the usage preference that applies to url for the crawler
// agent; see [Group.Usage].
func (r *Robots) Usage(agent, url string) Usage { return r.Group(agent).Usage(url) }

// ContentUsage returns the canonical text of the usage preference that applies to url for the
// crawler agent (SPEC.md section 10.3), or "" if none does or url is disallowed.
func (r *Robots) ContentUsage(agent, url string) string {
	if r.usage == nil {
		return "" // the common file: no preference, no need to match
	}
	return r.Group(agent).ContentUsage(url)
}

// HasUsage reports whether the file has a Content-Usage or Content-Signal
// line, so that a caller can skip asking about usage when it has none.
func (r *Robots) HasUsage() bool { return r.usage != nil }

// ContentUsage returns the canonical text of g.Usage(url): the stated
// labels sorted, each as "label=y" or "label=n", joined by ", ", as in
// "search=y, train-ai=n"; or "" when nothing applies.
func (g *Group) ContentUsage(url string) string {
	var u Usage
	g.usageInto(&u, url)
	return u.text()
}

// Usage returns the usage preference that applies to url under g (SPEC.md
// section 10.3): nothing if url is disallowed; else, for Content-Usage and
// Content-Signal lines each, the preference of the most specific rule whose
// pattern matches url (a rule without a path matches every URL, least
// specifically), combined per label with those that match as specifically;
// the two combined. The lines before the first user-agent line count as
// rules of every group. url is read as [Group.Match] reads it.
func (g *Group) Usage(url string) Usage {
	var u Usage
	g.usageInto(&u, url)
	return u
}

// usageInto sets *u, which is zero, to the usage preference of url.
func (g *Group) usageInto(u *Usage, url string) {
	d, ug := g.usageGroup()
	if d == nil {
		return
	}
	p, normal := pathQuery(url)
	if !normal {
		var buf [512]byte
		g.usageAt(u, d, ug, string(normalizeTo(buf[:0], p))) // on the stack when at most 32 bytes long
		return
	}
	g.usageAt(u, d, ug, p)
}

// usageAt is usageInto for the normalised path and query p.
func (g *Group) usageAt(u *Usage, d *usageData, ug *usageGroup, p string) {
	if p != "/robots.txt" {
		if i := g.find(p); i >= 0 && !g.r.rules[g.lo+uint32(i)].allow() {
			return // disallowed: no preference applies (attach §4.1)
		}
	}
	u.d, u.ug = d, ug
	for k := range u.rule {
		if ug.g[k].hi == ug.g[k].lo && (ug.has(ugWithFile, 0) || d.file.g[k].hi == d.file.g[k].lo) {
			continue // no line of this kind applies
		}
		best, pref, pref2, tie := d.decide(ug, k, p)
		if best < 0 {
			continue
		}
		u.rule[k], u.pref[k], u.pref2[k] = uint32(best)+1, pref, pref2
		if tie {
			n := len(u.ties)
			if u.ties = d.tied(u.ties, ug, k, p, best); len(u.ties) > n {
				u.pref[k] = 0
			}
		}
	}
}

// deciding returns the rules of kind k that decide u, in d.sub.rules.
func (u *Usage) deciding(k int) []int32 {
	if u.rule[k] == 0 {
		return nil
	}
	best := int32(u.rule[k] - 1)
	if u.d.sub.rules[best].n() == 0 && (u.ug.has(ugZeroMany, k) || u.ug.has(ugZeroBoth, k)) {
		var rs []int32 // every rule without a path
		for _, g := range u.d.sets(u.ug, k) {
			for i := g.lo; i < g.hi; i++ {
				if u.d.sub.rules[i].n() == 0 {
					rs = append(rs, int32(i))
				}
			}
		}
		return rs
	}
	rs := []int32{best}
	for _, r := range u.ties {
		if u.d.sub.rules[r].allow() == (k == kindSignal) {
			rs = append(rs, r)
		}
	}
	return rs
}

// String returns the canonical text of u (SPEC.md section 10.3): the
// labels stated, sorted, each as "label=y" or "label=n", joined by ", ",
// as in "ai-input=n, search=y, train-ai=n"; "" when u states nothing.
func (u Usage) String() string { return u.text() }

// text is String.
func (u *Usage) text() string {
	if u.hdr != nil || u.ties != nil {
		return canonicalText(u.merged())
	}
	a, b := u.pref[0], u.pref[1]
	if u.pref2[0] != 0 || u.pref2[1] != 0 {
		return u.stringOf(u.pref[0], u.pref2[0], u.pref[1], u.pref2[1])
	}
	switch {
	case a == 0 && b == 0:
		return ""
	case b == 0:
		return u.d.textOf(a - 1)
	case a == 0 || a == b:
		return u.d.textOf(b - 1)
	}
	var buf [32]uint32
	m, sameA, sameB := u.d.merge(buf[:0], a-1, b-1)
	switch {
	case sameA:
		return u.d.textOf(a - 1)
	case sameB:
		return u.d.textOf(b - 1)
	}
	var kb [128]byte
	if p, ok := u.d.combos[string(comboKey(kb[:0], m))]; ok {
		return u.d.textOf(p)
	}
	return canonicalText(u.d.labelsOf(m))
}

// stringOf returns the canonical text of what preferences ps (1 + each;
// 0 for none) say together.
func (u *Usage) stringOf(ps ...uint32) string {
	var b1, b2 [32]uint32
	m, spare := b1[:0], b2[:0] // distinct arrays: mergeEnts's output must not overlap its input
	first := true
	for _, p := range ps {
		if p == 0 {
			continue
		}
		if first {
			m, first = append(m, u.d.entsOf(p-1)...), false
			continue
		}
		out, _, _ := mergeEnts(spare[:0], m, u.d.entsOf(p-1))
		m, spare = out, m
	}
	for _, p := range ps {
		if p != 0 && slices.Equal(m, u.d.entsOf(p-1)) {
			return u.d.textOf(p - 1)
		}
	}
	var kb [128]byte
	if p, ok := u.d.combos[string(comboKey(kb[:0], m))]; ok {
		return u.d.textOf(p)
	}
	return canonicalText(u.d.labelsOf(m))
}

// merged returns what u says, label by label.
func (u *Usage) merged() []labelValue {
	var lv []labelValue
	for k, p := range u.pref {
		if p2 := u.pref2[k]; p2 != 0 {
			lv = append(lv, u.d.labelsOf(u.d.entsOf(p2-1))...)
		}
		if p != 0 {
			lv = append(lv, u.d.labelsOf(u.d.entsOf(p-1))...)
			continue
		}
		for _, r := range u.deciding(k) {
			lv = append(lv, u.d.labelsOf(u.d.entsOf(u.d.prefOf(&u.d.sub.rules[r])))...)
		}
	}
	if u.hdr != nil {
		lv = append(lv, u.hdr.lv...)
	}
	return mergeLabels(lv)
}

// Use returns how much of the page Content-Signal's use key allows:
// "immediate", "reference" or "full", the least of those that apply; "" if
// none does. (Labels and String report it as the label "use=<token>".)
func (u Usage) Use() string {
	for _, x := range u.merged() {
		if useRank(x.label) > 0 {
			return x.label[len("use="):]
		}
	}
	return ""
}

// IsZero reports whether u states nothing: String would return "".
func (u Usage) IsZero() bool { return u.String() == "" }

// Get returns what u says about label, e.g. "train-ai".
func (u Usage) Get(label string) UsageValue {
	v := UsageUnknown
	see := func(no bool) {
		if no {
			v = UsageDisallowed
		} else if v == UsageUnknown {
			v = UsageAllowed
		}
	}
	if u.d != nil {
		if id, ok := u.d.labelID(label); ok {
			seePref := func(p uint32) {
				for _, e := range u.d.entsOf(p) {
					if e>>1 == uint32(id) {
						see(e&1 != 0)
					}
				}
			}
			for k, p := range u.pref {
				if p2 := u.pref2[k]; p2 != 0 {
					seePref(p2 - 1)
				}
				if p != 0 {
					seePref(p - 1)
				} else if u.rule[k] != 0 {
					for _, r := range u.deciding(k) {
						seePref(u.d.prefOf(&u.d.sub.rules[r]))
					}
				}
			}
		}
	}
	if u.hdr != nil {
		for _, x := range u.hdr.lv {
			if x.label == label {
				see(x.no)
			}
		}
	}
	return v
}

// Labels returns what u says about each label it states, sorted by label,
// with the lines that say it: for a disallowed label, those that disallow
// it; for an allowed one, those that allow it.
func (u Usage) Labels() []LabelUsage {
	merged := u.merged()
	out := make([]LabelUsage, len(merged))
	for i, x := range merged {
		out[i].Label, out[i].Value = labelUsage(x)
	}
	for _, src := range u.sources() {
		for _, x := range src.lv {
			l, v := labelUsage(x)
			for i := range out {
				if out[i].Label == l && out[i].Value == v {
					out[i].Rules = append(out[i].Rules, src.rule)
				}
			}
		}
	}
	return out
}

// Rules returns the lines that decide u, in file order, then a response's
// header.
func (u Usage) Rules() []UsageRule {
	srcs := u.sources()
	out := make([]UsageRule, len(srcs))
	for i, s := range srcs {
		out[i] = s.rule
	}
	return out
}

// source is a deciding line and what it says.
type source struct {
	rule UsageRule
	lv   []labelValue
}

// sources returns u's deciding lines, in file order, then the header.
func (u *Usage) sources() []source {
	var out []source
	for k := range u.rule {
		for _, i := range u.deciding(k) {
			r := &u.d.sub.rules[i]
			out = append(out, source{UsageRule{u.d.asWritten(r), u.d.sub.lineOf(r)}, u.d.labelsOf(u.d.entsOf(u.d.prefOf(r)))})
		}
	}
	slices.SortFunc(out, func(a, b source) int { return a.rule.Line - b.rule.Line })
	if u.hdr != nil {
		out = append(out, source{UsageRule{usageKeys[kindUsage] + ": " + u.hdr.text, 0}, u.hdr.lv})
	}
	return out
}

// WithHeader returns u combined with the Content-Usage header of the
// response that u is for, given as its field lines (SPEC.md section 10.3,
// step 4): each label most restrictive first. A header that does not
// parse as a Dictionary, or that states no label, changes nothing.
func (u Usage) WithHeader(lines []string) Usage {
	if len(lines) == 0 {
		return u
	}
	text := strings.Join(lines, ", ")
	lv, err := parseStatement(kindUsage, text)
	if err != nil || len(lv) == 0 {
		return u
	}
	if u.hdr != nil {
		lv = mergeLabels(append(slices.Clone(u.hdr.lv), lv...))
		text = u.hdr.text + ", " + text
	}
	u.hdr = &headerUsage{lv: lv, text: text}
	return u
}
