package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/f9014239/robots/fleet"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// The defaults of a Store's options.
const (
	DefaultMaxEntries = 1000000             // WithMaxEntries
	DefaultMaxBytes   = 256 << 20           // WithMaxBytes
	DefaultRetain     = 30 * 24 * time.Hour // WithRetain
)

// The intervals of a Store's work in the background, and the lease of its
// heartbeat (see the package documentation).
const (
	flushInterval   = 100 * time.Millisecond
	leaseDuration   = time.Second
	compactInterval = time.Minute
	lockTimeout     = time.Second
	// lastKeep is how long a turn is kept after it (or after its hold),
	// or its interval if longer: a later caller's interval may be up to
	// that. It is redisstore's.
	lastKeep = int64(time.Minute)
	// backoffMargin is how long a back-off is kept past its forgiveness,
	// as redisstore keeps its key.
	backoffMargin = int64(time.Second)
)

var (
	// ErrLocked is matched (with [errors.Is]) by the error of Open when
	// another process has the file open (or this one, through another
	// Store): a file is used by one Store at a time.
	ErrLocked = errors.New("boltstore: the file is in use by another process")

	// ErrCorrupt is matched by the error of Open for a file that is not a
	// Store's file, or is no longer whole: empty, cut short, of random
	// bytes, a bbolt file of another program, or with pages that bbolt
	// cannot read. Delete the file to start afresh. A method that meets a
	// page it cannot read returns an error that matches it too.
	ErrCorrupt = errors.New("boltstore: not a readable boltstore file")

	// ErrUnreadable is matched by the error of Get for an entry that it
	// cannot decode; the Transport fetches robots.txt and puts a new one.
	ErrUnreadable = errors.New("boltstore: unreadable entry")

	// ErrClosed is returned by the methods of a closed Store.
	ErrClosed = errors.New("boltstore: store closed")
)

// Store is a [fleet.Store], a [fleet.Locker] and a [fleet.Pacer] kept in
// one file, so that what a crawler knows of each origin survives its
// restart; see the package documentation. Open one with Open, and Close it
// when done. A Store is safe for concurrent use by multiple goroutines.
type Store struct {
	path string
	cfg  options
	db   *bolt.DB

	// the clock (see now): Unix ns at start, moved on by the monotonic
	// clock; set in Open
	base  int64
	start time.Time
	clock func() int64 // tests only; nil for now's own clock

	// floor, in Unix ns, is the turn every origin is taken to have had
	// before the Store was opened, after an unclean exit (see Open); 0 if
	// none. Set in Open.
	floor int64

	seed   maphash.Seed
	shards [shardCount]shard

	// the pauses that have not ended, by origin, read without a lock
	// (see WatchedPause); replaced, never modified, under pausesMu
	pauses   atomic.Pointer[map[string]pauseCopy]
	pausesMu sync.Mutex

	// gen counts the changes to the paces; each is made under its
	// shard's lock, and counted before that lock is released.
	gen atomic.Uint64
	// flushMu serialises the writes of paces, and guards flushed and
	// the sizes of the paces' buckets.
	flushMu sync.Mutex
	flushed uint64 // guarded by flushMu: gen when the last good write began
	// guarded by flushMu: the bytes of the paces at the last checkpoint,
	// and of the journal since (see flush.go)
	snapshotBytes, journalBytes int64
	buf                         []byte // guarded by flushMu: the bytes a flush writes
	// lease: until when turns may be taken on the heartbeat written last
	// (Unix ns); retryAt: after a failed write, when a Reserve may write
	// again; logged: when a failed write was last logged (Unix ns)
	lease   atomic.Int64
	retryAt atomic.Int64
	logged  atomic.Int64

	locks fleet.MemoryStore // the fetch locks, in memory

	closed    atomic.Bool // set under every shard's lock
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error

	// what tests count
	reserves, gets, puts, writes atomic.Int64
	// tests only: called before every write, whose error it returns
	// instead, if not nil
	beforeWrite atomic.Pointer[func() error]
}

var (
	_ fleet.Store        = (*Store)(nil)
	_ fleet.Locker       = (*Store)(nil)
	_ fleet.Pacer        = (*Store)(nil)
	_ fleet.PauseWatcher = (*Store)(nil)
	_ fleet.PauseChecker = (*Store)(nil)
)

