// Package robots makes an [http.Client] obey robots.txt (RFC 9309).
package robots

import (
	"context"
	"errors"
	"net/http"
	"net/url"
)

// ErrDisallowed is the error a refused request matches with [errors.Is].
var ErrDisallowed = errors.New("robots: disallowed by robots.txt")

// DisallowedError reports a request refused under robots.txt.
type DisallowedError struct {
	URL   *url.URL // the refused URL
	Agent string   // the product token that was matched
	Rule  string   // the deciding line as written, e.g. "Disallow: /private"; "" when the origin is refused whole
	Line  int      // 1-based line number of Rule; 0 when Rule is ""
	Err   error    // why the origin is refused whole (robots.txt unreachable); nil otherwise
}

func (e *DisallowedError) Error() string { return "robots: disallowed by robots.txt" }

// Is reports whether target is ErrDisallowed.
func (e *DisallowedError) Is(target error) bool { return target == ErrDisallowed }

// Unwrap returns e.Err.
func (e *DisallowedError) Unwrap() error { return e.Err }

// Transport is an [http.RoundTripper] that obeys robots.txt. (implementation pending)
type Transport struct {
	Base  http.RoundTripper
	Agent string
}

var _ http.RoundTripper = (*Transport)(nil)

// NewTransport returns a Transport that sends through base (nil means
// [http.DefaultTransport]) as the crawler whose product token is agent.
func NewTransport(base http.RoundTripper, agent string) *Transport {
	return &Transport{Base: base, Agent: agent}
}

// RoundTrip implements [http.RoundTripper]. (implementation pending: passes through)
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.Base == nil {
		return http.DefaultTransport.RoundTrip(req)
	}
	return t.Base.RoundTrip(req)
}

// Check returns the verdict for u without sending a request. (implementation pending)
func (t *Transport) Check(ctx context.Context, u *url.URL) error { return nil }
