package robots

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/f9014239/robots/fleet"
)

// maxValidator bounds the length of an ETag or Last-Modified value that is
// kept with a cached robots.txt. A longer one (real entity-tags are a few
// dozen bytes) is not kept: the next refresh is a full fetch, and no entry
// or request carries kilobytes of it.
const maxValidator = 256

// validators are what a conditional fetch of robots.txt sends: the ETag and
// the Last-Modified of the copy held, as the site sent them, or "".
type validators struct {
	etag, lastModified string
}

func (v validators) empty() bool { return v.etag == "" && v.lastModified == "" }

// validatorsOf returns the validators of a response to keep with its body:
// its ETag if it is one entity-tag (RFC 9110 §8.8.3), weak or strong, of at
// most maxValidator bytes; its Last-Modified if it is an HTTP date no later
// than the response's Date (or than now, when it has none), since a date in
// the future says nothing reliable about changes (RFC 9110 §8.8.2.1), and of
// at most maxValidator bytes. Either is "" when not kept.
func validatorsOf(h http.Header, now time.Time) validators {
	var v validators
	if et := h.Get("Etag"); len(et) <= maxValidator && isEntityTag(et) {
		v.etag = et
	}
	if lm := h.Get("Last-Modified"); lm != "" && len(lm) <= maxValidator {
		if t, err := http.ParseTime(lm); err == nil {
			ref := time.Now()
			if d, err := http.ParseTime(h.Get("Date")); err == nil {
				ref = d
			} else if now.After(ref) {
				ref = now
			}
			if !t.After(ref) {
				v.lastModified = lm
			}
		}
	}
	return v
}

// isEntityTag reports whether s is an entity-tag: [ "W/" ] DQUOTE *etagc
// DQUOTE, where etagc is a visible character other than DQUOTE, or obs-text.
func isEntityTag(s string) bool {
	s = strings.TrimPrefix(s, "W/")
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; c < 0x21 || c == '"' || c == 0x7f {
			return false
		}
	}
	return true
}

// sameTag reports whether entity-tags a and b match under the weak
// comparison of RFC 9110 §8.8.3.2 (their opaque tags are equal), the one
// If-None-Match uses.
func sameTag(a, b string) bool {
	return strings.TrimPrefix(a, "W/") == strings.TrimPrefix(b, "W/")
}

// notModified returns the result of a 304 Not Modified answered to a fetch of
// target that sent the validators v.
//
// A 304 to a request that sent none cannot renew anything: it is read as
// unreachable, so that the last good copy, if any, is obeyed, and with none
// the origin is refused, never allowed whole (an unavailable robots.txt would
// allow it). A 304 whose ETag does not match the one sent is read so too: it
// does not say that our copy is current (RFC 9111 §4.3.4).
//
// Otherwise the copy is renewed: its lifetime is the 304's own max-age, as
// for a 200, or the default; the 304's validators, where it sends valid
// ones, replace those kept.
func notModified(resp *http.Response, v validators, ttl time.Duration, target *url.URL) *fetchResult {
	if v.empty() {
		return &fetchResult{access: fleet.AccessUnreachable, status: resp.StatusCode,
			err: fmt.Errorf("robots: fetching %s: %s to a request that sent no validator", redact(target), statusText(resp))}
	}
	nv := validatorsOf(resp.Header, time.Now())
	if et := resp.Header.Get("Etag"); v.etag != "" && et != "" && !sameTag(et, v.etag) {
		return &fetchResult{access: fleet.AccessUnreachable, status: resp.StatusCode,
			err: fmt.Errorf("robots: fetching %s: %s with an ETag that was not sent", redact(target), statusText(resp))}
	}
	if nv.etag == "" {
		nv.etag = v.etag
	}
	if nv.lastModified == "" {
		nv.lastModified = v.lastModified
	}
	return &fetchResult{
		access:      fleet.AccessSuccess,
		status:      resp.StatusCode,
		notModified: true,
		lifetime:    lifetime(ttl, resp.Header.Values("Cache-Control")...),
		validators:  nv,
	}
}

// revalidators returns the validators that the fetch following prev may
// send: prev's, when prev is a good copy whose rules this Transport holds
// (compiled in prevSt, or in prev's Body when it comes from the Store), so
// that a 304 can renew them; none otherwise.
func revalidators(prev *fleet.Entry, prevSt *state) validators {
	if prev == nil || prev.Access != fleet.AccessSuccess {
		return validators{}
	}
	if prevSt != nil && prevSt.robots == nil {
		return validators{}
	}
	if prevSt == nil && prev.Body == nil {
		return validators{}
	}
	return validators{etag: prev.ETag, lastModified: prev.LastModified}
}
