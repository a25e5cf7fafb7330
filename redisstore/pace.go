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
	"github.com/f9014239/robots/internal/pacing"

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
func (s *Store) estKey(origin string) string     { return s.cfg.prefix + "est:{" + origin + "}" }
func (s *Store) lateKey(origin string) string    { return s.cfg.prefix + "late:{" + origin + "}" }
func (s *Store) whyKey(origin string) string     { return s.cfg.prefix + "pausewhy:{" + origin + "}" }

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

// The scripts below apply the rules of the Pacer contract that package
// internal/pacing writes in Go (pacing.State, in internal/pacing/rules.go);
// a comment in each part names the Go function it mirrors. An origin's State
// is kept in seven keys, each with its own expiry, rather than one value, so
// that keys written by earlier versions stay readable, and keys of this
// version stay readable by them:
//
//   - paceKey: the latest turn and its interval (State.Last, LastEvery);
//     while a turn holds the origin, the end of its hold, so that a holder
//     that never releases its turn (a process killed) spaces the next from
//     the end of its hold;
//   - pauseKey: the end of the pause (State.PausedUntil), until which the
//     origin is heeded (State.HeedUntil);
//   - whyKey: the pause's reason (State.PauseWhy), "end:reason", which
//     holds for the pause under pauseKey only if their ends are the same:
//     a pause of an earlier version, which wrote no reason, is one of
//     pacing.ReasonRetryAfter;
//   - holdKey: the held turn, "id:time:until" (State.HeldID, HeldAt,
//     HeldUntil), kept lastKeep past its end;
//   - lateKey: the ID of the turn whose hold ran out last (State.LateID),
//     kept lastKeep past the hold's end, for its late answer;
//   - backoffKey: the back-off, "level:start:end" (State.BoLevel, BoStart,
//     BoEnd), kept until it is forgiven (State.HeedUntil);
//   - estKey: the response-time estimate (State.Est), in microseconds.
//
// The latest turn's reason (State.LastWhy) is not kept: a fleet.TurnRequest
// carries none. A late answer that pauses the origin for the latest turn's
// interval gives the pause pacing.ReasonCrawlDelay, as State.Release does
// for an interval whose reason it was not told.
//
// The scripts that use them all take the same KEYS, in the order of
// originKeys.
const rulesHead = `
local lastKeep = 60000000 -- µs
local adaptiveFloor = 10000 -- µs: pacing.AdaptiveFloor

-- readHold returns the time and the end of the held turn under key, and
-- its ID, or nil if there is none. A hold of earlier versions ("id:time")
-- ends when its key expires.
local function readHold(key)
	local v = redis.call("GET", key)
	if type(v) ~= "string" then return nil end
	local id, at, till = string.match(v, "^(%d+):(%d+):(%d+)$")
	if not id then
		id, at = string.match(v, "^(%d+):(%d+)$")
		if not id then
			redis.call("DEL", key)
			return nil
		end
		till = now + math.max(redis.call("PTTL", key), 1) * 1000
	end
	return tonumber(at), tonumber(till), id
end

-- readEst returns the estimate under key, or 0.
local function readEst(key)
	local v = redis.call("GET", key)
	if type(v) == "string" and #v <= 17 and string.match(v, "^%d+$") then return tonumber(v) end
	if v then redis.call("DEL", key) end
	return 0
end

-- readWhy returns the reason of the pause that ends at pause, kept under
-- key, or "retry-after" if key holds none for that end.
local function readWhy(key, pause)
	local v = redis.call("GET", key)
	if type(v) == "string" and #v <= 64 then
		local till, why = string.match(v, "^(%d+):([%a%-]+)$")
		if till and tonumber(till) == pause then return why end
	end
	return "retry-after"
end

-- writePause mirrors State.Pause, for a pause that ends later than the one
-- under pauseKey: it sets the pause to end at till, for the reason why.
local function writePause(pauseKey, whyKey, till, why)
	write(pauseKey, till)
	redis.call("SET", whyKey, string.format("%.0f:%s", till, why), "PX", math.floor((till - now) / 1000) + keyMargin)
end

-- sample mirrors State.Sample: a slower answer is taken at once, a faster
-- one a quarter of the way; a failure never lowers the estimate.
local function sample(key, est, took, failed)
	took = math.max(took, 0)
	if took >= est then
		est = took
	elseif failed then
		return est
	else
		est = est - math.floor((est - took) / 4)
	end
	redis.call("SET", key, string.format("%.0f", est), "PX", math.floor(math.max(lastKeep, 2 * est) / 1000) + keyMargin)
	return est
end

-- adaptive mirrors State.Adaptive: twice the estimate, at most most; none
-- while the estimate is under adaptiveFloor.
local function adaptive(est, most)
	if most <= 0 or est < adaptiveFloor then return 0 end
	if est > math.floor(most / 2) then return most end
	return 2 * est
end

-- expire mirrors State.expire: a hold that ran out by now ends, as if
-- answered at its end (which paceKey holds), and is no sample of the
-- estimate; its ID is kept under lateKey, for its late answer. It returns
-- the held turn's time, end and ID if it still holds.
local function expire(holdKey, lateKey)
	local at, till, id = readHold(holdKey)
	if at and till <= now then
		redis.call("SET", lateKey, id, "PX", math.max(math.floor((till + lastKeep - now) / 1000), 1))
		redis.call("DEL", holdKey)
		return nil
	end
	return at, till, id
end

-- release mirrors State.Release of the answer to the turn id, which took
-- took µs (failed: a network error or a timeout; unsent: never sent), under
-- the cap maxAdaptive of the adaptive delay. It returns 1 if the turn held
-- the origin, and 0 if not; then the length of the pause it set in µs (0
-- if none) and its reason.
local function release(id, took, failed, unsent, maxAdaptive)
	local at, till, held = expire(KEYS[3], KEYS[6])
	if at and held == id then
		redis.call("DEL", KEYS[3])
		-- State.unhold: the answer (the turn's time, for a request not
		-- sent) is the latest turn's time, with the interval it keeps.
		local answer = now
		if unsent then
			answer = at
		else
			sample(KEYS[5], readEst(KEYS[5]), took, failed)
		end
		answer = math.max(answer, at)
		local last, lastEvery = readTurn(KEYS[1])
		local v = string.format("%.0f", answer)
		if lastEvery > 0 then v = v .. ":" .. string.format("%.0f", lastEvery) end
		redis.call("SET", KEYS[1], v, "PX", math.max(math.floor((answer - now + math.max(lastKeep, lastEvery)) / 1000), 1))
		return 1, 0, ""
	end
	-- A late answer: the spacing after it pauses the origin, and a slower
	-- one raises the estimate. Any other changes nothing.
	if unsent or redis.pcall("GET", KEYS[6]) ~= id then
		return 0, 0, ""
	end
	redis.call("DEL", KEYS[6])
	local est = readEst(KEYS[5])
	if took > est then est = sample(KEYS[5], est, took, true) end
	local last, lastEvery = readTurn(KEYS[1])
	local gap, why = lastEvery, "crawl-delay"
	local ad = adaptive(est, maxAdaptive)
	if ad > gap then gap, why = ad, "slow-answers" end
	if gap <= 0 then return 0, 0, "" end
	local pause = read(KEYS[2])
	if pause and pause >= now + gap then return 0, 0, "" end
	writePause(KEYS[2], KEYS[7], now + gap, why)
	return 0, gap, why
end
`

