package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/internal/pacing"

	"github.com/redis/go-redis/v9"
)

var _ fleet.PauseWatcher = (*Store)(nil)

const (
	// DefaultWatchInterval is the WatchInterval of a Store whose
	// WatchInterval is zero.
	DefaultWatchInterval = time.Second

	// maxWatchedPauses bounds the pauses a Store keeps a copy of. While
	// more origins are paused at once across the fleet, the copy is not
	// used: every request asks Redis, as without a copy.
	maxWatchedPauses = 1 << 17
)

// The copy of the pauses.
//
// Pause records each pause in two places besides the origin's own key: in
// the sorted set pausesKey (origin by the end of its pause, on the clock of
// the node that holds the set), with its reason in the hash reasonsKey
// (origin → "end:reason", which holds for the pause in the set only if
// their ends are the same), and as messages on the channels reasonsChannel
// ("origin remaining-µs reason") and pausesChannel ("origin remaining-µs",
// as earlier versions, which know neither the hash nor the channel of
// reasons, send and read them). A Store that watches subscribes to both
// channels, then reads the pauses that have not ended from the set, and from
// then on applies each message: its copy holds every pause that began
// before it read the set (the set is written before the messages are sent,
// by the same script) and every one whose message it received. A pause
// without a reason (from a Store of an earlier version) keeps the reason
// the copy knows for the origin's pause, if that has not ended, and is
// otherwise one of pacing.ReasonRetryAfter. Remaining times, not ends, travel, so
// that the clocks of processes and nodes need not agree; a copy's end is
// when the message arrived plus the time remaining when it was sent, never
// earlier than the pause's end.
//
// The copy is "live", and used, from the read of the set until the
// subscription fails. A connection that fails silently is found by a PING
// sent after WatchInterval without a message, and given up if its answer
// does not come within Timeout: a pause set elsewhere reaches the copy
// within the delivery time of a message, and in the worst case (a
// connection lost without an error) WatchInterval plus Timeout, during
// which the copy is stale without knowing it. Once a failure is known,
// every request asks Redis until the subscription is back and the set is
// read again.

// heedPrefix, before an origin in the sorted set and the messages of the
// pauses, marks an origin backing off until it is forgiven (see PushBack):
// no origin has a space, and a Store of an earlier version keeps it as the
// pause of an origin that does not exist.
const heedPrefix = "heed "

// noteHeed records, for the copies of the pauses, that origin is backing off
// for d from now (one command).
func (s *Store) noteHeed(ctx context.Context, origin string, d time.Duration) error {
	return s.announce(ctx, heedPrefix+origin, ceilMicros(d), "")
}

// announce records, for the copies of the pauses, that member (an origin,
// or heedPrefix and an origin) is paused for us microseconds from now, for
// the reason why ("" for none), in one command.
func (s *Store) announce(ctx context.Context, member string, us int64, why string) error {
	var bad int64
	err := s.do(ctx, "pause", func(ctx context.Context) error {
		var err error
		bad, err = announceScript.Run(ctx, s.client, []string{s.pausesKey(), s.reasonsKey()}, member, us, why,
			s.pausesChannel(), s.reasonsChannel()).Int64()
		return err
	})
	if err == nil && bad != 0 {
		s.log(ctx, slog.LevelWarn, "redisstore: ignoring unreadable pauses", "key", s.pausesKey())
	}
	return err
}

// The sorted set of the pauses and the hash of their reasons are in one
// hash slot of a Redis Cluster, which the hash's tag names: that of the set,
// whose key has no tag.
func (s *Store) pausesKey() string      { return s.cfg.prefix + "pauses" }
func (s *Store) reasonsKey() string     { return s.cfg.prefix + "pausewhy{" + s.cfg.prefix + "pauses}" }
func (s *Store) pausesChannel() string  { return s.cfg.prefix + "pauses" }
func (s *Store) reasonsChannel() string { return s.cfg.prefix + "pausewhy" }

// A value under pausesKey that is not a sorted set, or under reasonsKey
// that is not a hash, was not written by a Store: the scripts that use the
// keys delete it, and say so (of the set).
const pausesHead = `
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local unreadable = 0
local function kindOf(key)
	local kind = redis.call("TYPE", key)
	if type(kind) == "table" then kind = kind.ok end
	return kind
end
local kind = kindOf(KEYS[1])
if kind ~= "zset" and kind ~= "none" then
	redis.call("DEL", KEYS[1])
	unreadable = 1
end
kind = kindOf(KEYS[2])
if kind ~= "hash" and kind ~= "none" then
	redis.call("DEL", KEYS[2])
end
`

