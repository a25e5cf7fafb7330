package robots

import (
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Stats are a Transport's counters since it was created.
type Stats struct {
	Hits      uint64 // requests decided by a fresh robots.txt in memory
	Misses    uint64 // requests that waited for robots.txt to be fetched or loaded from Store
	Evictions uint64 // origins dropped from memory to stay within MaxOrigins or MaxBytes

	Sent               uint64 // requests sent through Base, requests for /robots.txt included (not the Transport's own fetches)
	Refused            uint64 // requests refused (ErrDisallowed): the sum of the three below
	RefusedRule        uint64 // requests refused by a rule of robots.txt
	RefusedUnreachable uint64 // requests refused because robots.txt is unreachable (ErrUnreachable)
	RefusedUsage       uint64 // requests refused by a usage preference (see Transport.Uses)
	AllowedNoRules     uint64 // requests allowed with no rules: robots.txt unavailable (4xx), or unreachable for 30 days

	FetchSuccess     uint64 // robots.txt fetches with a 2xx result
	FetchUnavailable uint64 // robots.txt fetches with a 4xx result, or too many redirects
	FetchUnreachable uint64 // robots.txt fetches with a 429, 5xx, network error or unreadable body
	StoreHits        uint64 // fresh entries taken from Store instead of fetching

	NotYet    uint64        // requests not sent because their origin's turn was later than they could wait (ErrNotYet)
	PaceWaits uint64        // requests that waited for their origin's turn
	PaceWait  time.Duration // total time requests waited for their origin's turn
	Pauses    uint64        // origins paused by a Retry-After header
}

// Stats returns the Transport's counters. Each is read atomically; together
// they are not a snapshot of one instant.
func (t *Transport) Stats() Stats {
	s := &t.stats
	return Stats{
		Hits:               s.hitCount.load(),
		Misses:             s.misses.Load(),
		Evictions:          s.evictions.Load(),
		Sent:               s.sent.load(),
		Refused:            s.refusedRule.Load() + s.refusedUnreachable.Load() + s.refusedUsage.Load(),
		RefusedRule:        s.refusedRule.Load(),
		RefusedUnreachable: s.refusedUnreachable.Load(),
		RefusedUsage:       s.refusedUsage.Load(),
		AllowedNoRules:     s.noRules.load(),
		FetchSuccess:       s.fetches[AccessSuccess].Load(),
		FetchUnavailable:   s.fetches[AccessUnavailable].Load(),
		FetchUnreachable:   s.fetches[AccessUnreachable].Load(),
		StoreHits:          s.storeHits.Load(),
		NotYet:             s.notYet.Load(),
		PaceWaits:          s.paceWaits.Load(),
		PaceWait:           time.Duration(s.paceWait.Load()),
		Pauses:             s.pauses.Load(),
	}
}

// stats holds the counters. Those counted on the hot path, from many
// goroutines at once, are striped over cache lines.
type stats struct {
	hitCount, sent, noRules                       striped
	misses, evictions, storeHits                  atomic.Uint64
	refusedRule, refusedUnreachable, refusedUsage atomic.Uint64
	fetches                                       [3]atomic.Uint64 // by Access
	paceWaits, pauses, notYet                     atomic.Uint64
	paceWait                                      atomic.Int64 // nanoseconds
}

// striped is a counter over cache lines: each add goes to a stripe chosen at
// random, so that goroutines that count at once seldom share a line.
type striped [16]struct {
	n atomic.Uint64
	_ [56]byte
}

func (c *striped) add() { c[rand.Uint32()%uint32(len(c))].n.Add(1) }

func (c *striped) load() uint64 {
	var n uint64
	for i := range c {
		n += c[i].n.Load()
	}
	return n
}

func (s *stats) hit() { s.hitCount.add() }

func (s *stats) fetched(a Access) {
	if int(a) < len(s.fetches) {
		s.fetches[a].Add(1)
	}
}