// originKeys returns the keys of origin that the scripts of its pace use,
// as KEYS in this order.
func (s *Store) originKeys(origin string) []string {
	return []string{s.paceKey(origin), s.pauseKey(origin), s.holdKey(origin), s.backoffKey(origin),
		s.estKey(origin), s.lateKey(origin), s.whyKey(origin)}
}

// reserveScript takes the next turn of an origin (State.Reserve), unless a
// turn of it is in flight or the next is further away than a caller can
// wait, and returns {wait, taken, unreadable, inFlight, held, why}: the wait
// for the turn in microseconds (or, in flight, until a turn may be free), 1
// if the turn is taken and 0 if not, a bit set (1 for KEYS[1], 2 for
// KEYS[2]) of the keys that held values it could not read, 1 if a turn is in
// flight, 1 if the turn taken holds the origin, and what sets the wait, if
// the script knows it (a pause's reason, "slow-answers" for the adaptive
// delay), or "".
//
// KEYS are originKeys; ARGV[1] is the caller's interval (negative if it does
// not know the origin's rules), ARGV[2] the longest wait the caller takes,
// ARGV[3] the longest hold, all in microseconds, ARGV[4] the ID of a turn
// that holds, ARGV[5] the cap of the adaptive delay (0: none), in
// microseconds, and ARGV[6], if not "0", the ID of a turn to release first,
// as never sent (see lostTurns).
var reserveScript = redis.NewScript(scriptHead + rulesHead + `
if ARGV[6] ~= "0" then release(ARGV[6], 0, false, true, 0) end
local every = tonumber(ARGV[1])
local maxWait = tonumber(ARGV[2])
local hold = tonumber(ARGV[3])
local maxAdaptive = tonumber(ARGV[5])
local ask, keep = every, every
if every < 0 then ask, keep = -every, -every end
local unreadable = 0
local pause, bad = read(KEYS[2])
unreadable = unreadable + 2 * bad
local last, lastEvery, bad1 = readTurn(KEYS[1])
unreadable = unreadable + bad1
local heldAt, heldUntil = expire(KEYS[3], KEYS[6])
local est = readEst(KEYS[5])
-- State.gap: the largest of the caller's interval, the latest turn's and
-- the adaptive delay.
local gap, gapWhy = math.max(ask, lastEvery), ""
local ad = adaptive(est, maxAdaptive)
if ad > gap then gap, gapWhy = ad, "slow-answers" end
-- State.Next, a turn held: it may be free the gap after its answer, due
-- at its time plus the estimate (or now, if that has passed), no later
-- than the end of its hold.
if heldAt then
	local answer = math.min(math.max(heldAt + est, now), heldUntil)
	local free = answer + gap
	if pause and pause > free then free = pause end
	return {math.max(free - now, 0), 0, unreadable, 1, 0, ""}
end
-- State.Next: the first instant after the pause that is the gap after the
-- latest turn.
local turn, why = now, ""
if pause and pause > turn then turn, why = pause, readWhy(KEYS[7], pause) end
if last and last + gap > turn then turn, why = last + gap, gapWhy end
-- State.Reserve: a turn further away than maxWait (strictly) is not taken.
local wait = turn - now
if wait > 0 and wait > maxWait then
	return {wait, 0, unreadable, 0, 0, why}
end
-- State.Reserve: with the rules unknown, the turn keeps the larger of the
-- caller's interval and the latest turn's.
if every < 0 and last then keep = math.max(keep, lastEvery) end
-- State.Reserve: the turn holds the origin if it keeps an interval, the
-- rules are unknown, the origin is heeded (paused, or backing off until
-- it is forgiven: State.HeedUntil) or the adaptive delay is on.
local heeded = (pause and pause > now) or redis.call("EXISTS", KEYS[4]) == 1
local holds = 0
local recorded = turn
if hold > 0 and (keep > 0 or every < 0 or heeded or maxAdaptive > 0) then
	-- State.hold
	holds = 1
	recorded = turn + hold
	redis.call("SET", KEYS[3], string.format("%s:%.0f:%.0f", ARGV[4], turn, recorded),
		"PX", math.floor((recorded + lastKeep - now) / 1000) + 1)
end
local v = string.format("%.0f", recorded)
if keep > 0 then v = v .. ":" .. string.format("%.0f", keep) end
redis.call("SET", KEYS[1], v, "PX", math.floor((recorded + math.max(lastKeep, keep) - now) / 1000))
if wait <= 0 then why = "" end
return {wait, 1, unreadable, 0, holds, why}
`)

