package frontier

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/f9014239/robots"
)

// MaxURLLen is the longest URL, in bytes, that Push accepts: the 8,000
// octets RFC 9110 §4.1 recommends that every sender and recipient support.
const MaxURLLen = 8000

// Errors of bad input. Each is returned as is, and never with the URL.
var (
	ErrScheme    = errors.New("frontier: not an http or https URL")
	ErrNoHost    = errors.New("frontier: URL has no host")
	ErrTooLong   = errors.New("frontier: URL longer than MaxURLLen")
	ErrDuplicate = errors.New("frontier: URL already queued or out")
	ErrNotOut    = errors.New("frontier: URL not out: not handed out by Next, or already Done")
	ErrEmpty     = errors.New("frontier: empty: no URL queued or out")
)

// Origin returns the origin of rawURL as the frontier keys its queues: the
// string [robots.OriginOf] gives for it, which is how a [robots.Transport]
// names it ("HTTP://Bücher.Example:080/a" is "http://xn--bcher-kva.example").
// It is robots.OriginOf for a URL still to be parsed, with the checks of
// Push: it returns the error Push would for a URL that is not http or
// https, has no host, does not parse, or is longer than [MaxURLLen].
func Origin(rawURL string) (string, error) {
	_, o, err := parse(rawURL)
	return o, err
}

// parse parses rawURL as Push accepts it, and returns it with its origin.
func parse(rawURL string) (*url.URL, string, error) {
	if len(rawURL) > MaxURLLen {
		return nil, "", ErrTooLong
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, "", fmt.Errorf("frontier: %w", err)
	}
	// url.Parse lower-cases the scheme.
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, "", ErrScheme
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, "", ErrNoHost
	}
	o, err := robots.OriginOf(u)
	if err != nil {
		return nil, "", fmt.Errorf("frontier: %w", err)
	}
	return u, o, nil
}
