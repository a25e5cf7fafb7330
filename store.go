package robots

import (
	"context"
	"sync"
	"time"
)

// Access is what fetching an origin's robots.txt found, in the terms of
// RFC 9309 §2.3.1: the file was fetched, it is unavailable (everything is
// allowed), or it is unreachable (everything is disallowed, for now).
type Access int

const (
	// AccessUnreachable means the last fetch failed with a 429, a 5xx, a
	// network error or a response that could not be read, and no earlier
	// fetch succeeded: every URL of the origin is disallowed (RFC 9309
	// §2.3.1.4). It is the zero Access, so that an Entry that says nothing
	// refuses rather than allows.
	AccessUnreachable Access = iota

	// AccessSuccess means robots.txt was fetched with a 2xx status, after
	// at most five redirects; its rules are in Entry.Body (§2.3.1.1).
	AccessSuccess

	// AccessUnavailable means robots.txt answered a 4xx status other than
	// 429, or redirected more than five times: every URL is allowed
	// (§2.3.1.2, §2.3.1.3).
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

// Entry is the cached robots.txt of one origin, as a [Store] keeps it. It is
// a plain struct of exported fields so that a store can encode it (for
// example with encoding/json or encoding/gob).
//
// An Entry whose last fetch was unreachable but which holds an earlier good
// copy keeps Access and Body of that copy, and sets UnreachableSince: the
// copy is obeyed while the origin stays unreachable (RFC 9309 §2.4).
type Entry struct {
	// Access is the result of the last fetch that reached the origin, or
	// AccessUnreachable if none did.
	Access Access

	// Body is the robots.txt body when Access is AccessSuccess, at most
	// the Transport's MaxBodySize bytes. It is nil otherwise. A Store must
	// not modify it.
	Body []byte

	// FetchedAt is when Access and Body were fetched; it is the zero time
	// when no fetch has reached the origin.
	FetchedAt time.Time

	// Expires is when the entry must be fetched again. Until then it is
	// used as it is, without a request to the origin.
	Expires time.Time

	// UnreachableSince is when the origin's current run of unreachable
	// fetches began, or the zero time if the last fetch reached it.
	UnreachableSince time.Time

	// Failures counts the unreachable fetches of the current run; it
	// sets the back-off before the next fetch.
	Failures int

	// Error says why the last fetch was unreachable; it is "" otherwise.
	Error string
}

// Store keeps robots.txt entries by origin, so that several Transports
// (for example, one per process of a fleet of crawlers) share one fetch per
// origin. A Transport keeps its own in-process cache in front of the Store
// and consults the Store only when that cache misses or has expired, and
// puts every fetch result into it.
//
// Origins are given as scheme "://" host, with a ":" port when the port is
// not the scheme's default; the host is lower case and in IDNA ASCII form,
// e.g. "https://example.com" or "http://[::1]:8080". An IPv6 zone is kept,
// escaped as in a URL ("http://[fe80::1%25en0]"); a URL whose zone holds
// other characters than letters, digits, '-', '.', '_' and '~' is refused
// with an error, since no origin string names it.
//
// A Store must be safe for concurrent use by multiple goroutines, and return
// when its context is done: a Transport bounds each call by a short timeout
// (2 seconds, or FetchTimeout if shorter). Its errors are not fatal: a
// Transport logs them and goes on as if the store were empty.
type Store interface {
	// Get returns the entry of origin, or nil and a nil error if there is
	// none. The caller does not modify the returned Entry.
	Get(ctx context.Context, origin string) (*Entry, error)

	// Put stores e as the entry of origin. The caller does not modify e
	// afterwards.
	Put(ctx context.Context, origin string, e *Entry) error
}

// Locker is implemented by a [Store] that can make one fetch per origin
// happen across all of its users, not only within one Transport.
//
// Before fetching an origin's robots.txt, a Transport whose Store is a
// Locker calls TryLock. If it gets the lock it fetches, puts the result and
// calls unlock. If another holder has it (ok is false), the Transport polls
// the Store for the entry the holder will put, and fetches on its own only
// when that does not come within its FetchTimeout.
type Locker interface {
	// TryLock tries to take the fetch lock of origin without waiting. On
	// success it returns ok and a func that releases the lock; the lock
	// is released after ttl in any case.
	TryLock(ctx context.Context, origin string, ttl time.Duration) (unlock func(), ok bool, err error)
}

// DefaultMaxStoreEntries is the bound on the entries of a MemoryStore whose
// MaxEntries is zero.
const DefaultMaxStoreEntries = 10000

// DefaultMaxStoreBytes is the bound on the bytes of a MemoryStore whose
// MaxBytes is zero.
const DefaultMaxStoreBytes = 128 << 20

// MemoryStore is a [Store] and [Locker] that keeps entries in memory. Give
// one MemoryStore to several Transports (for example, crawlers with different
// product tokens) so that they fetch each robots.txt once between them.
//
// The zero value is an empty store ready to use. MemoryStore is safe for
// concurrent use by multiple goroutines.
type MemoryStore struct {
	// MaxEntries bounds the number of entries. When a Put would exceed
	// it, an arbitrary entry is removed first. If zero,
	// DefaultMaxStoreEntries is used.
	MaxEntries int

	// MaxBytes bounds the bytes the entries hold: their bodies, their
	// errors and their origins, and 256 bytes each beside. When a Put
	// would exceed it, arbitrary entries are removed first; an entry
	// larger than MaxBytes on its own is kept alone. If zero,
	// DefaultMaxStoreBytes (128 MiB) is used. A Transport that uses the
	// store counts the bodies it holds in its own MaxBytes too; they are
	// the same bytes while both hold an entry.
	MaxBytes int64

	mu      sync.Mutex
	entries map[string]*Entry   // guarded by mu; lazily initialised
	locks   map[string]*memLock // guarded by mu; lazily initialised
	bytes   int64               // guarded by mu: the sum of entrySize over entries
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
