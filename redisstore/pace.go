package redisstore

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/redis/go-redis/v9"

	"github.com/f9014239/robots"
)

var _ fleet.Pacer = (*Store)(nil)

// paceKey is the key of origin's next free turn, and pauseKey the key of the
// end of its pause. The origin is their hash tag, so that both are in one
// hash slot of a Redis Cluster, as the scripts that use both need.
func (s *Store) paceKey(origin string) string    { return s.cfg.prefix + "pace:{" + origin + "}" }
func (s *Store) pauseKey(origin string) string   { return s.cfg.prefix + "pause:{" + origin + "}" }
func (s *Store) holdKey(origin string) string    { return s.cfg.prefix + "hold:{" + origin + "}" }
func (s *Store) backoffKey(origin string) string { return s.cfg.prefix + "backoff:{" + origin + "}" }

// Both keys hold a time in microseconds since the Unix epoch on the clock of
// the Redis server, never on a Store's own: the processes of a fleet agree on
// the time of a turn however far apart their clocks are. A time has at most
// 17 digits, enough for a pause of the longest time.Duration. A key expires
// keyMargin after the time it holds, once it can no longer delay a turn: a
// key with no expiry, like one that holds anything but a time, was not
// written by a Store, and is deleted when read.
// The key of the latest turn holds the interval that the turn keeps (see
// fleet.Pacer) beside its time, as "time:interval" in microseconds, or the
// time alone when the interval is zero: the format of earlier versions,
// which read it as a turn that keeps no interval, and which this one reads
// so too.
//
// Scripts written for Redis 3.2 and 4 must call redis.replicate_commands
// before TIME; Redis 5 and later replicate the effects of every script, and
// keep the function, deprecated, as one that does nothing.
const scriptHead = `
if redis.replicate_commands then redis.replicate_commands() end
local keyMargin = 1000 -- ms
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

-- read returns the time under key, or nil and 1 if key holds anything
-- else, which it deletes. A value with no expiry is not one a Store wrote.
local function read(key)
	local v = redis.pcall("GET", key)
	if v == false then
		return nil, 0
	end
	if type(v) == "string" and #v <= 17 and string.match(v, "^%d+$") and redis.call("PTTL", key) >= 0 then
		return tonumber(v), 0
	end
	redis.call("DEL", key)
	return nil, 1
end

-- readTurn returns the time and the interval under key, or nil and 1 if
-- key holds anything else, which it deletes.
local function readTurn(key)
	local v = redis.pcall("GET", key)
	if v == false then
		return nil, 0, 0
	end
	if type(v) == "string" then
		local at, every = string.match(v, "^(%d+):(%d+)$")
		if not at then
			at, every = string.match(v, "^%d+$"), "0"
		end
		if at and #at <= 17 and #every <= 17 and redis.call("PTTL", key) >= 0 then
			return tonumber(at), tonumber(every), 0
		end
	end
	redis.call("DEL", key)
	return nil, 0, 1
end

-- write sets key to the time at, until keyMargin after it.
local function write(key, at)
	redis.call("SET", key, string.format("%.0f", at), "PX", math.floor((at - now) / 1000) + keyMargin)
end
`