// releaseScript notes the answer to the turn ARGV[1] (its ID) of an origin
// (State.Release): the turn that holds the origin ends its hold, answered
// now on the clock of the Redis server, ARGV[2] µs after it (a failure if
// ARGV[3] is 1), or never sent if ARGV[4] is 1; the answer to a turn whose
// hold ran out (a late answer) pauses the origin, under the cap ARGV[5] (in
// µs) of the adaptive delay. It returns {released, pause, why}: 1 if it
// released the turn, and 0 if not; the length of the pause it set, in µs,
// or 0; and the pause's reason.
//
// KEYS are originKeys.
var releaseScript = redis.NewScript(scriptHead + rulesHead + `
local released, pause, why = release(ARGV[1], tonumber(ARGV[2]), ARGV[3] == "1", ARGV[4] == "1", tonumber(ARGV[5]))
return {released, pause, why}
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
-- State.PushBack, but for burstSlack: in a fleet, a request sent up to a
-- second after the back-off began, by a process that had not heard of it
-- yet, is of its burst too.
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
-- BackoffPause: First doubled per level up to Max, lengthened by the
-- random fraction ARGV[5] (in millionths) of its tenth.
local d = first
for i = 2, level do
	if d >= most then break end
	d = d * 2
end
d = math.min(d, math.max(most, first))
d = d + math.floor(d / 10 * tonumber(ARGV[5]) / 1000000)
-- The key is kept until the back-off is forgiven (State.HeedUntil).
redis.call("SET", KEYS[1], string.format("%d:%.0f:%.0f", level, now, now + d), "PX", math.floor((d + forgive) / 1000) + keyMargin)
return {d, 1}
`)