// options are the settings of a Store, with defaults applied.
type options struct {
	maxEntries int
	maxBytes   int64
	retain     time.Duration
	logger     *slog.Logger

	// tests only
	flushInterval   time.Duration
	lease           time.Duration
	compactInterval time.Duration
	lockTimeout     time.Duration
	maxFileSize     int
	clock           func() int64
}

// An Option sets a setting of Open.
type Option func(*options)

// WithMaxEntries bounds the robots.txt entries a Store keeps: a Put beyond
// it drops the entries that expire first. If n <= 0, DefaultMaxEntries is
// used.
func WithMaxEntries(n int) Option { return func(o *options) { o.maxEntries = n } }

// WithMaxBytes bounds the bytes of the entries a Store keeps, as
// WithMaxEntries does: each entry counts its encoded size (its body, its
// error, 20 bytes or so of times and counts), its origin twice (its key and
// its index's) and 64 bytes. An entry larger on its own is kept alone. If
// n <= 0, DefaultMaxBytes is used. The file holds about 2.2 times the bytes
// counted (bbolt's pages are half full or so when keys come in no order),
// and the paces of the origins that can still hold a request back (about
// 100 bytes each).
func WithMaxBytes(n int64) Option { return func(o *options) { o.maxBytes = n } }

// WithRetain sets how long an entry is kept after it expires: a Transport
// obeys an origin's last good robots.txt while the origin is unreachable,
// and carries on its count of failures. If d <= 0, DefaultRetain is used
// (30 days, as long as a Transport treats an origin as unreachable before
// it allows everything).
func WithRetain(d time.Duration) Option { return func(o *options) { o.retain = d } }

