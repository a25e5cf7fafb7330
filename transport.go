// Package robots makes an [http.Client] obey robots.txt (RFC 9309).
//
// A [Transport] wraps another [http.RoundTripper]. Before it sends a request,
// it fetches the robots.txt of the request's origin (once, then from its
// cache) and either forwards the request or refuses it with a
// [*DisallowedError], which matches [ErrDisallowed]:
//
//	client := &http.Client{Transport: robots.NewTransport(nil, "ExampleBot")}
//	resp, err := client.Get("https://example.com/private/page")
//	if errors.Is(err, robots.ErrDisallowed) {
//		// robots.txt of https://example.com disallows the page for ExampleBot
//	}
//
// What the fetch of robots.txt finds decides for the whole origin (RFC 9309
// §2.3.1):
//
//	2xx                      the rules in the body (its first 500 KiB) decide
//	3xx                      followed, across hosts, up to 5 times; the rules found
//	                         govern the origin that was asked; a 6th redirect: as 4xx
//	4xx except 429           unavailable: every URL is allowed
//	429, 5xx, other status,  unreachable: every URL is disallowed; retried with
//	network error, truncated back-off; an earlier good copy is obeyed instead;
//	or unreadable body       after 30 days without one, every URL is allowed
//
// An origin is a scheme, host and port: https://example.com and
// https://example.com:443 are one origin; http://example.com and
// https://shop.example.com are others. Internationalised host names are the
// same origin as their IDNA ASCII form. A fetched robots.txt is used for 24
// hours ([DefaultTTL]), or for less if its Cache-Control max-age says so.
// The URL /robots.txt itself is always allowed.
//
// Every request is checked, whatever its method, and so is every redirect
// the [http.Client] follows, since the client calls RoundTrip once per hop.
//
// By default, a Transport also paces the requests to each origin by the
// crawl-delay of the group it obeys; see [Transport.IgnoreCrawlDelay].
package robots

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrDisallowed is the error a request refused under robots.txt matches
// with [errors.Is]: refused by a rule, or because robots.txt is unreachable
// (then it matches [ErrUnreachable] too).
var ErrDisallowed = errors.New("robots: disallowed by robots.txt")

// ErrUnreachable is the error a request refused because its origin's
// robots.txt is unreachable (RFC 9309 §2.3.1.4: a 429, a 5xx, a network error
// or an unreadable body) matches with [errors.Is], as well as
// [ErrDisallowed]. Unlike a rule, this refusal is temporary: the request may
// be retried from [DisallowedError.RetryAt] on, when robots.txt is fetched
// again.
var ErrUnreachable = errors.New("robots: robots.txt unreachable")

// DisallowedError reports a request refused under robots.txt. It matches
// [ErrDisallowed] with [errors.Is]. A Transport returns it from RoundTrip
// with no response, so an [http.Client] returns it wrapped in a [*url.Error].
type DisallowedError struct {
	URL   *url.URL // the refused URL
	Agent string   // the product token that was matched; "*" when there is none
	Rule  string   // the deciding line as written, e.g. "Disallow: /private"; "" when the origin is refused whole
	Line  int      // 1-based line number of Rule; 0 when Rule is ""
	Err   error    // why the origin is refused whole (robots.txt unreachable); nil otherwise

	// RetryAt, when Err is not nil, is when the Transport fetches the
	// origin's robots.txt again: a retry before then is refused the
	// same way. It is the zero time when Err is nil.
	RetryAt time.Time
}

// Error returns a message that names the deciding rule or the reason the
// whole origin is refused. It does not include the URL, which the
// [*url.Error] of an [http.Client] already shows.
func (e *DisallowedError) Error() string {
	switch {
	case e.Rule != "":
		return "robots: disallowed by robots.txt: " + strconv.Quote(e.Rule) + " (line " + strconv.Itoa(e.Line) + ")"
	case e.Err != nil:
		return "robots: disallowed by robots.txt: unreachable: " + e.Err.Error()
	}
	return "robots: disallowed by robots.txt"
}

