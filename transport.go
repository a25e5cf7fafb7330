package robots

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	Use   string   // the use refused by a usage preference (see Transport.Uses), e.g. "train-ai"; "" when a rule disallows
	Err   error    // why the origin is refused whole (robots.txt unreachable); nil otherwise

	// RetryAt, when Err is not nil, is when the Transport fetches the
	// origin's robots.txt again: a retry before then is refused the
	// same way. It is the zero time when Err is nil.
	RetryAt time.Time
}

// Error returns a sentence that names the URL (without its password), and
// the deciding rule or why the whole origin is refused.
func (e *DisallowedError) Error() string {
	u := "the URL"
	if e.URL != nil {
		u = e.URL.Redacted()
	}
	switch {
	case e.Use != "":
		msg := "robots: robots.txt says " + e.Use + "=n for " + u
		if strings.HasPrefix(e.Use, "use=") {
			msg = "robots: robots.txt allows less than " + e.Use + " of " + u
		}
		if e.Rule != "" {
			msg += ": " + strconv.Quote(e.Rule) + " (line " + strconv.Itoa(e.Line) + ")"
		}
		return msg
	case e.Rule != "":
		return "robots: robots.txt disallows " + u + " for " + e.Agent + ": " + strconv.Quote(e.Rule) + " (line " + strconv.Itoa(e.Line) + ")"
	case e.Err != nil:
		return "robots: " + u + " refused: robots.txt unreachable (" + strings.TrimPrefix(e.Err.Error(), "robots: ") + ")"
	}
	return "robots: robots.txt disallows " + u
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
// MaxOrigins, MaxBytes and Store) and fetches each at most once at a time,
// however many requests wait for it. Transports should be reused instead of
// created as needed.
//
// The zero value is a valid Transport: it uses [http.DefaultTransport] and
// finds each request's product token in its User-Agent header. Use
// [NewTransport] to set the product token. A Transport's fields must not be
// modified after its first use.
//
// Only http and https URLs are sent: a request of any other scheme fails
// with an error that is not a [*DisallowedError], since its robots.txt
// cannot be fetched.
//
// Transport is safe for concurrent use by multiple goroutines.
type Transport struct {
	// Base sends the requests that robots.txt allows, and the fetches of
	// robots.txt itself. If nil, http.DefaultTransport is used, as it is
	// at the Transport's first use; if http.DefaultTransport is then a
	// *Transport itself (as after http.DefaultTransport =
	// robots.NewTransport(nil, "ExampleBot")), the http.DefaultTransport
	// that net/http made is used instead.
	//
	// If Base, or a body it returns, panics while fetching robots.txt,
	// the fetch ends as unreachable: each request waiting for it, with
	// or without a deadline, is refused with a [*DisallowedError] for
	// [ErrUnreachable] whose error says "Base panicked" and wraps the
	// panic's value when that is an error; the stack goes to the Logger,
	// and the origin is fetched again after the usual back-off. The
	// panic is not raised again, since the fetch may run on a goroutine
	// of the Transport's own. A panic of Base while sending a request
	// that robots.txt allows is raised on the caller's goroutine.
	Base http.RoundTripper

	// Agent is the crawler's product token, e.g. "ExampleBot", matched
	// case-insensitively against the user-agent lines of robots.txt.
	// It may be given as a User-Agent header: "ExampleBot/1.0" and
	// "Mozilla/5.0 (compatible; ExampleBot/1.0; +https://example.com/bot)"
	// both mean ExampleBot (see the rule below). An Agent that names no
	// token (such as "/1.0" or "(bot)") is a programming error:
	// [NewTransport] panics, and a Transport made otherwise fails every
	// request with an error that says so. "*" obeys the "*" group.
	//
	// If empty, each request's token is found in its User-Agent header:
	// the first item after "compatible" in a parenthesised comment that
	// is a Name or Name/version, as in "Mozilla/5.0 (compatible;
	// ExampleBot/1.0; +https://example.com/bot)"; or else the first
	// product outside comments, as in "ExampleBot/1.0" or "ExampleBot",
	// with Name cut to its leading run of letters, digits, '-' and '_'.
	// Names of browsers' products (Mozilla, AppleWebKit, Chrome, Safari,
	// Gecko, Firefox, Version, Mobile, MSIE, Trident, …) do not count. A
	// request with a User-Agent that names no such token obeys the "*"
	// group. A request with no User-Agent is decided as what it leaves
	// as: the token of UserAgent if that is set; else, when Base is an
	// [*http.Transport] (nil Base included), as Go-http-client, the
	// User-Agent net/http then sends; else as the "*" group.
	//
	// A token set on a request's context with [WithAgent] takes the
	// place of Agent for that request.
	//
	// One fetch serves every request to the origin, whatever its token:
	// the file is cached, not the verdicts.
	Agent string

	// UserAgent is the User-Agent header of the requests that have none,
	// and of the fetches of robots.txt that such requests cause (a
	// request that has one fetches robots.txt with it), e.g.
	// "ExampleBot/1.0 (+https://example.com/bot)". It must contain
	// Agent's token, if Agent is set and not "*": otherwise every request
	// fails with an error that says so. If empty, it is Agent as given;
	// with neither, such requests leave without a User-Agent of ours. A request under [WithAgent] with no User-Agent
	// leaves with the agent given there instead, so that it names the
	// token it is decided as (under WithAgent(ctx, "*"), it is not sent); the fetch of robots.txt it causes is sent
	// with UserAgent or Agent, when the Transport has one, since that
	// fetch serves every token. A request's header is never modified: a
	// copy of the request is sent.
	UserAgent string

	// TTL, if non-zero, is how long a fetched robots.txt is used before
	// it is fetched again; a shorter Cache-Control max-age in its
	// response shortens it, down to MinTTL. The first max-age of all the
	// response's Cache-Control lines counts (RFC 9111 §4.2.1); an
	// invalid one, no-cache and no-store count as zero. If zero,
	// DefaultTTL (24 hours, RFC 9309 §2.4) is used.
	TTL time.Duration

	// FetchTimeout, if non-zero, bounds each fetch of robots.txt,
	// redirects and body included, even when Base ignores the request's
	// context: the fetch then ends as unreachable, and a response that
	// Base returns later is closed unread. If zero, DefaultFetchTimeout is
	// used.
	// A fetch is not canceled with the request that caused it, since
	// other requests may be waiting for it, and carries none of its
	// context's values (its httptrace hooks, for one).
	FetchTimeout time.Duration

	// MaxBodySize is how many bytes of a robots.txt body (decoded, when
	// the base left it gzip or deflate) are read and parsed; one more
	// byte is read to tell whether the body goes on, the rest is not
	// read, and a line that the limit cuts is dropped. If less than DefaultMaxBodySize (500 KiB, the least RFC
	// 9309 §2.5 allows), DefaultMaxBodySize is used.
	MaxBodySize int64

	// MaxOrigins, if non-zero, bounds the origins kept in memory. When
	// it is reached, an origin that has not been used recently is dropped
	// (an approximation of least-recently-used, per shard), and fetched
	// again if it is used again. If zero, DefaultMaxOrigins is used.
	// The pace of a dropped origin is kept while it can still hold a
	// request back. MaxBytes bounds the memory; MaxOrigins bounds the
	// number of origins tracked, and with it the work of adding one (the
	// cache is split into shards of 64 to 128 origins).
	MaxOrigins int

	// MaxBytes, if non-zero, bounds the bytes the cache holds: each
	// origin's parsed robots.txt with its index, its body when Store is
	// set, and about 1 KiB for the rest of its state, counted as they are
	// built. When it is reached, origins that have not been used recently
	// are dropped, as for MaxOrigins. If zero, DefaultMaxBytes (256 MiB)
	// is used. A parsed robots.txt of 500 KiB holds about 1.3 times its
	// size with its index for realistic rules, and at most 3 times for
	// any shape: tiny rules, rules full of bytes that percent-encoding
	// triples (non-ASCII, spaces, '%'), the shortest rules of raw
	// non-ASCII bytes, tiny groups, usage lines that each name a new
	// label; whatever the shape, the count matches the memory held,
	// so MaxBytes rather than MaxOrigins bounds a cache of large files.
	// The state
	// being loaded is kept even when it alone is larger.
	MaxBytes int64

	// Store, if non-nil, is where robots.txt entries are shared with
	// other Transports: it is consulted when the in-memory cache misses
	// or has expired, and is given every fetch result. If it also
	// implements Locker, one fetch per origin happens across all its
	// users. If nil, entries live in this Transport only.
	Store Store

	// Logger, if non-nil, receives a record of each robots.txt fetch
	// (Info; Warn when unreachable; with the origin a redirect led to,
	// as "from") and of each Store or Pacer error (Warn), and at the
	// Debug level, of each refusal (the URL, the token, the deciding
	// rule and line or why the origin is refused), each request refused
	// for now or held for its turn, and each fallback from a failing
	// Pacer. Debug records are built only when the Logger takes them. If
	// nil, nothing is logged. Records
	// about a fetch are logged with the context of the request that
	// caused it, so that a handler can read its values (a trace ID, say);
	// that is all the fetch takes from the request's context, beside the
	// product token set with [WithAgent] (see UserAgent). A Logger (or a
	// Store, or a Pacer) that panics during a fetch makes the fetch
	// unreachable, as a panicking Base does (see Base).
	Logger *slog.Logger

	// IgnoreCrawlDelay, if true, turns off pacing by crawl-delay. By
	// default, the requests to each origin are spaced by the crawl-delay
	// of the robots.txt group the crawler obeys: one request per delay,
	// per origin; origins do not slow each other down. The fetch of
	// robots.txt is a request to its origin like any other: it waits
	// for its turn, spaced by the crawl-delay last known for the origin
	// (none on a first visit), and the request after it is spaced by
	// the crawl-delay it finds.
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
	// wait pauses its origin for that long (at most MaxRetryAfter): no
	// request goes to it meanwhile, not even a fetch of robots.txt, and
	// then the requests held back leave one per crawl-delay.
	IgnoreRetryAfter bool

	// MaxRetryAfter, if non-zero, caps the pause that Retry-After sets.
	// If zero, DefaultMaxRetryAfter (5 minutes) is used.
	MaxRetryAfter time.Duration

	// Uses, if not empty, names the uses the crawler makes of what it
	// fetches, as usage labels (SPEC.md section 10): "train-ai" (AI
	// model training; Content-Signal's "ai-train" is the same),
	// "search", "ai-input", or any other. A request whose URL the
	// origin's robots.txt marks "n" for one of them, by a Content-Usage
	// or Content-Signal line, is refused before it is sent, with a
	// [*DisallowedError] that names the use and the deciding line. A
	// response's own Content-Usage header cannot be known before the
	// request is sent; read it with [UsageOf]. "use=immediate",
	// "use=reference" or "use=full" says how much of a page the crawler
	// uses, against Content-Signal's use key (immediate < reference <
	// full): with "use=full", a page whose robots.txt says
	// "use=reference" is refused. If empty, usage preferences refuse
	// nothing.
	Uses []string

	// MaxWait, if positive, is the longest a request waits for its
	// origin's turn: a request whose turn (its crawl-delay after the
	// previous request, the end of a Retry-After pause, or the fetch of
	// robots.txt it needs) is more than MaxWait away is not sent, and
	// RoundTrip returns at once with a [*TurnError] that matches
	// [ErrNotYet] and says when to try again. The request takes no turn;
	// a fetch of robots.txt it started goes on for the requests that come
	// back. A frontier that requeues such requests keeps its workers busy
	// with the origins that are ready. If zero or negative, a request
	// waits for its turn however far away it is, up to its context's
	// deadline. [WithMaxWait] sets it for one request.
	MaxWait time.Duration

	// Pacer, if non-nil, spaces the requests to each origin instead of
	// the Transport's own memory; see Pacer. It is called for every
	// request, whether the origin has a crawl-delay or not, unless it is
	// a PauseWatcher: then a request with no interval to keep goes
	// without a call when the Pacer's copy of the pauses says its origin
	// is not paused.
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
	agent        string // the product token of Transport.Agent; "" if none
	userAgent    string // the User-Agent of requests that have none; "" if none
	anonAgent    string // with no agent, the token of a request without a User-Agent
	err          error  // why every request fails: an Agent with no token
	ttl          time.Duration
	fetchTimeout time.Duration
	maxBody      int64
	maxOrigins   int
	maxBytes     int64
	store        Store
	logger       *slog.Logger

	ignoreCrawlDelay bool
	maxCrawlDelay    time.Duration
	minDelay         time.Duration
	ignoreRetryAfter bool
	maxRetryAfter    time.Duration
	maxWait          time.Duration // Transport.MaxWait; 0 for none
	pacer            Pacer
	watcher          PauseWatcher // pacer, if it is one
	uses             []string     // Transport.Uses, "ai-train" read as "train-ai"
}

// netDefaultTransport is http.DefaultTransport as net/http made it, for a
// nil Base when http.DefaultTransport has been set to a Transport.
var netDefaultTransport = http.DefaultTransport

// defaultBase returns the base of a Transport whose Base is nil.
func defaultBase() http.RoundTripper {
	if _, ok := http.DefaultTransport.(*Transport); ok {
		return netDefaultTransport
	}
	return http.DefaultTransport
}

// NewTransport returns a Transport that sends through base (nil means
// [http.DefaultTransport], as it is now) as the crawler whose product token
// is agent (see Transport.Agent). It panics if agent names no product token,
// "" included: a Transport that finds each request's token in its
// User-Agent header is a Transport{} with Agent left empty.
func NewTransport(base http.RoundTripper, agent string) *Transport {
	if _, err := tokenOf(agent); err != nil {
		panic(err)
	}
	if agent == "" {
		panic(errors.New("robots: NewTransport: empty agent (for a token from each request's User-Agent, use a Transport with Agent empty)"))
	}
	if base == nil {
		base = defaultBase()
	}
	return &Transport{Base: base, Agent: agent}
}

func (t *Transport) init() {
	c := config{
		base:         t.Base,
		userAgent:    t.UserAgent,
		ttl:          t.TTL,
		fetchTimeout: t.FetchTimeout,
		maxBody:      t.MaxBodySize,
		maxOrigins:   t.MaxOrigins,
		maxBytes:     t.MaxBytes,
		store:        t.Store,
		logger:       t.Logger,

		ignoreCrawlDelay: t.IgnoreCrawlDelay,
		maxCrawlDelay:    t.MaxCrawlDelay,
		minDelay:         max(t.MinDelay, 0),
		ignoreRetryAfter: t.IgnoreRetryAfter,
		maxRetryAfter:    t.MaxRetryAfter,
		maxWait:          max(t.MaxWait, 0),
		pacer:            t.Pacer,
	}
	c.watcher, _ = c.pacer.(PauseWatcher)
	for _, u := range t.Uses {
		if u == "ai-train" {
			u = "train-ai" // Content-Signal's name of the same category
		}
		c.uses = append(c.uses, u)
	}
	c.agent, c.err = tokenOf(t.Agent)
	if c.userAgent == "" && c.agent != "*" {
		c.userAgent = t.Agent
	}
	if c.err == nil && c.agent != "" && c.agent != "*" && !strings.Contains(strings.ToLower(c.userAgent), strings.ToLower(c.agent)) {
		c.err = fmt.Errorf("robots: UserAgent %q does not name the agent %q, so site owners could not tell which group the crawler obeys (RFC 9309 §2.2.1)", c.userAgent, c.agent)
	}
	if c.base == nil {
		c.base = defaultBase()
	}
	// With no Agent, a request without a User-Agent is decided as the
	// crawler it leaves as: UserAgent, or else, through net/http's own
	// transport, Go-http-client (which that transport then sends), or
	// else the "*" group.
	c.anonAgent = "*"
	if _, ok := c.base.(*http.Transport); ok && c.userAgent == "" {
		c.anonAgent = "Go-http-client"
	} else if tok := productToken(c.userAgent); tok != "" {
		c.anonAgent = tok
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
	if c.maxBytes <= 0 {
		c.maxBytes = DefaultMaxBytes
	}
	if c.maxCrawlDelay <= 0 {
		c.maxCrawlDelay = DefaultMaxCrawlDelay
	}
	if c.maxRetryAfter <= 0 {
		c.maxRetryAfter = DefaultMaxRetryAfter
	}
	t.cfg = c
	t.cache = newCache(c.maxOrigins, c.maxBytes)
	t.epoch = time.Now()
}

// now returns the time since t.epoch. On the hot path it is cheaper than
// time.Now, as it reads only the monotonic clock.
func (t *Transport) now() time.Duration { return time.Since(t.epoch) }

// errScheme is the error of a request whose scheme is not http or https.
func errScheme(u *url.URL) error {
	return fmt.Errorf("robots: unsupported protocol scheme %q", u.Scheme)
}

// httpScheme reports whether u's scheme is http or https, in any case.
func httpScheme(u *url.URL) bool {
	switch u.Scheme {
	case "https", "http":
		return true
	}
	return strings.EqualFold(u.Scheme, "http") || strings.EqualFold(u.Scheme, "https")
}

// RoundTrip implements [http.RoundTripper]. It sends req through Base if the
// robots.txt of its origin allows it, and otherwise returns a nil response
// and a [*DisallowedError]. It waits for the fetch of robots.txt when the
// origin is not cached or its copy has expired, and then for the origin's
// turn (see IgnoreCrawlDelay). It gives up when req's context is done, with
// an error that wraps the context's error, and at once, with a [*TurnError],
// if the origin's turn is further away than MaxWait or comes after the
// context's deadline (then the error matches [context.DeadlineExceeded]
// too). Requests for /robots.txt are sent without a check, in their origin's
// turn.
//
// A request with no User-Agent header is sent as a copy that has one (see
// UserAgent); req itself is never modified.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.once.Do(t.init)
	if req.URL == nil {
		closeBody(req)
		return nil, errors.New("robots: nil Request.URL")
	}
	if !httpScheme(req.URL) {
		closeBody(req)
		return nil, errScheme(req.URL)
	}
	ctx := req.Context()
	agent, ua, err := t.identity(ctx, req.Header)
	if err == nil && starAnonymous(ctx, req.Header, agent, ua) {
		err = errStarAnonymous
	}
	if err != nil {
		closeBody(req)
		return nil, err
	}
	var s *site
	var st *state
	now := t.now()
	if isRobotsTxt(req.URL) {
		s, err = t.robotsTxtSite(ctx, req.URL, req.Host, now)
	} else {
		var every time.Duration
		s, st, every, err = t.check(ctx, req.URL, req.Host, agent, t.fetchAgent(req.Header, ua), now)
		if err == nil {
			_, err = t.waitTurn(ctx, s, every, nil, false, now)
		}
	}
	if err != nil {
		closeBody(req)
		return nil, err
	}
	if _, ok := req.Header["User-Agent"]; !ok && ua != "" {
		req = req.Clone(ctx)
		req.Header.Set("User-Agent", ua)
	}
	t.stats.sent.add()
	resp, err := t.cfg.base.RoundTrip(req)
	if err == nil && resp != nil {
		if !t.cfg.ignoreRetryAfter {
			t.pauseFor(ctx, s, resp)
		}
		if st != nil && st.robots != nil && st.robots.HasUsage() {
			t.attachUsage(resp, req, st, agent) // see UsageOf
		}
	}
	return resp, err
}

// robotsTxtSite returns the site of u with Host host, a request for
// /robots.txt that began at now, after waiting for its turn. It does not
// fetch robots.txt.
func (t *Transport) robotsTxtSite(ctx context.Context, u *url.URL, host string, now time.Duration) (*site, error) {
	k, _, err := authorityOf(u, host)
	if err != nil {
		return nil, err
	}
	sh := t.cache.shard(k)
	s := sh.get(k)
	if s == nil {
		var evicted int
		s, evicted = t.cache.add(sh, k, now)
		t.stats.evictions.Add(uint64(evicted))
	}
	_, err = t.waitTurn(ctx, s, t.paceOf(s).fetchEvery(t.cfg.minDelay), nil, true, now)
	return s, err
}

// CloseIdleConnections closes the idle connections of Base, if it has a
// CloseIdleConnections method, as [http.Client.CloseIdleConnections] expects.
func (t *Transport) CloseIdleConnections() {
	type closeIdler interface{ CloseIdleConnections() }
	t.once.Do(t.init)
	if ci, ok := t.cfg.base.(closeIdler); ok {
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
