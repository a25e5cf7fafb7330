package robots

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/internal/pacing"

	"github.com/f9014239/robots/matcher"
)

const (
	// maxRedirects is how many redirects a fetch of robots.txt follows
	// (RFC 9309 §2.3.1.2); one more makes it unavailable.
	maxRedirects = 5

	// drainLimit is how much of an unwanted body is read before closing
	// it, so that the connection can be reused.
	drainLimit = 4 << 10
)

// errTooManyRedirects is in no result: more than maxRedirects hops is
// AccessUnavailable, which has no error. It exists for the log.
var errTooManyRedirects = errors.New("robots: stopped after 5 redirects")

// errNoResponse is the fetch error when Base returns neither a response nor
// an error.
var errNoResponse = errors.New("robots: Base returned no response and no error")

// fetch sends GET origin/robots.txt through t's base transport as userAgent
// (none if ""), follows redirects and reads the body, all within ctx. The
// result is for origin, whatever hosts the redirects lead to. With a route
// (rt not nil), the request goes to rt.addr with rt.host as its Host, and
// so do those of redirects to a path on the same host (a Location with no
// host of its own), as net/http's Client keeps a request's Host.
//
// A panic in Base, or in a body it returned, ends the fetch as unreachable
// instead of ending the process or leaving the origin's waiters stuck.
//
// ctx bounds nothing itself: the fetch is bounded by FetchTimeout, not
// counting the waits for the turns of the origins that redirects lead to
// (each hop to another origin is a request to it, and waits its turn there).
func (l *loader) fetch(parent context.Context, origin string, rt *route, userAgent string) (r *fetchResult) {
	target, err := url.Parse(origin + "/robots.txt")
	if err != nil {
		return &fetchResult{err: fmt.Errorf("robots: %w", err)}
	}
	// the Host of the request to target, if not target's own; the origin of
	// target
	host, at := "", origin
	if rt != nil {
		target.Host, host = rt.addr, rt.host
	}
	now := time.Now()
	deadline := now.Add(l.cfg.fetchTimeout)
	var cancels []context.CancelFunc
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	bound := func() context.Context {
		ctx, c := context.WithDeadline(parent, deadline)
		cancels = append(cancels, c)
		return ctx
	}
	ctx := bound()
	// The turn of a redirect's origin, released at the hop's answer; the
	// time spent waiting for such turns, which is not the origin's
	// response time.
	var hopDone func()
	var hopWait time.Duration
	defer func() {
		if r != nil {
			r.hopWait = hopWait
		}
	}()
	defer func() {
		if hopDone != nil {
			hopDone()
		}
	}()
	for hop := 0; ; hop++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
		if err != nil {
			return &fetchResult{err: fmt.Errorf("robots: %w", err)}
		}
		if userAgent != "" {
			req.Header.Set("User-Agent", userAgent)
		}
		if host != "" {
			req.Host = host
		}
		resp, err, perr, done := l.roundTrip(ctx, req, target)
		if hopDone != nil {
			hopDone()
			hopDone = nil
		}
		if !done {
			return &fetchResult{err: fmt.Errorf("robots: fetching %s: %w", redact(target), ctx.Err())}
		}
		if perr != nil {
			return &fetchResult{err: perr}
		}
		if err == nil && resp == nil {
			err = errNoResponse
		}
		if err != nil {
			return &fetchResult{err: fmt.Errorf("robots: fetching %s: %w", redact(target), err)}
		}
		if resp.Body == nil {
			// a base that breaks the RoundTripper contract
			resp.Body = http.NoBody
		}
		if resp.StatusCode < 300 || resp.StatusCode > 399 {
			var r *fetchResult
			perr, done := bounded(ctx, resp.Body, func() error {
				return l.guard(ctx, target, func() { r = l.read(resp, target, now) })
			})
			if done && perr == nil && r != nil && at != origin {
				r.from = at
				if at == "" {
					r.from = redact(target)
				}
			}
			if !done {
				return &fetchResult{status: resp.StatusCode, err: fmt.Errorf("robots: reading %s: %w", redact(target), ctx.Err())}
			}
			if perr != nil {
				closeAfterPanic(resp.Body)
				return &fetchResult{status: resp.StatusCode, err: perr}
			}
			return r
		}
		loc := resp.Header.Get("Location")
		perr, done = bounded(ctx, resp.Body, func() error {
			return l.guard(ctx, target, func() { drain(resp.Body) })
		})
		if !done {
			return &fetchResult{status: resp.StatusCode, err: fmt.Errorf("robots: reading %s: %w", redact(target), ctx.Err())}
		}
		if perr != nil {
			closeAfterPanic(resp.Body)
			return &fetchResult{status: resp.StatusCode, err: perr}
		}
		next, ok := redirectTarget(target, loc)
		if !ok {
			// A redirect that cannot be followed ends the chain
			// without a robots.txt: the file is unavailable, like a
			// 404 (RFC 9309 §2.3.1.2).
			return &fetchResult{access: fleet.AccessUnavailable, status: resp.StatusCode, lifetime: l.cfg.ttl}
		}
		if hop == maxRedirects {
			l.log(ctx, "robots.txt redirects too often", "origin", origin, "err", errTooManyRedirects)
			return &fetchResult{access: fleet.AccessUnavailable, status: resp.StatusCode, lifetime: l.cfg.ttl}
		}
		if host != "" {
			if l, err := url.Parse(loc); err != nil || l.Host != "" || l.Scheme != "" {
				host = "" // to a host of its own: addressed by it
			}
		}
		if k, err := keyOf(next); host != "" {
			// The same origin, by the same route.
		} else if err != nil {
			at = ""
		} else if k.String() != at {
			// A hop to another origin is a request to it: it waits
			// for that origin's turn, and the wait does not count
			// against FetchTimeout.
			start := time.Now()
			if hopDone, err = l.hopTurn(parent, k); err != nil {
				return &fetchResult{status: resp.StatusCode, err: fmt.Errorf("robots: following a redirect to %s: %w", redact(next), err)}
			}
			deadline = deadline.Add(time.Since(start))
			hopWait += time.Since(start)
			ctx = bound()
			at = k.String()
		}
		target = next
	}
}