// Is reports whether target is ErrDisallowed, or ErrUnreachable when the
// origin is refused whole because its robots.txt is unreachable.
func (e *DisallowedError) Is(target error) bool {
	return target == ErrDisallowed || target == ErrUnreachable && e.Err != nil
}

// Unwrap returns e.Err.
func (e *DisallowedError) Unwrap() error { return e.Err }

// Transport is an [http.RoundTripper] that obeys robots.txt: it sends a
// request through Base only if the robots.txt of the request's origin allows
// it for the crawler Agent, and otherwise returns a [*DisallowedError].
//
// A Transport caches the robots.txt of each origin in memory (see
// MaxOrigins and Store) and fetches each at most once at a time, however many
// requests wait for it. Transports should be reused instead of created as
// needed.
//
// The zero value is a valid Transport: it uses [http.DefaultTransport] and
// finds each request's product token in its User-Agent header. Use
// [NewTransport] to set the product token. A Transport's fields must not be
// modified after its first use.
//
// Transport is safe for concurrent use by multiple goroutines.
type Transport struct {
	// Base sends the requests that robots.txt allows, and the fetches of
	// robots.txt itself. If nil, http.DefaultTransport is used.
	Base http.RoundTripper

	// Agent is the crawler's product token, e.g. "ExampleBot", matched
	// case-insensitively against the user-agent lines of robots.txt. It
	// is compared whole: "ExampleBot/1.0" names no group.
	//
	// If empty, each request's token is found in its User-Agent header:
	// the first item after "compatible" in a parenthesised comment that
	// is a Name or Name/version, as in "Mozilla/5.0 (compatible;
	// ExampleBot/1.0; +https://example.com/bot)"; or else the first
	// Name/version product outside comments, as in "ExampleBot/1.0", with
	// Name cut to its leading run of letters, digits, '-' and '_'. Names
	// of browsers' products (Mozilla, AppleWebKit, Chrome, Safari, Gecko,
	// Firefox, Version, Mobile, MSIE, Trident, …) do not count. A request
	// with no such token obeys the "*" group.
	//
	// The fetch of robots.txt is sent with the User-Agent header of the
	// request that caused it, or if it has none, with Agent as its whole
	// User-Agent. One fetch serves every request to the origin, whatever
	// its token: the file is cached, not the verdicts.
	Agent string

	// TTL, if non-zero, is how long a fetched robots.txt is used before
	// it is fetched again; a shorter Cache-Control max-age in its
	// response shortens it, down to MinTTL. If zero, DefaultTTL (24
	// hours, RFC 9309 §2.4) is used.
	TTL time.Duration

	// FetchTimeout, if non-zero, bounds each fetch of robots.txt,
	// redirects and body included. If zero, DefaultFetchTimeout is used.
	// A fetch is not canceled with the request that caused it, since
	// other requests may be waiting for it.
	FetchTimeout time.Duration

	// MaxBodySize is how many bytes of a robots.txt body are read and
	// parsed; the rest is not read. If less than DefaultMaxBodySize
	// (500 KiB, the least RFC 9309 §2.5 allows), DefaultMaxBodySize is
	// used.
	MaxBodySize int64

	// MaxOrigins, if non-zero, bounds the origins kept in memory. When
	// it is reached, an origin that has not been used recently is dropped
	// (an approximation of least-recently-used, per shard), and fetched
	// again if it is used again. If zero, DefaultMaxOrigins is used.
	// Each origin kept holds the parsed form of its robots.txt (of at
	// most MaxBodySize bytes; about 1.2 times the size of the file, and
	// the file too when Store is set), a small one about 1 KB in all, so
	// MaxOrigins bounds the memory the cache holds.
	MaxOrigins int

	// Store, if non-nil, is where robots.txt entries are shared with
	// other Transports: it is consulted when the in-memory cache misses
	// or has expired, and is given every fetch result. If it also
	// implements Locker, one fetch per origin happens across all its
	// users. If nil, entries live in this Transport only.
	Store Store

	// Logger, if non-nil, receives a record of each robots.txt fetch and
	// of each Store or Pacer error. If nil, nothing is logged.
	Logger *slog.Logger

	// IgnoreCrawlDelay, if true, turns off pacing by crawl-delay. By
	// default, the requests to each origin are spaced by the crawl-delay
	// of the robots.txt group the crawler obeys: one request per delay,
	// per origin; origins do not slow each other down. The fetch of
	// robots.txt counts as a request to its origin.
	IgnoreCrawlDelay bool

	// MaxCrawlDelay, if non-zero, caps the crawl-delay honoured. If zero,
	// DefaultMaxCrawlDelay (30 s) is used.
	MaxCrawlDelay time.Duration

	// MinDelay, if non-zero, is the least time between two requests to
	// one origin, for origins whose robots.txt states a shorter
	// crawl-delay or none (and with IgnoreCrawlDelay, for all). If zero,
	// origins that state no crawl-delay are not paced.
	MinDelay time.Duration

	// IgnoreRetryAfter, if true, turns off pausing on Retry-After. By
	// default, a 429 or 503 response whose Retry-After header asks for a
	// wait pauses its origin for that long (at most MaxRetryAfter): the
	// requests that follow wait, and then leave one per crawl-delay.
	IgnoreRetryAfter bool

	// MaxRetryAfter, if non-zero, caps the pause that Retry-After sets.
	// If zero, DefaultMaxRetryAfter (5 minutes) is used.
	MaxRetryAfter time.Duration

	// Pacer, if non-nil, spaces the requests to each origin instead of
	// the Transport's own limiters; see Pacer. It is called for every
	// request, whether the origin has a crawl-delay or not.
	Pacer Pacer

	once  sync.Once
	cfg   config    // set once, from the fields above
	epoch time.Time // set once: the origin of the clock of t.now
	cache *cache    // set once
	stats stats
	ua    atomic.Pointer[uaToken] // the last User-Agent header → token derivation

	pacerLogged atomic.Int64 // when a Pacer failure was last logged, in Unix ns; 0 if never
}

