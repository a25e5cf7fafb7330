// Package usagetab holds the usage lines of a robots.txt file as package
// matcher reads them: a [Builder] takes each line's value as the parser
// finds it, and makes the file's [Table], which names each line, and each
// set of lines that decide together, by an [ID]. Package usage reads the
// Table to say what a usage.Preference states; this package holds what it
// reads, and the statements' grammar and how they combine.
//
// It is internal so that package usage's API is what its users need: a
// Table exists only for the matcher, which makes a usage.Preference of one
// with [Of].
package usagetab

import (
	"encoding/binary"
	"reflect"
	"slices"
	"strings"

	"github.com/f9014239/robots/internal/memsize"
)

// ID names a usage line given to a [Builder], or a set of such lines (see
// [Builder.Union]). The zero ID names none.
type ID uint32

// Table holds the usage lines of one robots.txt file and the preferences
// they state. A [Builder] makes it; [Of] then gives the usage.Preference
// that the lines a parser found to apply to a URL state together. A Table
// is immutable once built and safe for concurrent use.
//
// Preferences are interned: each distinct one is a run of label ids
// (sorted as the labels are) and its canonical text.
type Table struct {
	// items holds each line and set at its ID, after a byte that no item
	// starts at: 4 bytes that hold its preference<<2 | its tag (the Kind
	// of a line, or tagSet), then for a line its line number, its path
	// and its statement as written, the last two each after its length,
	// as uvarints; for a set, how many lines it has, then their IDs in
	// increasing order, each less the one before (the first less 0), as
	// uvarints.
	items   []byte
	prefs   []pref            // then one whose ent and txt end the last's
	ents    []uint32          // the labels of each pref: id<<1 | 1 when disallowed
	labelAt []uint32          // every label stated, sorted, as the offset in text of one of its uses, up to the '=' that follows; a label's id is its index
	text    string            // the canonical texts of prefs
	combos  map[string]uint32 // the prefs that combine two others, by their ents as bytes
}

// tagSet is the tag byte of a set in Table.items.
const tagSet = 2

// pref is one distinct preference: ents[ent:], text[txt:], each up to where
// the next pref's start.
type pref struct {
	ent, txt uint32
}

// maxCombos bounds the combined preferences a file precomputes (see
// Builder.Combine).
const maxCombos = 256

// Builder builds a [Table]: first [Builder.Add] for each usage line of a
// file, in file order; then, as the parser lays out its groups,
// [Builder.Same], [Builder.Union] and [Builder.Combine]; then
// [Builder.Table]. Its zero value is ready to use. A Builder is not safe
// for concurrent use, and is not to be used once it has made its Table.
type Builder struct {
	t        Table
	lines    []ID              // every line, in the order added
	interned bool              // the lines' statements are read: no more lines
	labels   []string          // the labels, sorted, while intern sets labelAt
	byText   map[string]uint32 // the preferences, by canonical text
	text     strings.Builder   // the canonical texts of the preferences, as t.text will hold them
	budget   int               // the combined preferences Combine may still add
}

// Add adds a usage line of kind k, on line number line, whose value (what
// follows the colon, trimmed) is value, and returns its ID and the path
// pattern it starts with: a value that starts with '/' or '*' starts with
// a path, up to the first white space, and the statement follows. path is
// nil when the line has none: it then applies to every URL. Add keeps no
// reference to value; path lies in it.
func (b *Builder) Add(k Kind, line int, value []byte) (id ID, path []byte) {
	if b.interned {
		panic("usage: Builder.Add after Same, Union, Combine or Table")
	}
	if len(b.t.items) == 0 {
		b.t.items = append(b.t.items, 0) // no item at ID 0
	}
	path, _, stmt := Split(value)
	id = ID(len(b.t.items))
	it := binary.LittleEndian.AppendUint32(b.t.items, uint32(k)) // and the preference, once interned
	it = binary.AppendUvarint(it, uint64(max(line, 0)))
	it = binary.AppendUvarint(it, uint64(len(path)))
	it = append(it, path...)
	it = binary.AppendUvarint(it, uint64(len(stmt)))
	b.t.items = append(it, stmt...)
	b.lines = append(b.lines, id)
	return id, path
}

