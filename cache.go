package robots

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"math"
	"net/netip"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"github.com/f9014239/robots/matcher"
)

// DefaultMaxOrigins bounds the origins a Transport keeps in memory when
// MaxOrigins is zero.
const DefaultMaxOrigins = 10000

// DefaultMaxBytes bounds the bytes a Transport's cache holds when MaxBytes is
// zero: parsed robots.txt files with their indexes, and the bodies kept for a
// Store.
const DefaultMaxBytes = 256 << 20

// originKey identifies an origin in the in-process cache: the lower-case
// scheme, and the lower-case IDNA ASCII host with ":port" unless the port is
// the scheme's default (IPv6 hosts keep their brackets). The port is written
// as a number, without leading zeros.
type originKey struct {
	scheme string
	host   string
}

// String returns the origin as a Store names it: "https://example.com".
func (k originKey) String() string { return k.scheme + "://" + k.host }

var errNoHost = errors.New("robots: URL has no host")

// keyOf returns the origin of u. It does not allocate when u's scheme and
// host are already lower-case ASCII and its port has no leading zero.
func keyOf(u *url.URL) (originKey, error) {
	scheme := u.Scheme
	if scheme == "" {
		return originKey{}, errors.New("robots: URL has no scheme")
	}
	if hasUpper(scheme) {
		scheme = strings.ToLower(scheme)
	}
	host := u.Host
	if host == "" {
		return originKey{}, errNoHost
	}
	// Split host and port. A colon inside IPv6 brackets is not a port
	// separator.
	name, port := host, ""
	if host[0] == '[' {
		end := strings.IndexByte(host, ']')
		if end < 0 {
			return originKey{}, fmt.Errorf("robots: invalid host %q", host)
		}
		name, port = host[:end+1], host[end+1:]
		if port != "" && port[0] != ':' {
			return originKey{}, fmt.Errorf("robots: invalid host %q", host)
		}
		if port != "" {
			port = port[1:]
		}
	} else if i := strings.IndexByte(host, ':'); i >= 0 {
		name, port = host[:i], host[i+1:]
		if strings.IndexByte(port, ':') >= 0 {
			// A hand-built URL may hold such a host ("x::"), which
			// names no origin and would not key back to itself.
			return originKey{}, fmt.Errorf("robots: invalid host %q", host)
		}
	}
	port, err := normPort(scheme, port)
	if err != nil {
		return originKey{}, fmt.Errorf("robots: invalid port in host %q", host)
	}
	if name == "" || name == "[]" {
		return originKey{}, errNoHost
	}
	if name[0] == '[' {
		// An IPv6 literal has many spellings of one address:
		// "[0:0:0:0:0:0:0:1]" is "[::1]". Key it by the canonical one.
		addr, err := netip.ParseAddr(name[1 : len(name)-1])
		if err != nil || !addr.Is6() {
			return originKey{}, fmt.Errorf("robots: invalid host %q", host)
		}
		if !unreservedZone(addr.Zone()) {
			// A zone of other bytes has no spelling that url.Parse
			// reads back (it refuses "%96" in a zone, and a space
			// in a host), so it cannot name an origin in a Store.
			return originKey{}, fmt.Errorf("robots: invalid host %q: an IPv6 zone must be letters, digits, '-', '.', '_' or '~' (RFC 6874)", host)
		}
		if c := "[" + addr.String() + "]"; c != name {
			name = c
		}
	} else if !isASCII(name) {
		// An internationalised name: map it to its ASCII form (UTS
		// 46, as browsers do). idna returns a partial result together
		// with an error; that result is never used.
		ascii, err := idna.Lookup.ToASCII(name)
		if err != nil {
			return originKey{}, fmt.Errorf("robots: invalid host %q: %w", name, err)
		}
		name = ascii
	}
	if hasUpper(name) {
		name = strings.ToLower(name)
	}
	if name == "" || name == "[]" {
		return originKey{}, errNoHost
	}
	if strings.IndexByte(name, '%') >= 0 {
		// An IPv6 zone, "[fe80::1%en0]": escaped as in a URL, so that
		// the origin parses back to the same key.
		name = strings.ReplaceAll(name, "%", "%25")
	}
	if port == "" {
		return originKey{scheme, name}, nil
	}
	if len(name)+1+len(port) == len(host) && host[len(name)] == ':' && host[len(name)+1:] == port && host[:len(name)] == name {
		return originKey{scheme, host}, nil // as written: no allocation
	}
	return originKey{scheme, name + ":" + port}, nil
}

