package robots

import (
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/f9014239/robots/fleet"
)

// Stats are a Transport's counters since it was created. Refused is the
// sum of the three Refused counters; a Wait counter counts the requests that
// waited for, or were refused for, what it names (a TurnError Reason).
type Stats struct {
	CacheHits uint64 // requests decided by a fresh copy in memory
	LoadWaits uint64 // requests that waited for a load (a fetch, the Store)
	Evictions uint64 // origins dropped from memory (MaxOrigins, MaxBytes)

	Sent               uint64 // requests sent through Base (fetches not included)
	Refused            uint64 // requests refused (ErrDisallowed)
	RefusedRule        uint64 // by a rule of robots.txt
	RefusedUnreachable uint64 // as robots.txt is unreachable
	RefusedUsage       uint64 // by a usage preference (Uses)
	AllowedNoRules     uint64 // allowed with no rules to obey

	FetchSuccess     uint64 // fetches of robots.txt with a 2xx answer
	FetchUnavailable uint64 // with a 4xx, or too many redirects
	FetchUnreachable uint64 // with no answer, a 429, a 5xx, a 304 to no validator
	FetchNotModified uint64 // with a 304 that renewed the copy held
	StoreHits        uint64 // fresh entries taken from Store, not fetched
	StoreErrors      uint64 // Store and Locker calls that failed

	NotYet           uint64        // requests not sent, their turn too far (ErrNotYet)
	TurnWaits        uint64        // requests that waited for their turn
	TurnWaitTime     time.Duration // the time they waited, in total
	Pauses           uint64        // origins paused by Retry-After
	RateLimits       uint64        // origins paused by a RateLimit field
	Backoffs         uint64        // incidents of pushback: origins paused by the back-off
	InFlightWaits    uint64        // ReasonInFlight
	DefaultPaceWaits uint64        // ReasonDefaultPace
	SlowWaits        uint64        // ReasonSlowAnswers
	RequestRateWaits uint64        // ReasonRequestRate
	VisitTimeWaits   uint64        // ReasonVisitTime
	DomainCapWaits   uint64        // ReasonDomainCap
	AddressCapWaits  uint64        // ReasonAddressCap
	AddressHalvings  uint64        // address caps halved (429, 503, a failure, slowing answers)
	AddressCeilings  uint64        // address caps grown to AddressCap (a front end)

	PaymentRequired uint64 // 402 answers (never paused for: see pageterms.TermsOf)
	Charged         uint64 // answers with a crawler-charged field: pages paid for
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
		FetchNotModified:   s.notModified.Load(),
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
		PaymentRequired:    s.paymentRequired.Load(),
		Charged:            s.charged.Load(),
		VisitTimeWaits:     uint64(c.VisitTimeWaits.Load()),
		DomainCapWaits:     uint64(c.DomainWaits.Load()),
		AddressCapWaits:    uint64(c.AddressWaits.Load()),
		AddressHalvings:    uint64(c.Halvings.Load()),
		AddressCeilings:    uint64(c.Ceilings.Load()),
	}
}

// stats holds the counters. Those counted on the hot path, from many
// goroutines at once, are striped over cache lines.
type stats struct {
	hitCount, sent, noRules                       striped
	misses, storeHits, storeErrors                atomic.Uint64
	refusedRule, refusedUnreachable, refusedUsage atomic.Uint64
	fetches                                       [3]atomic.Uint64 // by Access
	notModified, paymentRequired, charged         atomic.Uint64
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
