// Package pacing keeps the turns of each origin: the rules of the
// fleet.Pacer contract as plain code (a [State] and its methods, with no
// lock, clock or I/O), a [Memory] Pacer on them, and the [Pace] of one
// origin in a Transport's memory, with its lock and the channel its
// waiters wait on.
//
// Times in a State are Durations on one clock that its owner chooses (the
// time since an epoch, on the monotonic clock): the rules never read a
// clock, so that every user of them (the Transport's memory, the Memory
// Pacer, a Store that keeps paces in a file) applies the same rules to its
// own clock.
package pacing

import (
	"math"
	"time"

	"github.com/f9014239/robots/fleet"
)

// Why a request to an origin is held back: a TurnError's Reason, and an
// attribute of the debug records of held requests.
const (
	ReasonCrawlDelay  = "crawl-delay"  // the interval after the previous answer (Crawl-delay, MinDelay)
	ReasonRequestRate = "request-rate" // the interval of robots.txt's Request-rate
	ReasonDefaultPace = "default-pace" // the default interval of an origin that states none
	ReasonSlowAnswers = "slow-answers" // the adaptive delay: twice the origin's response time
	ReasonInFlight    = "in-flight"    // a request to the origin awaits its answer
	ReasonRetryAfter  = "retry-after"  // a pause the origin asked for with Retry-After
	ReasonRateLimit   = "ratelimit"    // a pause the origin asked for with a RateLimit field
	ReasonBackoff     = "backoff"      // a pause after the origin pushed back (see fleet.Backoff)
	ReasonRobotsTxt   = "robots.txt"   // the fetch of the origin's robots.txt
	ReasonPacer       = "pacer"        // the Pacer did not answer within MaxWait
	ReasonVisitTime   = "visit-time"   // a window of the day the origin asks to be visited in is not open
)

// AdaptiveFactor is how many times the origin's response-time estimate the
// adaptive delay is: with 2, the site spends at most a third of its time
// on one crawler's requests (one answer, then twice as long idle).
// AdaptiveFloor is the least estimate that sets an adaptive delay: a site
// that answers in under 10 ms is not struggling, and below that the
// response time measured is as much the crawler's own scheduling (a
// preempted goroutine on a busy host stalls for milliseconds) as the
// site's.
const (
	AdaptiveFactor = 2
	AdaptiveFloor  = 10 * time.Millisecond
)

// State is the pace of one origin, as the rules see it: its latest turn,
// the turn that holds it, its pause, its back-off and its response-time
// estimate. The zero State is an origin never seen. Its fields are plain
// values, so that a store can encode them; they are changed only through
// its methods.
type State struct {
	// Last is the latest turn (its answer, once released; the end of its
	// hold, once that ran out), LastEvery the interval it keeps and
	// LastWhy what set that interval; LastSeq names it (0: no turn yet).
	Last      time.Duration
	LastEvery time.Duration
	LastWhy   string
	LastSeq   uint64
	// Seq is the last turn number handed out.
	Seq uint64

	// The turn that holds the origin, if HeldID is not 0: its number,
	// when it was taken, and when its hold runs out.
	HeldID    uint64
	HeldSeq   uint64
	HeldAt    time.Duration
	HeldUntil time.Duration
	// LateID names the turn whose hold ran out last, until its answer
	// comes (see Release); 0 if none.
	LateID uint64

	// PausedUntil is the end of the origin's pause and PauseWhy its
	// reason; until HeedUntil every request takes a turn, held (a pause,
	// a back-off until it is forgiven).
	PausedUntil time.Duration
	PauseWhy    string
	HeedUntil   time.Duration

	// The back-off: its level (0: none), when its latest pause began and
	// when it ends.
	BoLevel        int
	BoStart, BoEnd time.Duration

	// Est is the origin's response-time estimate: it rises at once to a
	// slower sample and falls a quarter of the way to a faster one.
	Est time.Duration
}

// Request is a request for a turn: see fleet.TurnRequest.
type Request struct {
	Every time.Duration // the interval to keep after the previous turn (negative counts as 0)
	Why   string        // what sets Every, for the reason of a wait
	// Known is false when the caller does not know the origin's rules (a
	// fetch of robots.txt): the turn keeps max(Every, the previous
	// interval), and holds the origin.
	Known bool
	// MaxWait: a turn further away (strictly) is not taken.
	MaxWait time.Duration
	// Hold, if positive, makes the turn hold the origin, when it keeps an
	// interval, the rules are unknown, the origin is heeded or the
	// adaptive delay is on, until it is released or Hold after the turn.
	Hold time.Duration
	// ID names a held turn; if 0, its turn number does.
	ID uint64
	// MaxAdaptive caps the adaptive delay (AdaptiveFactor × Est); 0 turns
	// it off.
	MaxAdaptive time.Duration
}

