// Package fleet holds the seams through which robots.Transports share what
// they know: a [Store] of fetched robots.txt entries, a [Locker] for one
// fetch per origin among them, and a [Pacer] of each origin's turns, pauses
// and back-offs, so that the site sees one request at a time from all of
// them. A crawler in one process needs none of it; the processes of a fleet
// share a Redis through package redisstore, and a crawler that restarts keeps
// its state in a file through package boltstore.
//
// Origins are named scheme "://" host [":" port], with a lower-case IDNA
// ASCII host and the port only when it is not the scheme's default:
// "https://example.com", "http://[::1]:8080". An IPv6 zone is kept, escaped
// as in a URL ("http://[fe80::1%25en0]").
package fleet

import (
	"context"
	"sync"
	"time"
)

// Access is what the fetch of an origin's robots.txt found (RFC 9309
// §2.3.1); see "Access results" in the package documentation.
type Access int

const (
	// AccessUnreachable: no fetch reached the origin (a 429, a 5xx, a
	// network error, an unreadable body); every URL is disallowed. It is
	// the zero Access, so that an empty Entry refuses.
	AccessUnreachable Access = iota

	// AccessSuccess: a 2xx answer; Entry.Body holds the rules.
	AccessSuccess

	// AccessUnavailable: a 4xx other than 429, or too many redirects;
	// every URL is allowed.
	AccessUnavailable
)

// String returns "success", "unavailable" or "unreachable".
func (a Access) String() string {
	switch a {
	case AccessSuccess:
		return "success"
	case AccessUnavailable:
		return "unavailable"
	case AccessUnreachable:
		return "unreachable"
	}
	return "unknown"
}

// Entry is the cached robots.txt of one origin, as a [Store] keeps it: plain
// exported fields that a store can encode (with encoding/json, say). An
// unreachable fetch keeps the Access and Body of an earlier good copy, which
// is obeyed meanwhile (RFC 9309 §2.4), and sets UnreachableSince.
type Entry struct {
	Access    Access    // of the last fetch that reached the origin, or AccessUnreachable
	Body      []byte    // the body when Access is AccessSuccess, else nil; not modified
	FetchedAt time.Time // when Access and Body were fetched; zero if never
	Expires   time.Time // when the entry must be fetched again

	// UnreachableSince is when the current run of unreachable fetches
	// began, or zero if the last fetch reached the origin; Failures counts
	// the fetches of that run (the back-off), and Error says why the last
	// one was unreachable, or is "".
	UnreachableSince time.Time
	Failures         int
	Error            string

	// ETag and LastModified are the validators of the response that
	// Body came from (its ETag and Last-Modified field values, as sent),
	// or "" if it had none the Transport keeps: a refresh sends them as
	// If-None-Match and If-Modified-Since, and a 304 Not Modified renews
	// the entry without a body. They are set only with AccessSuccess. A
	// Store that does not keep them only loses the revalidation: the
	// next refresh is a full fetch.
	ETag         string
	LastModified string
}

// Store keeps robots.txt entries by origin, so that several Transports (the
// processes of a fleet, say) share one fetch per origin. A Transport reads
// it when its own cache misses or has expired, and puts every fetch result.
// Origins are named as the package documentation says.
//
// A Store must be safe for concurrent use by multiple goroutines and return
// when its context is done; each call is bounded by 2 seconds (or
// FetchTimeout if shorter). Its errors are logged, and the Transport goes on
// as if the store were empty.
type Store interface {
	// Get returns the entry of origin, or nil, nil if there is none. The
	// caller does not modify it.
	Get(ctx context.Context, origin string) (*Entry, error)

	// Put stores e as the entry of origin. The caller does not modify e
	// afterwards.
	Put(ctx context.Context, origin string, e *Entry) error
}