// reserveScript takes the next turn of an origin, unless a turn of it is in
// flight or the next is further away than a caller can wait, and returns
// {wait, taken, unreadable, inFlight, held}: the wait for the turn in
// microseconds (or, in flight, until a turn may be free), 1 if the turn is
// taken and 0 if not, a bit set (1 for KEYS[1], 2 for KEYS[2]) of the keys
// that held values it could not read, 1 if a turn is in flight, and 1 if
// the turn taken holds the origin.
//
// KEYS[1] holds the origin's latest turn and its interval, KEYS[2] the end
// of its pause, and KEYS[3] the ID of the turn in flight, if any, until its
// hold runs out; ARGV[1] is the caller's interval (negative if it does not
// know the origin's rules), ARGV[2] the longest wait the caller takes, and
// ARGV[3] the longest hold, all in microseconds. The turn is the latest of
// now, the end of the pause and the larger of |ARGV[1]| and the latest
// turn's interval after the latest turn. Taking it makes it the latest turn
// (with an ARGV[1] of zero too, so that a caller with a longer interval is
// spaced from it), which keeps ARGV[1], or if that is negative, the larger
// of -ARGV[1] and the previous turn's interval; it is kept until lastKeep
// after it, or its interval if that is longer.
//
// A turn that keeps an interval, or whose caller does not know the origin's
// rules (a fetch of robots.txt), or one of an origin backing off (KEYS[4],
// the back-off, exists until it is forgiven), holds the origin when ARGV[3]
// is positive: KEYS[3] holds its ID, ARGV[4], and its time, as "id:time",
// until the hold runs out, and
// KEYS[1] holds
// the end of its hold as the latest turn's time, until releaseScript puts
// the time of its answer there. So a holder that never releases its turn
// (a process killed) spaces the next from the end of its hold.
var reserveScript = redis.NewScript(scriptHead + `
local lastKeep = 60000000 -- µs
local every = tonumber(ARGV[1])
local maxWait = tonumber(ARGV[2])
local hold = tonumber(ARGV[3])
local ask, keep = every, every
if every < 0 then ask, keep = -every, -every end
local turn, unreadable = now, 0
local pause, bad = read(KEYS[2])
if pause and pause > turn then turn = pause end
unreadable = unreadable + 2 * bad
local last, lastEvery, bad1 = readTurn(KEYS[1])
unreadable = unreadable + bad1
local backingOff = redis.call("EXISTS", KEYS[4]) == 1
local held = redis.call("GET", KEYS[3])
if held then
	-- In flight: a turn may be free once it is answered, which cannot
	-- be before the interval after it left.
	local at = tonumber(string.match(held, ":(%d+)$") or "") or now
	local free = math.max(at + math.max(ask, lastEvery), turn) - now
	return {math.max(free, 0), 0, unreadable, 1, 0}
end
if last then
	local gap = math.max(ask, lastEvery)
	if last + gap > turn then turn = last + gap end
	if every < 0 then keep = math.max(keep, lastEvery) end
end
local wait = turn - now
if wait > 0 and wait > maxWait then
	return {wait, 0, unreadable, 0, 0}
end
local holds = 0
local recorded = turn
if hold > 0 and (keep > 0 or every < 0 or backingOff) then
	holds = 1
	recorded = turn + hold
	redis.call("SET", KEYS[3], ARGV[4] .. ":" .. string.format("%.0f", turn), "PX", math.floor((recorded - now) / 1000) + 1)
end
local v = string.format("%.0f", recorded)
if keep > 0 then v = v .. ":" .. string.format("%.0f", keep) end
redis.call("SET", KEYS[1], v, "PX", math.floor((recorded + math.max(lastKeep, keep) - now) / 1000))
return {wait, 1, unreadable, 0, holds}
`)

// releaseScript ends the hold of the turn ARGV[1] (its ID) of an origin, if
// KEYS[2] still holds it ("id:time"): the latest turn in KEYS[1] becomes now, on the
// clock of the Redis server, with the interval it kept. It returns 1 if it
// released the turn, and 0 if not.
var releaseScript = redis.NewScript(scriptHead + `
local lastKeep = 60000000 -- µs
local v = redis.call("GET", KEYS[2])
if type(v) ~= "string" or string.match(v, "^(%d+):") ~= ARGV[1] then
	return 0
end
redis.call("DEL", KEYS[2])
local last, lastEvery = readTurn(KEYS[1])
local v = string.format("%.0f", now)
if lastEvery > 0 then v = v .. ":" .. string.format("%.0f", lastEvery) end
redis.call("SET", KEYS[1], v, "PX", math.floor(math.max(lastKeep, lastEvery) / 1000))
return 1
`)

// pushBackScript records an incident of pushback of an origin under a
// back-off, and returns {pause, new}: how many microseconds from now the
// back-off pauses the origin, and 1 for a new incident or 0 for one of the
// burst of the current one.
//
// KEYS[1] holds the origin's back-off as "level:start:end" (microseconds on
// the server's clock); ARGV[1] is how long ago the request was sent,
// ARGV[2], ARGV[3] and ARGV[4] the back-off's First, Max and Forgive, in
// microseconds, and ARGV[5] the random lengthening, in millionths of the
// pause's tenth.
var pushBackScript = redis.NewScript(scriptHead + `
local burstSlack = 1000000 -- µs
local sent = now - tonumber(ARGV[1])
local first, most, forgive = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local level, start, stop = 0, 0, 0
local v = redis.call("GET", KEYS[1])
if type(v) == "string" then
	local l, s, e = string.match(v, "^(%d+):(%d+):(%d+)$")
	if l then level, start, stop = tonumber(l), tonumber(s), tonumber(e) end
end
if level > 0 and sent <= start + burstSlack then
	return {math.max(stop - now, 0), 0}
end
if level > 0 and now > stop + forgive then level = 0 end
level = level + 1
local d = first
for i = 2, level do
	if d >= most then break end
	d = d * 2
end
d = math.min(d, most)
d = d + math.floor(d / 10 * tonumber(ARGV[5]) / 1000000)
redis.call("SET", KEYS[1], string.format("%d:%.0f:%.0f", level, now, now + d), "PX", math.floor((d + forgive) / 1000) + keyMargin)
return {d, 1}
`)