// normPort returns port as a decimal number without leading zeros, or "" if
// it is empty or scheme's default port: ":080" and ":80" are the same port
// of an http origin, and no port at all.
func normPort(scheme, port string) (string, error) {
	if port == "" {
		return "", nil
	}
	n := 0
	for i := 0; i < len(port); i++ {
		c := port[i]
		if c < '0' || c > '9' {
			return "", errors.New("port is not a number")
		}
		if n = n*10 + int(c-'0'); n > 65535 {
			return "", errors.New("port out of range")
		}
	}
	if port[0] == '0' && len(port) > 1 {
		port = strconv.Itoa(n)
	}
	if port == defaultPort(scheme) {
		return "", nil
	}
	return port, nil
}

func defaultPort(scheme string) string {
	switch scheme {
	case "http":
		return "80"
	case "https":
		return "443"
	case "ftp":
		return "21"
	}
	return ""
}

// unreservedZone reports whether zone, an IPv6 zone, holds only the
// unreserved characters of RFC 3986 §2.3, which RFC 6874 §2 allows unescaped.
func unreservedZone(zone string) bool {
	for i := 0; i < len(zone); i++ {
		c := zone[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

// cache is the in-process cache of origins: a fixed set of shards, each a
// copy-on-write map read without locks, bounded in origins and in bytes by
// the CLOCK algorithm (an approximation of least-recently-used). It starts
// no goroutines; entries expire when they are next used.
//
// The pace of an evicted origin is parked while it still matters (a turn or
// the end of a pause ahead), and taken back when the origin returns.
type cache struct {
	seed     maphash.Seed
	shards   []shard
	per      int           // origins per shard; len(shards)*per <= MaxOrigins
	maxBytes int64         // MaxBytes
	bytes    atomic.Int64  // the sum of the shards' bytes
	sweep    atomic.Uint32 // the shard where the next eviction for bytes starts

	parkMu    sync.Mutex
	parked    map[originKey]*pace // guarded by parkMu
	parkSwept int                 // guarded by parkMu: len(parked) after the last sweep
}

type shard struct {
	m atomic.Pointer[map[originKey]*site] // read without lock; replaced under mu

	mu    sync.Mutex
	ring  []*site // guarded by mu: the shard's sites, swept by hand
	hand  int     // guarded by mu
	bytes int64   // guarded by mu: the sum of the ring's site.bytes
}

// newCache returns a cache of at most maxOrigins origins and maxBytes bytes
// (beyond the state being added, when it alone is larger). Its shards hold
// 64 to 128 origins each, so that copying one on a miss stays cheap.
func newCache(maxOrigins int, maxBytes int64) *cache {
	n := 1
	for n < 1<<14 && n*2*64 <= maxOrigins {
		n *= 2
	}
	return &cache{
		seed:     maphash.MakeSeed(),
		shards:   make([]shard, n),
		per:      max(maxOrigins/n, 1),
		maxBytes: maxBytes,
		parked:   make(map[originKey]*pace),
	}
}

func (c *cache) shard(k originKey) *shard {
	if len(c.shards) == 1 {
		return &c.shards[0]
	}
	return &c.shards[maphash.String(c.seed, k.host)&uint64(len(c.shards)-1)]
}

// get returns the site of k, or nil.
func (sh *shard) get(k originKey) *site {
	if m := sh.m.Load(); m != nil {
		return (*m)[k]
	}
	return nil
}

// add returns the site of k in sh, adding one if there is none, with the
// pace parked for k if any. When the shard is full, it evicts the first site
// that the sweeping hand finds unused since its last pass, and counts it.
func (c *cache) add(sh *shard, k originKey, now time.Duration) (s *site, evicted int) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s := sh.get(k); s != nil {
		return s, 0
	}
	s = &site{key: k, origin: k.String(), pace: c.unpark(k)}
	s.used.Store(usedNew)
	var victim *site
	if len(sh.ring) >= c.per {
		if victim = c.evict(sh, now, nil, s); victim != nil {
			evicted++
		}
	}
	if victim == nil {
		sh.ring = append(sh.ring, s)
	}
	sh.replace(func(m map[originKey]*site) {
		if victim != nil {
			delete(m, victim.key)
		}
		m[k] = s
	})
	return s, evicted
}

// replace publishes a copy of sh's map changed by f. The caller holds sh.mu.
func (sh *shard) replace(f func(map[originKey]*site)) {
	var m map[originKey]*site
	if old := sh.m.Load(); old == nil {
		m = make(map[originKey]*site)
	} else {
		m = maps.Clone(*old)
	}
	f(m)
	sh.m.Store(&m)
}

// How recently a site was used, as the CLOCK hand sees it: a site is added
// for a request, and then may be used again. The hand passes a site added
// since its last pass once more, and one used again twice more: the sites
// it evicts first are those unused the longest, and among them those used
// once.
const (
	usedNew   = 1
	usedAgain = 2
)

// evict removes one site of sh other than keep from its ring, and returns
// it: the first that the hand finds unused since its last pass. It returns
// nil if there is none. When add is not nil, it takes the evicted site's
// place, and the hand moves past it, so that it comes last in the hand's
// round; else the ring's last site does. The caller holds sh.mu, and
// removes the evicted site from sh's map.
func (c *cache) evict(sh *shard, now time.Duration, keep, add *site) *site {
	if len(sh.ring) == 0 || len(sh.ring) == 1 && sh.ring[0] == keep {
		return nil
	}
	// Three passes bring every site to 0; a site that is loading or kept
	// stays, and if all do, none is evicted.
	for range (usedAgain+1)*len(sh.ring) + 1 {
		sh.hand %= len(sh.ring)
		v := sh.ring[sh.hand]
		if v == keep || v.loading() {
			sh.hand++
			continue
		}
		if u := v.used.Load(); u > 0 {
			v.used.Store(u - 1)
			sh.hand++
			continue
		}
		if add != nil {
			sh.ring[sh.hand] = add
			sh.hand++
		} else {
			last := len(sh.ring) - 1
			sh.ring[sh.hand] = sh.ring[last]
			sh.ring[last] = nil
			sh.ring = sh.ring[:last]
		}
		sh.bytes -= v.bytes
		c.bytes.Add(-v.bytes)
		v.bytes, v.gone = 0, true
		if !v.pace.drop(now) {
			c.park(v.key, v.pace, now)
		}
		return v
	}
	return nil
}

// account sets the bytes that s holds to n, and evicts sites other than s
// while the cache holds more than MaxBytes, or s's shard more than its share
// of MaxOrigins. It returns how many it evicted.
func (c *cache) account(s *site, n int64, now time.Duration) (evicted int) {
	sh := c.shard(s.key)
	sh.mu.Lock()
	if s.gone {
		sh.mu.Unlock()
		return 0 // evicted while it loaded: its state goes with it
	}
	sh.bytes += n - s.bytes
	c.bytes.Add(n - s.bytes)
	s.bytes = n
	// A shard may hold more than its share of origins when every other
	// site was loading as one was added: the excess goes here.
	for len(sh.ring) > c.per {
		if !c.evictFrom(sh, now, s) {
			break
		}
		evicted++
	}
	sh.mu.Unlock()
	// Over MaxBytes: evict from the shards in turn, one site each, until
	// under it or a whole round finds nothing to evict.
	for idle := 0; c.bytes.Load() > c.maxBytes && idle < len(c.shards); {
		v := &c.shards[int(c.sweep.Add(1))%len(c.shards)]
		v.mu.Lock()
		if c.evictFrom(v, now, s) {
			evicted++
			idle = 0
		} else {
			idle++
		}
		v.mu.Unlock()
	}
	return evicted
}

// evictFrom evicts one site of sh other than keep, and reports whether it
// found one. The caller holds sh.mu.
func (c *cache) evictFrom(sh *shard, now time.Duration, keep *site) bool {
	v := c.evict(sh, now, keep, nil)
	if v == nil {
		return false
	}
	sh.replace(func(m map[originKey]*site) { delete(m, v.key) })
	return true
}

// park keeps p, the pace of an evicted origin, until it no longer matters.
func (c *cache) park(k originKey, p *pace, now time.Duration) {
	c.parkMu.Lock()
	defer c.parkMu.Unlock()
	c.parked[k] = p
	if len(c.parked) > max(2*c.parkSwept, 1024) {
		for k, p := range c.parked {
			if p.drop(now) {
				delete(c.parked, k)
			}
		}
		c.parkSwept = len(c.parked)
	}
}

// siteOf returns the current site of k, adding one if there is none.
func (c *cache) siteOf(k originKey, now time.Duration) *site {
	sh := c.shard(k)
	if s := sh.get(k); s != nil {
		return s
	}
	s, _ := c.add(sh, k, now)
	return s
}

// unpark returns the pace parked for k, or a new one.
func (c *cache) unpark(k originKey) *pace {
	c.parkMu.Lock()
	defer c.parkMu.Unlock()
	if p := c.parked[k]; p != nil {
		delete(c.parked, k)
		return p
	}
	return new(pace)
}

// site is the cached state of one origin.
type site struct {
	key    originKey
	origin string       // key.String()
	used   atomic.Int32 // how recently the site was used: 1 when added, 2 when used again; each pass of the CLOCK hand takes 1
	cur    atomic.Pointer[state]
	pace   *pace        // the origin's pace, when Transport.Pacer is nil or fails
	forget atomic.Int64 // set by Transport.Forget, in Unix ns: the next load takes no older entry from the Store

	mu     sync.Mutex
	flight *flight // guarded by mu: the load in progress, or nil

	bytes int64 // guarded by the shard's mu: what cur holds, as counted
	gone  bool  // guarded by the shard's mu: evicted
}

// loading reports whether a load of s is in progress.
func (s *site) loading() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flight != nil
}

// flight is one load of a site's robots.txt. st is written once before done
// is closed, and read only after. When the fetch must wait for its turn,
// sendAt is set and waiting closed, so that a request that cannot wait so
// long gives up at once.
type flight struct {
	done     chan struct{}
	st       *state
	waiting  chan struct{}
	waitOnce sync.Once
	sendAt   atomic.Int64 // when the fetch is sent, in Unix ns; set before waiting is closed, and again if it waits more
}

// wait tells the requests waiting for f that its fetch waits for its turn,
// until sendAt.
func (f *flight) wait() { f.waitOnce.Do(func() { close(f.waiting) }) }

// fetchPoll is how long after a refusal a request that found a fetch of
// robots.txt in flight, with no known end, may try again (TurnError.At).
const fetchPoll = 100 * time.Millisecond

// state is an entry ready to decide with. It is immutable. Without a Store,
// its entry has no Body: the parsed form is all a state needs, and a refresh
// that finds the origin unreachable carries it over (see compileFetched), so
// that a cached origin does not hold its robots.txt twice.
type state struct {
	entry   *Entry
	robots  *matcher.Robots // parsed Body when entry.Access is AccessSuccess; else nil
	group   *matcher.Group  // robots.Group of the Transport's Agent; nil if robots or Agent is
	err     error           // why the origin is refused whole; nil unless entry.Access is AccessUnreachable
	every   time.Duration   // the interval between requests for the Transport's own Agent
	expires time.Duration   // entry.Expires, on the Transport's clock (see Transport.now)
	allowAt time.Duration   // when an AccessUnreachable origin becomes allowed (30-day rule), on the same clock
	bytes   int64           // the memory the state holds, as the cache counts it
}

// fresh reports whether st may be used at now without a new fetch.
func (st *state) fresh(now time.Duration) bool { return now < st.expires }

// compile returns the state of e. robots, if not nil, is e.Body already
// parsed.
func (t *Transport) compile(e *Entry, robots *matcher.Robots) *state {
	st := &state{entry: e, expires: t.clock(e.Expires), bytes: stateOverhead}
	switch e.Access {
	case AccessSuccess:
		if int64(len(e.Body)) > t.cfg.maxBody {
			// From a Store written by a Transport that reads more:
			// this one obeys only what it would have read itself.
			cut := *e
			cut.Body = append([]byte(nil), matcher.Truncate(e.Body, int(t.cfg.maxBody))...)
			e, robots = &cut, nil
			st.entry = e
		}
		if robots == nil {
			robots = matcher.Parse(e.Body)
		}
		st.robots = robots
		if t.cfg.store == nil && e.Body != nil {
			bodiless := *e
			bodiless.Body = nil
			st.entry = &bodiless
		}
		st.bytes += int64(robots.Size()) + int64(len(st.entry.Body))
		if t.cfg.agent != "" {
			st.group = st.robots.Group(t.cfg.agent)
			st.every = t.delayOf(st.group.CrawlDelay())
		} else {
			st.every = t.delayOf(st.robots.Group("*").CrawlDelay())
		}
	case AccessUnavailable:
		st.every = t.delayOf(0, false)
	default:
		// AccessUnreachable, and any value an Access cannot have: the
		// origin is refused whole.
		st.every = t.delayOf(0, false)
		msg := e.Error
		if msg == "" {
			msg = "robots: robots.txt unreachable"
		}
		st.err = errors.New(msg)
		st.allowAt = time.Duration(math.MaxInt64)
		if e.Access == AccessUnreachable && !e.UnreachableSince.IsZero() {
			// An entry that does not say since when the origin is
			// unreachable never counts 30 days: it refuses until it
			// expires, and the fetch that follows sets the date.
			st.allowAt = t.clock(e.UnreachableSince.Add(UnreachableAllowAfter))
		}
	}
	return st
}

// stateOverhead is what the cache counts for a state beside its parsed
// robots.txt and body: the state, its Entry, its site, its pace and their
// map and ring slots.
const stateOverhead = 1 << 10

// clock returns tm on the Transport's clock (see Transport.now).
func (t *Transport) clock(tm time.Time) time.Duration { return tm.Sub(t.epoch) }

// compileFetched is compile for an entry made in this process from r, so
// that the refusal keeps the fetch error itself, with its chain, and not
// only its text. prev is the state e follows, or nil if e does not follow
// the in-memory state (it follows an entry from the Store): when r found the
// origin unreachable and e keeps the last good copy, that copy is prev's,
// already parsed.
func (t *Transport) compileFetched(e *Entry, r *fetchResult, prev *state) *state {
	var robots *matcher.Robots
	if r.access == AccessUnreachable && e.Access == AccessSuccess && prev != nil {
		robots = prev.robots
	}
	st := t.compile(e, robots)
	if st.err != nil && r.err != nil {
		st.err = r.err
	}
	return st
}

// decision is a verdict and what decided it.
type decision struct {
	allowed bool
	rule    string
	line    int
	use     string // the use a usage preference refuses; "" for a rule
	err     error
}

// decide returns the verdict of st at now for the URL path and query target,
// as seen by the crawler agent ("" for the Transport's own Agent).
func (st *state) decide(now time.Duration, agent, target string) decision {
	switch st.entry.Access {
	case AccessSuccess:
		g := st.groupOf(agent)
		if g.Allowed(target) { // Allowed does not allocate; Match does
			return decision{allowed: true}
		}
		m := g.Match(target)
		return decision{allowed: m.Allowed, rule: m.Rule, line: m.Line}
	case AccessUnavailable:
		return decision{allowed: true}
	}
	if now >= st.allowAt {
		return decision{allowed: true}
	}
	return decision{err: st.err}
}

// groupOf returns the group of st's robots.txt that agent ("" for the
// Transport's own Agent) obeys.
func (st *state) groupOf(agent string) *matcher.Group {
	if agent == "" && st.group != nil {
		return st.group
	}
	if agent == "" {
		agent = "*"
	}
	return st.robots.Group(agent)
}

// lookup returns the state that decides for origin k at now: the cached one
// if it is fresh, or else the result of a load that the caller waits for.
func (t *Transport) lookup(ctx context.Context, k originKey, now time.Duration, userAgent func() string) (*site, *state, error) {
	sh := t.cache.shard(k)
	s := sh.get(k)
	if s != nil {
		if s.used.Load() < usedAgain {
			s.used.Store(usedAgain)
		}
		if st := s.cur.Load(); st != nil && st.fresh(now) {
			t.stats.hit()
			return s, st, nil
		}
	} else {
		var evicted int
		s, evicted = t.cache.add(sh, k, now)
		t.stats.evictions.Add(uint64(evicted))
	}
	t.stats.misses.Add(1)
	if h := lookupMissHook; h != nil {
		h(k)
	}
	st, err := t.wait(ctx, s, userAgent, false, now)
	for tries := 1; err == errSiteGone; tries++ {
		// s was evicted before its load began: wait for the origin's
		// current site instead, so that an origin has one load at a
		// time (two would send two requests for robots.txt at once,
		// each on a pace that knows no crawl-delay). After a few tries
		// under such churn, load on s as it is.
		var evicted int
		s, evicted = t.cache.add(sh, k, now)
		t.stats.evictions.Add(uint64(evicted))
		st, err = t.wait(ctx, s, userAgent, tries >= 8, now)
	}
	return s, st, err
}

// lookupMissHook, if set by a test, is called on each miss before the load
// is waited for, so that a test can evict the site in between.
var lookupMissHook func(originKey)

// errSiteGone is the error of Transport.wait for a site evicted before its
// load began.
var errSiteGone = errors.New("robots: site evicted")

// wait returns the site's state once it is fresh, starting a load unless
// one is in progress, for a request that began at start (on the Transport's
// clock). It gives up when ctx is done, and, with a [*TurnError], when the
// request may not wait so long (see turnLimit): at once if the load waits
// for a turn past that limit, or when MaxWait runs out while the fetch is in
// flight. The load goes on for the other callers. It returns errSiteGone if
// s has been evicted, unless evenGone is set.
func (t *Transport) wait(ctx context.Context, s *site, userAgent func() string, evenGone bool, start time.Duration) (*state, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("robots: waiting for %s/robots.txt: %w", s.origin, err)
	}
	// Under the shard's lock, s is either gone or, once its flight is
	// set, not evicted (a loading site is not): a load never starts on a
	// site that the cache no longer holds.
	sh := t.cache.shard(s.key)
	sh.mu.Lock()
	if s.gone && !evenGone {
		sh.mu.Unlock()
		return nil, errSiteGone
	}
	s.mu.Lock()
	sh.mu.Unlock()
	if st := s.cur.Load(); st != nil && st.fresh(t.now()) {
		s.mu.Unlock()
		return st, nil
	}
	lim := t.limitOf(ctx, start)
	f := s.flight
	if f == nil {
		f = &flight{done: make(chan struct{}), waiting: make(chan struct{})}
		s.flight = f
		s.mu.Unlock()
		if ctx.Done() == nil && lim.until == math.MaxInt64 {
			// This caller cannot give up: load on its goroutine.
			t.load(ctx, s, f, userAgent())
			return f.st, nil
		}
		go t.load(ctx, s, f, userAgent())
	} else {
		s.mu.Unlock()
	}
	var waiting <-chan struct{}
	var timeout <-chan time.Time
	if lim.until != math.MaxInt64 {
		waiting = f.waiting
		if !lim.deadline {
			// MaxWait, before the deadline if any.
			timer := time.NewTimer(max(lim.left(t.now())-1, 0))
			defer timer.Stop()
			timeout = timer.C
		}
	}
	for {
		select {
		case <-f.done:
			return f.st, nil
		case <-waiting:
			waiting = nil
			sendAt := time.Unix(0, f.sendAt.Load())
			if now := t.now(); t.clock(sendAt) >= lim.until {
				return nil, t.notYet(s, now, max(t.clock(sendAt)-now, time.Nanosecond), lim)
			}
		case <-timeout:
			select {
			case <-f.done:
				return f.st, nil
			default:
			}
			return nil, t.notYet(s, t.now(), fetchPoll, lim)
		case <-ctx.Done():
			return nil, fmt.Errorf("robots: waiting for %s/robots.txt: %w", s.origin, ctx.Err())
		}
	}
}

