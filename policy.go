package robots

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/f9014239/robots/fleet"
)

const (
	// minTTL is the least lifetime a Cache-Control header can set.
	minTTL = time.Minute

	// retryMin is the wait before fetching again after an unreachable
	// result; it doubles at each further one, up to retryMax.
	retryMin = time.Minute

	// retryMax caps that back-off.
	retryMax = time.Hour

	// unreachableAllowAfter is how long an origin never reached stays
	// disallowed; then its URLs are allowed until a fetch reaches it.
	unreachableAllowAfter = 30 * 24 * time.Hour
)

// classify maps the final status of a robots.txt fetch (after redirects) to
// its access result, as in the table of RFC 9309 §2.3.1 (see the package
// documentation).
func classify(status int) fleet.Access {
	switch {
	case status >= 200 && status <= 299:
		return fleet.AccessSuccess
	case status == http.StatusTooManyRequests:
		return fleet.AccessUnreachable
	case status >= 400 && status <= 499:
		return fleet.AccessUnavailable
	}
	// 5xx, 1xx, and every status outside the known classes: "undefined"
	// in the RFC, treated as unreachable.
	return fleet.AccessUnreachable
}

// maxAge returns the lifetime that the Cache-Control header values of a
// response set, all lines and directives taken together: 0 if any says
// no-cache or no-store, else the first max-age (RFC 9111 §4.2.1: the first
// of several occurrences is used). A first max-age that is not a
// non-negative number of seconds (token or quoted) makes the response stale
// (RFC 9111 §4.2.1 encourages it): 0. ok is false when they set none.
func maxAge(cacheControl ...string) (d time.Duration, ok bool) {
	for _, v := range cacheControl {
		for dir := range strings.SplitSeq(v, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(dir), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store", "no-cache":
				return 0, true
			case "max-age":
				if ok {
					continue // a later max-age does not count
				}
				d, ok = 0, true
				val = strings.TrimSpace(val)
				if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
					val = val[1 : len(val)-1]
				}
				if val == "" || val[0] < '0' || val[0] > '9' {
					continue // invalid: stale
				}
				n, err := strconv.ParseInt(val, 10, 64)
				if err != nil && !errors.Is(err, strconv.ErrRange) {
					continue // invalid: stale
				}
				if err != nil || n > int64(1<<63-1)/int64(time.Second) {
					n = int64(1<<63-1) / int64(time.Second)
				}
				d = time.Duration(n) * time.Second
			}
		}
	}
	return d, ok
}

// lifetime is how long a reachable fetch result is used: ttl, shortened by
// the max-age of the response's Cache-Control header values (see maxAge)
// down to minTTL.
func lifetime(ttl time.Duration, cacheControl ...string) time.Duration {
	if d, ok := maxAge(cacheControl...); ok && d < ttl {
		return min(max(d, minTTL), ttl)
	}
	return ttl
}

// backoff is the wait before fetching again after the n-th unreachable
// result in a row (n ≥ 1): retryMin doubled n-1 times, at most retryMax.
func backoff(n int) time.Duration {
	d := retryMin
	for i := 1; i < n && d < retryMax; i++ {
		d *= 2
	}
	return min(d, retryMax)
}

// fetchResult is what one robots.txt fetch found.
type fetchResult struct {
	access   fleet.Access
	body     []byte        // when access is AccessSuccess
	status   int           // final HTTP status, or 0 on a network error
	lifetime time.Duration // when access is not AccessUnreachable
	// asked by the server on an unreachable status; 0 if not
	retryAfter time.Duration
	err        error // why access is AccessUnreachable; nil otherwise
	// the origin whose answer this is, when a redirect led away from the one
	// asked; "" otherwise
	from string
	// the time the fetch waited for the turns of the origins its
	// redirects led to
	hopWait time.Duration
	// the pause its RateLimit field asks for; 0 if none
	rateLimit time.Duration
}

// next returns the entry that follows prev (nil if there is none) after a
// fetch at now with result r. It does not modify prev.
func next(prev *fleet.Entry, r *fetchResult, now time.Time) *fleet.Entry {
	if r.access != fleet.AccessUnreachable {
		return &fleet.Entry{
			Access:    r.access,
			Body:      r.body,
			FetchedAt: now,
			Expires:   now.Add(r.lifetime),
		}
	}
	var e fleet.Entry
	if prev != nil {
		e = *prev
	}
	if e.UnreachableSince.IsZero() {
		e.UnreachableSince = now
	}
	// A count from a Store may be anything: a negative one starts again,
	// and one at the largest int stays there.
	e.Failures = max(e.Failures, 0)
	if e.Failures < math.MaxInt {
		e.Failures++
	}
	wait := backoff(e.Failures)
	if r.retryAfter > wait {
		wait = min(r.retryAfter, DefaultTTL)
	}
	e.Expires = now.Add(wait)
	e.Error = r.err.Error()
	// Without a good copy, e.Access stays AccessUnreachable (the zero
	// value) and e.Body nil. With one, both are kept and obeyed.
	return &e
}
