// Package redisstore shares the robots.txt cache and the crawl-delay pace of
// a fleet of crawlers through Redis, so that the processes of one crawl fetch
// each robots.txt once between them, and space their requests to each origin
// by its crawl-delay between them.
//
// A [Store] is a [fleet.Store], a [fleet.Locker] and a [fleet.Pacer]. Give
// each process's [robots.Transport] a Store on the same Redis:
//
//	rdb := redis.NewClient(&redis.Options{Addr: "redis:6379", ContextTimeoutEnabled: true})
//	store := redisstore.New(rdb)
//	defer store.Close()
//	t := robots.NewTransport(nil, "ExampleBot")
//	t.Store, t.Pacer = store, store
//
// Each Transport keeps its own in-memory cache in front of the Store, so a
// request reaches Redis for robots.txt only when its origin is not cached in
// the process, or its copy has expired. When several processes need the same
// origin at once, the first takes a lock in Redis (SET NX PX) and fetches;
// the others poll Redis for the entry it puts. The lock is extended while
// its holder lives, so it lasts through the fetch's wait for its turn, the
// fetch and the Put; the lock of a holder that dies expires, and another
// process takes it. Entries are compressed with zstd.
//
// As a Pacer, a Store hands out each origin's turns across the fleet: one
// request in flight at a time, each a crawl-delay after the answer to the
// one before, held back for the pauses that Retry-After headers ask for and
// for the back-off of pushback without one. A request to an origin with a
// crawl-delay costs two Redis commands: a Lua script that takes the turn and
// returns the wait for it (the Transport does the waiting), and one that
// releases it at the answer. A request to an origin with
// no crawl-delay costs none: the Store is a [fleet.PauseWatcher], which
// keeps a copy of the fleet's pauses in the process through Redis pub/sub
// (see WatchInterval for how soon a pause reaches it), and the Transport
// asks Redis only when the copy holds a pause of the origin or may be stale.
// Turns and pauses are timed by the clock of the Redis server, so the
// processes need not agree on the time. Call Close when done with a Store,
// to end its subscription.
//
// All the keys of an origin have the origin as their hash tag, so that a
// Store works on a Redis Cluster: give New a *redis.ClusterClient.
//
// When Redis is down or slow, a Store fails fast: each command is bounded by
// Timeout, and after a failure the Store does not try Redis again for
// Cooldown. The Transports log the errors and go on as if they had no Store
// and no Pacer: each fetches robots.txt and paces origins for itself, and
// every verdict is still right. A value under one of the Store's keys that
// the Store cannot read, or that no Store wrote (of another type, in another
// format, or with no expiry where a Store always sets one), is logged,
// ignored and overwritten by the next command that uses the key, so that it
// holds back no fetch, no turn and no pause; see TryLock for the locks. An
// entry is the exception to "ignored": Get returns an error that matches
// ErrUnreadable for it, which the Transport logs and counts
// (robots.Stats.StoreErrors) before it fetches robots.txt and puts the entry
// over it.
package redisstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/redis/go-redis/v9"
)

const (
	// DefaultPrefix begins every key of a Store whose Prefix is empty.
	DefaultPrefix = "robots:"

	// DefaultTimeout bounds each Redis command of a Store whose Timeout
	// is zero.
	DefaultTimeout = 500 * time.Millisecond

	// DefaultCooldown is how long a Store whose Cooldown is zero leaves
	// Redis alone after a command failed.
	DefaultCooldown = 5 * time.Second

	// DefaultRetain is how long a Store whose Retain is zero keeps an
	// entry in Redis after it expires: as long as a Transport obeys an
	// origin's last good robots.txt while the origin is unreachable, and
	// as long as it counts an origin as unreachable before it allows
	// every URL (30 days).
	DefaultRetain = 30 * 24 * time.Hour

	// DefaultMaxEntrySize bounds the encoded size of an entry of a Store
	// whose MaxEntrySize is zero: enough for robots.DefaultMaxBodySize.
	DefaultMaxEntrySize = 1 << 20
)

