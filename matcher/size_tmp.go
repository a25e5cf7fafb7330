package matcher

import "unsafe"

// Size returns an estimate of the bytes r holds with every group's index
// built. (Provisional: replaced by an exact count kept by the parser.)
func (r *Robots) Size() int {
	if r == nil {
		return 0
	}
	n := int(unsafe.Sizeof(*r)) + len(r.agents)*int(unsafe.Sizeof(agentGroup{}))
	seenArena := map[*byte]bool{}
	add := func(g *Group) {
		if g == nil {
			return
		}
		n += int(unsafe.Sizeof(*g)) + len(g.lines)*8
		// rules, plus an index of about three times the rules
		n += len(g.rules) * int(unsafe.Sizeof(rule{})) * 4
		if p := unsafe.StringData(g.arena); !seenArena[p] {
			seenArena[p] = true
			n += len(g.arena)
		}
	}
	for _, a := range r.agents {
		n += len(a.token)
		add(a.group)
	}
	add(r.star)
	for _, s := range r.sitemaps {
		n += len(s) + 16
	}
	return n
}