// Grant is the answer to a Request.
type Grant struct {
	OK       bool          // the turn is taken
	Wait     time.Duration // until the turn if OK; else until a turn may be free
	InFlight bool          // not taken: a turn of the origin is held
	Why      string        // what sets the turn's time, if Wait > 0 or !OK
	Turn     Turn          // the turn taken, if OK
}

// Turn is a turn taken by Reserve, for its release or give-back.
type Turn struct {
	Seq  uint64        // its number
	ID   uint64        // names it if Held; 0 if it holds nothing
	At   time.Duration // its time
	Held bool          // it holds the origin until released

	prevLast, prevEvery time.Duration
	prevSeq             uint64
	prevWhy             string
}

// Add returns a+b, or the longest Duration where that overflows: a wait
// that a setting without a cap makes endless stays endless.
func Add(a, b time.Duration) time.Duration {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Adaptive returns the adaptive delay under the cap max (0: none):
// AdaptiveFactor × Est, or 0 while Est is under AdaptiveFloor.
func (s *State) Adaptive(max time.Duration) time.Duration {
	if max <= 0 || s.Est < AdaptiveFloor {
		return 0
	}
	if s.Est > max/AdaptiveFactor {
		return max
	}
	return AdaptiveFactor * s.Est
}

// Sample adds a response time to the estimate: a slower one is taken at
// once, a faster one a quarter of the way; a failure (a network error, a
// timeout) never lowers it.
func (s *State) Sample(took time.Duration, failed bool) {
	took = max(took, 0)
	switch {
	case took >= s.Est:
		s.Est = took
	case failed:
	default:
		s.Est -= (s.Est - took) / 4
	}
}

// expire ends a hold that has run out at now, as if answered at its end.
// It is not a sample of the estimate: a hold runs out because its holder
// was lost (a process killed, a release that never came), which says
// nothing of how fast the site answers; the holder's own answer, if it
// comes, is heard late (see Release). Its ID is kept in LateID.
func (s *State) expire(now time.Duration) {
	if s.HeldID != 0 && now >= s.HeldUntil {
		s.LateID = s.HeldID
		s.unhold(s.HeldUntil)
	}
}

// unhold ends the hold, answered at answer, which becomes the latest
// turn's time if the held turn is still the latest.
func (s *State) unhold(answer time.Duration) {
	if s.LastSeq == s.HeldSeq && answer > s.Last {
		s.Last = answer
	}
	s.HeldID, s.HeldSeq = 0, 0
}

// Held reports whether a turn holds the origin at now.
func (s *State) Held(now time.Duration) bool {
	s.expire(now)
	return s.HeldID != 0
}

// gap returns the spacing after the latest turn for r, and what sets it.
func (s *State) gap(r Request) (time.Duration, string) {
	g, why := max(r.Every, 0), r.Why
	if s.LastEvery > g {
		g, why = s.LastEvery, s.LastWhy
	}
	if a := s.Adaptive(r.MaxAdaptive); a > g {
		g, why = a, ReasonSlowAnswers
	}
	if why == "" {
		why = ReasonCrawlDelay
	}
	return g, why
}

// Next returns the time of the next turn at now for r, without taking it,
// and what sets it: when a turn is held, the estimate of when one may be
// free (the held turn's time plus the estimate of its answer, or now if
// that has passed, no later than its hold's end; plus the spacing), with
// ReasonInFlight.
func (s *State) Next(now time.Duration, r Request) (time.Duration, string) {
	s.expire(now)
	g, gwhy := s.gap(r)
	if s.HeldID != 0 {
		answer := min(max(Add(s.HeldAt, s.Est), now), s.HeldUntil)
		return max(Add(answer, g), s.PausedUntil), ReasonInFlight
	}
	at, why := now, ""
	if s.PausedUntil > at {
		at, why = s.PausedUntil, s.PauseWhy
	}
	if s.LastSeq != 0 {
		if n := Add(s.Last, g); n > at {
			at, why = n, gwhy
		}
	}
	return at, why
}

// Reserve takes the next turn at now for r: the first instant after the
// pause that is at least the spacing after the latest turn (its answer
// once released). The spacing is the largest of r.Every, the interval the
// latest turn keeps and the adaptive delay. It takes none when a turn is
// held (InFlight, with the estimate of Next), nor when the turn is further
// away than r.MaxWait (strictly).
func (s *State) Reserve(now time.Duration, r Request) Grant {
	at, why := s.Next(now, r)
	if s.HeldID != 0 {
		return Grant{Wait: at - now, InFlight: true, Why: why}
	}
	wait := at - now
	if wait > 0 && wait > r.MaxWait {
		return Grant{Wait: wait, Why: why}
	}
	s.Seq++
	t := Turn{Seq: s.Seq, At: at, prevLast: s.Last, prevEvery: s.LastEvery, prevSeq: s.LastSeq, prevWhy: s.LastWhy}
	keep, kwhy := max(r.Every, 0), r.Why
	if !r.Known && s.LastSeq != 0 && s.LastEvery > keep {
		keep, kwhy = s.LastEvery, s.LastWhy
	}
	if s.LastSeq == 0 || at >= s.Last {
		s.Last, s.LastEvery, s.LastWhy, s.LastSeq = at, keep, kwhy, t.Seq
	}
	if r.Hold > 0 && (keep > 0 || !r.Known || now < s.HeedUntil || r.MaxAdaptive > 0) {
		s.hold(&t, Add(at, r.Hold), r.ID)
	}
	return Grant{OK: true, Wait: wait, Why: why, Turn: t}
}

// hold makes t, the turn just taken, hold the origin until until.
func (s *State) hold(t *Turn, until time.Duration, id uint64) {
	if id == 0 {
		id = t.Seq
	}
	t.Held, t.ID = true, id
	s.HeldID, s.HeldSeq, s.HeldAt, s.HeldUntil = id, t.Seq, t.At, until
}

// Release notes the answer a to the turn a.ID at now (a.At is the
// caller's and is not read: the answer is at now on the State's clock).
//
//   - The turn holds the origin: its hold ends. If a.Unsent, its request
//     was never sent (its wait was cancelled): the next turn is spaced from
//     the turn's time, and nothing is sampled. Otherwise the next turn is
//     spaced from now, and a.Took is a sample of the estimate (a.Failed: a
//     network error or a timeout, which never lowers it).
//   - The turn's hold ran out before its answer came (a late answer, a.ID
//     is LateID): the origin is paused for the spacing after now (the
//     interval the latest turn keeps, or the adaptive delay under
//     a.MaxAdaptive, the longer), so that a request that took a turn
//     meanwhile waits for it too, and a slower a.Took raises the estimate.
//   - Any other turn (released already, unknown, or a.ID 0) changes
//     nothing.
//
// Release reports whether the turn held the origin.
func (s *State) Release(now time.Duration, a fleet.Answer) bool {
	if a.ID == 0 {
		return false
	}
	if s.HeldID == a.ID && now >= s.HeldUntil {
		s.expire(now)
	}
	if s.HeldID != a.ID {
		if a.Unsent || s.LateID != a.ID {
			return false
		}
		s.LateID = 0
		if a.Took > s.Est {
			s.Sample(a.Took, true)
		}
		gap, why := s.LastEvery, s.LastWhy
		if ad := s.Adaptive(a.MaxAdaptive); ad > gap {
			gap, why = ad, ReasonSlowAnswers
		}
		if why == "" {
			why = ReasonCrawlDelay
		}
		if gap > 0 {
			s.Pause(Add(now, gap), why)
		}
		return false
	}
	if a.Unsent {
		s.unhold(s.HeldAt)
		return true
	}
	s.Sample(a.Took, a.Failed)
	s.unhold(now)
	return true
}

// Settle moves t, a turn that held nothing, to now if it is still the
// latest: a request that left late is not followed by one closer than its
// interval.
func (s *State) Settle(now time.Duration, t Turn) {
	if !t.Held && s.LastSeq == t.Seq && s.Last == t.At && now > t.At {
		s.Last = now
	}
}

// GiveBack returns t, a turn whose request was not sent: its hold ends,
// and the latest turn is the one before it, if t is still the latest.
func (s *State) GiveBack(t Turn) {
	if t.Held && s.HeldSeq == t.Seq {
		s.HeldID, s.HeldSeq = 0, 0
	}
	if s.LastSeq == t.Seq {
		s.Last, s.LastEvery, s.LastSeq, s.LastWhy = t.prevLast, t.prevEvery, t.prevSeq, t.prevWhy
	}
}

// Record notes a turn at at, with the interval every (what why set), taken
// elsewhere (by a Pacer, which named it id if it holds the origin until
// until), so that these rules, which take over when the Pacer fails, space
// the next turn from it. A turn held here is ended as answered at at: the
// Pacer handed out a new one. It cannot be given back.
func (s *State) Record(at, every time.Duration, why string, held bool, until time.Duration, id uint64) Turn {
	if s.HeldID != 0 {
		s.unhold(at)
	}
	s.Seq++
	t := Turn{Seq: s.Seq, At: at}
	if s.LastSeq == 0 || at >= s.Last {
		s.Last, s.LastEvery, s.LastWhy, s.LastSeq = at, max(every, 0), why, t.Seq
	}
	if held {
		s.hold(&t, until, id)
	}
	return t
}

// Spacing reports whether why is a reason that spaces or pauses an
// origin's turns (not ReasonInFlight, ReasonRobotsTxt or ReasonPacer, which
// say what a request waits for, nor a string of someone else's).
func Spacing(why string) bool {
	switch why {
	case ReasonRetryAfter, ReasonRateLimit, ReasonBackoff, ReasonCrawlDelay, ReasonRequestRate,
		ReasonDefaultPace, ReasonSlowAnswers:
		return true
	}
	return false
}

// PauseReason returns why, a reason given with a pause from outside (a
// Pacer's caller), if it is one that spaces turns (see Spacing), and
// ReasonRetryAfter otherwise: a reason kept or sent on is one of a few
// short constants, whatever a caller passed.
func PauseReason(why string) string {
	if Spacing(why) {
		return why
	}
	return ReasonRetryAfter
}

// Pause pauses the origin until until for the reason why, unless it is
// paused longer; every request takes a turn until then.
func (s *State) Pause(until time.Duration, why string) {
	if until > s.PausedUntil {
		s.PausedUntil, s.PauseWhy = until, why
	}
	s.HeedUntil = max(s.HeedUntil, until)
}

// Paused reports whether the origin is paused at now.
func (s *State) Paused(now time.Duration) bool { return s.PausedUntil > now }

// PushBack records an incident of pushback at now (a 429 or 503 without a
// usable Retry-After) on a request sent at sent, under the back-off b with
// the random fraction jitter in [0, 1), and returns when the pause ends.
// isNew is false when the answer is of the burst of the current back-off
// (its request was sent no later than that back-off began): it changes
// nothing. Otherwise the level goes up by one, or starts again at one if
// the last pause ended more than b.Forgive ago; the origin is paused for
// BackoffPause(b, level, jitter), and every request takes a turn, held,
// until b.Forgive after the pause.
func (s *State) PushBack(now, sent time.Duration, b fleet.Backoff, jitter float64) (until time.Duration, isNew bool) {
	if s.BoLevel > 0 && sent <= s.BoStart {
		return s.BoEnd, false
	}
	if s.BoLevel > 0 && now > Add(s.BoEnd, b.Forgive) {
		s.BoLevel = 0
	}
	s.BoLevel++
	s.BoStart, s.BoEnd = now, Add(now, BackoffPause(b, s.BoLevel, jitter))
	s.Pause(s.BoEnd, ReasonBackoff)
	s.HeedUntil = max(s.HeedUntil, Add(s.BoEnd, b.Forgive))
	return s.BoEnd, true
}

// BackedOff notes a back-off pause until until that another keeper of the
// origin's pace set (a Pacer): this State holds it too.
func (s *State) BackedOff(now, until time.Duration, b fleet.Backoff) {
	if until > s.BoEnd {
		s.BoLevel = max(s.BoLevel, 1)
		s.BoStart, s.BoEnd = now, until
	}
	s.Pause(until, ReasonBackoff)
	s.HeedUntil = max(s.HeedUntil, Add(s.BoEnd, b.Forgive))
}

// BackoffPause returns the pause of the back-off b at level (1 for the
// first incident): First doubled per level up to Max, lengthened by the
// random fraction jitter in [0, 1) of its tenth (jitter never shortens).
func BackoffPause(b fleet.Backoff, level int, jitter float64) time.Duration {
	d := max(b.First, 0)
	for i := 1; i < level && d < b.Max; i++ {
		d = Add(d, d)
	}
	d = min(d, max(b.Max, b.First))
	jitter = min(max(jitter, 0), 1)
	return Add(d, time.Duration(float64(d)/10*jitter))
}

// Matters reports whether the State can still hold a request back at now
// or later, with the interval every: a turn is held, a turn, a pause or a
// back-off's forgiveness ends ahead, or the spacing since the latest turn
// has not passed. One that does not matters no more than the zero State,
// but for its estimate.
func (s *State) Matters(now, every time.Duration) bool {
	return s.HeldID != 0 || s.HeedUntil > now || s.PausedUntil > now ||
		s.LastSeq != 0 && Add(s.Last, max(every, s.LastEvery, s.Adaptive(math.MaxInt64))) > now
}
