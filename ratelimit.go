package robots

import (
	"math"
	"math/bits"
	"net/http"
	"time"

	"github.com/dunglas/httpsfv"
)

// maxRateLimitField is the longest RateLimit or RateLimit-Policy field, all
// its lines together, that parseRateLimit reads; a longer one is ignored as
// malformed. A server states a few policies in a few dozen bytes each; the
// bound keeps the parse of a hostile answer small in time and memory.
const maxRateLimitField = 8 << 10

// parseRateLimit returns the wait that the RateLimit response field of h
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
func parseRateLimit(h http.Header) (wait time.Duration, ok bool) {
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
