package frontier

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
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

// Origin returns the origin of rawURL as the frontier keys its queues and as
// a [robots.Transport] names it: the lower-case scheme, "://", the
// lower-case host, and ":port" unless the port is the scheme's default
// (":080" is ":80", and an http URL's ":80" is dropped). An IPv6 host is
// written in its canonical form, in brackets.
//
// Unlike the Transport, it does not map an internationalised host name to
// its IDNA ASCII form: "http://exämple.com" and "http://xn--exmple-cua.com"
// are two origins here (see the package doc). It returns the error Push
// would for a URL that is not http or https, has no host, does not parse,
// or is longer than [MaxURLLen].
func Origin(rawURL string) (string, error) {
	o, err := originOf(rawURL)
	if err != nil {
		return "", err
	}
	return strings.Clone(o), nil
}

// originOf is Origin, but the result may share rawURL's bytes.
func originOf(rawURL string) (string, error) {
	if len(rawURL) > MaxURLLen {
		return "", ErrTooLong
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("frontier: %w", err)
	}
	// url.Parse lower-cases the scheme.
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", ErrScheme
	}
	name, port := u.Hostname(), u.Port()
	if u.Host == "" || name == "" {
		return "", ErrNoHost
	}
	if strings.IndexByte(name, ':') >= 0 {
		// An IPv6 literal: "[0:0::1]" is "[::1]".
		addr, err := netip.ParseAddr(name)
		if err != nil {
			return "", fmt.Errorf("frontier: invalid host %q", name)
		}
		name = "[" + addr.String() + "]"
		if strings.IndexByte(name, '%') >= 0 {
			name = strings.ReplaceAll(name, "%", "%25") // a zone, escaped as in a URL
		}
	} else if hasUpper(name) {
		name = strings.ToLower(name) // Unicode letters too
	}
	port, err = normPort(u.Scheme, port)
	if err != nil {
		return "", err
	}
	n := len(u.Scheme) + 3 + len(name)
	if port != "" {
		n += 1 + len(port)
	}
	// The common case, a URL that starts with its origin as written
	// here, takes no allocation.
	if len(rawURL) >= n && rawURL[:len(u.Scheme)] == u.Scheme && rawURL[len(u.Scheme):len(u.Scheme)+3] == "://" &&
		rawURL[len(u.Scheme)+3:len(u.Scheme)+3+len(name)] == name &&
		(port == "" || rawURL[n-len(port)-1] == ':' && rawURL[n-len(port):n] == port) &&
		(len(rawURL) == n || rawURL[n] == '/' || rawURL[n] == '?' || rawURL[n] == '#') {
		return rawURL[:n], nil
	}
	if port == "" {
		return u.Scheme + "://" + name, nil
	}
	return u.Scheme + "://" + name + ":" + port, nil
}

// normPort returns port as a decimal number without leading zeros, or "" if
// it is empty or the scheme's default. url.Parse has checked that it is
// digits only.
func normPort(scheme, port string) (string, error) {
	if port == "" {
		return "", nil
	}
	n := 0
	for i := 0; i < len(port); i++ {
		if n = n*10 + int(port[i]-'0'); n > 65535 {
			return "", errors.New("frontier: port out of range")
		}
	}
	port = strings.TrimLeft(port, "0")
	if port == "" {
		port = "0"
	}
	if scheme == "http" && port == "80" || scheme == "https" && port == "443" {
		return "", nil
	}
	return port, nil
}

// hasUpper reports whether s has an upper-case ASCII letter or any byte
// that is not ASCII.
func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' || s[i] >= 0x80 {
			return true
		}
	}
	return false
}
