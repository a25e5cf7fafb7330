package matcher

import (
	"math/bits"
	"slices"
)

// A group that is scanned is matched against a path by its rules' prints:
// two bytes per rule that say what the path needs for the rule to match it,
// which a scan compares with the path eight rules at a time, trying only
// the rules whose prints the path has. Most groups of real files have few
// rules, and a scan of them reads their prints, then the rules and patterns
// of those few candidates, without an index's several reads in turn.

// scanMax is the largest group that is scanned, when few of its rules
// need the same of a path (see fewCandidates).
const scanMax = 128

// maxCandidates is the most rules of a group of more than linearMax that
// one path may have to be tried against for the group to be scanned.
const maxCandidates = 2 * linearMax

// printsOf returns what a path needs for rule rl, of pattern pat, to match
// it: the bytes at offsets 1 and 2 of the path, each 0 when any byte will
// do. A '$' there is the end anchor: the path ends before that offset (see
// pathPrints). When rl needs nothing at offset 1, because a wildcard comes
// first, b2 is instead the byte the path needs anywhere, or that byte with
// its high bit set when it is the path's last, or 0 for neither (see
// wildNeed). A normalised pattern holds no zero byte and only ASCII.
func printsOf(pat string, rl *rule, lit uint32) (b1, b2 byte) {
	if len(pat) < 2 || pat[0] == '*' || pat[1] == '*' {
		if rl.kind() == kindWild {
			switch kind, need := wildNeed(pat, lit); kind {
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
func pathPrints[P path](p P) (q1, q2 byte) {
	q1, q2 = '$', '$'
	if len(p) > 1 {
		q1 = p[1]
	}
	if len(p) > 2 {
		q2 = p[2]
	}
	return q1, q2
}

// fewCandidates reports whether a scan of rules, a group of more than
// linearMax and at most scanMax rules whose patterns lie in arena, tries
// any path against at most maxCandidates of them. buf is scratch space,
// returned for reuse.
func fewCandidates(arena string, rules []rule, buf []uint16) (bool, []uint16) {
	buf = buf[:0]
	// The rules that need each first byte bound the rules a path is tried
	// against from above; most groups are decided by that bound alone,
	// without sorting their prints.
	var byFirst [256]uint8
	top := uint8(0) // the most that need one first byte
	for i := range rules {
		rl := &rules[i]
		b1, b2 := printsOf(rl.pattern(arena), rl, rl.lit(arena))
		buf = append(buf, uint16(b1)<<8|uint16(b2))
		byFirst[b1]++ // len(rules) <= scanMax < 256
		if b1 != 0 {
			top = max(top, byFirst[b1])
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

// A rule's place in a group that sortBestMany sorts fits in 8 bits.
var _ [256 - scanMax]struct{}

// sortBestMany sorts the rules of a group of at most scanMax best first,
// as sortBest does. Each rule becomes one number: its length and allow
// (the 20 bits of nf>>12) complemented, so that the better sorts first,
// then its pattern's offset, which breaks ties as better does, then its
// place in rules.
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

// appendPrints appends to buf the prints of r's rules, for r.prints: the
// first byte printsOf returns for rule i at i, then 8 zero bytes, then the
// second byte for rule i at len(r.rules)+8+i, then 8 zero bytes, so that a
// scan reads the prints of any rule and the 7 after it as one word. The
// prints of the rules of groups that are not scanned are zero.
func (r *Robots) appendPrints(buf []byte) []byte {
	if !r.anyScanned() {
		return buf // nothing reads them: a file of large groups keeps none
	}
	n := len(r.rules)
	off := len(buf)
	buf = append(buf, make([]byte, 2*(n+8))...)
	ps := buf[off:]
	for gi := range r.groups {
		g := &r.groups[gi]
		if !g.scanned() {
			continue
		}
		for i := g.lo; i < g.hi; i++ {
			rl := &r.rules[i]
			ps[i], ps[n+8+int(i)] = printsOf(rl.pattern(r.arena), rl, rl.lit(r.arena))
		}
	}
	return buf
}

// appendGroupPrints appends to buf the prints of rules, a group that is
// scanned, laid out as appendPrints lays out those of a file: the first
// byte of rule i at i, 8 zero bytes, the second at len(rules)+8+i, 8 zero
// bytes.
func appendGroupPrints(buf []byte, arena string, rules []rule) []byte {
	n := len(rules)
	off := len(buf)
	buf = append(buf, make([]byte, 2*(n+8))...)
	ps := buf[off:]
	for i := range rules {
		rl := &rules[i]
		ps[i], ps[n+8+i] = printsOf(rl.pattern(arena), rl, rl.lit(arena))
	}
	return buf
}

// le64 returns the first eight bytes of s as a little-endian word.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// zeroBytes returns x with the high bit of each of its zero bytes set and
// every other bit clear.
func zeroBytes(x uint64) uint64 {
	const low7 = 0x7f7f7f7f7f7f7f7f
	return ^((x&low7 + low7) | x | low7)
}

// scanPrints returns the index in rules[lo:hi], a group that is scanned,
// sorted best first, of the first rule that matches the normalised path
// p, or -1 (see scanPrintsOf).
func scanPrints[P path](r *Robots, lo, hi uint32, p P) int {
	if lo == hi {
		return -1
	}
	return scanPrintsOf(r.rules[lo:hi], r.arena, r.prints[lo:], r.prints[len(r.rules)+8+int(lo):], p)
}

// scanPrintsOf returns the index in rules, a group that is scanned, sorted
// best first, of the first rule that matches the normalised path p, or -1.
// p1 and p2 hold the first and second prints of rules, each followed by at
// least 8 bytes. It tries only the rules whose prints p has, eight at a
// time: a rule's print matches p's byte when it is that byte or zero.
func scanPrintsOf[P path](rules []rule, arena, p1, p2 string, p P) int {
	q1, q2 := pathPrints(p)
	b1, b2 := uint64(q1)*ones8, uint64(q2)*ones8
	for k := 0; k < len(rules); k += 8 {
		w1, w2 := le64(p1[k:]), le64(p2[k:])
		z1 := zeroBytes(w1)
		m := (zeroBytes(w1^b1) | z1) & (zeroBytes(w2^b2) | zeroBytes(w2) | z1)
		if n := len(rules) - k; n < 8 {
			m &= 1<<(8*n) - 1
		}
		for ; m != 0; m &= m - 1 {
			j := bits.TrailingZeros64(m) &^ 7
			if need := byte(w2 >> j); z1>>j&0x80 != 0 && need != 0 {
				// A wildcard first, and a byte the path needs.
				if need < 0x80 && indexByte(p, need) < 0 || need >= 0x80 && p[len(p)-1] != need&0x7f {
					continue
				}
			}
			i := k + j>>3
			if rl := &rules[i]; rl.n() <= 3 && rl.kind() != kindWild && p[0] == '/' {
				// Its prints are all of it after its '/': it matches
				// without a read of its pattern.
				return i
			}
			if matches(&rules[i], arena, p) {
				return i
			}
		}
	}
	return -1
}

// anyScanned reports whether a group of r is scanned from parse on.
func (r *Robots) anyScanned() bool {
	for i := range r.groups {
		if r.groups[i].scanned() {
			return true
		}
	}
	return false
}