// Locker is implemented by a [Store] that can make one fetch per origin
// happen among all of its users. The Transport that gets the lock fetches
// and puts the result; the others poll the Store for it, and fetch on their
// own if it does not come within FetchTimeout.
type Locker interface {
	// TryLock takes origin's fetch lock without waiting, and returns ok
	// and its release; the lock is released after ttl in any case.
	TryLock(ctx context.Context, origin string, ttl time.Duration) (unlock func(), ok bool, err error)
}

// The defaults of a MemoryStore's fields, used when a field is zero.
const (
	DefaultMaxStoreEntries = 10000     // MaxEntries
	DefaultMaxStoreBytes   = 128 << 20 // MaxBytes
)

// MemoryStore is a [Store] and [Locker] in memory, for Transports in one
// process (crawlers with different product tokens, say) that should fetch
// each robots.txt once between them. The zero value is an empty store. A
// MemoryStore is safe for concurrent use by multiple goroutines.
type MemoryStore struct {
	// MaxEntries bounds the entries; a Put beyond it removes an arbitrary
	// one first. If zero, DefaultMaxStoreEntries is used.
	MaxEntries int

	// MaxBytes bounds the bytes of the entries (bodies, errors, origins,
	// and 256 bytes each), as MaxEntries does; an entry larger on its own
	// is kept alone. If zero, DefaultMaxStoreBytes is used.
	MaxBytes int64

	mu      sync.Mutex
	entries map[string]*Entry   // guarded by mu; lazily initialised
	locks   map[string]*memLock // guarded by mu; lazily initialised
	// guarded by mu: the sum of entrySize over entries
	bytes int64
}

type memLock struct{ until time.Time }

// entrySize is what a MemoryStore counts for e, the entry of origin.
func entrySize(origin string, e *Entry) int64 {
	const overhead = 256 // the Entry, its map slot and its pointers
	if e == nil {
		return overhead + int64(len(origin))
	}
	return overhead + int64(len(origin)+len(e.Body)+len(e.Error)+len(e.ETag)+len(e.LastModified))
}

// Get implements [Store].
func (s *MemoryStore) Get(ctx context.Context, origin string) (*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries[origin], nil
}

// Put implements [Store].
func (s *MemoryStore) Put(ctx context.Context, origin string, e *Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries == nil {
		s.entries = make(map[string]*Entry)
	}
	maxEntries := s.MaxEntries
	if maxEntries <= 0 {
		maxEntries = DefaultMaxStoreEntries
	}
	maxBytes := s.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxStoreBytes
	}
	if old, ok := s.entries[origin]; ok {
		s.bytes -= entrySize(origin, old)
		delete(s.entries, origin)
	}
	size := entrySize(origin, e)
	for k, v := range s.entries {
		if len(s.entries) < maxEntries && s.bytes+size <= maxBytes {
			break
		}
		s.bytes -= entrySize(k, v)
		delete(s.entries, k)
	}
	s.entries[origin] = e
	s.bytes += size
	return nil
}

// TryLock implements [Locker].
func (s *MemoryStore) TryLock(ctx context.Context, origin string, ttl time.Duration) (unlock func(), ok bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if l := s.locks[origin]; l != nil && now.Before(l.until) {
		return nil, false, nil
	}
	if s.locks == nil {
		s.locks = make(map[string]*memLock)
	}
	// Expired locks of other origins are dropped here, so the map holds
	// no more than the fetches in progress.
	for k, l := range s.locks {
		if !now.Before(l.until) {
			delete(s.locks, k)
		}
	}
	l := &memLock{until: now.Add(ttl)}
	s.locks[origin] = l
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.locks[origin] == l {
			delete(s.locks, origin)
		}
	}, true, nil
}