// load obtains a new state for s, publishes it and ends f. ctx is the
// context of the request that started it, for the log only: the load serves
// every request that waits for it, so it is neither canceled with that
// request nor carries its values (its httptrace hooks, say). A panic while
// loading (in Base, a Store, a Pacer or the Logger) ends the load with the
// origin unreachable, and is logged; it is not raised again, since the load
// may run on a goroutine of its own. The flight ends whatever happens.
func (t *Transport) load(ctx context.Context, s *site, f *flight, userAgent string) {
	ctx = context.WithoutCancel(ctx)
	var st *state
	defer func() {
		// Deferred first, so it runs last: even if what follows panics,
		// the flight ends and its waiters are answered.
		if st == nil {
			st = t.panicked(s, "robots: panic while loading "+s.origin+"/robots.txt")
		}
		// An unreachable robots.txt says nothing of the origin's
		// rules: the pace knows them only from one that was read.
		t.paceOf(s).know(st.every, st.entry != nil && st.entry.Access != AccessUnreachable)
		s.cur.Store(st)
		t.stats.evictions.Add(uint64(t.cache.account(s, st.bytes, t.now())))
		s.mu.Lock()
		s.flight = nil
		s.mu.Unlock()
		f.st = st
		close(f.done)
	}()
	defer func() {
		if v := recover(); v != nil {
			msg := fmt.Sprintf("robots: panic while loading %s/robots.txt: %v", s.origin, v)
			st = t.panicked(s, msg)
			func() {
				defer func() { recover() }() // a Logger that panics too
				t.log(ctx, msg, "stack", string(debug.Stack()))
			}()
		}
	}()
	st = t.obtain(ctx, s, f, s.cur.Load(), userAgent)
}

