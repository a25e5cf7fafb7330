package robots

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"net/url"
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

// originKey identifies an origin in the in-process cache: the lower-case
// scheme, and the lower-case IDNA ASCII host with ":port" unless the port is
// the scheme's default (IPv6 hosts keep their brackets).
type originKey struct {
	scheme string
	host   string
}

// String returns the origin as a Store names it: "https://example.com".
func (k originKey) String() string { return k.scheme + "://" + k.host }

var errNoHost = errors.New("robots: URL has no host")

// keyOf returns the origin of u. It does not allocate when u's scheme and
// host are already lower-case ASCII.
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
	if host[0] != '[' && strings.IndexByte(u.Hostname(), ':') >= 0 {
		// A hand-built URL may hold such a host ("x::", hostname "x:"),
		// which names no origin and would not key back to itself.
		return originKey{}, fmt.Errorf("robots: invalid host %q", host)
	}
	// Elide the port if it is empty or the scheme's default. A colon
	// inside IPv6 brackets is not a port separator.
	if i := strings.LastIndexByte(host, ':'); i >= 0 && strings.IndexByte(host[i:], ']') < 0 {
		if p := host[i+1:]; p == "" || p == defaultPort(scheme) {
			host = host[:i]
		}
	}
	if isASCII(host) {
		if hasUpper(host) {
			host = strings.ToLower(host)
		}
		if host == "" || host == "[]" {
			return originKey{}, errNoHost
		}
		if strings.IndexByte(host, '%') >= 0 {
			// An IPv6 zone, "[fe80::1%en0]": escaped as in a URL, so
			// that the origin parses back to the same key.
			host = strings.ReplaceAll(host, "%", "%25")
		}
		return originKey{scheme, host}, nil
	}
	// An internationalised name: map it to its ASCII form (UTS 46, as
	// browsers do). idna returns a partial result together with an
	// error; that result is never used.
	name, port := u.Hostname(), u.Port()
	ascii, err := idna.Lookup.ToASCII(name)
	if err != nil {
		return originKey{}, fmt.Errorf("robots: invalid host %q: %w", name, err)
	}
	if ascii == "" {
		return originKey{}, errNoHost
	}
	host = strings.ToLower(ascii)
	if port != "" && port != defaultPort(scheme) {
		host += ":" + port
	}
	return originKey{scheme, host}, nil
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
// copy-on-write map read without locks, bounded by the CLOCK algorithm (an
// approximation of least-recently-used). It starts no goroutines; entries
// expire when they are next used.
type cache struct {
	seed   maphash.Seed
	shards []shard
	per    int // capacity of each shard; len(shards)*per <= MaxOrigins
}

type shard struct {
	m atomic.Pointer[map[originKey]*site] // read without lock; replaced under mu

	mu   sync.Mutex
	ring []*site // guarded by mu: the shard's sites, swept by hand
	hand int     // guarded by mu
}

// newCache returns a cache of at most max origins. Its shards hold 64 to 128
// origins each, so that copying one on a miss stays cheap.
func newCache(max int) *cache {
	n := 1
	for n < 1<<14 && n*2*64 <= max {
		n *= 2
	}
	c := &cache{seed: maphash.MakeSeed(), shards: make([]shard, n), per: max / n}
	return c
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

// add returns the site of k, adding one if there is none. When the shard is
// full, it evicts the first site that the sweeping hand finds unused since
// its last pass, and reports it.
func (sh *shard) add(k originKey, per int) (s *site, evicted bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	old := sh.m.Load()
	if old != nil {
		if s := (*old)[k]; s != nil {
			return s, false
		}
	}
	s = &site{key: k, origin: k.String()}
	var m map[originKey]*site
	if old == nil {
		m = make(map[originKey]*site)
	} else {
		m = maps.Clone(*old)
	}
	if len(sh.ring) < per {
		sh.ring = append(sh.ring, s)
	} else {
		for {
			v := sh.ring[sh.hand]
			if v.used.Swap(false) {
				sh.hand = (sh.hand + 1) % len(sh.ring)
				continue
			}
			delete(m, v.key)
			sh.ring[sh.hand] = s
			sh.hand = (sh.hand + 1) % len(sh.ring)
			evicted = true
			break
		}
	}
	m[k] = s
	sh.m.Store(&m)
	return s, evicted
}

// site is the cached state of one origin.
type site struct {
	key    originKey
	origin string      // key.String()
	used   atomic.Bool // set when a request uses the site; cleared by the CLOCK hand
	cur    atomic.Pointer[state]

	mu     sync.Mutex
	flight *flight // guarded by mu: the load in progress, or nil

	pace pace // the origin's pace, when Transport.Pacer is nil or fails
}

// flight is one load of a site's robots.txt. st is written once before done
// is closed, and read only after.
type flight struct {
	done chan struct{}
	st   *state
}

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
}

