package robots

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// originKey identifies an origin in the in-process cache: the lower-case
// scheme, and the lower-case IDNA ASCII host with ":port" unless the port is
// the scheme's default (IPv6 hosts keep their brackets). The port is written
// as a number, without leading zeros.
type originKey struct {
	scheme string
	host   string
}

// String returns the origin as a Store names it: "https://example.com".
func (k originKey) String() string { return k.scheme + "://" + k.host }

var errNoHost = errors.New("robots: URL has no host")

// OriginOf returns the origin of u as a [Transport] names it, in its cache,
// pacing, records and [Stats], and to a [fleet.Store] or [fleet.Pacer]: the
// lower-case scheme, "://", the lower-case host (an IDNA ASCII name, UTS #46
// as browsers map it; an IPv6 address canonical in brackets; a trailing dot
// kept), and ":port" unless it is the scheme's default. A request whose Host
// is set is sent to the origin of its URL with that Host. It returns an
// error when u has no scheme or host, a bad port, an IPv6 literal or zone
// that does not parse, or a host IDNA refuses.
func OriginOf(u *url.URL) (string, error) {
	k, err := keyOf(u)
	if err != nil {
		return "", err
	}
	return k.String(), nil
}

// keyOf returns the origin of u. It does not allocate when u's scheme and
// host are already lower-case ASCII and its port has no leading zero.
func keyOf(u *url.URL) (originKey, error) {
	scheme := u.Scheme
	if scheme == "" {
		return originKey{}, errors.New("robots: URL has no scheme")
	}
	if hasUpper(scheme) {
		scheme = strings.ToLower(scheme)
	}
	host := u.Host
	if host == "" {
		return originKey{}, errNoHost
	}
	// Split host and port. A colon inside IPv6 brackets is not a port
	// separator.
	name, port := host, ""
	if host[0] == '[' {
		end := strings.IndexByte(host, ']')
		if end < 0 {
			return originKey{}, fmt.Errorf("robots: invalid host %q", host)
		}
		name, port = host[:end+1], host[end+1:]
		if port != "" && port[0] != ':' {
			return originKey{}, fmt.Errorf("robots: invalid host %q", host)
		}
		if port != "" {
			port = port[1:]
		}
	} else if i := strings.IndexByte(host, ':'); i >= 0 {
		name, port = host[:i], host[i+1:]
		if strings.IndexByte(port, ':') >= 0 {
			// A hand-built URL may hold such a host ("x::"), which
			// names no origin and would not key back to itself.
			return originKey{}, fmt.Errorf("robots: invalid host %q", host)
		}
	}
	port, err := normPort(scheme, port)
	if err != nil {
		return originKey{}, fmt.Errorf("robots: invalid port in host %q", host)
	}
	if name == "" || name == "[]" {
		return originKey{}, errNoHost
	}
	if name[0] == '[' {
		// An IPv6 literal has many spellings of one address:
		// "[0:0:0:0:0:0:0:1]" is "[::1]". Key it by the canonical one.
		addr, err := netip.ParseAddr(name[1 : len(name)-1])
		if err != nil || !addr.Is6() {
			return originKey{}, fmt.Errorf("robots: invalid host %q", host)
		}
		if !unreservedZone(addr.Zone()) {
			// A zone of other bytes has no spelling that url.Parse
			// reads back (it refuses "%96" in a zone, and a space
			// in a host), so it cannot name an origin in a Store.
			return originKey{}, fmt.Errorf("robots: invalid host %q: an IPv6 zone must be letters, digits, '-', '.', '_' or '~' (RFC 6874)", host)
		}
		if c := "[" + addr.String() + "]"; c != name {
			name = c
		}
	} else if !isASCII(name) {
		// An internationalised name: map it to its ASCII form (UTS
		// 46, as browsers do). idna returns a partial result together
		// with an error; that result is never used.
		ascii, err := idna.Lookup.ToASCII(name)
		if err != nil {
			return originKey{}, fmt.Errorf("robots: invalid host %q: %w", name, err)
		}
		name = ascii
	}
	if hasUpper(name) {
		name = strings.ToLower(name)
	}
	if name == "" || name == "[]" {
		return originKey{}, errNoHost
	}
	if strings.IndexByte(name, '%') >= 0 {
		// An IPv6 zone, "[fe80::1%en0]": escaped as in a URL, so that
		// the origin parses back to the same key.
		name = strings.ReplaceAll(name, "%", "%25")
	}
	if port == "" {
		return originKey{scheme, name}, nil
	}
	if len(name)+1+len(port) == len(host) && host[len(name)] == ':' && host[len(name)+1:] == port && host[:len(name)] == name {
		return originKey{scheme, host}, nil // as written: no allocation
	}
	return originKey{scheme, name + ":" + port}, nil
}

// authorityOf returns the origin of a request for u with host as its Host
// (http.Request.Host): its authority, which is host when set, with u's
// scheme, and u's port when host has none. When that is not u's own origin,
// it also returns the route by which the origin's robots.txt is fetched: to
// u's host and port, with host as the Host. It allocates only then.
func authorityOf(u *url.URL, host string) (originKey, *route, error) {
	k, err := keyOf(u)
	if host == "" || host == u.Host || err != nil {
		return k, nil, err
	}
	a := url.URL{Scheme: u.Scheme, Host: host}
	if a.Port() == "" && u.Port() != "" && !strings.HasSuffix(host, ":") {
		a.Host = host + ":" + u.Port()
	}
	ak, err := keyOf(&a)
	if err != nil {
		return originKey{}, nil, fmt.Errorf("robots: invalid Host %q: %w", host, err)
	}
	if ak == k {
		return k, nil, nil
	}
	return ak, &route{addr: u.Host, host: host}, nil
}

// route is where a request to an origin was sent when that is not the
// origin's own host and port: to addr (a URL's host and port), with host as
// its Host, as a crawler that resolves names itself sends.
type route struct{ addr, host string }

// normPort returns port as a decimal number without leading zeros, or "" if
// it is empty or scheme's default port: ":080" and ":80" are the same port
// of an http origin, and no port at all.
func normPort(scheme, port string) (string, error) {
	if port == "" {
		return "", nil
	}
	n := 0
	for i := 0; i < len(port); i++ {
		c := port[i]
		if c < '0' || c > '9' {
			return "", errors.New("port is not a number")
		}
		if n = n*10 + int(c-'0'); n > 65535 {
			return "", errors.New("port out of range")
		}
	}
	if port[0] == '0' && len(port) > 1 {
		port = strconv.Itoa(n)
	}
	if port == defaultPort(scheme) {
		return "", nil
	}
	return port, nil
}

func defaultPort(scheme string) string {
	switch scheme {
	case "http":
		return "80"
	case "https":
		return "443"
	case "ftp":
		return "21"
	}
	return ""
}

// unreservedZone reports whether zone, an IPv6 zone, holds only the
// unreserved characters of RFC 3986 §2.3, which RFC 6874 §2 allows unescaped.
func unreservedZone(zone string) bool {
	for i := 0; i < len(zone); i++ {
		c := zone[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return true
		}
	}
	return false
}