// ErrUnreadable is matched (with [errors.Is]) by the error that Get returns
// for a value under an entry's key that it cannot read: of another type,
// larger than MaxEntrySize, of another format or format version, cut short
// or altered.
var ErrUnreadable = errors.New("redisstore: unreadable entry")

// ErrUnavailable is matched (with [errors.Is]) by the errors a Store returns
// without trying Redis, during the Cooldown that follows a failed command.
var ErrUnavailable = errors.New("redisstore: redis unavailable")

// Store is a [fleet.Store], [fleet.Locker] and [fleet.Pacer] on Redis.
// Entries are kept under Prefix+"entry:{"+origin+"}", fetch locks under
// Prefix+"lock:{"+origin+"}", pauses under Prefix+"pause:{"+origin+"}" (their
// reasons under Prefix+"pausewhy:{"+origin+"}"), and turns under
// Prefix+"pace:{"+origin+"}" (with "hold:", "late:", "backoff:" and "est:"
// keys beside it): the origin is the hash tag of each, which puts the keys of one origin in one slot of a Redis Cluster, so
// that a script can use several of them. Prefix must hold no "{" or "}".
// The pauses of every origin are also kept in the sorted set
// Prefix+"pauses", with their reasons in a hash beside it, and sent on the
// channels Prefix+"pauses" and Prefix+"pausewhy" (see WatchedPause).
//
// A Store's fields must not be modified after its first use. Store is safe
// for concurrent use by multiple goroutines.
type Store struct {
	// Prefix begins every key the Store reads or writes, so that several
	// crawls can share one Redis. It must not hold "{" or "}", which
	// would change the hash slots of the keys in a Redis Cluster: then
	// every method fails. If empty, DefaultPrefix is used.
	Prefix string

	// Timeout bounds each Redis command. If zero, DefaultTimeout is used.
	// The client must be created with ContextTimeoutEnabled for a Timeout
	// shorter than its ReadTimeout and WriteTimeout to take effect. A
	// Transport bounds each call to its Store by 2 seconds in any case.
	Timeout time.Duration

	// Cooldown is how long the Store leaves Redis alone after a command
	// failed (other than by its caller's context: done, or past its
	// deadline): until it ends, every method returns an error that
	// matches ErrUnavailable at once. If zero, DefaultCooldown is used.
	Cooldown time.Duration

	// Retain is how long an entry stays in Redis after it expires. The
	// Transports fetch it again when it expires, but keep obeying its
	// rules while the origin is unreachable, and carry on its count of
	// unreachable fetches. If zero, DefaultRetain is used.
	Retain time.Duration

	// MaxEntrySize bounds the size of an encoded entry: larger entries
	// are not written, and larger values are not read. It must exceed
	// the MaxBodySize of the Transports by a few KiB. If zero,
	// DefaultMaxEntrySize is used.
	MaxEntrySize int

	// WatchInterval is how long the Store's subscription to the pauses
	// set across the fleet may stay silent before it is checked (a PING,
	// whose answer must come within Timeout). A pause set by another
	// process reaches this one within the delivery time of a Redis
	// message (well under a millisecond on a LAN), and in the worst case,
	// a connection lost without an error, within WatchInterval plus
	// Timeout. If zero, DefaultWatchInterval is used. See WatchedPause.
	WatchInterval time.Duration

	// Logger, if non-nil, receives a warning when Redis fails and the
	// Store starts its Cooldown, and when a value in Redis cannot be
	// read. If nil, nothing is logged.
	Logger *slog.Logger

	client redis.UniversalClient

	once sync.Once
	cfg  config

	outage atomic.Pointer[outage] // the last failure, or nil after a success

	watchOnce sync.Once
	w         *watch // set once, by watcher or Close

	lost lostTurns // turns that Reserves with no answer may have taken
}

var (
	_ fleet.Store  = (*Store)(nil)
	_ fleet.Locker = (*Store)(nil)
)