// pausedScript returns {left, unreadable}: how many microseconds are left of
// the pause in KEYS[1], or 0, and 1 if KEYS[1] held a value it could not
// read, or 0.
var pausedScript = redis.NewScript(scriptHead + `
local pause, bad = read(KEYS[1])
if pause and pause > now then return {pause - now, bad} end
return {0, bad}
`)

// pauseScript holds back the turns of an origin until ARGV[1] microseconds
// from now, unless KEYS[1] holds a pause that ends later, and then publishes
// the origin ARGV[3] and the pause's length on the channel ARGV[2]. It
// returns {set, unreadable}: 1 if it set the pause, and 0 if not; 1 if
// KEYS[1] held a value it could not read, and 0 if not.
var pauseScript = redis.NewScript(scriptHead + `
local till = now + tonumber(ARGV[1])
local pause, bad = read(KEYS[1])
if pause and pause >= till then
	return {0, bad}
end
write(KEYS[1], till)
redis.call("PUBLISH", ARGV[2], ARGV[3] .. " " .. ARGV[1])
return {1, bad}
`)

// Reserve implements [fleet.Pacer], kept in Redis and shared by every user
// of the Redis: it takes origin's next turn, at least the larger of
// r.Every and the latest turn's interval after the latest turn taken (after
// its answer, once released), and not before origin's pause ends, and
// returns how long the caller must wait for it, without waiting itself. A
// turn that keeps an interval holds the origin, when r.Hold is positive,
// until Release or r.Hold after it: meanwhile Reserve takes no turn and
// returns InFlight, with the wait until the interval after the held turn
// has passed (the earliest its answer could free a turn). When r.Known is
// false (the caller does not know the origin's rules), the turn keeps the
// larger of r.Every and the latest turn's interval, as fleet.Pacer
// documents. When the wait is longer than r.MaxWait, it takes no turn and
// returns the wait. Turns are handed out first come, first served, each
// once, and timed by the clock of the Redis server.
//
// Each call is one Redis command: a Lua script that reads the pause, the
// latest turn and the turn in flight, and, if the caller can wait, records
// its turn as the latest. A turn taken so costs one round trip, and its
// release one more.
func (s *Store) Reserve(ctx context.Context, origin string, r fleet.TurnRequest) (fleet.Turn, error) {
	s.once.Do(s.init)
	keys := []string{s.paceKey(origin), s.pauseKey(origin), s.holdKey(origin), s.backoffKey(origin)}
	id := r.ID
	if id == 0 {
		id = rand.Uint64() | 1
	}
	var res []int64
	err := s.do(ctx, "pace", func(ctx context.Context) error {
		var err error
		// every rounds up, so that turns are never closer than
		// every; the script reads a negative one as "rules unknown"
		// (and -1 µs as unknown with no interval); maxWait rounds
		// down.
		e := ceilMicros(max(r.Every, 0))
		if !r.Known {
			e = -max(e, 1)
		}
		res, err = reserveScript.Run(ctx, s.client, keys, e, max(r.MaxWait, 0).Microseconds(), ceilMicros(r.Hold),
			strconv.FormatUint(id, 10)).Int64Slice()
		return err
	})
	if err != nil {
		return fleet.Turn{}, err
	}
	if len(res) != 5 {
		return fleet.Turn{}, fmt.Errorf("redisstore: pace: script returned %v", res)
	}
	s.unreadable(ctx, res[2], keys[:2]...)
	t := fleet.Turn{Wait: micros(res[0]), OK: res[1] == 1, InFlight: res[3] == 1}
	if t.OK && res[4] == 1 {
		t.ID = id
	}
	return t, nil
}

// Release implements [fleet.Pacer]: it ends the hold of the turn a.ID of
// origin, if it still holds it, and spaces the next turn from now on the
// clock of the Redis server (the answer reaches Redis after it reached the
// caller). One Redis command.
func (s *Store) Release(ctx context.Context, origin string, a fleet.Answer) error {
	s.once.Do(s.init)
	id := a.ID
	if id == 0 {
		return nil
	}
	keys := []string{s.paceKey(origin), s.holdKey(origin)}
	return s.do(ctx, "pace", func(ctx context.Context) error {
		return releaseScript.Run(ctx, s.client, keys, strconv.FormatUint(id, 10)).Err()
	})
}