// panicked returns the state of s after a load that panicked: the fetch
// failed as unreachable, with msg as its error, and the last good copy (if
// any) is kept, as for any unreachable fetch.
func (t *Transport) panicked(s *site, msg string) *state {
	err := errors.New(msg)
	r := &fetchResult{access: AccessUnreachable, err: err}
	return t.compileFetched(next(entryOf(s.cur.Load()), r, time.Now()), r, s.cur.Load())
}

// entryOf returns st's entry, or nil if st is nil.
func entryOf(st *state) *Entry {
	if st == nil {
		return nil
	}
	return st.entry
}

// obtain returns the state of s that follows prevSt (nil if none): an entry
// another user of the Store has fetched, or else the result of a fetch. The
// fetch takes the origin's turn before it is sent, like any request, and
// while it holds the Store's lock, so that no other user of the Store and
// Pacer sees the new entry before the fetch is counted as a turn.
func (t *Transport) obtain(logCtx context.Context, s *site, f *flight, prevSt *state, userAgent string) *state {
	// The load's own context: no caller's values, no cancellation, and
	// no MaxWait, so that the fetch and its redirects wait for their
	// turns however far away.
	ctx := context.WithValue(context.Background(), maxWaitKey{}, time.Duration(0))
	prev := entryOf(prevSt)
	store := t.cfg.store
	if store != nil {
		sctx, cancel := context.WithTimeout(ctx, t.cfg.fetchTimeout)
		defer cancel()
		var notBefore time.Time
		if ns := s.forget.Swap(0); ns != 0 {
			notBefore = time.Unix(0, ns)
		}
		if e := t.storeGet(sctx, logCtx, s.origin); e != nil {
			if time.Now().Before(e.Expires) && !e.FetchedAt.Before(notBefore) {
				t.stats.storeHits.Add(1)
				return t.compile(e, nil)
			}
			if prev == nil || e.Expires.After(prev.Expires) {
				prev, prevSt = e, nil // the Store's entry has its Body
			}
		}
		if l, ok := store.(Locker); ok {
			unlock, e := t.lockOrWait(sctx, logCtx, l, s.origin, notBefore)
			if e != nil {
				t.stats.storeHits.Add(1)
				return t.compile(e, nil)
			}
			if unlock != nil {
				defer unlock()
			}
		}
	}

	// The fetch is a request to the origin: it waits for its turn,
	// spaced by the interval last known for the origin (on a first visit,
	// by the interval of the origin's latest turn in a shared Pacer; see
	// Pacer.Reserve) and never during a pause. With no deadline, waitTurn
	// fails only if the Pacer and the memory both fail, which they cannot.
	every := t.paceOf(s).fetchEvery(t.cfg.minDelay)
	if prev != nil && prevSt == nil {
		// The Store's entry says what this Transport may not have
		// seen: the crawl-delay that the fleet keeps.
		every = max(every, t.cfg.minDelay, t.compile(prev, nil).every)
	}
	t.waitTurn(ctx, s, every, f, true, t.now())

	r := t.fetch(ctx, s.origin, userAgent)
	if r.retryAfter > 0 && !t.cfg.ignoreRetryAfter {
		// A robots.txt that asks to wait pauses its origin like a
		// page does: the last good copy is obeyed, but no request
		// goes out until the pause ends.
		t.pause(logCtx, s, r.retryAfter)
	}
	now := time.Now()
	e := next(prev, r, now)
	t.stats.fetched(r.access)
	t.logFetch(logCtx, s.origin, r, e)
	if store != nil {
		pctx, cancel := t.storeCtx(ctx)
		if err := store.Put(pctx, s.origin, e); err != nil {
			t.log(logCtx, "robots: store put failed", "origin", s.origin, "err", err)
		}
		cancel()
	}
	return t.compileFetched(e, r, prevSt)
}