// pausedScript returns {left, unreadable, why}: how many microseconds are
// left of the pause in KEYS[1], or 0; 1 if KEYS[1] held a value it could
// not read, or 0; and the pause's reason, kept in KEYS[2] (see rulesHead).
var pausedScript = redis.NewScript(scriptHead + rulesHead + `
local pause, bad = read(KEYS[1])
if pause and pause > now then return {pause - now, bad, readWhy(KEYS[2], pause)} end
return {0, bad, ""}
`)

// pauseScript holds back the turns of an origin until ARGV[1] microseconds
// from now, for the reason ARGV[2], unless KEYS[1] holds a pause that ends
// later. It returns {set, unreadable}: 1 if it set the pause, and 0 if not;
// 1 if KEYS[1] held a value it could not read, and 0 if not.
//
// KEYS are the origin's pauseKey and whyKey.
var pauseScript = redis.NewScript(scriptHead + rulesHead + `
local till = now + tonumber(ARGV[1])
local pause, bad = read(KEYS[1])
if pause and pause >= till then
	return {0, bad}
end
writePause(KEYS[1], KEYS[2], till, ARGV[2])
return {1, bad}
`)

// Reserve implements [fleet.Pacer], kept in Redis and shared by every user
// of the Redis, with the rules of the contract (those of package
// internal/pacing, which the scripts mirror): it takes origin's next turn,
// the first instant after origin's pause that is at least the spacing after
// the latest turn (after its answer once released, after its hold's end if
// never released), and returns how long the caller must wait for it,
// without waiting itself. The spacing is the largest of r.Every, the latest
// turn's interval and the adaptive delay (twice the origin's response-time
// estimate, at most r.MaxAdaptive, none while the estimate is under 10 ms).
// A turn holds the origin, when r.Hold is positive, if it keeps an interval,
// the rules are unknown, the adaptive delay is on or the origin is paused or
// backing off, until Release or r.Hold after it: meanwhile Reserve takes no
// turn and returns InFlight, with the wait until a turn may be free. A turn
// further away than r.MaxWait (strictly) is not taken. Turns are handed out
// first come, first served, each once, and timed by the clock of the Redis
// server. The Turn's Why is the pause's reason when a pause sets its wait,
// pacing.ReasonSlowAnswers when the adaptive delay does, and "" otherwise.
//
// Each call is one Redis command: a Lua script that reads the origin's
// keys and, if the caller can wait, records its turn as the latest. A turn
// taken so costs one round trip, and its release one more.
//
// A call that gets no answer from Redis (it times out, or its connection
// fails) may have taken a turn all the same: its command may have reached
// Redis. The Store remembers such a turn, when it would hold the origin,
// and releases it as never sent (see fleet.Answer's Unsent) once it tries
// Redis again, at the latest when the Cooldown that the failure started
// ends: in the next Reserve of the origin, or on a goroutine of its own
// (which Close stops), so that a slow moment of Redis does not leave the
// origin held for r.Hold by a turn that no one releases.
func (s *Store) Reserve(ctx context.Context, origin string, r fleet.TurnRequest) (fleet.Turn, error) {
	s.once.Do(s.init)
	keys := s.originKeys(origin)
	id := r.ID
	if id == 0 {
		id = rand.Uint64() | 1
	}
	var res []any
	var lost lostTurn
	sent := false
	err := s.do(ctx, "pace", func(ctx context.Context) error {
		var err error
		sent = true
		// every rounds up, so that turns are never closer than
		// every; the script reads a negative one as "rules unknown"
		// (and -1 µs as unknown with no interval); maxWait rounds
		// down.
		e := ceilMicros(max(r.Every, 0))
		if !r.Known {
			e = -max(e, 1)
		}
		lost = s.lost.take(origin, s.cfg.timeout)
		res, err = reserveScript.Run(ctx, s.client, keys, e, max(r.MaxWait, 0).Microseconds(), ceilMicros(r.Hold),
			strconv.FormatUint(id, 10), ceilMicros(r.MaxAdaptive), strconv.FormatUint(lost.id, 10)).Slice()
		return err
	})
	if err != nil {
		if lost.id != 0 && !answered(err) {
			s.lost.put(lost) // the release may not have reached Redis either
		}
		if sent && r.Hold > 0 && !answered(err) {
			// The command may have taken a turn that holds the
			// origin until r.Hold after the turn, r.MaxWait away
			// at the most.
			s.lost.put(lostTurn{origin: origin, id: id, asked: time.Now(),
				until: time.Now().Add(min(max(r.MaxWait, 0), maxLostWait) + r.Hold)})
			s.flushLost()
		}
		return fleet.Turn{}, err
	}
	n, ok := ints(res, 5)
	if !ok || len(res) != 6 {
		return fleet.Turn{}, fmt.Errorf("redisstore: pace: script returned %v", res)
	}
	why, _ := res[5].(string)
	s.unreadable(ctx, n[2], keys[:2]...)
	t := fleet.Turn{Wait: micros(n[0]), OK: n[1] == 1, InFlight: n[3] == 1, Why: why}
	if t.OK && n[4] == 1 {
		t.ID = id
	}
	return t, nil
}