// WithLogger has a Store log, with l, what it cannot report to a caller: a
// failed write of the paces in the background (once a minute at most), the
// recovery after an unclean exit, and records it drops as unreadable.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// Open opens the Store kept in the file at path, creating it if it does not
// exist. It fails within a second, with an error that matches ErrLocked, if
// another process has the file open; and with one that matches ErrCorrupt
// if the file is not a Store's, or not whole (empty, cut short, or
// unreadable). The error names path. Delete the file to start afresh.
//
// After an unclean exit (a crash, a kill, a failed final write), every
// origin is taken to have had a turn a lease (a second) after the last
// heartbeat the file holds: see the package documentation.
func Open(path string, opts ...Option) (*Store, error) {
	o := options{
		flushInterval:   flushInterval,
		lease:           leaseDuration,
		compactInterval: compactInterval,
		lockTimeout:     lockTimeout,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxEntries <= 0 {
		o.maxEntries = DefaultMaxEntries
	}
	if o.maxBytes <= 0 {
		o.maxBytes = DefaultMaxBytes
	}
	if o.retain <= 0 {
		o.retain = DefaultRetain
	}
	if err := checkFile(path); err != nil {
		return nil, openError(path, err, &o)
	}
	var db *bolt.DB
	err := protect(func() error {
		var err error
		db, err = bolt.Open(path, 0o600, boltOptions(&o))
		return err
	})
	if err != nil {
		return nil, openError(path, err, &o)
	}
	s := &Store{
		path:  path,
		cfg:   o,
		db:    db,
		clock: o.clock,
		seed:  maphash.MakeSeed(),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	for i := range s.shards {
		s.shards[i].m = make(map[string]*pace)
		s.shards[i].dirty = make(map[string]struct{})
	}
	if err := s.load(); err != nil {
		protect(db.Close)
		return nil, openError(path, err, &o)
	}
	go s.run()
	return s, nil
}

// The buckets of the file, and the keys of its meta bucket.
var (
	bucketMeta    = []byte("meta")
	bucketEntries = []byte("entries") // origin → entry (see encodeEntry)
	bucketExpiry  = []byte("expiry")  // Expires (8 bytes) + origin → nothing
	bucketPaces   = []byte("paces")   // origin → pace (see encodePace), at the last checkpoint
	bucketJournal = []byte("journal") // sequence → the paces that a flush wrote (see flush.go)

	keyFormat    = []byte("format")    // formatName
	keyHeartbeat = []byte("heartbeat") // Unix ns: see flush
	keyClean     = []byte("clean")     // 1 after a Close that wrote everything, else 0
	keyFloor     = []byte("floor")     // Unix ns: see Store.floor
	keyBytes     = []byte("bytes")     // the bytes counted of the entries
	keyCount     = []byte("count")     // the entries
)

// formatName names the layout of the file, in its meta bucket.
const formatName = "github.com/f9014239/robots/boltstore 1"

func i64(v []byte) int64 {
	if len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

func b64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// load reads the file just opened: it creates the buckets of a new file,
// checks those of an old one, sets the clock and the floor, notes that the
// Store is open (not clean) with a heartbeat, and reads the paces.
func (s *Store) load() error {
	wall := time.Now()
	var hb int64
	recovered := false
	err := protect(func() error {
		return s.db.Update(func(tx *bolt.Tx) error {
			m, err := s.buckets(tx)
			if err != nil {
				return err
			}
			last := i64(m.Get(keyHeartbeat))
			clean := bytes.Equal(m.Get(keyClean), []byte{1})
			floor := i64(m.Get(keyFloor))
			// A clock set back since the heartbeat would move every
			// turn and pause that far into the future: the Store's
			// clock goes on from the heartbeat instead.
			s.base, s.start = max(wall.UnixNano(), last), wall
			if last != 0 && !clean {
				floor = max(floor, last+int64(s.cfg.lease))
				recovered = true
			}
			s.floor = floor
			hb = s.now()
			for _, kv := range []struct{ k, v []byte }{{keyClean, []byte{0}}, {keyHeartbeat, b64(hb)}, {keyFloor, b64(floor)}} {
				if err := m.Put(kv.k, kv.v); err != nil {
					return err
				}
			}
			return s.readPaces(tx, hb)
		})
	})
	if err != nil {
		return err
	}
	if recovered {
		s.log(slog.LevelInfo, "boltstore: the last run ended uncleanly; every origin is taken to have had a turn at its last heartbeat plus a lease",
			"path", s.path, "turn", fromUnixNano(s.floor))
	}
	s.lease.Store(hb + int64(s.cfg.lease))
	return nil
}

// buckets returns the meta bucket of tx, after it checks that the file is a
// Store's, with every bucket, or creates them in a new file.
func (s *Store) buckets(tx *bolt.Tx) (*bolt.Bucket, error) {
	m := tx.Bucket(bucketMeta)
	if m == nil {
		var names []string
		tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			names = append(names, string(name))
			return nil
		})
		if len(names) > 0 {
			return nil, corrupt(fmt.Sprintf("a bbolt file of another program (buckets %q)", names))
		}
		var err error
		if m, err = tx.CreateBucket(bucketMeta); err != nil {
			return nil, err
		}
		for _, b := range [][]byte{bucketEntries, bucketExpiry, bucketPaces, bucketJournal} {
			if _, err := tx.CreateBucket(b); err != nil {
				return nil, err
			}
		}
		if err := m.Put(keyFormat, []byte(formatName)); err != nil {
			return nil, err
		}
	}
	if f := m.Get(keyFormat); string(f) != formatName {
		return nil, corrupt(fmt.Sprintf("format %q, want %q", f, formatName))
	}
	for _, b := range [][]byte{bucketEntries, bucketExpiry, bucketPaces, bucketJournal} {
		if tx.Bucket(b) == nil {
			return nil, corrupt(fmt.Sprintf("no bucket %q", b))
		}
	}
	return m, nil
}

// now returns the time on the Store's clock, in Unix ns: the wall clock
// when the Store was opened (or the heartbeat its file held, if later),
// moved on by the monotonic clock, so that a clock set while it runs moves
// no turn.
func (s *Store) now() int64 {
	if s.clock != nil {
		return s.clock()
	}
	return s.base + int64(time.Since(s.start))
}

// wall returns the time on the caller's clock of t, on the Store's.
func (s *Store) wall(t int64) time.Time {
	return time.Now().Add(time.Duration(t - s.now()))
}

// write runs fn in a read-write transaction of the file, committed (and
// synced to the disk) if it returns nil.
func (s *Store) write(fn func(tx *bolt.Tx) error) error {
	s.writes.Add(1)
	if f := s.beforeWrite.Load(); f != nil {
		if err := (*f)(); err != nil {
			return err
		}
	}
	return s.fileErr(protect(func() error { return s.db.Update(fn) }))
}

// view runs fn in a read-only transaction of the file.
func (s *Store) view(fn func(tx *bolt.Tx) error) error {
	return s.fileErr(protect(func() error { return s.db.View(fn) }))
}

// fileErr returns err, an error of a transaction, as the Store's methods
// return it.
func (s *Store) fileErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, berrors.ErrDatabaseNotOpen):
		return ErrClosed
	}
	return fmt.Errorf("boltstore: %s: %w", s.path, err)
}

