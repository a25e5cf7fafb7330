package robots

import (
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/f9014239/robots/fleet"
)

// Stats are a Transport's counters since it was created. LoadWaits counts the
// requests that waited for a load (a fetch, or the Store), whether or not
// they started it; Evictions counts the origins dropped under MaxOrigins
// and under MaxBytes. Refused is the sum of the three Refused counters.
// AllowedNoRules counts requests allowed with no rules to obey (robots.txt
// unavailable, or unreachable for 30 days). TurnWaitTime is the total time of
// the TurnWaits requests that waited for their turn.
type Stats struct {
	CacheHits uint64 // requests decided by a fresh copy in memory
	LoadWaits uint64 // requests that waited for a load
	Evictions uint64 // origins dropped from memory

	// requests sent through Base (fetches not included)
	Sent               uint64
	Refused            uint64 // requests refused (ErrDisallowed)
	RefusedRule        uint64 // refused by a rule of robots.txt
	RefusedUnreachable uint64 // refused as robots.txt is unreachable
	RefusedUsage       uint64 // refused by a usage preference (Uses)
	AllowedNoRules     uint64 // allowed with no rules to obey

	FetchSuccess     uint64 // fetches of robots.txt with a 2xx answer
	FetchUnavailable uint64 // fetches with a 4xx, or too many redirects
	FetchUnreachable uint64 // fetches with no answer, a 429 or a 5xx
	StoreHits        uint64 // fresh entries taken from Store, not fetched
	StoreErrors      uint64 // Store and Locker calls that failed, unreadable entries included

	NotYet       uint64        // requests not sent, their turn too far (ErrNotYet)
	TurnWaits    uint64        // requests that waited for their turn
	TurnWaitTime time.Duration // the time they waited, in total
	Pauses       uint64        // origins paused by Retry-After
	Backoffs     uint64        // incidents of pushback: origins paused by the back-off
	// requests that waited for, or were refused for, the answer to
	// another request to their origin (ReasonInFlight)
	InFlightWaits uint64

	// RateLimits counts the pauses that a RateLimit response field asked
	// for (a spent quota, or the rest spread over its window).
	RateLimits uint64
	// Requests that waited for, or were refused for, the interval of an
	// origin set by DefaultDelay (ReasonDefaultPace), by the adaptive
	// delay (ReasonSlowAnswers), and by a Request-rate
	// (ReasonRequestRate).
	DefaultPaceWaits uint64
	SlowWaits        uint64
	RequestRateWaits uint64
}

// Stats returns the Transport's counters, each read atomically (together,
// not one instant's).
func (t *Transport) Stats() Stats {
	t.once.Do(t.init)
	s, c := &t.stats, &t.turns.Counts
	return Stats{
		CacheHits:          s.hitCount.load(),
		LoadWaits:          s.misses.Load(),
		Evictions:          t.cache.evicted.Load(),
		Sent:               s.sent.load(),
		Refused:            s.refusedRule.Load() + s.refusedUnreachable.Load() + s.refusedUsage.Load(),
		RefusedRule:        s.refusedRule.Load(),
		RefusedUnreachable: s.refusedUnreachable.Load(),
		RefusedUsage:       s.refusedUsage.Load(),
		AllowedNoRules:     s.noRules.load(),
		FetchSuccess:       s.fetches[fleet.AccessSuccess].Load(),
		FetchUnavailable:   s.fetches[fleet.AccessUnavailable].Load(),
		FetchUnreachable:   s.fetches[fleet.AccessUnreachable].Load(),
		StoreHits:          s.storeHits.Load(),
		StoreErrors:        s.storeErrors.Load(),
		NotYet:             uint64(c.NotYet.Load()),
		TurnWaits:          uint64(c.Waits.Load()),
		TurnWaitTime:       time.Duration(c.WaitTime.Load()),
		Pauses:             uint64(c.Pauses.Load()),
		Backoffs:           uint64(c.Backoffs.Load()),
		InFlightWaits:      uint64(c.InFlightWaits.Load()),
		RateLimits:         uint64(c.RateLimits.Load()),
		DefaultPaceWaits:   uint64(c.DefaultWaits.Load()),
		SlowWaits:          uint64(c.SlowWaits.Load()),
		RequestRateWaits:   uint64(c.RequestRateWaits.Load()),
	}
}

// stats holds the counters. Those counted on the hot path, from many
// goroutines at once, are striped over cache lines.
type stats struct {
	hitCount, sent, noRules                       striped
	misses, storeHits, storeErrors                atomic.Uint64
	refusedRule, refusedUnreachable, refusedUsage atomic.Uint64
	fetches                                       [3]atomic.Uint64 // by Access
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

func (s *stats) fetched(a fleet.Access) {
	if int(a) < len(s.fetches) {
		s.fetches[a].Add(1)
	}
}