// Pacer keeps the turns of each origin for the Transports that share it,
// for example across the processes of a fleet (see robots.Transport.Pacer).
// Origins are named as for a [Store]. A Pacer must be safe for concurrent
// use by multiple goroutines, and return when its context is done; the
// Transport bounds each call by 2 seconds, and by MaxWait.
//
// A turn is taken with Reserve and, when it holds the origin, released with
// Release once its request is answered: while it is held no other turn of
// the origin is taken, and the next one is spaced from the answer, so that
// the site sees one request at a time, an interval apart from the answer to
// the one before, whichever process sends them.
//
// A Transport also keeps the turns and pauses it knows of in memory, and
// waits them out before it calls Reserve, so that a Pacer that loses its
// state cannot make it send early. If a Pacer fails, the Transport logs the
// error and paces the origin itself for that request.
type Pacer interface {
	// Reserve takes origin's next turn and says how long to wait for it,
	// without waiting itself. The turn is the first instant, after any
	// pause, that is at least the spacing after the previous turn (after
	// its answer if it was released, or after its hold ran out if it was
	// not). The spacing is the largest of r.Every, the interval prev that
	// turn kept, and the adaptive delay: twice the origin's response-time
	// estimate, at most r.MaxAdaptive (none if that is zero). The new
	// turn keeps r.Every if r.Known, or else (the caller does not know
	// the origin's rules: it is about to fetch robots.txt)
	// max(r.Every, prev), so that a fetch does not shorten the interval
	// the rules set.
	//
	// The turn holds the origin, if r.Hold is positive, when it keeps an
	// interval, when r.Known is false (a fetch of robots.txt, which may
	// find a crawl-delay), when r.MaxAdaptive is positive (the default
	// pace: one request in flight), or when the origin is paused or
	// backing off (from a PushBack until the back-off is forgiven). If the
	// previous turn is still held, Reserve takes none and returns
	// InFlight, with Wait its estimate of when a turn may be free. If the
	// turn is further away than r.MaxWait (strictly), it takes none and
	// returns the wait it foresees; a turn exactly r.MaxWait away is
	// taken.
	//
	// A hold that runs out unreleased ends as if answered at its end: its
	// holder was lost (a process killed), which costs the site no more
	// than the hold, and is no sample of the response-time estimate. The
	// rules are those of package github.com/f9014239/robots/internal/pacing,
	// which the Stores of this module use.
	Reserve(ctx context.Context, origin string, r TurnRequest) (Turn, error)

	// Release ends the hold of the turn a.ID of origin, answered at a.At
	// after a.Took: the next turn is spaced from the answer (from when the
	// Pacer hears of it), and a.Took is a sample of the origin's
	// response-time estimate (see Answer). A turn whose request was not
	// sent (a.Unsent) ends its hold with no sample, the next turn spaced
	// from the turn itself. The answer to a turn whose hold ran out before
	// it came (a late answer) pauses the origin for the spacing after it:
	// the interval of the latest turn, or the adaptive delay under
	// a.MaxAdaptive, the longer, and a slower a.Took raises the estimate.
	// Any other turn (released already, unknown) is left alone.
	Release(ctx context.Context, origin string, a Answer) error

	// Pause delays origin's turns until at least until, for the reason
	// why (what the origin asked: "retry-after", "ratelimit"; see the
	// Reasons of robots.TurnError); an earlier end than the one set
	// changes nothing. The reason travels with the pause: the Pacer's
	// users that meet it report it. Its context is the Transport's own,
	// bounded by 2 seconds, so that a pause outlives a canceled request.
	Pause(ctx context.Context, origin string, until time.Time, why string) error

	// PushBack records that origin pushed back (a 429 or 503 without a
	// usable Retry-After) on a request sent at sent, pauses the origin
	// under the back-off b, and returns when that pause ends. An answer
	// to a request sent no later than the current back-off began is of
	// the same burst: it changes nothing. Otherwise the back-off's level goes up
	// by one, or starts again at one if the last back-off pause ended
	// more than b.Forgive ago, and the origin is paused for
	// min(b.First × 2^(level-1), b.Max), lengthened by a random fraction
	// of at most a tenth.
	PushBack(ctx context.Context, origin string, sent time.Time, b Backoff) (until time.Time, err error)
}