// announceScript records in the sorted set KEYS[1] that ARGV[1] (an origin,
// or heedPrefix and an origin) is paused for ARGV[2] microseconds from now,
// unless it holds a later end, with the reason ARGV[3] (if not "") in the
// hash KEYS[2], and drops the pauses that have ended; the set and the hash
// expire once the last pause has ended. It then sends the pause on the
// channel ARGV[5] of reasons, if it has one, and on the channel ARGV[4]. It
// returns 1 if KEYS[1] held a value that is not a sorted set, and 0 if not.
var announceScript = redis.NewScript(pausesHead + `
local till = now + tonumber(ARGV[2])
local cur = redis.call("ZSCORE", KEYS[1], ARGV[1])
if not cur or tonumber(cur) < till then
	redis.call("ZADD", KEYS[1], string.format("%.0f", till), ARGV[1])
	if ARGV[3] ~= "" then
		redis.call("HSET", KEYS[2], ARGV[1], string.format("%.0f:%s", till, ARGV[3]))
	end
end
local ended = redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", string.format("(%.0f", now), "LIMIT", 0, 1000)
if #ended > 0 then
	redis.call("HDEL", KEYS[2], unpack(ended))
	redis.call("ZREM", KEYS[1], unpack(ended))
end
local want = math.floor(tonumber(ARGV[2]) / 1000) + 1000
for _, key in ipairs(KEYS) do
	local ttl = redis.call("PTTL", key)
	if ttl ~= -2 and ttl < want then redis.call("PEXPIRE", key, want) end
end
if ARGV[3] ~= "" then
	redis.call("PUBLISH", ARGV[5], ARGV[1] .. " " .. ARGV[2] .. " " .. ARGV[3])
end
redis.call("PUBLISH", ARGV[4], ARGV[1] .. " " .. ARGV[2])
return unreadable
`)

// pausesScript returns "1" if KEYS[1] held a value that is not a sorted set,
// and "0" if not, then the pauses in the sorted set KEYS[1] that have not
// ended, as origin, remaining microseconds and reason (from the hash
// KEYS[2]; "" if it holds none for the pause's end) in turn, at most
// ARGV[1] of them and one more if there are more.
var pausesScript = redis.NewScript(pausesHead + `
local r = redis.call("ZRANGEBYSCORE", KEYS[1], string.format("%.0f", now), "+inf", "WITHSCORES", "LIMIT", 0, tonumber(ARGV[1]) + 1)
local out = {tostring(unreadable)}
for i = 1, #r, 2 do
	local why = ""
	local v = redis.call("HGET", KEYS[2], r[i])
	if type(v) == "string" then
		local till, w = string.match(v, "^(%d+):([%a%-]+)$")
		if till and tonumber(till) == tonumber(r[i + 1]) then why = w end
	end
	out[#out + 1] = r[i]
	out[#out + 1] = string.format("%.0f", tonumber(r[i + 1]) - now)
	out[#out + 1] = why
end
return out
`)

// watch is a Store's copy of the pauses of every origin.
type watch struct {
	live atomic.Bool  // the copy is up to date
	n    atomic.Int64 // entries in m
	m    sync.Map     // origin → watched, its pause
	// entries in m of origins backing off (heedPrefix + origin → the end
	// of the back-off's forgiveness)
	heeds atomic.Int64

	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	ps     *redis.PubSub // guarded by mu: the current subscription, nil if none
	closed bool          // guarded by mu

	lastPurge time.Time // used by the watch goroutine only
}

// watched is a pause in a watch's copy.
type watched struct {
	until time.Time // its end, on the local clock
	why   string    // its reason; "" if unknown
}

// watcher returns the Store's watch, and starts it at the first call.
func (s *Store) watcher() *watch {
	s.watchOnce.Do(func() {
		s.once.Do(s.init)
		ctx, cancel := context.WithCancel(context.Background())
		w := &watch{cancel: cancel, done: make(chan struct{})}
		s.w = w
		if s.client == nil || s.cfg.err != nil {
			cancel()
			close(w.done)
			return
		}
		go s.watchLoop(ctx, w)
	})
	return s.w
}