var _ http.RoundTripper = (*Transport)(nil)

// config is a Transport's fields, with defaults applied, frozen at first use.
type config struct {
	base         http.RoundTripper
	agent        string
	ttl          time.Duration
	fetchTimeout time.Duration
	maxBody      int64
	maxOrigins   int
	store        Store
	logger       *slog.Logger

	ignoreCrawlDelay bool
	maxCrawlDelay    time.Duration
	minDelay         time.Duration
	ignoreRetryAfter bool
	maxRetryAfter    time.Duration
	pacer            Pacer
}

// NewTransport returns a Transport that sends through base (nil means
// [http.DefaultTransport]) as the crawler whose product token is agent.
func NewTransport(base http.RoundTripper, agent string) *Transport {
	return &Transport{Base: base, Agent: agent}
}

func (t *Transport) init() {
	c := config{
		base:         t.Base,
		agent:        t.Agent,
		ttl:          t.TTL,
		fetchTimeout: t.FetchTimeout,
		maxBody:      t.MaxBodySize,
		maxOrigins:   t.MaxOrigins,
		store:        t.Store,
		logger:       t.Logger,

		ignoreCrawlDelay: t.IgnoreCrawlDelay,
		maxCrawlDelay:    t.MaxCrawlDelay,
		minDelay:         max(t.MinDelay, 0),
		ignoreRetryAfter: t.IgnoreRetryAfter,
		maxRetryAfter:    t.MaxRetryAfter,
		pacer:            t.Pacer,
	}
	if c.base == nil {
		c.base = http.DefaultTransport
	}
	if c.ttl <= 0 {
		c.ttl = DefaultTTL
	}
	if c.fetchTimeout <= 0 {
		c.fetchTimeout = DefaultFetchTimeout
	}
	if c.maxBody < DefaultMaxBodySize {
		c.maxBody = DefaultMaxBodySize
	}
	if c.maxOrigins <= 0 {
		c.maxOrigins = DefaultMaxOrigins
	}
	if c.maxCrawlDelay <= 0 {
		c.maxCrawlDelay = DefaultMaxCrawlDelay
	}
	if c.maxRetryAfter <= 0 {
		c.maxRetryAfter = DefaultMaxRetryAfter
	}
	t.cfg = c
	t.cache = newCache(c.maxOrigins)
	t.epoch = time.Now()
}