// storeTimeout bounds each call to a Store, so that a slow store delays a
// load by little more than that before the Transport goes on without it.
const storeTimeout = 2 * time.Second

// storeCtx returns ctx bounded for one call to the Store.
func (t *Transport) storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, min(storeTimeout, t.cfg.fetchTimeout))
}

// storeGet returns the Store's entry of origin, or nil if it has none or
// fails.
func (t *Transport) storeGet(ctx, logCtx context.Context, origin string) *Entry {
	ctx, cancel := t.storeCtx(ctx)
	defer cancel()
	e, err := t.cfg.store.Get(ctx, origin)
	if err != nil {
		t.log(logCtx, "robots: store get failed", "origin", origin, "err", err)
		return nil
	}
	return e
}

// lockTTL is how long a Store's fetch lock is held at most: the fetch's
// wait for its turn, the fetch and the Put.
func (t *Transport) lockTTL() time.Duration {
	return t.cfg.maxCrawlDelay + t.cfg.maxRetryAfter + t.cfg.fetchTimeout + 2*storeTimeout
}

// lockOrWait takes the Store's fetch lock of origin, or waits for the entry
// its holder will put. It returns the unlock func when the caller should
// fetch holding the lock, a fresh entry when the holder put one, or neither
// when the caller should fetch without the lock (ctx done, or a store error).
// An entry fetched before notBefore is not taken (see Transport.Forget).
func (t *Transport) lockOrWait(ctx, logCtx context.Context, l Locker, origin string, notBefore time.Time) (unlock func(), e *Entry) {
	usable := func(e *Entry) bool {
		return e != nil && time.Now().Before(e.Expires) && !e.FetchedAt.Before(notBefore)
	}
	delay := 50 * time.Millisecond
	for {
		lctx, cancel := t.storeCtx(ctx)
		unlock, ok, err := l.TryLock(lctx, origin, t.lockTTL())
		cancel()
		if err != nil {
			t.log(logCtx, "robots: store lock failed", "origin", origin, "err", err)
			return nil, nil
		}
		if ok {
			// The last holder may have put its entry and unlocked
			// since this load looked: then there is nothing to fetch.
			if e := t.storeGet(ctx, logCtx, origin); usable(e) {
				unlock()
				return nil, e
			}
			return unlock, nil
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, nil
		case <-timer.C:
		}
		delay = min(2*delay, time.Second)
		if e := t.storeGet(ctx, logCtx, origin); usable(e) {
			return nil, e
		}
	}
}