// Same reports whether lines or sets x and y state the same preference.
func (b *Builder) Same(x, y ID) bool {
	b.intern()
	return b.t.Same(x, y)
}

// Union returns the ID of the set of lines ids, which all apply to the
// same URLs, so that they decide together: what they state is their
// statements combined, and usage.Preference.Rules lists them all. The ID of
// one line is its own.
func (b *Builder) Union(ids []ID) ID {
	b.intern()
	if len(ids) == 1 {
		return ids[0]
	}
	t := &b.t
	p, many := t.PrefOf(ids[0]), false
	for _, id := range ids[1:] {
		many = many || t.PrefOf(id) != p
	}
	if many {
		var lv []LabelValue
		for _, id := range ids {
			lv = append(lv, t.LabelsOf(t.EntsOf(t.PrefOf(id)))...)
		}
		p = b.intern1(MergeLabels(lv))
	}
	set := ID(len(t.items))
	t.items = binary.LittleEndian.AppendUint32(t.items, p<<2|tagSet)
	t.items = binary.AppendUvarint(t.items, uint64(len(ids)))
	last := ID(0)
	for _, id := range slices.Sorted(slices.Values(ids)) {
		t.items = binary.AppendUvarint(t.items, uint64(id-last))
		last = id
	}
	return set
}

// Combine prepares the text of what each of the Content-Usage lines and
// sets cu states together with each of the Content-Signal lines and sets
// cs, for a group whose lines they are, so that the String of a
// usage.Preference they decide together does not allocate. A file gets at
// most a few hundred such texts; Combine does nothing once they are spent.
func (b *Builder) Combine(cu, cs []ID) {
	b.intern()
	t := &b.t
	var sets [2][]uint32
	for k, ids := range [2][]ID{cu, cs} {
		for _, id := range ids {
			sets[k] = append(sets[k], t.PrefOf(id))
		}
		slices.Sort(sets[k])
		sets[k] = slices.Compact(sets[k])
	}
	if len(sets[0])*len(sets[1]) > b.budget {
		return
	}
	var buf [32]uint32
	for _, x := range sets[0] {
		for _, y := range sets[1] {
			m, sameX, sameY := mergeEnts(buf[:0], t.EntsOf(x), t.EntsOf(y))
			if sameX || sameY {
				continue
			}
			key := string(comboKey(nil, m))
			if _, ok := t.combos[key]; ok {
				continue
			}
			if t.combos == nil {
				t.combos = make(map[string]uint32)
			}
			t.combos[key] = b.addPref(t.LabelsOf(m))
			b.budget--
		}
	}
}

// Table returns the table of the lines added.
func (b *Builder) Table() *Table {
	b.intern()
	t := new(Table)
	*t = b.t
	// Held at their lengths: they grew by doubling.
	t.text = strings.Clone(b.text.String())
	t.items, t.prefs, t.ents = slices.Clone(t.items), slices.Clone(t.prefs), slices.Clone(t.ents)
	b.t = Table{}
	return t
}