// hopTurn waits for the turn of origin k, for a redirect of a robots.txt
// fetch that leads there, and returns the release of the turn, to call at
// the hop's answer.
func (l *loader) hopTurn(ctx context.Context, k originKey) (func(), error) {
	now := l.now()
	s := l.cache.siteOf(k, now)
	tk, err := l.turns.Wait(ctx, s, l.turns.FetchAsk(s), nil, now, nil)
	if err != nil {
		return nil, err
	}
	sent := l.now()
	return func() { l.turns.Release(ctx, s, tk, sent, false) }, nil
}

// roundTrip sends req through Base, guarded (see guard), and returns Base's
// answer and true, or false once ctx is done first. Then Base goes on, on
// its own goroutine, until it returns, and the body of a response it returns
// then is closed there. A Base that ignores its request's context (breaking
// its contract) cannot hold a fetch past FetchTimeout.
func (l *loader) roundTrip(ctx context.Context, req *http.Request, target *url.URL) (resp *http.Response, err, perr error, done bool) {
	type answer struct {
		resp      *http.Response
		err, perr error
	}
	answered := make(chan answer)
	abandoned := make(chan struct{})
	go func() {
		var a answer
		defer func() {
			// guard recovers a panic of Base; one that still escapes
			// it (from the Logger, say) must not end the process
			// from a goroutine no caller can recover on.
			if v := recover(); v != nil {
				a = answer{perr: fmt.Errorf("robots: panic fetching robots.txt: %v", v)}
			}
			select {
			case answered <- a:
			case <-abandoned:
				if a.resp != nil && a.resp.Body != nil {
					closeAfterPanic(a.resp.Body)
				}
			}
		}()
		a.perr = l.guard(ctx, target, func() {
			a.resp, a.err = l.cfg.base.RoundTrip(req)
			if a.err != nil && a.resp != nil && a.resp.Body != nil {
				a.resp.Body.Close()
			}
		})
	}()
	select {
	case a := <-answered:
		return a.resp, a.err, a.perr, true
	case <-ctx.Done():
		close(abandoned)
		return nil, nil, nil, false
	}
}

