package pacing

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/publicsuffix"
)

// Why a request waits for room in a group of origins: a TurnError's
// Reason, beside those of rules.go.
const (
	ReasonDomainCap  = "domain-cap"  // the origins of its registrable domain (or GroupOf's group) have the cap in flight
	ReasonAddressCap = "address-cap" // the origins on its server's address have the address's cap in flight
)

// The numbers of the address groups (see doc/design.md, "Groups of
// origins").
const (
	// AddressStart is the cap of an address shared by two or more
	// origins before it has answered: below PHP-FPM's default of 5
	// workers, the smallest pool a shared host is likely to run.
	AddressStart = 4
	// AddressTTL is how long an origin's address is kept before a
	// request samples it again, and how long an address counts as
	// shared after two origins were last seen on it.
	AddressTTL = 10 * time.Minute
	// the number of groups of each kind kept idle (nothing in flight,
	// nobody waiting): more are swept (see groups.sweep)
	maxIdleGroups = 4096
)

// GroupConfig is how Turns caps the requests in flight to groups of
// origins, on top of each origin's pace: a request that takes a turn
// leaves only when every group it belongs to has room.
type GroupConfig struct {
	// DomainCap caps the requests in flight together to the origins of
	// one group of GroupOf; 0 turns the domain groups off.
	DomainCap int
	// GroupOf names the group of an origin ("https://a.example.com");
	// nil for its registrable domain (see RegistrableDomain). An empty
	// name puts the origin in a group of its own.
	GroupOf func(origin string) string
	// AddressCeiling is the most an address shared by two or more
	// origins gets in flight; 0 turns the address groups off. Its cap
	// starts at min(AddressStart, AddressCeiling) and moves between 1
	// and AddressCeiling (AIMD: see group.answer).
	AddressCeiling int
	// Uncapped lists the addresses never capped (a CDN's ranges).
	Uncapped []netip.Prefix
	// Learn says that requests may carry an httptrace.ClientTrace that
	// learns the address their connection reached (Base is an
	// *http.Transport); otherwise no address is learned and the address
	// groups stay empty.
	Learn bool
	// Proxy is the proxy function of that *http.Transport, if any: a
	// request sent through a proxy learns nothing.
	Proxy func(*http.Request) (*url.URL, error)
}

// groupKind tells the groups apart.
type groupKind uint8

const (
	kindDomain groupKind = iota
	kindAddress
)

// group is a group of origins and its requests in flight: a domain group
// (a fixed cap) or an address group (a learned one). It is safe for
// concurrent use.
type group struct {
	kind groupKind
	key  string // the registrable domain, GroupOf's name, or the address

	// n and limit mirror inflight and the cap in force (0: none), and
	// dead mirrors gone, for the check without the lock
	n, limit atomic.Int32
	dead     atomic.Bool

	mu       sync.Mutex
	inflight int // guarded by mu
	cap      int // guarded by mu
	ceiling  int // the most cap may grow to; fixed
	gone     bool
	// guarded by mu: the requests waiting for room, first in first out
	head, tail *waiter
	queued     int
	used       time.Duration // when a request last took room
	// guarded by mu: the time requests hold their room, an estimate
	est time.Duration

	// address groups, guarded by mu: the origin of the last sample of
	// the address, and when a sample last came from a second origin
	last     string
	sharedAt time.Duration
	// the lowest recent answer time, and the recent one (est); the
	// answers to requests sent before cutAt do not cut the cap again;
	// acc counts the good answers since the cap last grew
	base  time.Duration
	cutAt time.Duration
	acc   int
}

// waiter is a request waiting for room in a group: ch is closed when room
// may be free (woken).
type waiter struct {
	ch         chan struct{}
	prev, next *waiter
	woken      bool
}

// capped reports whether g caps its requests at now. The caller holds
// g.mu.
func (g *group) capped(now time.Duration) bool {
	if g.kind == kindAddress {
		return g.sharedAt != 0 && now-g.sharedAt < 2*AddressTTL
	}
	return true
}

// full reports whether g has no room at now. The caller holds g.mu.
func (g *group) full(now time.Duration) bool {
	return g.capped(now) && g.inflight >= g.cap
}

// mirror copies the state into the atomics. The caller holds g.mu.
func (g *group) mirror(now time.Duration) {
	g.n.Store(int32(g.inflight))
	l := int32(0)
	if g.capped(now) {
		l = int32(g.cap)
	}
	if g.limit.Load() != l {
		g.limit.Store(l)
	}
}