// TurnRequest is what a Transport asks of [Pacer.Reserve].
type TurnRequest struct {
	Every time.Duration // the interval to keep after the previous turn
	Known bool          // false when the caller does not know the origin's rules
	// MaxWait is the longest wait the caller takes: a turn further away
	// is not taken.
	MaxWait time.Duration
	// Hold, if positive, makes the turn hold the origin until it is
	// released, or for Hold after the turn at the most.
	Hold time.Duration
	// ID, if not zero, names the turn if it holds the origin: the caller
	// draws it at random, so that it can release a turn whose answer it
	// never got. A Pacer may name the turn itself when ID is zero.
	ID uint64
	// MaxAdaptive caps the adaptive delay (twice the origin's
	// response-time estimate, none while that is under 10 ms); zero turns
	// it off (robots.Transport's NoDefaultPace).
	MaxAdaptive time.Duration
}

// Answer is what a Transport tells [Pacer.Release] of a held turn's
// request.
type Answer struct {
	ID uint64    // the turn, as Reserve named it
	At time.Time // when the answer (response headers, or an error) came
	// Took is the response time: from the turn (the request sent) to its
	// answer, the body not counted.
	Took time.Duration
	// Failed is set for a network error, a timeout, or a caller's cancel
	// once the request was sent (its answer unknown): a failure counts as
	// a slow answer and never lowers the estimate.
	Failed bool
	// Unsent is set when the turn's request was never sent (its wait was
	// cancelled, or the turn was past its limit): the hold ends, and
	// nothing is learnt of the origin.
	Unsent bool
	// MaxAdaptive is the cap of the adaptive delay that the turn's
	// request asked for (TurnRequest.MaxAdaptive), for the pause after a
	// late answer.
	MaxAdaptive time.Duration
}

// Turn is the answer of [Pacer.Reserve].
type Turn struct {
	OK       bool          // the turn is taken
	Wait     time.Duration // until the turn if OK, or until a turn may be free
	InFlight bool          // not taken: a turn of the origin is held
	ID       uint64        // names a held turn for Release (TurnRequest.ID if given); 0 if it holds nothing
	// Why says what sets Wait, when the Pacer knows it (a pause's reason,
	// or the interval's); "" leaves it to the caller.
	Why string
}

// Backoff is how an origin that pushes back without saying for how long
// (a 429 or 503 without a usable Retry-After) is paused: for First at its
// first incident, doubling at each new one up to Max, lengthened by up to
// a tenth at random; the count starts again once the origin has not pushed
// back for Forgive after the end of its last pause. Concurrent answers of
// one burst are one incident. See robots.Transport.Backoff for the defaults.
type Backoff struct {
	First   time.Duration
	Max     time.Duration
	Forgive time.Duration
}

// PauseWatcher is implemented by a [Pacer] that keeps in the process an
// up-to-date copy of the pauses its users set. For a request with no
// interval to keep (no crawl-delay, no MinDelay), a Transport does not call
// Reserve when the copy says the origin is not paused.
type PauseWatcher interface {
	// WatchedPause returns when origin's pause ends and its reason (as
	// given to Pause), or the zero time; ok is false when the copy may be
	// stale. It must not block.
	WatchedPause(origin string) (until time.Time, why string, ok bool)
}

// PauseChecker is implemented by a [Pacer] that can tell whether an origin
// is paused. A Transport asks it before it sends a request that has waited
// for its turn, since another user may have paused the origin meanwhile.
// Unlike a [PauseWatcher], which reads a copy in the process and must not
// block, it may ask the shared state and wait for the answer; a Pacer may
// be both.
type PauseChecker interface {
	// PausedUntil returns when origin's pause ends and its reason, or the
	// zero time.
	PausedUntil(ctx context.Context, origin string) (until time.Time, why string, err error)
}
