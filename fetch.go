package robots

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

const (
	// DefaultFetchTimeout bounds one robots.txt fetch, redirects and body
	// included, when Transport.FetchTimeout is zero.
	DefaultFetchTimeout = 30 * time.Second

	// DefaultMaxBodySize is how much of a robots.txt body is read and
	// parsed (RFC 9309 §2.5: at least 500 KiB). The rest is ignored.
	DefaultMaxBodySize = 500 << 10

	// MaxRedirects is how many redirects a robots.txt fetch follows
	// (RFC 9309 §2.3.1.2: at least five). One more makes the file
	// unavailable.
	MaxRedirects = 5

	// drainLimit is how much of an unwanted body is read before closing
	// it, so that the connection can be reused.
	drainLimit = 4 << 10
)

// errTooManyRedirects is in no result: more than MaxRedirects hops is
// AccessUnavailable, which has no error. It exists for the log.
var errTooManyRedirects = errors.New("robots: stopped after 5 redirects")

// errNoResponse is the fetch error when Base returns neither a response nor
// an error.
var errNoResponse = errors.New("robots: Base returned no response and no error")

// fetch sends GET origin/robots.txt through t's base transport as userAgent
// (none if ""), follows redirects and reads the body, all within ctx. The
// result is for origin, whatever hosts the redirects lead to.
func (t *Transport) fetch(ctx context.Context, origin, userAgent string) *fetchResult {
	target, err := url.Parse(origin + "/robots.txt")
	if err != nil {
		return &fetchResult{err: fmt.Errorf("robots: %w", err)}
	}
	now := time.Now()
	for hop := 0; ; hop++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
		if err != nil {
			return &fetchResult{err: fmt.Errorf("robots: %w", err)}
		}
		if userAgent != "" {
			req.Header.Set("User-Agent", userAgent)
		}
		resp, err := t.cfg.base.RoundTrip(req)
		if err == nil && resp == nil {
			err = errNoResponse
		}
		if err != nil {
			if resp != nil && resp.Body != nil {
				resp.Body.Close()
			}
			return &fetchResult{err: fmt.Errorf("robots: fetching %s: %w", redact(target), err)}
		}
		if resp.Body == nil {
			resp.Body = http.NoBody // a base that breaks the RoundTripper contract
		}
		if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
			loc := resp.Header.Get("Location")
			drain(resp.Body)
			next, ok := redirectTarget(target, loc)
			if !ok {
				// A redirect that cannot be followed ends the chain
				// without a robots.txt: the file is unavailable,
				// like a 404 (SPEC section 2).
				return &fetchResult{access: AccessUnavailable, status: resp.StatusCode, lifetime: t.cfg.ttl}
			}
			if hop == MaxRedirects {
				t.log(ctx, "robots.txt redirects too often", "origin", origin, "err", errTooManyRedirects)
				return &fetchResult{access: AccessUnavailable, status: resp.StatusCode, lifetime: t.cfg.ttl}
			}
			target = next
			continue
		}
		return t.read(resp, target, now)
	}
}

// read turns the final response of a robots.txt fetch into a result and
// closes its body.
func (t *Transport) read(resp *http.Response, target *url.URL, now time.Time) *fetchResult {
	r := &fetchResult{access: classify(resp.StatusCode), status: resp.StatusCode}
	switch r.access {
	case AccessSuccess:
		body, err := readBody(resp, t.cfg.maxBody)
		if err != nil {
			// A body cut by the network is not a robots.txt: parsing
			// what came could allow what the rest disallows.
			return &fetchResult{status: resp.StatusCode, err: fmt.Errorf("robots: reading %s: %w", redact(target), err)}
		}
		r.body = body
		r.lifetime = lifetime(t.cfg.ttl, resp.Header.Get("Cache-Control"))
	case AccessUnavailable:
		drain(resp.Body)
		r.lifetime = lifetime(t.cfg.ttl, resp.Header.Get("Cache-Control"))
	default:
		drain(resp.Body)
		r.retryAfter, _ = retryAfter(resp.Header.Get("Retry-After"), now)
		r.err = fmt.Errorf("robots: fetching %s: %s", redact(target), statusText(resp))
	}
	return r
}

// readBody reads at most limit bytes of resp.Body and closes it. Reaching the
// limit is not an error: the rest is not read at all. The result is no larger
// than the body, so that a cache of many small files holds little memory.
func readBody(resp *http.Response, limit int64) ([]byte, error) {
	defer resp.Body.Close()
	size := int64(512)
	if resp.ContentLength >= 0 {
		size = min(resp.ContentLength, limit)
	}
	buf := make([]byte, 0, size)
	lr := io.LimitReader(resp.Body, limit)
	var probe [1]byte
	for {
		var n int
		var err error
		if len(buf) == cap(buf) {
			// Full: before growing, find out whether anything is left.
			n, err = lr.Read(probe[:])
			if n > 0 {
				grown := make([]byte, len(buf), min(max(2*int64(cap(buf)), 512), limit))
				copy(grown, buf)
				buf = append(grown, probe[0])
			}
		} else {
			n, err = lr.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
		}
		if err == io.EOF && int64(len(buf)) < min(resp.ContentLength, limit) {
			// Shorter than it said: cut short, by a network or by a
			// base that returned no body at all.
			return nil, io.ErrUnexpectedEOF
		}
		if err == io.EOF || int64(len(buf)) >= limit {
			if cap(buf)-len(buf) > 64 {
				buf = append([]byte(nil), buf...)
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// drain reads a little of body, so that its connection can be reused, and
// closes it.
func drain(body io.ReadCloser) {
	io.CopyN(io.Discard, body, drainLimit)
	body.Close()
}

// redirectTarget resolves a Location header against the URL that answered
// it. Only http and https targets, and targets of the same scheme as from,
// are followed.
func redirectTarget(from *url.URL, loc string) (*url.URL, bool) {
	if loc == "" {
		return nil, false
	}
	u, err := from.Parse(loc)
	if err != nil || u.Host == "" {
		return nil, false
	}
	if u.Scheme != "http" && u.Scheme != "https" && u.Scheme != from.Scheme {
		return nil, false
	}
	u.Fragment, u.RawFragment = "", ""
	return u, true
}

// statusText describes an HTTP status for an error message, e.g.
// "503 Service Unavailable".
func statusText(resp *http.Response) string {
	if resp.Status != "" {
		return resp.Status
	}
	return fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
}

// redact returns u as a string without its password.
func redact(u *url.URL) string { return u.Redacted() }