// ints returns the first n elements of res, which a script returned, as
// integers; ok is false if there are fewer, or one is not an integer.
func ints(res []any, n int) (v []int64, ok bool) {
	if len(res) < n {
		return nil, false
	}
	v = make([]int64, n)
	for i := range n {
		if v[i], ok = res[i].(int64); !ok {
			return nil, false
		}
	}
	return v, true
}

// Release implements [fleet.Pacer] with the rules of the contract (see
// Reserve): it ends the hold of the turn a.ID of origin, if it still holds
// it, spaces the next turn from now on the clock of the Redis server (the
// answer reaches Redis after it reached the caller), or from the turn's
// time if a.Unsent, and takes a.Took (a.Failed) as a sample of the
// origin's response-time estimate, which the Redis keeps for the fleet. One
// Redis command; the answer to a turn whose hold ran out (a late answer),
// which pauses the origin, costs one more, which tells the Stores that
// watch the pauses (see Pause).
func (s *Store) Release(ctx context.Context, origin string, a fleet.Answer) error {
	s.once.Do(s.init)
	if a.ID == 0 {
		return nil
	}
	keys := s.originKeys(origin)
	failed, unsent := 0, 0
	if a.Failed {
		failed = 1
	}
	if a.Unsent {
		unsent = 1
	}
	var res []any
	err := s.do(ctx, "pace", func(ctx context.Context) error {
		var err error
		res, err = releaseScript.Run(ctx, s.client, keys, strconv.FormatUint(a.ID, 10), ceilMicros(a.Took), failed,
			unsent, ceilMicros(a.MaxAdaptive)).Slice()
		return err
	})
	if err != nil {
		return err
	}
	n, ok := ints(res, 2)
	if !ok || len(res) != 3 {
		return fmt.Errorf("redisstore: pace: script returned %v", res)
	}
	if n[1] > 0 {
		why, _ := res[2].(string)
		return s.announce(ctx, origin, n[1], pacing.PauseReason(why))
	}
	return nil
}