// bounded calls f, which reads body, and returns its result and true, or
// false once ctx is done first: then body is closed, and f goes on, on its
// own goroutine, until body returns, its result dropped. A body that ignores
// its request's context (Base breaking its contract) cannot hold a fetch
// past FetchTimeout.
func bounded(ctx context.Context, body io.Closer, f func() error) (error, bool) {
	done := make(chan error, 1)
	go func() {
		// f recovers a panic of Base; one that still escapes it (from
		// the Logger, say) must not end the process from a goroutine
		// no caller can recover on.
		defer func() {
			if v := recover(); v != nil {
				done <- fmt.Errorf("robots: panic reading robots.txt: %v", v)
			}
		}()
		done <- f()
	}()
	select {
	case err := <-done:
		return err, true
	case <-ctx.Done():
		go func() {
			// a Close that panics: nothing more to do
			defer func() { recover() }()
			body.Close()
		}()
		return nil, false
	}
}

// guard calls f, which calls into Base or a body it returned, and returns
// nil, or the error that a panic in f becomes: "robots: Base panicked
// fetching <u>: <value>". The stack of the panic goes to the Logger.
func (l *loader) guard(ctx context.Context, u *url.URL, f func()) (err error) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if e, ok := v.(error); ok {
			err = fmt.Errorf("robots: Base panicked fetching %s: %w", redact(u), e)
		} else {
			err = fmt.Errorf("robots: Base panicked fetching %s: %v", redact(u), v)
		}
		if l.cfg.logger != nil {
			l.log(ctx, "robots: Base panicked", "url", redact(u), "panic", v, "stack", string(debug.Stack()))
		}
	}()
	f()
	return nil
}

// closeAfterPanic closes a body whose reading panicked, ignoring a panic in
// Close too.
func closeAfterPanic(body io.Closer) {
	defer func() { recover() }()
	body.Close()
}

// read turns the final response of a robots.txt fetch into a result and
// closes its body.
func (l *loader) read(resp *http.Response, target *url.URL, now time.Time) *fetchResult {
	r := &fetchResult{access: classify(resp.StatusCode), status: resp.StatusCode}
	if _, has := resp.Header["Ratelimit"]; has {
		r.rateLimit, _ = pacing.ParseRateLimit(resp.Header)
	}
	switch r.access {
	case fleet.AccessSuccess:
		body, err := readBody(resp, l.cfg.maxBody)
		if err != nil {
			// A body cut by the network, or one we cannot decode, is
			// not a robots.txt: parsing what came could allow what
			// the rest disallows.
			return &fetchResult{status: resp.StatusCode, err: fmt.Errorf("robots: reading %s: %w", redact(target), err)}
		}
		r.body = body
		r.lifetime = lifetime(l.cfg.ttl, resp.Header.Values("Cache-Control")...)
	case fleet.AccessUnavailable:
		drain(resp.Body)
		r.lifetime = lifetime(l.cfg.ttl, resp.Header.Values("Cache-Control")...)
	default:
		drain(resp.Body)
		r.retryAfter, _ = pacing.RetryAfter(resp.Header.Get("Retry-After"), now)
		r.err = fmt.Errorf("robots: fetching %s: %s", redact(target), statusText(resp))
	}
	return r
}

// readBody reads resp.Body, decoded by its Content-Encoding, and closes it.
// It reads at most limit bytes of the decoded body, and one more to tell a
// body that ends at the limit from one that goes on; one that goes on is
// passed through [matcher.Truncate], so that the line the limit cuts is not
// read as a rule. The rest is not read at all. The result is no larger than
// the body, so that a cache of many small files holds little memory.
//
// A body shorter than its Content-Length, or encoded in a way that cannot be
// decoded, is an error.
func readBody(resp *http.Response, limit int64) ([]byte, error) {
	defer resp.Body.Close()
	limit = max(min(limit, math.MaxInt-1), 0)
	var raw io.Reader = resp.Body
	if resp.ContentLength >= 0 {
		// Shorter than it said: cut short, by a network or by a base
		// that returned no body at all.
		raw = &exactReader{r: raw, left: resp.ContentLength}
	}
	enc, err := contentEncoding(resp.Header)
	if err != nil {
		return nil, err
	}
	size := int64(512)
	var r io.Reader = raw
	if enc == "" {
		if resp.ContentLength >= 0 {
			size = resp.ContentLength
		}
	} else {
		dr, err := decoder(enc, raw)
		if err != nil {
			return nil, fmt.Errorf("Content-Encoding %s: %w", enc, err)
		}
		defer dr.Close()
		r = dr
	}
	body, err := readLimited(r, min(size, limit+1), limit)
	if err != nil && enc != "" {
		return nil, fmt.Errorf("Content-Encoding %s: %w", enc, err)
	}
	return body, err
}