// now returns the time since t.epoch. On the hot path it is cheaper than
// time.Now, as it reads only the monotonic clock.
func (t *Transport) now() time.Duration { return time.Since(t.epoch) }

// RoundTrip implements [http.RoundTripper]. It sends req through Base if the
// robots.txt of its origin allows it, and otherwise returns a nil response
// and a [*DisallowedError]. It waits for the fetch of robots.txt when the
// origin is not cached or its copy has expired, and then for the origin's
// turn (see IgnoreCrawlDelay). It gives up when req's context is done, with
// an error that wraps the context's error, and at once if the origin's turn
// comes after the context's deadline, with an error that wraps
// [context.DeadlineExceeded]. Requests for /robots.txt are sent without a
// check or a wait.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.once.Do(t.init)
	if req.URL == nil {
		closeBody(req)
		return nil, errors.New("robots: nil Request.URL")
	}
	if req.URL.Path == "/robots.txt" {
		return t.cfg.base.RoundTrip(req)
	}
	agent := t.cfg.agent
	if agent == "" {
		agent = t.agentOf(req.Header.Get("User-Agent"))
	}
	ctx := req.Context()
	s, every, err := t.check(ctx, req.URL, agent, req.Header)
	if err == nil {
		err = t.waitTurn(ctx, s, every)
	}
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := t.cfg.base.RoundTrip(req)
	if err == nil && resp != nil && !t.cfg.ignoreRetryAfter {
		t.pauseFor(ctx, s, resp)
	}
	return resp, err
}

// Check returns the verdict of the Transport's robots.txt cache for u,
// without sending a request to u: nil if a request would be sent, a
// [*DisallowedError] if it would be refused, or another error if u has no
// valid origin or ctx is done before the robots.txt of u is known. Check
// fetches that robots.txt if needed. It decides as the Transport's Agent, or
// as the "*" group if Agent is empty.
func (t *Transport) Check(ctx context.Context, u *url.URL) error {
	t.once.Do(t.init)
	if u == nil {
		return errors.New("robots: nil URL")
	}
	if u.Path == "/robots.txt" {
		return nil
	}
	agent := t.cfg.agent
	if agent == "" {
		agent = "*"
	}
	_, _, err := t.check(ctx, u, agent, nil)
	return err
}

// check decides for u as agent; hdr, which may be nil, is the request's
// header, whose User-Agent a fetch of robots.txt sends. If u is allowed, it
// returns its origin's site and the interval between requests to it.
func (t *Transport) check(ctx context.Context, u *url.URL, agent string, hdr http.Header) (*site, time.Duration, error) {
	k, err := keyOf(u)
	if err != nil {
		return nil, 0, err
	}
	now := t.now()
	s, st, err := t.lookup(ctx, k, now, func() string {
		if ua := hdr.Get("User-Agent"); ua != "" {
			return ua
		}
		if t.cfg.agent != "" {
			return t.cfg.agent
		}
		return ""
	})
	if err != nil {
		return nil, 0, err
	}
	group := agent
	if agent == t.cfg.agent {
		group = "" // st.group is precomputed for it
	}
	d := st.decide(now, group, target(u))
	if d.allowed {
		return s, t.interval(st, group), nil
	}
	t.stats.refused.Add(1)
	uc := *u
	return nil, 0, &DisallowedError{URL: &uc, Agent: agent, Rule: d.rule, Line: d.line, Err: d.err}
}