// intern reads the statements of the lines, once: it interns them, by
// kind and text as written, then by canonical text, and numbers their
// labels.
func (b *Builder) intern() {
	if b.interned {
		return
	}
	b.interned, b.budget = true, maxCombos
	t := &b.t
	t.prefs = []pref{{}}
	b.byText = make(map[string]uint32)
	byRaw := make(map[string]uint32)
	var prefLabels [][]LabelValue
	linePref := make([]uint32, len(b.lines))
	for i, id := range b.lines {
		k, stmt := t.items[id]&3, t.statement(id)
		raw := string(rune('0'+k)) + stmt
		p, ok := byRaw[raw]
		if !ok {
			lv, _ := ParseStatement(Kind(k), stmt) // a statement that does not parse states nothing
			text := CanonicalText(lv)
			if p, ok = b.byText[text]; !ok {
				p = uint32(len(prefLabels))
				b.byText[text] = p
				prefLabels = append(prefLabels, lv)
			}
			byRaw[raw] = p
		}
		linePref[i] = p
		binary.LittleEndian.PutUint32(t.items[id:], p<<2|uint32(k))
	}
	// Label ids, in the labels' order.
	var labels []string
	for _, lv := range prefLabels {
		for _, x := range lv {
			labels = append(labels, x.Label)
		}
	}
	slices.Sort(labels)
	b.labels = slices.Compact(labels)
	for _, lv := range prefLabels {
		b.addPref(lv)
	}
	// The labels, as the texts hold them.
	t.text = b.text.String()
	t.labelAt = make([]uint32, len(b.labels))
	for p := range prefLabels {
		s, off := t.TextOf(uint32(p)), t.prefs[p].txt
		for _, e := range t.EntsOf(uint32(p)) {
			t.labelAt[e>>1] = off
			n := len(s)
			if j := strings.Index(s, ", "); j >= 0 {
				n = j + len(", ")
			}
			s, off = s[n:], off+uint32(n)
		}
	}
	b.labels = nil
}

// intern1 returns the preference of sorted labels lv, adding it if it is
// new.
func (b *Builder) intern1(lv []LabelValue) uint32 {
	s := CanonicalText(lv)
	p, ok := b.byText[s]
	if !ok {
		p = b.addPref(lv)
		b.byText[s] = p
	}
	return p
}

// addPref appends a preference of sorted labels lv, whose labels are known,
// and its canonical text.
func (b *Builder) addPref(lv []LabelValue) uint32 {
	t := &b.t
	if useLabels(lv) > 1 {
		lv = leastUse(slices.Clone(lv)) // as the text has it
	}
	for _, x := range lv {
		var id int
		if b.labels != nil { // while intern sets labelAt
			id, _ = slices.BinarySearch(b.labels, x.Label)
		} else {
			id, _ = t.LabelID(x.Label)
		}
		e := uint32(id) << 1
		if x.No {
			e |= 1
		}
		t.ents = append(t.ents, e)
	}
	b.text.WriteString(CanonicalText(lv))
	// The last pref ends here: the start of the next.
	t.prefs = append(t.prefs, pref{ent: uint32(len(t.ents)), txt: uint32(b.text.Len())})
	return uint32(len(t.prefs) - 2)
}

// of is the function that package usage gives [SetOf]: a
// func(*Table, [4]ID, []ID) usage.Preference.
var of any

// SetOf is for package usage, whose Preference, P, this package cannot
// name, as usage imports it: usage gives, when it is initialised, the
// function that [Of] calls.
func SetOf[P any](f func(t *Table, ids [4]ID, more []ID) P) { of = f }

// Of returns the usage.Preference, P, that the lines and sets ids of t
// (zero IDs left out) and the lines more state together: what they state
// combined label by label, most restrictive first. It keeps more. Package
// matcher calls it as Of[usage.Preference]; it does not allocate.
func Of[P any](t *Table, ids [4]ID, more []ID) P {
	return of.(func(*Table, [4]ID, []ID) P)(t, ids, more)
}

// Same reports whether lines or sets x and y state the same preference.
func (t *Table) Same(x, y ID) bool { return t.PrefOf(x) == t.PrefOf(y) }

// Size returns about how many bytes of memory t holds, and no less.
func (t *Table) Size() int {
	n := memsize.Alloc(int(reflect.TypeFor[Table]().Size())) + memsize.Slice(t.items) + memsize.Slice(t.prefs) +
		memsize.Slice(t.ents) + memsize.Slice(t.labelAt) + memsize.Alloc(len(t.text))
	if t.combos != nil {
		// A map slot holds a 16-byte key and a 4-byte value, in groups
		// of 8 slots with a control word, at most 7/8 full.
		n += memsize.Alloc(64 + len(t.combos)*32)
		for k := range t.combos {
			n += memsize.Alloc(len(k))
		}
	}
	return n
}

// PrefOf returns the preference of line or set id.
func (t *Table) PrefOf(id ID) uint32 { return binary.LittleEndian.Uint32(t.items[id:]) >> 2 }