// Close stops the Store's watch of the pauses, if it has begun, and the
// goroutine that releases the turns Reserves may have taken unseen (see
// Reserve), and waits for them to end; such a turn left is released by the
// next Reserve of its origin, if any, or else its hold runs out. The Store remains usable: a Transport then asks Redis for
// every request. Close does not close the Redis client. It returns nil.
func (s *Store) Close() error {
	s.watchOnce.Do(func() { // never started: never start
		s.w = &watch{cancel: func() {}, done: make(chan struct{})}
		close(s.w.done)
	})
	s.closeLost()
	w := s.w
	w.live.Store(false)
	w.cancel()
	w.mu.Lock()
	w.closed = true
	if w.ps != nil {
		w.ps.Close() // ends a Receive at once
	}
	w.mu.Unlock()
	<-w.done
	return nil
}

// WatchedPause implements [fleet.PauseWatcher]: it returns when origin's
// pause ends in the Store's copy of the pauses of every origin, and its
// reason (see Pause; "retry-after" for a pause set by a Store of an earlier
// version, which sends none), or the zero time, and ok false when the copy
// may be stale. It does no I/O; the first
// call starts the watch (one subscription and one goroutine per Store, until
// Close). See WatchInterval for how soon a pause set elsewhere is seen.
// While origin is backing off (see PushBack), until it is forgiven, ok is
// false: its requests ask Redis, which holds them one at a time.
// The copy keeps a pause of any length; a message on the Store's channel
// whose length is not a positive, finite number of microseconds is logged and
// ignored, and one past the longest time.Duration is kept for that long.
func (s *Store) WatchedPause(origin string) (until time.Time, why string, ok bool) {
	w := s.watcher()
	if !w.live.Load() {
		return time.Time{}, "", false
	}
	if w.n.Load() == 0 {
		return time.Time{}, "", true
	}
	if v, found := w.m.Load(origin); found {
		p := v.(watched)
		until, why = p.until, pacing.PauseReason(p.why)
	}
	if w.heeds.Load() > 0 {
		// An origin backing off gets one request at a time until it is
		// forgiven: its requests must ask Redis, which holds them.
		if v, found := w.m.Load(heedPrefix + origin); found && time.Now().Before(v.(watched).until) {
			return until, why, false
		}
	}
	return until, why, true
}

// watchLoop keeps w up to date until ctx is done: it subscribes, and after
// a failure, subscribes again after a back-off.
func (s *Store) watchLoop(ctx context.Context, w *watch) {
	defer close(w.done)
	backoff := 100 * time.Millisecond
	failing := false
	for {
		err := s.watchSession(ctx, w)
		w.live.Store(false)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errWatchHealthy) {
			backoff = 100 * time.Millisecond
			failing = false
		} else if !failing {
			failing = true
			s.log(ctx, slog.LevelWarn, "redisstore: watch of pauses failed; asking redis for every request", "err", err)
		}
		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		backoff = min(2*backoff, s.cfg.cooldown)
	}
}

// errWatchHealthy wraps the error that ended a session that had been live.
var errWatchHealthy = errors.New("watch was live")

// watchSession runs one subscription until it fails or ctx is done.
func (s *Store) watchSession(ctx context.Context, w *watch) (err error) {
	ps := s.client.Subscribe(ctx)
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		ps.Close()
		return ctx.Err()
	}
	w.ps = ps
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.ps = nil
		w.mu.Unlock()
		ps.Close()
	}()
	wasLive := false
	defer func() {
		if wasLive && err != nil {
			err = fmt.Errorf("%w: %w", errWatchHealthy, err)
		}
	}()
	sctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	err = ps.Subscribe(sctx, s.pausesChannel(), s.reasonsChannel())
	cancel()
	if err != nil {
		return err
	}
	interval := s.cfg.watchInterval
	timeout := interval
	pinged := false
	for {
		msg, err := ps.ReceiveTimeout(ctx, timeout)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			var ne net.Error
			if !pinged && errors.As(err, &ne) && ne.Timeout() {
				// Silence: ask for a sign of life.
				pctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
				err = ps.Ping(pctx)
				cancel()
				if err != nil {
					return err
				}
				pinged, timeout = true, s.cfg.timeout
				w.purge(false)
				continue
			}
			return err
		}
		pinged, timeout = false, interval
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind != "subscribe" {
				return fmt.Errorf("unexpected %s", m)
			}
			if m.Count < 2 {
				continue // the copy is live once both channels are
			}
			if err := s.loadPauses(ctx, w); err != nil {
				return err
			}
			w.live.Store(true)
			wasLive = true
		case *redis.Message:
			msg, why := m.Payload, ""
			if m.Channel == s.reasonsChannel() {
				i := strings.LastIndexByte(msg, ' ')
				if i < 0 {
					s.log(ctx, slog.LevelWarn, "redisstore: ignoring unreadable pause message", "msg", msg)
					continue
				}
				msg, why = msg[:i], pacing.PauseReason(msg[i+1:])
			}
			if err := s.apply(ctx, w, msg, why, time.Now()); err != nil {
				return err
			}
		case *redis.Pong:
		}
	}
}