// target returns the path and query of u, as robots.txt rules are matched
// against them (RFC 9309 §2.2.2).
func target(u *url.URL) string {
	p := "/"
	if u.RawQuery == "" && u.Opaque == "" {
		if ep := u.EscapedPath(); ep != "" {
			p = ep
		}
	} else {
		p = u.RequestURI()
	}
	if strings.HasPrefix(p, "//") {
		// The matcher reads "//x/y" as a network-path reference (host
		// x); give it an authority so that the whole of p is the path.
		p = "//h" + p
	}
	return p
}

// CloseIdleConnections closes the idle connections of Base, if it has a
// CloseIdleConnections method, as [http.Client.CloseIdleConnections] expects.
func (t *Transport) CloseIdleConnections() {
	type closeIdler interface{ CloseIdleConnections() }
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if ci, ok := base.(closeIdler); ok {
		ci.CloseIdleConnections()
	}
}

// closeBody closes req.Body, if any, on a path where Base is not called: the
// RoundTripper contract puts that on the transport.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// Stats are a Transport's counters since it was created.
type Stats struct {
	Hits      uint64 // requests decided by a fresh robots.txt in memory
	Misses    uint64 // requests that waited for robots.txt to be fetched or loaded from Store
	Refused   uint64 // requests refused (ErrDisallowed)
	Evictions uint64 // origins dropped from memory to stay within MaxOrigins

	FetchSuccess     uint64 // robots.txt fetches with a 2xx result
	FetchUnavailable uint64 // robots.txt fetches with a 4xx result, or too many redirects
	FetchUnreachable uint64 // robots.txt fetches with a 429, 5xx, network error or unreadable body
	StoreHits        uint64 // fresh entries taken from Store instead of fetching

	PaceWaits uint64        // requests that waited for their origin's turn
	PaceWait  time.Duration // total time requests waited for their origin's turn
	Pauses    uint64        // origins paused by a Retry-After header
}

// Stats returns the Transport's counters. Each is read atomically; together
// they are not a snapshot of one instant.
func (t *Transport) Stats() Stats {
	s := &t.stats
	return Stats{
		Hits:             s.hits(),
		Misses:           s.misses.Load(),
		Refused:          s.refused.Load(),
		Evictions:        s.evictions.Load(),
		FetchSuccess:     s.fetches[AccessSuccess].Load(),
		FetchUnavailable: s.fetches[AccessUnavailable].Load(),
		FetchUnreachable: s.fetches[AccessUnreachable].Load(),
		StoreHits:        s.storeHits.Load(),
		PaceWaits:        s.paceWaits.Load(),
		PaceWait:         time.Duration(s.paceWait.Load()),
		Pauses:           s.pauses.Load(),
	}
}

// stats holds the counters. Hits are counted on the hot path from many
// goroutines at once, so they are striped over cache lines, and each hit
// adds to a stripe chosen at random.
type stats struct {
	hitStripes [16]struct {
		n atomic.Uint64
		_ [56]byte
	}
	misses, refused, evictions, storeHits atomic.Uint64
	fetches                               [3]atomic.Uint64 // by Access
	paceWaits, pauses                     atomic.Uint64
	paceWait                              atomic.Int64 // nanoseconds
}

func (s *stats) hit() {
	s.hitStripes[rand.Uint32()%uint32(len(s.hitStripes))].n.Add(1)
}

func (s *stats) hits() uint64 {
	var n uint64
	for i := range s.hitStripes {
		n += s.hitStripes[i].n.Load()
	}
	return n
}

