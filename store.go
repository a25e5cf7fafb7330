package robots

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
}

// Store keeps robots.txt entries by origin, so that several Transports (the
// processes of a fleet, say) share one fetch per origin. A Transport reads
// it when its own cache misses or has expired, and puts every fetch result.
//
// Origins are named scheme "://" host [":" port], with a lower-case IDNA
// ASCII host and the port only when it is not the scheme's default:
// "https://example.com", "http://[::1]:8080". An IPv6 zone is kept, escaped
// as in a URL ("http://[fe80::1%25en0]").
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
	return overhead + int64(len(origin)+len(e.Body)+len(e.Error))
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
