package matcher

// Visit-time lines. Like Request-rate, Visit-time comes from the 1996 draft
// of an extended standard for robot exclusion, not from RFC 9309:
// "Visit-time: 0600-0845" asks crawlers to visit only between 06:00 and
// 08:45 UTC. Some sites still state it, and some firewalls ban crawlers that
// come outside it. [Group.VisitTime] reports it; the robots package holds a
// request outside the window until it opens.
//
// The windows of a file are kept apart from its groups, as their rates are:
// a list of the groups that have one, by the group's first line number.

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// fieldVisitTime is the field of a visit-time line.
const fieldVisitTime = fieldLicense + 1

// visitField returns fieldVisitTime if key is "visit-time", compared whole
// and without regard to ASCII case, or fieldNone.
func visitField(key []byte) field {
	if len(key) == len("visit-time") && hasPrefixFold(key, "visit-time") {
		return fieldVisitTime
	}
	return fieldNone
}

// window is a time of day, from and to in minutes after midnight UTC; it
// wraps midnight when to < from. from == to is a window that never opens,
// which is not kept.
type window struct{ from, to uint16 }

// blockVisit is the window of the first valid visit-time line of a block.
type blockVisit struct {
	block int
	w     window
}

// groupVisit is the window of a group: ln is its Group.ln, gi its index.
type groupVisit struct {
	ln, gi uint32
	w      window
}

// parseVisitTime reads a visit-time value, "HHMM-HHMM" (white space around
// the dash allowed), each time a valid time of day (hours 00 to 23, minutes
// 00 to 59). It returns the window and ok; empty is set for a valid value
// whose two times are equal: a window that never opens.
func parseVisitTime(v []byte) (w window, empty, ok bool) {
	var parts [2][]byte
	i := 0
	for i < len(v) && v[i] != '-' {
		i++
	}
	if i == len(v) {
		return window{}, false, false
	}
	parts[0], parts[1] = trimSpace(v[:i]), trimSpace(v[i+1:])
	var m [2]uint16
	for k, p := range parts {
		if len(p) != 4 {
			return window{}, false, false
		}
		for _, c := range p {
			if c < '0' || c > '9' {
				return window{}, false, false
			}
		}
		h := uint16(p[0]-'0')*10 + uint16(p[1]-'0')
		mm := uint16(p[2]-'0')*10 + uint16(p[3]-'0')
		if h > 23 || mm > 59 {
			return window{}, false, false
		}
		m[k] = h*60 + mm
	}
	w = window{m[0], m[1]}
	return w, w.from == w.to, true
}

// visitTime reads the visit-time line s has scanned, of the current block:
// the first valid, non-empty window of a block counts.
func (p *parser) visitTime(s *scanner) {
	if p.cur == nil {
		return
	}
	w, empty, ok := parseVisitTime(s.value)
	if !ok || empty {
		return
	}
	b := len(p.blocks) - 1
	if n := len(p.visits); n > 0 && p.visits[n-1].block == b {
		return
	}
	p.visits = append(p.visits, blockVisit{b, w})
}

// buildVisits sets r.visits from the blocks' windows, in block order: each
// group's is that of its first block that has one.
func (r *Robots) buildVisits(visits []blockVisit, specs []groupSpec, ids []int) {
	if len(visits) == 0 {
		return
	}
	for gi, sp := range specs {
		for _, b := range ids[sp.lo:sp.hi] {
			if i, ok := slices.BinarySearchFunc(visits, b, func(x blockVisit, b int) int { return cmp.Compare(x.block, b) }); ok {
				r.visits = append(r.visits, groupVisit{ln: r.groups[gi].ln, gi: uint32(gi), w: visits[i].w})
				break
			}
		}
	}
	r.visits = slices.Clip(r.visits)
}

// VisitTime returns the window of the day, in UTC, in which the group's
// Visit-time line asks to be visited: from and to, each a time after
// midnight, and ok. The window wraps midnight when to is before from
// ("2200-0600"). A group with none, or whose lines are all invalid
// ("2500-9999") or windows that never open ("0800-0800"), has none: ok is
// false. When a group has several, the first counts.
func (g *Group) VisitTime() (from, to time.Duration, ok bool) {
	visits := g.r.visits
	if len(visits) == 0 {
		return 0, 0, false
	}
	i, found := slices.BinarySearchFunc(visits, g.ln, func(x groupVisit, ln uint32) int { return cmp.Compare(x.ln, ln) })
	if !found || int(visits[i].gi) >= len(g.r.groups) || &g.r.groups[visits[i].gi] != g {
		return 0, 0, false
	}
	w := visits[i].w
	return time.Duration(w.from) * time.Minute, time.Duration(w.to) * time.Minute, true
}

// HasVisitTime reports whether any group of the file has a Visit-time
// window, so that a caller can skip looking for one.
func (r *Robots) HasVisitTime() bool { return len(r.visits) > 0 }

// visitTime lints a visit-time line of value v.
func (l *linter) visitTime(v []byte) {
	w, empty, ok := parseVisitTime(v)
	switch {
	case !ok:
		l.add(fmt.Sprintf("invalid visit-time %q ignored: want HHMM-HHMM, a window of the day in UTC, such as 0600-0845", v))
	case empty:
		l.add(fmt.Sprintf("visit-time %q is a window that never opens; ignored, so that requests are not held forever", v))
	case l.cur == nil:
		l.add("visit-time before any user-agent line ignored")
	case l.cur.VisitTime != "":
		l.add(fmt.Sprintf("visit-time %q ignored: the group's first, %s, counts", v, l.cur.VisitTime))
	default:
		l.cur.VisitTime = fmt.Sprintf("%02d%02d-%02d%02d UTC", w.from/60, w.from%60, w.to/60, w.to%60)
	}
}
