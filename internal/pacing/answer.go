package pacing

import (
	"context"
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"
)

// Answered pauses s as the answer to a request sent at sent (on the Turns'
// clock), with status and header h, asks: a 429 or 503 for as long as its
// Retry-After asks; else, on any status, for as long as its RateLimit
// field asks (see ParseRateLimit); else a 429 or 503 under the back-off.
// Pauses are capped at MaxRetryAfter. A Retry-After that is absent, zero,
// in the past, malformed or ignored is not usable; a malformed RateLimit
// field is ignored.
func (tn *Turns) Answered(ctx context.Context, s Site, status int, h http.Header, sent time.Duration) {
	pushed := status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
	if pushed && !tn.cfg.IgnoreRetryAfter {
		if d, ok := RetryAfter(h.Get("Retry-After"), tn.Wall(tn.Now())); ok && d > 0 {
			tn.Pause(ctx, s, d, ReasonRetryAfter)
			return
		}
	}
	if _, has := h["Ratelimit"]; has {
		if d, ok := ParseRateLimit(h); ok && d > 0 {
			tn.Pause(ctx, s, d, ReasonRateLimit)
			return
		}
	}
	if pushed {
		tn.backOff(ctx, s, status, sent)
	}
}

// backOff pauses s under the back-off, for a 429 or 503 with no usable
// Retry-After on a request sent at sent; see fleet.Backoff.
func (tn *Turns) backOff(ctx context.Context, s Site, status int, sent time.Duration) {
	b := tn.cfg.Backoff
	if b.First <= 0 {
		return // no back-off
	}
	now := tn.Now()
	p := s.Pace()
	until, isNew := p.PushBack(now, sent, b, rand.Float64())
	if pc := tn.cfg.Pacer; pc != nil {
		// The fleet's back-off may be at a higher level: its pause, if
		// longer, is kept in memory too.
		tn.afterAnswer(ctx, func(pctx context.Context) {
			pu, err := pc.PushBack(pctx, s.Origin(), tn.Wall(sent), b)
			if err != nil {
				tn.pacerFailed(ctx, s.Origin(), err)
			} else if d := tn.At(pu); d > until {
				p.BackedOff(tn.Now(), d, b)
			}
		})
	}
	if isNew {
		tn.Counts.Backoffs.Add(1)
		tn.warn(ctx, "robots: origin pushed back; backing off", "origin", s.Origin(),
			"status", status, "pause", (until - now).Round(time.Millisecond))
	}
}

// Pause pauses s for d, capped at MaxRetryAfter, in memory and in the
// Pacer, for the reason why (ReasonRetryAfter or ReasonRateLimit).
func (tn *Turns) Pause(ctx context.Context, s Site, d time.Duration, why string) {
	if d > tn.cfg.MaxRetryAfter {
		field := "Retry-After"
		if why == ReasonRateLimit {
			field = "RateLimit"
		}
		tn.warn(ctx, "robots: "+field+" capped at MaxRetryAfter", "origin", s.Origin(),
			"asked", d, "kept", tn.cfg.MaxRetryAfter)
		d = tn.cfg.MaxRetryAfter
	}
	if why == ReasonRateLimit {
		tn.Counts.RateLimits.Add(1)
	} else {
		tn.Counts.Pauses.Add(1)
	}
	// The pause is kept in memory in any case, so that the requests of
	// this process that wait for a turn see it at once.
	now := tn.Now()
	s.Pace().Pause(Add(now, d), why)
	if p := tn.cfg.Pacer; p != nil {
		// The pause must reach the fleet even when the request that
		// met the 429 or 503 is cancelled as the response comes back.
		until := tn.Wall(Add(now, d))
		tn.afterAnswer(ctx, func(pctx context.Context) {
			if err := p.Pause(pctx, s.Origin(), until, why); err != nil {
				tn.pacerFailed(ctx, s.Origin(), err)
			}
		})
	}
}