// roomy reports, without the lock, whether g seems to have room: a
// request that finds it so tries to take room after its turn.
func (g *group) roomy() bool {
	l := g.limit.Load()
	return l == 0 || g.n.Load() < l
}

// enqueue adds a waiter at the tail. The caller holds g.mu.
func (g *group) enqueue() *waiter {
	w := &waiter{ch: make(chan struct{})}
	if g.tail == nil {
		g.head, g.tail = w, w
	} else {
		w.prev, g.tail.next, g.tail = g.tail, w, w
	}
	g.queued++
	return w
}

// wake wakes the first waiter, if there is room at now. The caller holds
// g.mu.
func (g *group) wake(now time.Duration) {
	w := g.head
	if w == nil || g.full(now) {
		return
	}
	g.head = w.next
	if g.head == nil {
		g.tail = nil
	} else {
		g.head.prev = nil
	}
	w.next, w.prev, w.woken = nil, nil, true
	g.queued--
	close(w.ch)
}

// leave takes w out of the queue when its request gives up, and passes
// on a wake it got and will not use.
func (g *group) leave(w *waiter, now time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if w.woken {
		g.wake(now)
		return
	}
	if w.prev == nil {
		g.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		g.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.next, w.prev = nil, nil
	g.queued--
}

// pass passes on a wake that its request did not use.
func (g *group) pass(now time.Duration) {
	g.mu.Lock()
	g.wake(now)
	g.mu.Unlock()
}

// retryIn estimates when a request waiting for room in g at now may find
// it: one hold for each cap's worth of requests ahead of it.
func (g *group) retryIn() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	d := max(g.est, time.Millisecond)
	return d * time.Duration(1+g.queued/max(g.cap, 1))
}

// reason is the Reason of a request waiting for room in g.
func (g *group) reason() string {
	if g.kind == kindAddress {
		return ReasonAddressCap
	}
	return ReasonDomainCap
}

// member is the groups an origin belongs to, kept with its Pace. It is
// never modified: a change is a new member.
type member struct {
	dom  *group // nil: no domain groups
	addr *group // nil: not learned, uncapped, behind a proxy, or off
}

// groups holds the groups of a Turns.
type groups struct {
	cfg GroupConfig
	on  bool

	mu      sync.Mutex
	domains map[string]*group     // guarded by mu
	addrs   map[netip.Addr]*group // guarded by mu
	// guarded by mu: the map sizes after their last sweeps
	sweptD, sweptA int
}

// init sets gs up with cfg.
func (gs *groups) init(cfg GroupConfig) {
	if cfg.AddressCeiling <= 0 {
		cfg.Learn = false
	}
	gs.cfg = cfg
	gs.on = cfg.DomainCap > 0 || cfg.AddressCeiling > 0
}