// readLimited reads r into a buffer of initial capacity size (at most
// limit+1) until EOF or until more than limit bytes have come, and then
// returns what was read, cut as [matcher.Truncate] cuts it, with little
// spare capacity.
func readLimited(r io.Reader, size, limit int64) ([]byte, error) {
	buf := make([]byte, 0, size)
	lr := io.LimitReader(r, limit+1)
	var probe [1]byte
	for {
		var n int
		var err error
		if len(buf) == cap(buf) {
			// Full: before growing, find out whether anything is left.
			n, err = lr.Read(probe[:])
			if n > 0 {
				grown := make([]byte, len(buf), min(max(2*int64(cap(buf)), 512), limit+1))
				copy(grown, buf)
				buf = append(grown, probe[0])
			}
		} else {
			n, err = lr.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
		}
		if int64(len(buf)) > limit {
			// The body goes on past the limit.
			return tight(matcher.Truncate(buf, int(limit))), nil
		}
		if err == io.EOF {
			return tight(buf), nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// tight returns b, copied if that frees more than a little capacity.
func tight(b []byte) []byte {
	if cap(b)-len(b) > 64 {
		return append([]byte(nil), b...)
	}
	return b
}

// exactReader reads r, which must hold left more bytes: an EOF before them
// is io.ErrUnexpectedEOF.
type exactReader struct {
	r    io.Reader
	left int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if err == io.EOF && e.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// contentEncoding returns the one content coding of a response that has
// been applied to its body, lower case, or "" if none ("identity" is none).
// More than one coding is an error: robots.txt is text, and a chain of
// codings is no use to it.
func contentEncoding(h http.Header) (string, error) {
	var enc string
	for _, v := range h.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			if c == "" || c == "identity" {
				continue
			}
			if enc != "" {
				return "", fmt.Errorf("unsupported Content-Encoding %q", strings.Join(h.Values("Content-Encoding"), ", "))
			}
			enc = c
		}
	}
	return enc, nil
}

// decoder returns a reader of r decoded from content coding enc: gzip
// (x-gzip) or deflate, the latter either zlib-wrapped, as RFC 9110 §8.4.1.2
// defines it, or raw, as some servers send it. An empty body is empty
// whatever its coding, as net/http's own gzip decoding has it. Other
// codings are an error.
func decoder(enc string, r io.Reader) (io.ReadCloser, error) {
	if enc != "gzip" && enc != "x-gzip" && enc != "deflate" {
		return nil, errUnsupportedEncoding
	}
	br := bufio.NewReader(r)
	h, err := br.Peek(2)
	if len(h) == 0 && err == io.EOF {
		return http.NoBody, nil
	}
	if enc == "deflate" {
		if len(h) == 2 && isZlibHeader(h[0], h[1]) {
			return zlib.NewReader(br)
		}
		return flate.NewReader(br), nil
	}
	return gzip.NewReader(br)
}

// errUnsupportedEncoding is the cause of an unreachable result when the body
// of robots.txt has a Content-Encoding that the Transport cannot decode.
var errUnsupportedEncoding = errors.New("unsupported encoding")

// isZlibHeader reports whether b0, b1 begin a zlib stream (RFC 1950 §2.2):
// method deflate with a window of at most 32 KiB, and a valid check.
func isZlibHeader(b0, b1 byte) bool {
	return b0&0x0f == 8 && b0>>4 <= 7 && (uint16(b0)<<8|uint16(b1))%31 == 0
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