// PushBack implements [fleet.Pacer]: it records the incident in Redis, so
// that the back-off's level is the fleet's, and pauses origin for every user
// of the Redis (see Pause). A request sent up to a second after the current
// back-off began counts as of its burst: sent is on the caller's clock and
// the back-off's start on the server's, and the other processes of the
// fleet hear of a pause only when its message reaches them. A new incident costs three Redis commands, one
// of the burst of the current back-off one.
func (s *Store) PushBack(ctx context.Context, origin string, sent time.Time, b robots.Backoff) (time.Time, error) {
	s.once.Do(s.init)
	var res []int64
	err := s.do(ctx, "pause", func(ctx context.Context) error {
		var err error
		res, err = pushBackScript.Run(ctx, s.client, []string{s.backoffKey(origin)},
			ceilMicros(time.Since(sent)), ceilMicros(b.First), ceilMicros(b.Max), ceilMicros(b.Forgive),
			rand.IntN(1000000)).Int64Slice()
		return err
	})
	if err != nil {
		return time.Time{}, err
	}
	if len(res) != 2 {
		return time.Time{}, fmt.Errorf("redisstore: pushback: script returned %v", res)
	}
	until := time.Now().Add(micros(res[0]))
	if res[1] == 1 {
		if err := s.Pause(ctx, origin, until); err != nil {
			return time.Time{}, err
		}
		// The copies of the pauses learn that origin is backing off
		// until it is forgiven, so that they send its requests to
		// Reserve, which holds them one at a time.
		if err := s.noteHeed(ctx, origin, micros(res[0])+b.Forgive); err != nil {
			return time.Time{}, err
		}
	}
	return until, nil
}

// Pause implements [fleet.Pacer]: it holds back origin's turns, for every
// user of the Redis, until at least until, and tells the Stores that watch
// the pauses (two commands; pauses are rare). It never shortens a pause that
// ends later. The pause is kept on the clock of the Redis server: it ends as
// long after the call as until is after the call on the caller's clock.
// A pause of any length is kept and reaches the copies of the Stores that
// watch (see WatchedPause): one past the longest time.Duration from now
// lasts that long.
func (s *Store) Pause(ctx context.Context, origin string, until time.Time) error {
	s.once.Do(s.init)
	d := time.Until(until)
	if d <= 0 {
		return nil
	}
	// The sorted set of pauses first, then the pause and its message:
	// a Store that starts watching after the message was sent finds the
	// pause in the set (see watch.go).
	var bad int64
	err := s.do(ctx, "pause", func(ctx context.Context) error {
		var err error
		bad, err = notePauseScript.Run(ctx, s.client, []string{s.pausesKey()}, origin, ceilMicros(d)).Int64()
		return err
	})
	if err != nil {
		return err
	}
	if bad != 0 {
		s.log(ctx, slog.LevelWarn, "redisstore: ignoring unreadable pauses", "key", s.pausesKey())
	}
	key := s.pauseKey(origin)
	var res []int64
	err = s.do(ctx, "pause", func(ctx context.Context) error {
		var err error
		res, err = pauseScript.Run(ctx, s.client, []string{key}, ceilMicros(d), s.pausesChannel(), origin).Int64Slice()
		return err
	})
	if err != nil {
		return err
	}
	if len(res) != 2 {
		return fmt.Errorf("redisstore: pause: script returned %v", res)
	}
	s.unreadable(ctx, res[1], key)
	return nil
}

// PausedUntil implements [fleet.PauseChecker]: when origin's pause ends, on
// the caller's clock, or the zero time if it is not paused. It answers from
// the Store's copy of the pauses (see WatchedPause) while that is up to date,
// and otherwise asks Redis, in one command.
func (s *Store) PausedUntil(ctx context.Context, origin string) (time.Time, error) {
	s.once.Do(s.init)
	if until, ok := s.WatchedPause(origin); ok {
		return until, nil
	}
	key := s.pauseKey(origin)
	var res []int64
	err := s.do(ctx, "pace", func(ctx context.Context) error {
		var err error
		res, err = pausedScript.Run(ctx, s.client, []string{key}).Int64Slice()
		return err
	})
	if err != nil {
		return time.Time{}, err
	}
	if len(res) != 2 {
		return time.Time{}, fmt.Errorf("redisstore: pace: script returned %v", res)
	}
	s.unreadable(ctx, res[1], key)
	if res[0] <= 0 {
		return time.Time{}, nil
	}
	return time.Now().Add(micros(res[0])), nil
}

var _ fleet.PauseChecker = (*Store)(nil)

// unreadable logs each of keys whose bit is set in bits: a value that a
// script could not read as a time, and deleted.
func (s *Store) unreadable(ctx context.Context, bits int64, keys ...string) {
	for i, key := range keys {
		if bits&(1<<i) != 0 {
			s.log(ctx, slog.LevelWarn, "redisstore: ignoring unreadable pace", "key", key)
		}
	}
}

// micros returns us microseconds as a Duration, or the longest Duration if
// us is longer.
func micros(us int64) time.Duration {
	if us > math.MaxInt64/int64(time.Microsecond) {
		return math.MaxInt64
	}
	return time.Duration(us) * time.Microsecond
}

// ceilMicros returns d in microseconds, rounded up; zero if d is negative.
func ceilMicros(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d-1)/time.Microsecond) + 1
}