// PushBack implements [fleet.Pacer]: it records the incident in Redis, so
// that the back-off's level is the fleet's, and pauses origin for every user
// of the Redis (see Pause), for the reason pacing.ReasonBackoff. A request
// sent up to a second after the current back-off began counts as of its
// burst: sent is on the caller's clock and the back-off's start on the
// server's, and the other processes of the fleet hear of a pause only when
// its message reaches them. A new incident costs four Redis commands, one
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
		if err := s.Pause(ctx, origin, until, pacing.ReasonBackoff); err != nil {
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
// user of the Redis, until at least until, for the reason why, and tells the
// Stores that watch the pauses (two commands; pauses are rare; one, if the
// origin is paused longer already). It never shortens a pause that ends
// later. The pause is kept on the clock of the Redis server: it ends as long
// after the call as until is after the call on the caller's clock. A pause
// of any length is kept and reaches the copies of the Stores that watch (see
// WatchedPause): one past the longest time.Duration from now lasts that
// long. The reason is kept with the pause; one that is not a reason that
// spaces turns (see package internal/pacing's Spacing: "retry-after",
// "ratelimit", "backoff", ...) is kept as "retry-after".
func (s *Store) Pause(ctx context.Context, origin string, until time.Time, why string) error {
	s.once.Do(s.init)
	d := time.Until(until)
	if d <= 0 {
		return nil
	}
	why = pacing.PauseReason(why)
	keys := []string{s.pauseKey(origin), s.whyKey(origin)}
	var res []int64
	err := s.do(ctx, "pause", func(ctx context.Context) error {
		var err error
		res, err = pauseScript.Run(ctx, s.client, keys, ceilMicros(d), why).Int64Slice()
		return err
	})
	if err != nil {
		return err
	}
	if len(res) != 2 {
		return fmt.Errorf("redisstore: pause: script returned %v", res)
	}
	s.unreadable(ctx, res[1], keys[0])
	if res[0] == 0 {
		return nil
	}
	return s.announce(ctx, origin, ceilMicros(d), why)
}

// PausedUntil implements [fleet.PauseChecker]: when origin's pause ends, on
// the caller's clock, and its reason, or the zero time if it is not paused.
// It answers from the Store's copy of the pauses (see WatchedPause) while
// that is up to date, and otherwise asks Redis, in one command.
func (s *Store) PausedUntil(ctx context.Context, origin string) (time.Time, string, error) {
	s.once.Do(s.init)
	if until, why, ok := s.WatchedPause(origin); ok {
		return until, why, nil
	}
	keys := []string{s.pauseKey(origin), s.whyKey(origin)}
	var res []any
	err := s.do(ctx, "pace", func(ctx context.Context) error {
		var err error
		res, err = pausedScript.Run(ctx, s.client, keys).Slice()
		return err
	})
	if err != nil {
		return time.Time{}, "", err
	}
	n, ok := ints(res, 2)
	if !ok || len(res) != 3 {
		return time.Time{}, "", fmt.Errorf("redisstore: pace: script returned %v", res)
	}
	s.unreadable(ctx, n[1], keys[0])
	if n[0] <= 0 {
		return time.Time{}, "", nil
	}
	why, _ := res[2].(string)
	return time.Now().Add(micros(n[0])), pacing.PauseReason(why), nil
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