// usable returns the error of a call with ctx to s: ctx's, or ErrClosed.
func (s *Store) usable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

func (s *Store) log(level slog.Level, msg string, args ...any) {
	if s.cfg.logger != nil {
		s.cfg.logger.Log(context.Background(), level, msg, args...)
	}
}

// Get implements [fleet.Store]: it reads the entry of origin from the file
// (a read transaction, on bbolt's memory map). An entry expired for longer
// than its retention (see WithRetain) is none. An entry it cannot decode
// returns an error that matches ErrUnreadable.
func (s *Store) Get(ctx context.Context, origin string) (*fleet.Entry, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	s.gets.Add(1)
	e, err := bounded(ctx, func() (*fleet.Entry, error) {
		var e *fleet.Entry
		err := s.view(func(tx *bolt.Tx) error {
			v := tx.Bucket(bucketEntries).Get([]byte(origin))
			if v == nil {
				return nil
			}
			var err error
			e, err = decodeEntry(v)
			return err
		})
		return e, err
	})
	if err != nil {
		return nil, err
	}
	if e != nil && !e.Expires.IsZero() && time.Duration(s.now()-e.Expires.UnixNano()) > s.cfg.retain {
		return nil, nil
	}
	return e, nil
}

// Put implements [fleet.Store]: it writes e as the entry of origin, in one
// transaction synced to the disk before it returns, so that a robots.txt
// fetched before a crash is not fetched again after it. It first drops
// entries expired for longer than their retention, and then, while the
// entries would exceed WithMaxEntries or WithMaxBytes, those that expire
// first.
func (s *Store) Put(ctx context.Context, origin string, e *fleet.Entry) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	s.puts.Add(1)
	v := encodeEntry(e)
	now := s.now()
	_, err := bounded(ctx, func() (struct{}, error) {
		return struct{}{}, s.write(func(tx *bolt.Tx) error {
			return s.putEntry(tx, origin, v, now)
		})
	})
	return err
}