// RetryAfter returns the wait a Retry-After header value asks for, given as
// seconds or as an HTTP date relative to now, and ok false if it is absent or
// malformed. A date in the past is a wait of 0. A number of seconds too large
// for a Duration (RFC 9110 §10.2.3 sets no bound on delay-seconds) is the
// longest Duration, which any cap then shortens.
func RetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if errors.Is(err, strconv.ErrRange) && allDigits(v) {
		n, err = math.MaxInt64, nil
	}
	if err == nil {
		if n < 0 {
			return 0, false
		}
		if n > int64(1<<63-1)/int64(time.Second) {
			n = int64(1<<63-1) / int64(time.Second)
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// allDigits reports whether s is 1*DIGIT.
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// maxRateLimitField is the longest RateLimit or RateLimit-Policy field, all
// its lines together, that ParseRateLimit reads; a longer one is ignored as
// malformed. A server states a few policies in a few dozen bytes each; the
// bound keeps the parse of a hostile answer small in time and memory.
const maxRateLimitField = 8 << 10

// ParseRateLimit returns the wait that the RateLimit response field of h
// asks for before the origin's next request, from the answer that carried
// it, and ok false if the field states none. It reads the fields of
// draft-ietf-httpapi-ratelimit-headers-11:
//
//	RateLimit: "default";r=0;t=30
//	RateLimit-Policy: "default";q=100;w=60
//
// Each member of RateLimit is a service limit: r, the quota units remaining
// (a non-negative Integer, required), and t, the seconds until the quota
// resets (a non-negative Integer). Its wait is:
//
//   - r=0: t, the quota is spent until it resets (Section 5 of the draft:
//     a client SHOULD NOT exceed r before t);
//   - r=n>0: t/n, the rest of the quota spread evenly over t, so that it is
//     never spent before it resets. Only where the quota counts requests:
//     a member whose policy (below) counts other units ("qu" other than
//     "requests") asks for a wait only at r=0.
//
// A member without t takes the window w of the RateLimit-Policy member of
// the same name, the longest the reset can be away; without either it
// states no wait. Several members (several policies): the longest wait,
// the most restrictive. RateLimit-Policy alone states no wait: its values
// are informative (Section 4 of the draft), the state is in RateLimit.
//
// Malformed fields are ignored (Section 5 of the draft): a field that is not
// a Structured Fields List (RFC 9651), or is longer than 8 KiB; and within a
// List, a member whose r or t is not a non-negative Integer (a Decimal, a
// String, a negative number), which leaves the other members in force.
// Parameters may come in any order; unknown ones are ignored.
//
// The wait is not capped here beyond the longest Duration (t may be up to
// 10^15 seconds); the caller caps it by MaxRetryAfter.
func ParseRateLimit(h http.Header) (wait time.Duration, ok bool) {
	lines := h.Values("RateLimit")
	if len(lines) == 0 || fieldLen(lines) > maxRateLimitField {
		return 0, false
	}
	limits, err := httpsfv.UnmarshalList(lines)
	if err != nil {
		return 0, false
	}
	var policies httpsfv.List // read only when a member needs it
	policiesRead := false
	for _, m := range limits {
		it, isItem := m.(httpsfv.Item)
		if !isItem || it.Params == nil {
			continue
		}
		r, okR := nonNegInt(it.Params, "r")
		if !okR {
			continue
		}
		t, hasT := int64(0), false
		if v, present := it.Params.Get("t"); present {
			if t, hasT = v.(int64); !hasT || t < 0 {
				continue // malformed t: the member is ignored
			}
		}
		var pol *httpsfv.Params
		if !hasT || r > 0 {
			if !policiesRead {
				policies, policiesRead = readPolicies(h), true
			}
			pol = policyOf(policies, it.Value)
		}
		if !hasT {
			if t, hasT = nonNegInt(pol, "w"); !hasT {
				continue
			}
		}
		var d time.Duration
		switch {
		case r == 0:
			d = seconds(t, 1)
		case countsRequests(pol):
			d = seconds(t, r)
		default:
			continue
		}
		if !ok || d > wait {
			wait, ok = d, true
		}
	}
	return wait, ok
}

// readPolicies returns the members of h's RateLimit-Policy field, or none
// if it is absent or malformed.
func readPolicies(h http.Header) httpsfv.List {
	lines := h.Values("RateLimit-Policy")
	if len(lines) == 0 || fieldLen(lines) > maxRateLimitField {
		return nil
	}
	l, err := httpsfv.UnmarshalList(lines)
	if err != nil {
		return nil
	}
	return l
}

// policyOf returns the parameters of the first policy in l named id (a
// String or a Token; the draft names policies with Strings), or nil.
func policyOf(l httpsfv.List, id any) *httpsfv.Params {
	for _, m := range l {
		it, ok := m.(httpsfv.Item)
		if !ok || it.Params == nil {
			continue
		}
		if sameName(it.Value, id) {
			if _, ok := nonNegInt(it.Params, "q"); ok { // q is required
				return it.Params
			}
			return nil
		}
	}
	return nil
}

// sameName reports whether a and b are the same String or Token.
func sameName(a, b any) bool {
	switch a := a.(type) {
	case string:
		b, ok := b.(string)
		return ok && a == b
	case httpsfv.Token:
		b, ok := b.(httpsfv.Token)
		return ok && a == b
	}
	return false
}

// countsRequests reports whether the policy p (nil if unknown) counts its
// quota in requests, the draft's default unit.
func countsRequests(p *httpsfv.Params) bool {
	if p == nil {
		return true
	}
	v, ok := p.Get("qu")
	if !ok {
		return true
	}
	s, ok := v.(string)
	return ok && (s == "requests" || s == "request")
}

// nonNegInt returns the parameter k of p if it is a non-negative Integer.
func nonNegInt(p *httpsfv.Params, k string) (int64, bool) {
	if p == nil {
		return 0, false
	}
	v, ok := p.Get(k)
	if !ok {
		return 0, false
	}
	n, ok := v.(int64)
	return n, ok && n >= 0
}

// seconds returns t/n seconds (t >= 0, n > 0), rounded up to the
// nanosecond so that the wait is never shorter than asked, and the longest
// Duration where that overflows.
func seconds(t, n int64) time.Duration {
	hi, lo := bits.Mul64(uint64(t), uint64(time.Second))
	if hi >= uint64(n) {
		return math.MaxInt64 // the quotient needs more than 64 bits
	}
	q, rem := bits.Div64(hi, lo, uint64(n))
	if q >= math.MaxInt64 {
		return math.MaxInt64
	}
	if rem != 0 {
		q++
	}
	return time.Duration(q)
}

// fieldLen returns the length of a field's lines joined as one line, with
// ", " between them (RFC 9110 §5.3).
func fieldLen(lines []string) int {
	n := 2 * (len(lines) - 1)
	for _, l := range lines {
		n += len(l)
	}
	return n
}