// fresh reports whether st may be used at now without a new fetch.
func (st *state) fresh(now time.Duration) bool { return now < st.expires }

// compile returns the state of e. robots, if not nil, is e.Body already
// parsed.
func (t *Transport) compile(e *Entry, robots *matcher.Robots) *state {
	st := &state{entry: e, expires: e.Expires.Sub(t.epoch)}
	switch e.Access {
	case AccessSuccess:
		if robots == nil {
			robots = matcher.Parse(e.Body)
		}
		st.robots = robots
		if t.cfg.store == nil && e.Body != nil {
			bodiless := *e
			bodiless.Body = nil
			st.entry = &bodiless
		}
		if t.cfg.agent != "" {
			st.group = st.robots.Group(t.cfg.agent)
			st.every = t.delayOf(st.group.CrawlDelay())
		} else {
			st.every = t.delayOf(st.robots.Group("*").CrawlDelay())
		}
	case AccessUnavailable:
		st.every = t.delayOf(0, false)
	default:
		st.every = t.delayOf(0, false)
		msg := e.Error
		if msg == "" {
			msg = "robots: robots.txt unreachable"
		}
		st.err = errors.New(msg)
		st.allowAt = e.UnreachableSince.Add(UnreachableAllowAfter).Sub(t.epoch)
	}
	return st
}

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
	err     error
}