// RegistrableDomain returns the group of origin ("https://a.example.co.uk:8443")
// by default: its host's registrable domain under the public suffix list,
// private entries included ("example.co.uk"; "a.github.io" stays apart from
// "b.github.io"). A host that has none (an IP literal, a single label, a
// public suffix itself such as "co.uk") is its own group. Scheme and port
// do not count.
func RegistrableDomain(origin string) string {
	h := origin
	if i := strings.Index(h, "://"); i >= 0 {
		h = h[i+3:]
	}
	if strings.HasPrefix(h, "[") { // an IPv6 literal, perhaps with a zone
		if i := strings.IndexByte(h, ']'); i >= 0 {
			return h[:i+1]
		}
		return h
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		h = h[:i]
	}
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if _, err := netip.ParseAddr(h); err == nil || !strings.Contains(h, ".") {
		return h
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(h)
	if err != nil {
		return h
	}
	return d
}

// domainOf returns the domain group named key, made if new.
func (gs *groups) domainOf(key string, now time.Duration) *group {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if g := gs.domains[key]; g != nil {
		return g
	}
	if gs.domains == nil {
		gs.domains = make(map[string]*group)
	}
	g := &group{kind: kindDomain, key: key, cap: gs.cfg.DomainCap, ceiling: gs.cfg.DomainCap, used: now}
	g.mirror(now)
	gs.domains[key] = g
	if len(gs.domains) > max(2*gs.sweptD, maxIdleGroups) {
		gs.sweptD = sweep(gs.domains, now)
	}
	return g
}

// addrOf returns the address group of a, made if new.
func (gs *groups) addrOf(a netip.Addr, now time.Duration) *group {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if g := gs.addrs[a]; g != nil {
		return g
	}
	if gs.addrs == nil {
		gs.addrs = make(map[netip.Addr]*group)
	}
	start := min(AddressStart, gs.cfg.AddressCeiling)
	g := &group{kind: kindAddress, key: a.String(), cap: start, ceiling: gs.cfg.AddressCeiling, used: now}
	g.mirror(now)
	gs.addrs[a] = g
	if len(gs.addrs) > max(2*gs.sweptA, maxIdleGroups) {
		gs.sweptA = sweep(gs.addrs, now)
	}
	return g
}

// sweep drops the idle groups of m (nothing in flight, nobody waiting)
// unused for AddressTTL, or, if that leaves more than maxIdleGroups, every
// idle group; a dropped group is marked gone, so that a member that holds
// it finds its origin's group again. It returns len(m). The caller holds
// gs.mu.
func sweep[K comparable](m map[K]*group, now time.Duration) int {
	for _, all := range []bool{false, true} {
		for k, g := range m {
			g.mu.Lock()
			if g.inflight == 0 && g.head == nil && (all || now-g.used >= AddressTTL) {
				g.gone = true
				g.dead.Store(true)
				delete(m, k)
			}
			g.mu.Unlock()
		}
		if len(m) <= maxIdleGroups {
			break
		}
	}
	return len(m)
}

// memberOf returns the groups of s's origin; nil if the groups are off.
func (gs *groups) memberOf(s Site, now time.Duration) *member {
	if !gs.on {
		return nil
	}
	if m := s.Pace().member.Load(); m != nil && m.live() {
		return m
	}
	return gs.resolve(s, now)
}

// besides returns m without the groups it shares with h (nil for none), or
// nil if it has no other.
func (m *member) besides(h *member) *member {
	if h == nil {
		return m
	}
	n := *m
	if n.dom == h.dom {
		n.dom = nil
	}
	if n.addr == h.addr {
		n.addr = nil
	}
	if n.dom == nil && n.addr == nil {
		return nil
	}
	if n == *m {
		return m
	}
	return &n
}

// live reports whether no group of m was swept.
func (m *member) live() bool {
	return (m.dom == nil || !m.dom.dead.Load()) && (m.addr == nil || !m.addr.dead.Load())
}

// resolve finds the groups of s's origin again: its domain group, and
// its address group unless that was swept (the address is then learned
// again).
func (gs *groups) resolve(s Site, now time.Duration) *member {
	p := s.Pace()
	m := p.member.Load()
	n := &member{}
	if gs.cfg.DomainCap > 0 {
		key := ""
		if gs.cfg.GroupOf != nil {
			key = gs.cfg.GroupOf(s.Origin())
		} else {
			key = RegistrableDomain(s.Origin())
		}
		if key == "" {
			key = s.Origin()
		}
		n.dom = gs.domainOf(key, now)
	}
	if m != nil && m.addr != nil && !m.addr.dead.Load() {
		n.addr = m.addr
	} else if m != nil && m.addr != nil {
		p.sampleAt.Store(0) // its address group was swept: learn it again
	}
	p.member.CompareAndSwap(m, n)
	return n
}

// room returns, with a waiter queued, the first group of m that has no
// room at now; nil if each seems to have some.
func (gs *groups) room(m *member, now time.Duration) (*group, *waiter) {
	if (m.dom == nil || m.dom.roomy()) && (m.addr == nil || m.addr.roomy()) {
		return nil, nil
	}
	for _, g := range [2]*group{m.dom, m.addr} {
		if g == nil || g.roomy() {
			continue
		}
		g.mu.Lock()
		if !g.gone && g.full(now) {
			w := g.enqueue()
			g.mu.Unlock()
			return g, w
		}
		g.mu.Unlock()
	}
	return nil, nil
}

// take takes room in each group of m, the groups of s's origin, at now
// for the request of tk, all or none. It returns, with a waiter queued,
// the group that has none.
func (gs *groups) take(s Site, m *member, tk *Ticket, now time.Duration) (*group, *waiter) {
	for {
		g, w, stale := m.take(tk, now)
		if !stale {
			return g, w
		}
		// A group swept since memberOf: the origin's is found again.
		m = gs.resolve(s, now)
	}
}

// take takes room in each group of m, all or none (see groups.take);
// stale when a group of m was swept.
func (m *member) take(tk *Ticket, now time.Duration) (_ *group, _ *waiter, stale bool) {
	if g := m.dom; g != nil {
		if w, stale := g.take(now); w != nil || stale {
			return g, w, stale
		}
	}
	if g := m.addr; g != nil {
		if w, stale := g.take(now); w != nil || stale {
			if m.dom != nil {
				m.dom.free(now)
			}
			return g, w, stale
		}
	}
	tk.dom, tk.addr = m.dom, m.addr
	return nil, nil, false
}

// take takes room in g at now; if it has none, it returns a waiter
// queued; stale if g was swept.
func (g *group) take(now time.Duration) (_ *waiter, stale bool) {
	g.mu.Lock()
	if g.gone {
		g.mu.Unlock()
		return nil, true
	}
	if g.full(now) {
		w := g.enqueue()
		g.mu.Unlock()
		return w, false
	}
	g.inflight++
	g.used = now
	g.mirror(now)
	if g.head != nil {
		g.wake(now) // room left: the next waiter may take it
	}
	g.mu.Unlock()
	return nil, false
}

// free gives back room taken and not used.
func (g *group) free(now time.Duration) {
	g.mu.Lock()
	g.inflight--
	g.mirror(now)
	g.wake(now)
	g.mu.Unlock()
}

// release gives back the room of a request answered at now after took
// (sent at sent; failed: a network error or a timeout). An address group
// learns from it (see answer).
func (g *group) release(now, sent, took time.Duration, failed bool, c *Counts) {
	g.mu.Lock()
	constrained := g.capped(now) && (g.inflight >= g.cap || g.head != nil)
	g.inflight--
	if g.est == 0 {
		g.est = took
	} else {
		g.est += (took - g.est) / 8
	}
	if g.kind == kindAddress {
		g.answer(now, sent, took, failed, constrained, c)
	}
	g.mirror(now)
	if g.head != nil {
		g.wake(now)
	}
	g.mu.Unlock()
}

// answer moves the cap of an address group by an answer that took took to
// a request sent at sent, while the group was constrained (at its cap, or
// with requests waiting): additive increase, multiplicative decrease. A
// good answer (not failed, in less than twice the recent lowest answer
// time, or under AdaptiveFloor) from a constrained group counts towards one
// more request in flight, which a cap's worth of them earn; a failure or
// a recent answer time (est, an eighth of the way to each answer) over
// twice the lowest plus AdaptiveFloor halves the cap, once for the
// requests sent before the halving: one answer slower by scheduling noise
// does not. The caller holds g.mu.
func (g *group) answer(now, sent, took time.Duration, failed, constrained bool, c *Counts) {
	if !failed {
		if g.base == 0 || took < g.base {
			g.base = took
		} else {
			g.base += (took - g.base) / 64 // a lasting change is taken in time
		}
	}
	rising := g.est > 2*g.base+AdaptiveFloor
	switch {
	case failed || rising:
		g.cut(now, sent, c)
	case constrained && (took <= 2*g.base || took < AdaptiveFloor):
		if g.acc++; g.acc >= g.cap && g.cap < g.ceiling {
			g.cap++
			g.acc = 0
			if g.cap == g.ceiling {
				c.Ceilings.Add(1)
			}
		}
	}
}

// cut halves the cap at now for an answer to a request sent at sent,
// unless the request was sent before the last halving. The caller holds
// g.mu.
func (g *group) cut(now, sent time.Duration, c *Counts) {
	if sent < g.cutAt {
		return
	}
	if g.cap > 1 {
		g.cap /= 2
		c.Halvings.Add(1)
	}
	g.cutAt, g.acc = max(now, 1), 0
}

// pushedBack halves the cap of the address of s's origin, if it is known,
// for a 429 or 503 to a request sent at sent.
func (tn *Turns) pushedBack(s Site, sent time.Duration) {
	m := s.Pace().member.Load()
	if m == nil || m.addr == nil {
		return
	}
	g := m.addr
	now := tn.Now()
	g.mu.Lock()
	g.cut(now, sent, &tn.Counts)
	g.mirror(now)
	g.mu.Unlock()
}

// learn notes that a connection of s's origin reached a, at now.
func (gs *groups) learn(s Site, a netip.Addr, now time.Duration) {
	a = a.Unmap().WithZone("")
	p := s.Pace()
	m := gs.memberOf(s, now)
	if m == nil {
		return
	}
	n := &member{dom: m.dom}
	uncapped := false
	for _, pf := range gs.cfg.Uncapped {
		if pf.Contains(a) {
			uncapped = true
			break
		}
	}
	if !uncapped {
		g := gs.addrOf(a, now)
		g.mu.Lock()
		if g.last != "" && g.last != s.Origin() {
			g.sharedAt = max(now, 1)
		}
		g.last = s.Origin()
		g.mirror(now)
		g.mu.Unlock()
		n.addr = g
	}
	p.member.CompareAndSwap(m, n)
}

// sample reports whether the request to s's origin that takes a turn at
// now is to learn the origin's address: at most one each AddressTTL.
func (gs *groups) sample(s Site, now time.Duration) bool {
	if !gs.cfg.Learn {
		return false
	}
	p := s.Pace()
	at := p.sampleAt.Load()
	return (at == 0 || now >= time.Duration(at)) && p.sampleAt.CompareAndSwap(at, int64(Add(now, AddressTTL)))
}

// Traced returns ctx with a trace that learns the address reached by the
// first connection of the request that took tk to s's origin, for the URL
// u, if tk is to learn it (see Ticket.Learns); else ctx. A request sent
// through a proxy learns nothing.
func (tn *Turns) Traced(ctx context.Context, s Site, tk Ticket, u *url.URL) context.Context {
	if !tk.learn {
		return ctx
	}
	gs := &tn.groups
	if gs.cfg.Proxy != nil && u != nil {
		if pu, err := gs.cfg.Proxy(&http.Request{URL: u, Header: http.Header{}}); err != nil || pu != nil {
			return ctx
		}
	}
	var once atomic.Bool
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if info.Conn == nil || !once.CompareAndSwap(false, true) {
				return
			}
			if a, ok := addrOf(info.Conn.RemoteAddr()); ok {
				gs.learn(s, a, tn.Now())
			}
		},
	})
}

