package robots

import (
	"hash/maphash"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/f9014239/robots/internal/pacing"
)

// cache is the in-process cache of origins: a fixed set of shards, each a
// copy-on-write map read without locks, bounded in origins and in bytes by
// the CLOCK algorithm (an approximation of least-recently-used). It starts
// no goroutines; entries expire when they are next used.
//
// A site takes its origin's pace from the paces' Table (package pacing)
// when it is added, and hands it back when it is evicted: the Table keeps
// it while it still matters (a turn or the end of a pause ahead).
//
// Lock order: a goroutine that holds more than one of these locks takes
// them in this order, and holds at most one of each kind:
//
//	shard.mu      the shard's ring and map (one shard at a time)
//	site.mu       the site's flight
//	Table.mu      the paces kept for evicted origins
//	Pace.mu       the pace's turns
//
// shard.mu is held while a site's flight is set (site.mu) and while a site
// is evicted, which reads its flight and hands its pace back. site.mu and
// Pace.mu are never held together. MemoryStore.mu is taken under none of
// them.
type cache struct {
	seed     maphash.Seed
	shards   []shard
	per      int           // origins per shard; len(shards)*per <= MaxOrigins
	maxBytes int64         // MaxBytes
	bytes    atomic.Int64  // the sum of the shards' bytes
	sweep    atomic.Uint32 // the shard where the next eviction for bytes starts
	// the origins evicted, on every route (Stats.Evictions)
	evicted atomic.Uint64

	turns *pacing.Turns // where a site takes its pace, and hands it back
}

type shard struct {
	// read without lock; replaced under mu
	m atomic.Pointer[map[originKey]*site]

	mu    sync.Mutex
	ring  []*site // guarded by mu: the shard's sites, swept by hand
	hand  int     // guarded by mu
	bytes int64   // guarded by mu: the sum of the ring's site.bytes
}

// newCache returns a cache of at most maxOrigins origins and maxBytes bytes
// (beyond the state being added, when it alone is larger). Its shards hold
// 64 to 128 origins each, so that copying one on a miss stays cheap.
func newCache(maxOrigins int, maxBytes int64, turns *pacing.Turns) *cache {
	n := 1
	for n < 1<<14 && n*2*64 <= maxOrigins {
		n *= 2
	}
	return &cache{
		seed:     maphash.MakeSeed(),
		shards:   make([]shard, n),
		per:      max(maxOrigins/n, 1),
		maxBytes: maxBytes,
		turns:    turns,
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
	s = &site{key: k, origin: k.String(), c: c}
	s.pace = c.turns.TakePace(s.origin)
	s.used.Store(usedNew)
	var victim *site
	if len(sh.ring) >= c.per {
		if victim = c.evict(sh, now, nil, s, allRounds(sh)); victim != nil {
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
// it: the first that the hand finds unused since its last pass, within steps
// steps of the hand. It returns nil if there is none. When add is not nil, it
// takes the evicted site's place, and the hand moves past it, so that it
// comes last in the hand's round; else the ring's last site does. The caller
// holds sh.mu, and removes the evicted site from sh's map.
func (c *cache) evict(sh *shard, now time.Duration, keep, add *site, steps int) *site {
	if len(sh.ring) == 0 || len(sh.ring) == 1 && sh.ring[0] == keep {
		return nil
	}
	for range steps {
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
		c.evicted.Add(1)
		c.turns.HandBack(v.origin, v.pace, now)
		return v
	}
	return nil
}

// allRounds is the steps of the hand that bring every site of sh to 0, so
// that evict finds one to evict unless every site is loading or kept.
func allRounds(sh *shard) int { return (usedAgain+1)*len(sh.ring) + 1 }

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
		if !c.evictFrom(sh, now, s, allRounds(sh)) {
			break
		}
		evicted++
	}
	sh.mu.Unlock()
	// Over MaxBytes: the shards' hands take turns, as one hand over the
	// whole cache, each passing its shard's sites once at most, until one
	// finds a site unused since its last pass. A hot site in a shard
	// whose other sites are hot too is kept, as under MaxOrigins. It
	// ends under MaxBytes, or once the passes have brought every site to
	// 0 and still found nothing to evict (all loading).
	for idle := 0; c.bytes.Load() > c.maxBytes && idle < (usedAgain+1)*len(c.shards); {
		v := &c.shards[int(c.sweep.Add(1))%len(c.shards)]
		v.mu.Lock()
		if c.evictFrom(v, now, s, len(v.ring)) {
			evicted++
			idle = 0
		} else {
			idle++
		}
		v.mu.Unlock()
	}
	return evicted
}

// evictFrom evicts one site of sh other than keep, within steps steps of
// the hand (see evict), and reports whether it found one. The caller holds
// sh.mu.
func (c *cache) evictFrom(sh *shard, now time.Duration, keep *site, steps int) bool {
	v := c.evict(sh, now, keep, nil, steps)
	if v == nil {
		return false
	}
	sh.replace(func(m map[originKey]*site) { delete(m, v.key) })
	return true
}

// routed returns the site of k, adding one if there is none, and notes rt
// as the route of its robots.txt (see route).
func (c *cache) routed(k originKey, rt *route, now time.Duration) *site {
	s := c.siteOf(k, now)
	if old := s.route.Load(); old == nil || *old != *rt {
		s.route.Store(rt)
	}
	return s
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

// site is the cached state of one origin.
type site struct {
	key    originKey
	origin string // key.String()
	// how recently the site was used: 1 when added, 2 when used again; each
	// pass of the CLOCK hand takes 1
	used atomic.Int32
	cur  atomic.Pointer[state]
	// the origin's pace, when Transport.Pacer is nil or fails
	pace *pacing.Pace
	c    *cache // the cache s is in, or was
	// set by Transport.Forget, in Unix ns: the next load takes no older entry
	// from the Store
	forget atomic.Int64

	// route is where the latest request to the origin with a Host other
	// than its URL's was sent (see authorityOf), and so where its
	// robots.txt is fetched; nil if none was.
	route atomic.Pointer[route]

	mu     sync.Mutex
	flight *flight // guarded by mu: the load in progress, or nil

	bytes int64 // guarded by the shard's mu: what cur holds, as counted
	gone  bool  // guarded by the shard's mu: evicted
}

// Origin names s's origin: see pacing.Site.
func (s *site) Origin() string { return s.origin }

// Pace returns the pace of s's origin: s's own, unless it was dropped with s
// from the cache, and then the pace of the origin's current site.
func (s *site) Pace() *pacing.Pace {
	for s.pace.Dropped() {
		s = s.c.siteOf(s.key, s.c.turns.Now())
	}
	return s.pace
}

// loading reports whether a load of s is in progress.
func (s *site) loading() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flight != nil
}