// IsSet reports whether id is a set.
func (t *Table) IsSet(id ID) bool { return t.items[id]&3 == tagSet }

// Members returns the lines of set id.
func (t *Table) Members(id ID) []ID {
	rest := t.items[id+4:]
	n, k := binary.Uvarint(rest)
	ids := make([]ID, n)
	last := ID(0)
	for i := range ids {
		d, k2 := binary.Uvarint(rest[k:])
		last, k = last+ID(d), k+k2
		ids[i] = last
	}
	return ids
}

// line returns the line number, path and statement of line id, as written.
func (t *Table) line(id ID) (num int, path, stmt string) {
	rest := t.items[id+4:]
	l, k := binary.Uvarint(rest)
	rest = rest[k:]
	n, k := binary.Uvarint(rest)
	path, rest = string(rest[k:k+int(n)]), rest[k+int(n):]
	n, k = binary.Uvarint(rest)
	return int(l), path, string(rest[k : k+int(n)])
}

// statement returns the statement of line id, as written.
func (t *Table) statement(id ID) string {
	_, _, stmt := t.line(id)
	return stmt
}

// Rule returns line id as a usage.Rule has it: the line with its
// canonical key, its path and its statement, and its number.
func (t *Table) Rule(id ID) (rule string, line int) {
	num, path, stmt := t.line(id)
	s := Kind(t.items[id]&3).String() + ": " + path
	if path != "" && stmt != "" {
		s += " "
	}
	return s + stmt, num
}

// LabelID returns the id of label and whether it is one that t's
// preferences state.
func (t *Table) LabelID(label string) (int, bool) {
	return slices.BinarySearchFunc(t.labelAt, label, func(off uint32, l string) int { return strings.Compare(t.labelOf(off), l) })
}

// labelOf returns the label at offset off in t.text.
func (t *Table) labelOf(off uint32) string {
	s := t.text[off:]
	i := strings.IndexByte(s, '=')
	if s[:i] == "use" {
		// Content-Signal's use key is the label "use=<token>" (a
		// Content-Usage label "use" has "y" or "n").
		for _, l := range [...]string{"use=immediate", "use=reference", "use=full"} {
			if strings.HasPrefix(s, l) {
				return l
			}
		}
	}
	return s[:i]
}

// EntsOf returns the labels of preference p.
func (t *Table) EntsOf(p uint32) []uint32 { return t.ents[t.prefs[p].ent:t.prefs[p+1].ent] }

// TextOf returns the canonical text of preference p.
func (t *Table) TextOf(p uint32) string { return t.text[t.prefs[p].txt:t.prefs[p+1].txt] }

// LabelsOf returns ents as labels.
func (t *Table) LabelsOf(ents []uint32) []LabelValue {
	lv := make([]LabelValue, len(ents))
	for i, e := range ents {
		lv[i] = LabelValue{t.labelOf(t.labelAt[e>>1]), e&1 != 0}
	}
	return lv
}

// TextOfPrefs returns the canonical text of what preferences ps, at least
// two, say together.
func (t *Table) TextOfPrefs(ps []uint32) string {
	var b1, b2 [32]uint32
	m, spare := append(b1[:0], t.EntsOf(ps[0])...), b2[:0] // distinct arrays: mergeEnts's output must not overlap its input
	for _, p := range ps[1:] {
		out, _, _ := mergeEnts(spare[:0], m, t.EntsOf(p))
		m, spare = out, m
	}
	for _, p := range ps {
		if slices.Equal(m, t.EntsOf(p)) {
			return t.TextOf(p)
		}
	}
	var kb [128]byte
	if p, ok := t.combos[string(comboKey(kb[:0], m))]; ok {
		return t.TextOf(p)
	}
	return CanonicalText(t.LabelsOf(m))
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

// comboKey appends to buf ents as bytes, its key in Table.combos.
func comboKey(buf []byte, ents []uint32) []byte {
	for _, e := range ents {
		buf = binary.LittleEndian.AppendUint32(buf, e)
	}
	return buf
}