// bounded returns what fn returns, or ctx's error if ctx is done first:
// then fn goes on alone, and what it returns is dropped. A disk that hangs
// holds the caller no longer than its context.
func bounded[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	if ctx.Done() == nil {
		return fn()
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := fn()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// entrySize is what the bounds count for the entry v of origin.
func entrySize(origin string, v []byte) int64 {
	return 2*int64(len(origin)) + int64(len(v)) + 64
}

// indexKey returns the key of the entry of origin that expires at exp in
// the expiry bucket.
func indexKey(exp int64, origin string) []byte {
	// exp is stored with its sign bit flipped, so that bytes sort as
	// numbers do.
	return append(binary.BigEndian.AppendUint64(nil, uint64(exp)^1<<63), origin...)
}

// putEntry puts v as the entry of origin in tx, at now, within the bounds.
func (s *Store) putEntry(tx *bolt.Tx, origin string, v []byte, now int64) error {
	m := tx.Bucket(bucketMeta)
	nb, count := i64(m.Get(keyBytes)), i64(m.Get(keyCount))
	if err := removeEntry(tx, origin, &nb, &count); err != nil {
		return err
	}
	size := entrySize(origin, v)
	cutoff := now - int64(s.cfg.retain)
	c := tx.Bucket(bucketExpiry).Cursor()
	for k, _ := c.First(); k != nil && len(k) >= 8; k, _ = c.First() {
		over := count >= int64(s.cfg.maxEntries) || nb+size > s.cfg.maxBytes
		if !over && int64(binary.BigEndian.Uint64(k)^1<<63) >= cutoff {
			break
		}
		if err := dropIndexed(tx, k, &nb, &count); err != nil {
			return err
		}
	}
	exp, _ := expiresOf(v)
	if err := tx.Bucket(bucketEntries).Put([]byte(origin), v); err != nil {
		return err
	}
	if err := tx.Bucket(bucketExpiry).Put(indexKey(exp, origin), nil); err != nil {
		return err
	}
	return putCounts(m, nb+size, count+1)
}

func putCounts(m *bolt.Bucket, nb, count int64) error {
	if err := m.Put(keyBytes, b64(max(nb, 0))); err != nil {
		return err
	}
	return m.Put(keyCount, b64(max(count, 0)))
}

// removeEntry deletes the entry of origin from tx, and its index, and takes
// it off the counts.
func removeEntry(tx *bolt.Tx, origin string, nb, count *int64) error {
	eb := tx.Bucket(bucketEntries)
	old := eb.Get([]byte(origin))
	if old == nil {
		return nil
	}
	*nb -= entrySize(origin, old)
	*count--
	if exp, ok := expiresOf(old); ok {
		if err := tx.Bucket(bucketExpiry).Delete(indexKey(exp, origin)); err != nil {
			return err
		}
	}
	return eb.Delete([]byte(origin))
}

// dropIndexed deletes the index key k and, if it is the index of the entry
// it names (and not a key left by an entry that was unreadable), the entry.
func dropIndexed(tx *bolt.Tx, k []byte, nb, count *int64) error {
	k = bytes.Clone(k)
	origin := string(k[8:])
	if v := tx.Bucket(bucketEntries).Get([]byte(origin)); v != nil {
		if exp, ok := expiresOf(v); ok && bytes.Equal(indexKey(exp, origin), k) {
			return removeEntry(tx, origin, nb, count)
		}
	}
	return tx.Bucket(bucketExpiry).Delete(k)
}

// dropExpired deletes the entries expired for longer than their retention,
// in transactions of at most 1,000.
func (s *Store) dropExpired() error {
	const batch = 1000
	for {
		n := 0
		cutoff := s.now() - int64(s.cfg.retain)
		err := s.write(func(tx *bolt.Tx) error {
			n = 0
			m := tx.Bucket(bucketMeta)
			nb, count := i64(m.Get(keyBytes)), i64(m.Get(keyCount))
			c := tx.Bucket(bucketExpiry).Cursor()
			for k, _ := c.First(); k != nil && len(k) >= 8 && n < batch; k, _ = c.First() {
				if int64(binary.BigEndian.Uint64(k)^1<<63) >= cutoff {
					break
				}
				if err := dropIndexed(tx, k, &nb, &count); err != nil {
					return err
				}
				n++
			}
			if n == 0 {
				return nil
			}
			return putCounts(m, nb, count)
		})
		if err != nil || n < batch {
			return err
		}
	}
}

// TryLock implements [fleet.Locker], in memory: the file is open in one
// process at a time, so the fetches to share are this process's.
func (s *Store) TryLock(ctx context.Context, origin string, ttl time.Duration) (unlock func(), ok bool, err error) {
	if err := s.usable(ctx); err != nil {
		return nil, false, err
	}
	return s.locks.TryLock(ctx, origin, ttl)
}

// Close writes the paces to the file, notes that it holds everything (so
// that the next Open need not be cautious), and closes it. The methods of a
// closed Store return ErrClosed. Close returns the error of the last write,
// if it failed: then the next Open recovers as after a crash.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
		// Every change made before closed is set is made under a
		// shard's lock: once each lock has been taken after it, the
		// last write below holds them all.
		s.closed.Store(true)
		for i := range s.shards {
			s.shards[i].mu.Lock()
			s.shards[i].mu.Unlock() //nolint:staticcheck // a barrier
		}
		err := s.flush(true)
		if cerr := s.fileErr(protect(s.db.Close)); err == nil {
			err = cerr
		}
		s.closeErr = err
	})
	return s.closeErr
}