// loadPauses adds the pauses in the sorted set to w.
func (s *Store) loadPauses(ctx context.Context, w *watch) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	defer cancel()
	res, err := pausesScript.Run(ctx, s.client, []string{s.pausesKey(), s.reasonsKey()}, maxWatchedPauses).StringSlice()
	if err != nil {
		return fmt.Errorf("reading the pauses: %w", err)
	}
	now := time.Now()
	if len(res) == 0 {
		return fmt.Errorf("reading the pauses: script returned nothing")
	}
	if res[0] != "0" {
		s.log(ctx, slog.LevelWarn, "redisstore: ignoring unreadable pauses", "key", s.pausesKey())
	}
	res = res[1:]
	if len(res)/3 > maxWatchedPauses {
		return fmt.Errorf("more than %d origins paused", maxWatchedPauses)
	}
	for i := 0; i+2 < len(res); i += 3 {
		why := res[i+2]
		if why != "" {
			why = pacing.PauseReason(why)
		}
		if err := s.apply(ctx, w, res[i]+" "+res[i+1], why, now); err != nil {
			return err
		}
	}
	return nil
}

// samePause is how close the ends of two messages of one pause are: they
// are sent by one script, and differ by how long apart they were read.
const samePause = time.Second

// apply adds to w the pause in msg ("origin remaining-µs"), for the reason
// why ("" if unknown), received at now. A pause without a reason keeps the
// one known for the origin's pause if it is the same pause (see samePause). Only the watch
// goroutine writes to w.m, so that n counts its entries.
func (s *Store) apply(ctx context.Context, w *watch, msg, why string, now time.Time) error {
	w.purge(false)
	i := strings.LastIndexByte(msg, ' ')
	if i <= 0 {
		s.log(ctx, slog.LevelWarn, "redisstore: ignoring unreadable pause message", "msg", msg)
		return nil
	}
	origin := msg[:i]
	// Any length that is a time is a pause, however long: one longer
	// than the longest Duration lasts that long.
	us, err := strconv.ParseFloat(msg[i+1:], 64)
	if err != nil || !(us > 0) || math.IsInf(us, 1) {
		s.log(ctx, slog.LevelWarn, "redisstore: ignoring unreadable pause message", "msg", msg)
		return nil
	}
	d := time.Duration(math.MaxInt64)
	if ns := us * float64(time.Microsecond); ns < float64(math.MaxInt64) {
		d = time.Duration(ns)
	}
	until := now.Add(d)
	if v, ok := w.m.Load(origin); ok {
		p := v.(watched)
		// The same pause (one message on each channel, with its
		// reason and without) ends within samePause of the known one.
		same := now.Before(p.until) && until.Sub(p.until).Abs() < samePause
		if why == "" && same {
			why = p.why
		}
		if p.until.Before(until) {
			w.m.Store(origin, watched{until: until, why: why})
		} else if same && why != p.why {
			w.m.Store(origin, watched{until: p.until, why: why})
		}
		return nil
	}
	if w.n.Load() >= maxWatchedPauses {
		w.purge(true)
		if w.n.Load() >= maxWatchedPauses {
			// A pause that cannot be kept: the copy would miss it.
			return fmt.Errorf("more than %d origins paused", maxWatchedPauses)
		}
	}
	w.m.Store(origin, watched{until: until, why: why})
	w.n.Add(1)
	if strings.HasPrefix(origin, heedPrefix) {
		w.heeds.Add(1)
	}
	return nil
}

// purge drops the pauses that have ended, if it has not done so for a
// second or if now is set.
func (w *watch) purge(now bool) {
	t := time.Now()
	if !now && t.Sub(w.lastPurge) < time.Second || w.n.Load() == 0 {
		return
	}
	w.lastPurge = t
	w.m.Range(func(k, v any) bool {
		if !t.Before(v.(watched).until) {
			w.m.Delete(k)
			w.n.Add(-1)
			if strings.HasPrefix(k.(string), heedPrefix) {
				w.heeds.Add(-1)
			}
		}
		return true
	})
}