// config is a Store's fields, with defaults applied, frozen at first use.
type config struct {
	err      error // why every method fails; nil if none
	prefix   string
	timeout  time.Duration
	cooldown time.Duration
	retain   time.Duration
	maxEntry int
	logger   *slog.Logger

	watchInterval time.Duration
}

// outage is a failed Redis command.
type outage struct {
	at    time.Time
	until time.Time // when the Store tries Redis again
	err   error
}

// New returns a Store on client, with the default settings.
func New(client redis.UniversalClient) *Store {
	return &Store{client: client}
}

func (s *Store) init() {
	c := config{
		prefix:   s.Prefix,
		timeout:  s.Timeout,
		cooldown: s.Cooldown,
		retain:   s.Retain,
		maxEntry: s.MaxEntrySize,
		logger:   s.Logger,

		watchInterval: s.WatchInterval,
	}
	if c.watchInterval <= 0 {
		c.watchInterval = DefaultWatchInterval
	}
	if c.prefix == "" {
		c.prefix = DefaultPrefix
	}
	if strings.ContainsAny(c.prefix, "{}") {
		c.err = fmt.Errorf("redisstore: Prefix %q holds a hash tag brace", c.prefix)
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.cooldown <= 0 {
		c.cooldown = DefaultCooldown
	}
	if c.retain <= 0 {
		c.retain = DefaultRetain
	}
	if c.maxEntry <= 0 {
		c.maxEntry = DefaultMaxEntrySize
	}
	s.cfg = c
}

var errNoClient = errors.New("redisstore: Store has no client; use New")

// do runs the Redis command cmd with a context bounded by Timeout, unless
// the Store is in its Cooldown. A failure to get an answer from Redis that is
// not the caller's starts the Cooldown; an error reply does not, since it
// comes back as fast as any. A failure is the caller's when its context is
// done or its deadline has passed, whatever the error says: a client may
// return the error of a deadline before the context says it is done. Then
// do returns once ctx says it (within Timeout), so that a caller that asks
// ctx whose failure it was gets the same answer.
func (s *Store) do(ctx context.Context, op string, cmd func(ctx context.Context) error) error {
	s.once.Do(s.init)
	if s.client == nil {
		return errNoClient
	}
	if s.cfg.err != nil {
		return s.cfg.err
	}
	if o := s.outage.Load(); o != nil && time.Now().Before(o.until) {
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, op, o.err)
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	err := cmd(cctx)
	cancel()
	switch {
	case answered(err):
		// Redis answered, if only with an error.
		if o := s.outage.Load(); o != nil && s.outage.CompareAndSwap(o, nil) {
			s.log(ctx, slog.LevelInfo, "redisstore: redis is back", "down_since", o.at)
		}
		if err == nil || errors.Is(err, redis.Nil) {
			return err
		}
		return fmt.Errorf("redisstore: %s: %w", op, err)
	case callersFailure(ctx):
		if ctx.Err() == nil {
			// The deadline has passed, but ctx does not say so yet
			// (its timer has not fired): the caller, which may ask
			// ctx whose failure this was, hears it from ctx too.
			t := time.NewTimer(s.cfg.timeout)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
		cerr := ctx.Err()
		if cerr == nil {
			cerr = context.DeadlineExceeded
		}
		if !errors.Is(err, cerr) {
			err = fmt.Errorf("%w (%w)", cerr, err)
		}
		return fmt.Errorf("redisstore: %s: %w", op, err)
	}
	now := time.Now()
	o := &outage{until: now.Add(s.cfg.cooldown), err: err}
	// o is complete before it is published: other goroutines read it as
	// soon as it is.
	for {
		prev := s.outage.Load()
		o.at = now
		if prev != nil {
			o.at = prev.at
		}
		if s.outage.CompareAndSwap(prev, o) {
			if prev == nil {
				s.log(ctx, slog.LevelWarn, "redisstore: redis failed; going on without it", "op", op, "err", err, "retry_in", s.cfg.cooldown)
			}
			break
		}
	}
	return fmt.Errorf("redisstore: %s: %w", op, err)
}

// callersFailure reports whether a command under ctx that got no answer
// failed by the caller's doing: ctx is done, or its deadline has passed.
func callersFailure(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	deadline, ok := ctx.Deadline()
	return ok && !time.Now().Before(deadline)
}

func (s *Store) log(ctx context.Context, level slog.Level, msg string, args ...any) {
	if l := s.cfg.logger; l != nil {
		l.Log(ctx, level, msg, args...)
	}
}

// entryKey is the key of origin's entry and lockKey that of its fetch lock.
// Like every key of an origin, they hold the origin as their hash tag, so
// that all the keys of one origin are in one hash slot of a Redis Cluster.
func (s *Store) entryKey(origin string) string { return s.cfg.prefix + "entry:{" + origin + "}" }
func (s *Store) lockKey(origin string) string  { return s.cfg.prefix + "lock:{" + origin + "}" }

// Get implements [fleet.Store]. For a value it cannot read as an entry (of
// another type, larger than MaxEntrySize, of another format or format
// version, cut short or altered), it returns an error that matches
// ErrUnreadable and names the key and the cause, and logs it to Logger too.
// Such a value does not start the Cooldown: Redis answered.
func (s *Store) Get(ctx context.Context, origin string) (*fleet.Entry, error) {
	s.once.Do(s.init)
	var val string
	var foreign error
	err := s.do(ctx, "get", func(ctx context.Context) error {
		key := s.entryKey(origin)
		// GETRANGE bounds the read; it returns "" for a missing key.
		v, err := s.client.GetRange(ctx, key, 0, int64(s.cfg.maxEntry)).Result()
		if redis.HasErrorPrefix(err, "WRONGTYPE") {
			foreign, err = err, nil
		}
		val = v
		return err
	})
	if err != nil {
		return nil, err
	}
	if foreign == nil {
		if val == "" {
			return nil, nil
		}
		if len(val) > s.cfg.maxEntry {
			foreign = fmt.Errorf("value exceeds MaxEntrySize (%d bytes)", s.cfg.maxEntry)
		}
	}
	var e *fleet.Entry
	if foreign == nil {
		e, foreign = decode([]byte(val), s.cfg.maxEntry)
	}
	if foreign != nil {
		key := s.entryKey(origin)
		s.log(ctx, slog.LevelWarn, "redisstore: unreadable entry", "key", key, "err", foreign)
		return nil, fmt.Errorf("%w under key %s: %w", ErrUnreadable, key, foreign)
	}
	return e, nil
}

// Put implements [fleet.Store]. The entry stays in Redis until Retain
// after e.Expires.
func (s *Store) Put(ctx context.Context, origin string, e *fleet.Entry) error {
	s.once.Do(s.init)
	if len(e.Body) > s.cfg.maxEntry {
		return fmt.Errorf("redisstore: body of %s is %d bytes, more than MaxEntrySize (%d)", origin, len(e.Body), s.cfg.maxEntry)
	}
	val := encode(e)
	if len(val) > s.cfg.maxEntry {
		return fmt.Errorf("redisstore: entry of %s is %d bytes, more than MaxEntrySize (%d)", origin, len(val), s.cfg.maxEntry)
	}
	ttl := max(time.Until(e.Expires), 0) + s.cfg.retain
	return s.do(ctx, "put", func(ctx context.Context) error {
		return s.client.Set(ctx, s.entryKey(origin), val, ttl).Err()
	})
}

// lockScript takes the lock KEYS[1] for the token ARGV[1], to expire
// ARGV[2] ms from now, if it is free or holds a value that no Store wrote:
// anything but a token (26 characters of the base32 alphabet that
// crypto/rand.Text uses), or a token with no expiry. It returns 1 if it
// took a free lock, 2 if it took it over such a value, and 0 if another
// holder has it.
var lockScript = redis.NewScript(`
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
	return 1
end
local v = redis.pcall("GET", KEYS[1])
if type(v) == "string" and #v == 26 and not string.find(v, "[^A-Z2-7]") and redis.call("PTTL", KEYS[1]) >= 0 then
	return 0
end
redis.call("DEL", KEYS[1])
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
return 2
`)

// unlockScript deletes a lock only if it still holds the token of the
// holder that releases it, and not a later holder's.
var unlockScript = redis.NewScript(`
if redis.pcall("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0
`)

// extendScript sets the lock KEYS[1] to expire ARGV[2] ms from now if it
// still holds the token ARGV[1], and returns 1; else it returns 0.
var extendScript = redis.NewScript(`
if redis.pcall("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
`)

// maxLockHold is how long a Store keeps extending a fetch lock whose holder
// has not released it: far longer than a fetch, its wait for a turn and its
// Put take.
const maxLockHold = time.Hour

// TryLock implements [fleet.Locker] with a random token, set with an
// expiry of ttl if the lock is free (one script, like SET NX PX).
// While the caller holds the lock, the Store extends it to ttl from now every
// ttl/3 (one command each time), so that a fetch that waits long for its turn
// or is slow keeps the lock until it has put its entry; a holder that dies
// stops extending it, and the lock expires at most ttl later. When the
// extensions fail for ttl, the lock is taken for lost. The returned
// unlock stops the extensions and deletes the lock if it is still the
// caller's. A lock that is not released is extended for maxLockHold at most.
//
// A value under the lock's key that no Store wrote (anything but a token,
// or a token with no expiry, since a Store never writes a lock without one)
// is no lock: TryLock logs it and takes the lock over it at once, so that
// such a value never holds back the fetches of an origin. A lock that a
// Store took is never taken before it expires.
func (s *Store) TryLock(ctx context.Context, origin string, ttl time.Duration) (unlock func(), ok bool, err error) {
	s.once.Do(s.init)
	token := rand.Text()
	key := s.lockKey(origin)
	ttl = max(ttl, 3*time.Millisecond)
	extended := time.Now() // no later than the lock was set
	var took int64
	err = s.do(ctx, "lock", func(ctx context.Context) error {
		var err error
		took, err = lockScript.Run(ctx, s.client, []string{key}, token, ttl.Milliseconds()).Int64()
		return err
	})
	if err != nil || took == 0 {
		return nil, false, err
	}
	if took == 2 {
		s.log(ctx, slog.LevelWarn, "redisstore: taking over a fetch lock that no Store wrote", "key", key)
	}
	lctx := context.WithoutCancel(ctx)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(ttl / 3)
		defer tick.Stop()
		end := time.NewTimer(maxLockHold)
		defer end.Stop()
		for {
			select {
			case <-stop:
				return
			case <-end.C:
				s.log(lctx, slog.LevelWarn, "redisstore: fetch lock held too long; no longer extended", "key", key, "held", maxLockHold)
				return
			case <-tick.C:
			}
			var held int64
			err := s.do(lctx, "lock", func(ctx context.Context) error {
				var err error
				held, err = extendScript.Run(ctx, s.client, []string{key}, token, ttl.Milliseconds()).Int64()
				return err
			})
			switch {
			case err == nil && held == 1:
				extended = time.Now()
			case err == nil:
				s.log(lctx, slog.LevelWarn, "redisstore: fetch lock lost before its holder released it", "key", key)
				return
			case time.Since(extended) >= ttl:
				// The lock has expired in Redis: there is
				// nothing left to extend.
				s.log(lctx, slog.LevelWarn, "redisstore: fetch lock lost: extending it failed", "key", key, "err", err)
				return
			}
		}
	}()
	var once sync.Once
	unlock = func() {
		once.Do(func() {
			close(stop)
			<-done
			// The lock expires anyway: an error only makes the
			// others wait until then.
			err := s.do(lctx, "unlock", func(ctx context.Context) error {
				return unlockScript.Run(ctx, s.client, []string{key}, token).Err()
			})
			if err != nil && !errors.Is(err, ErrUnavailable) {
				s.log(lctx, slog.LevelWarn, "redisstore: unlock failed", "key", key, "err", err)
			}
		})
	}
	return unlock, true, nil
}