// decide returns the verdict of st at now for the URL path and query target,
// as seen by the crawler agent ("" for the Transport's own Agent).
func (st *state) decide(now time.Duration, agent, target string) decision {
	switch st.entry.Access {
	case AccessSuccess:
		g := st.group
		if agent != "" || g == nil {
			if agent == "" {
				agent = "*"
			}
			g = st.robots.Group(agent)
		}
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

// lookup returns the state that decides for origin k at now: the cached one
// if it is fresh, or else the result of a load that the caller waits for.
func (t *Transport) lookup(ctx context.Context, k originKey, now time.Duration, userAgent func() string) (*site, *state, error) {
	sh := t.cache.shard(k)
	s := sh.get(k)
	if s != nil {
		if !s.used.Load() {
			s.used.Store(true)
		}
		if st := s.cur.Load(); st != nil && st.fresh(now) {
			t.stats.hit()
			return s, st, nil
		}
	} else {
		var evicted bool
		s, evicted = sh.add(k, t.cache.per)
		if evicted {
			t.stats.evictions.Add(1)
		}
	}
	t.stats.misses.Add(1)
	st, err := t.wait(ctx, s, userAgent)
	return s, st, err
}

// wait returns the site's state once it is fresh, starting a load unless
// one is in progress. It gives up when ctx is done; the load goes on for the
// other callers, bounded by FetchTimeout.
func (t *Transport) wait(ctx context.Context, s *site, userAgent func() string) (*state, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("robots: waiting for %s/robots.txt: %w", s.origin, err)
	}
	s.mu.Lock()
	if st := s.cur.Load(); st != nil && st.fresh(t.now()) {
		s.mu.Unlock()
		return st, nil
	}
	f := s.flight
	if f == nil {
		f = &flight{done: make(chan struct{})}
		s.flight = f
		s.mu.Unlock()
		if ctx.Done() == nil {
			// This caller cannot give up: load on its goroutine.
			t.load(ctx, s, f, userAgent())
			return f.st, nil
		}
		go t.load(context.WithoutCancel(ctx), s, f, userAgent())
	} else {
		s.mu.Unlock()
	}
	select {
	case <-f.done:
		return f.st, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("robots: waiting for %s/robots.txt: %w", s.origin, ctx.Err())
	}
}

// load obtains a new state for s, publishes it and ends f.
func (t *Transport) load(ctx context.Context, s *site, f *flight, userAgent string) {
	st, fetched := t.obtain(ctx, s, s.cur.Load(), userAgent)
	if fetched {
		// The fetch was a request to the origin: the next one waits
		// its turn after it.
		t.tookTurn(ctx, s, st.every)
	}
	s.cur.Store(st)
	s.mu.Lock()
	s.flight = nil
	s.mu.Unlock()
	f.st = st
	close(f.done)
}

// obtain returns the state of s that follows prevSt (nil if none): an entry
// another user of the Store has fetched, or else the result of a fetch (and
// then fetched).
func (t *Transport) obtain(ctx context.Context, s *site, prevSt *state, userAgent string) (st *state, fetched bool) {
	var prev *Entry
	if prevSt != nil {
		prev = prevSt.entry
	}
	store := t.cfg.store
	if store != nil {
		sctx, cancel := context.WithTimeout(ctx, t.cfg.fetchTimeout)
		defer cancel()
		if e := t.storeGet(sctx, s.origin); e != nil {
			if time.Now().Before(e.Expires) {
				t.stats.storeHits.Add(1)
				return t.compile(e, nil), false
			}
			if prev == nil || e.Expires.After(prev.Expires) {
				prev, prevSt = e, nil // the Store's entry has its Body
			}
		}
		if l, ok := store.(Locker); ok {
			unlock, e := t.lockOrWait(sctx, l, s.origin)
			if e != nil {
				t.stats.storeHits.Add(1)
				return t.compile(e, nil), false
			}
			if unlock != nil {
				defer unlock()
			}
		}
	}

	fctx, cancel := context.WithTimeout(ctx, t.cfg.fetchTimeout)
	r := t.fetch(fctx, s.origin, userAgent)
	cancel()
	now := time.Now()
	e := next(prev, r, now)
	t.stats.fetched(r.access)
	t.logFetch(ctx, s.origin, r, e)
	if store != nil {
		pctx, cancel := t.storeCtx(ctx)
		if err := store.Put(pctx, s.origin, e); err != nil {
			t.log(ctx, "robots: store put failed", "origin", s.origin, "err", err)
		}
		cancel()
	}
	return t.compileFetched(e, r, prevSt), true
}

// storeTimeout bounds each call to a Store, so that a slow store delays a
// load by little more than that before the Transport goes on without it.
const storeTimeout = 2 * time.Second

// storeCtx returns ctx bounded for one call to the Store.
func (t *Transport) storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, min(storeTimeout, t.cfg.fetchTimeout))
}

func (t *Transport) storeGet(ctx context.Context, origin string) *Entry {
	ctx, cancel := t.storeCtx(ctx)
	defer cancel()
	e, err := t.cfg.store.Get(ctx, origin)
	if err != nil {
		t.log(ctx, "robots: store get failed", "origin", origin, "err", err)
		return nil
	}
	return e
}

// lockOrWait takes the Store's fetch lock of origin, or waits for the entry
// its holder will put. It returns the unlock func when the caller should
// fetch holding the lock, a fresh entry when the holder put one, or neither
// when the caller should fetch without the lock (ctx done, or a store error).
func (t *Transport) lockOrWait(ctx context.Context, l Locker, origin string) (unlock func(), e *Entry) {
	delay := 50 * time.Millisecond
	for {
		lctx, cancel := t.storeCtx(ctx)
		unlock, ok, err := l.TryLock(lctx, origin, t.cfg.fetchTimeout)
		cancel()
		if err != nil {
			t.log(ctx, "robots: store lock failed", "origin", origin, "err", err)
			return nil, nil
		}
		if ok {
			// The last holder may have put its entry and unlocked
			// since this load looked: then there is nothing to fetch.
			if e := t.storeGet(ctx, origin); e != nil && time.Now().Before(e.Expires) {
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
		if e := t.storeGet(ctx, origin); e != nil && time.Now().Before(e.Expires) {
			return nil, e
		}
	}
}