func (s *stats) fetched(a Access) {
	if int(a) < len(s.fetches) {
		s.fetches[a].Add(1)
	}
}

// log writes a record, if the Transport has a Logger.
func (t *Transport) log(ctx context.Context, msg string, args ...any) {
	if l := t.cfg.logger; l != nil {
		l.WarnContext(ctx, msg, args...)
	}
}

// logFetch writes a record of a fetch, if the Transport has a Logger.
func (t *Transport) logFetch(ctx context.Context, origin string, r *fetchResult, e *Entry) {
	l := t.cfg.logger
	if l == nil {
		return
	}
	level := slog.LevelInfo
	attrs := []slog.Attr{
		slog.String("origin", origin),
		slog.String("access", r.access.String()),
		slog.Int("status", r.status),
		slog.Time("expires", e.Expires),
	}
	if r.err != nil {
		level = slog.LevelWarn
		attrs = append(attrs, slog.Any("err", r.err))
		if e.Access != AccessUnreachable {
			attrs = append(attrs, slog.String("obeying", "last good copy"))
		}
	}
	l.LogAttrs(ctx, level, "robots: fetched robots.txt", attrs...)
}

// uaToken is one derivation of a product token from a User-Agent header.
type uaToken struct{ header, token string }

// agentOf returns the product token of the User-Agent header ua, or "*" if
// it names none (see Transport.Agent for the rule). The last answer is
// remembered, since a crawler usually sends one User-Agent.
func (t *Transport) agentOf(ua string) string {
	if c := t.ua.Load(); c != nil && c.header == ua {
		return c.token
	}
	tok := productToken(ua)
	if tok == "" {
		tok = "*"
	}
	t.ua.Store(&uaToken{ua, tok})
	return tok
}

// productToken finds the crawler's product token in a User-Agent header, or
// returns "".
func productToken(ua string) string {
	// A "compatible" comment names the crawler: "(compatible; Bot/1.0; …)".
	for rest := ua; ; {
		open := strings.IndexByte(rest, '(')
		if open < 0 {
			break
		}
		end := strings.IndexByte(rest[open:], ')')
		var comment string
		if end < 0 {
			comment, rest = rest[open+1:], ""
		} else {
			comment, rest = rest[open+1:open+end], rest[open+end+1:]
		}
		compatible := false
		for item := range strings.SplitSeq(comment, ";") {
			item = strings.TrimSpace(item)
			if !compatible {
				compatible = strings.EqualFold(item, "compatible")
				continue
			}
			name, _, _ := strings.Cut(item, "/")
			if tok := tokenPrefix(name); tok != "" && tok == name && !browserish(tok) {
				return tok
			}
		}
	}
	// Else the first product outside comments that is not a browser's.
	depth := 0
	for f := range strings.FieldsSeq(ua) {
		if depth > 0 || strings.HasPrefix(f, "(") {
			depth += strings.Count(f, "(") - strings.Count(f, ")")
			continue
		}
		name, _, ok := strings.Cut(f, "/")
		if !ok {
			continue
		}
		if tok := tokenPrefix(name); tok != "" && !browserish(tok) {
			return tok
		}
	}
	return ""
}

// tokenPrefix returns the leading run of letters, digits, '-' and '_' of s.
func tokenPrefix(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return s[:i]
		}
	}
	return s
}

// browserish reports whether tok is a product of browsers' User-Agent
// headers rather than a crawler's name.
func browserish(tok string) bool {
	switch strings.ToLower(tok) {
	case "mozilla", "applewebkit", "chrome", "chromium", "safari", "gecko", "firefox",
		"version", "mobile", "edge", "edg", "edga", "edgios", "opr", "opera", "presto",
		"trident", "khtml", "crios", "fxios", "samsungbrowser", "ucbrowser", "yabrowser",
		"msie", "headlesschrome":
		return true
	}
	return false
}
