package matcher

func (g *Group) DebugRules() int { return int(g.hi - g.lo) }
func (g *Group) DebugScanned() bool { return g.hi <= g.r.nScan }