// addrOf returns the IP address of a connection's remote address.
func addrOf(a net.Addr) (netip.Addr, bool) {
	switch a := a.(type) {
	case *net.TCPAddr:
		ip, ok := netip.AddrFromSlice(a.IP)
		return ip, ok
	case nil:
		return netip.Addr{}, false
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr(), true
}

// Learns reports whether the request of k is to learn its origin's
// address: see Turns.Traced.
func (k Ticket) Learns() bool { return k.learn }

// waitRoom waits for room in g, where w waits in the queue, for a request
// for u (nil: robots.txt) to s under the limit l. It returns the error of
// NotYet when l runs out first, with the reason of g and an estimate of
// when room may be free.
func (tn *Turns) waitRoom(ctx context.Context, s Site, g *group, w *waiter, l Limit, waited *time.Duration, u *url.URL) error {
	now := tn.Now()
	why := g.reason()
	if tn.debugging(ctx) {
		tn.cfg.Log.Debug(ctx, "robots: waiting for room", slog.String("origin", s.Origin()),
			slog.String("url", urlOf(s, u)), slog.String("reason", why), slog.String("group", g.key))
	}
	var timer <-chan time.Time
	if left := l.Left(now); l.Until != math.MaxInt64 {
		t, stop := tn.after(max(left-1, 0))
		defer stop()
		timer = t
	}
	select {
	case <-w.ch:
		*waited += tn.Now() - now
		if !Probing(ctx) {
			tn.Counts.waitedFor(why)
		}
		return nil
	case <-timer:
		end := tn.Now()
		*waited += end - now
		g.leave(w, end)
		return tn.NotYet(ctx, s, u, end, g.retryIn(), l, why)
	case <-ctx.Done():
		end := tn.Now()
		*waited += end - now
		g.leave(w, end)
		return fmt.Errorf("robots: waiting for room for %s: %w", s.Origin(), ctx.Err())
	}
}

// groupsNext returns when a request to s's origin could find room in its
// groups, at now or later: now, or an estimate.
func (tn *Turns) groupsNext(s Site, now time.Duration) time.Duration {
	m := tn.groups.memberOf(s, now)
	if m == nil {
		return now
	}
	at := now
	for _, g := range [2]*group{m.dom, m.addr} {
		if g != nil && !g.roomy() {
			at = max(at, Add(now, g.retryIn()))
		}
	}
	return at
}

// AddressState returns the cap of the address group of a and its requests
// in flight; ok is false if no group of a is kept.
func (tn *Turns) AddressState(a netip.Addr) (cap, inflight int, ok bool) {
	gs := &tn.groups
	gs.mu.Lock()
	g := gs.addrs[a]
	gs.mu.Unlock()
	if g == nil {
		return 0, 0, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cap, g.inflight, true
}

// GroupsKept returns the number of domain groups and address groups kept.
func (tn *Turns) GroupsKept() (domains, addrs int) {
	gs := &tn.groups
	gs.mu.Lock()
	defer gs.mu.Unlock()
	return len(gs.domains), len(gs.addrs)
}
