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
// same origin as their IDNA ASCII form. A request's origin is the authority
// it is sent to: its URL's scheme with its Host ([http.Request.Host]) when
// that is set, and the URL's port when the Host names none; else its URL's
// host and port. So a request to http://192.0.2.1:8080/page with Host
// shop.example is decided by the robots.txt of http://shop.example:8080,
// fetched from 192.0.2.1:8080 with the same Host, as a crawler that resolves
// names itself addresses a site. A fetched robots.txt is used for 24 hours
// ([DefaultTTL]), or for less if its Cache-Control max-age says so. The URL
// /robots.txt itself is always allowed.
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
	"fmt"
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

// ErrNotYet is the error a request matches with [errors.Is] when it was not
// sent because its origin's turn is further away than it may wait: more
// than [Transport.MaxWait] (or the MaxWait given with [WithMaxWait]), or
// past its context's deadline. It is returned as a [*TurnError], which says
// when to try again.
var ErrNotYet = errors.New("robots: not yet: the origin's turn is later")

// TurnError reports a request that was not sent because its origin's turn
// comes later than the request may wait. It matches [ErrNotYet] with
// [errors.Is], and [context.DeadlineExceeded] too when the request's
// deadline, not MaxWait, refused it. The request took no turn: the next
// request to the origin is not spaced from it.
//
// A Transport returns it from RoundTrip with no response, so an
// [http.Client] returns it wrapped in a [*url.Error].
type TurnError struct {
	// Origin is the origin whose turn the request waited for, as a
	// Store names it: "https://example.com".
	Origin string

	// At is the earliest time a retry can be sent: the origin's next
	// turn (its crawl-delay after the previous request, or the end of a
	// pause), or when a fetch of robots.txt the request waits for will
	// be sent. When that fetch is in flight with no known end, At is a
	// short poll interval (100 ms) away. It is never the zero time. A
	// retry at At is sent then, unless another request took that turn
	// first or the origin was paused meanwhile.
	At time.Time

	// Err is context.DeadlineExceeded when the request's deadline came
	// before its turn, and nil when MaxWait refused it.
	Err error
}

// Error returns a message that names the origin and when its turn comes.
func (e *TurnError) Error() string {
	why := "MaxWait"
	if e.Err != nil {
		why = "the deadline"
	}
	return "robots: the turn of " + e.Origin + " is at " + e.At.Format("15:04:05.000") + ", past " + why + ": not sent"
}

// Is reports whether target is ErrNotYet.
func (e *TurnError) Is(target error) bool { return target == ErrNotYet }

// Unwrap returns e.Err.
func (e *TurnError) Unwrap() error { return e.Err }

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
	// per origin, each counted from the answer to the one before it (its
	// response headers, or the error); origins do not slow each other
	// down. The fetch of
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

// tokenOf returns the product token that agent, a token or a User-Agent
// header, names; "" for "", and an error if it names none.
func tokenOf(agent string) (string, error) {
	if agent == "" || agent == "*" {
		return agent, nil
	}
	if tokenPrefix(agent) == agent {
		return agent, nil
	}
	if tok := productToken(agent); tok != "" {
		// Words ("My Crawler") are not a User-Agent header: a header
		// names the crawler as Name/version, or in a compatible
		// comment, and the first word alone is not its token.
		if strings.ContainsAny(agent, " \t") && !strings.Contains(agent, tok+"/") && compatibleToken(agent) != tok {
			return "", fmt.Errorf("robots: agent %q is words, not a product token (want one word of letters, digits, '-' and '_', as in \"ExampleBot\", or a User-Agent header such as \"ExampleBot/1.0 (+https://example.com/bot)\")", agent)
		}
		return tok, nil
	}
	return "", fmt.Errorf("robots: agent %q names no product token (want a name of letters, digits, '-' and '_', as in \"ExampleBot\" or \"ExampleBot/1.0\")", agent)
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

// agentKey is the context key of WithAgent.
type agentKey struct{}

// agentValue is what WithAgent puts in a context.
type agentValue struct {
	token string
	ua    string // the User-Agent of requests that have none
	err   error
}

// WithAgent returns a copy of ctx under which a [Transport] decides and sends
// as the crawler whose product token agent names (a token or a User-Agent
// header, as for Transport.Agent), in the place of the Transport's Agent: for
// crawlers that run several identities through one Transport, or to ask
// [Transport.Check] about another token, such as "Google-Extended". A
// request without a User-Agent leaves with agent as its User-Agent (the
// fetch of robots.txt does not: see Transport.UserAgent). A request whose
// agent names no token fails with an error that says so.
//
// Under WithAgent(ctx, "*"), a request is decided by the "*" group, and no
// User-Agent names that group: a request with no User-Agent header is not
// sent, and fails with an error that says so (it would otherwise leave as
// the Transport's UserAgent, or as Base's default, whose groups may disallow
// it). Set its User-Agent header to the identity it should leave as.
// [Transport.Check] sends nothing, and answers for the "*" group.
func WithAgent(ctx context.Context, agent string) context.Context {
	tok, err := tokenOf(agent)
	if err == nil && tok == "" {
		err = errors.New("robots: WithAgent: empty agent")
	}
	ua := agent
	if tok == "*" {
		ua = ""
	}
	return context.WithValue(ctx, agentKey{}, &agentValue{token: tok, ua: ua, err: err})
}

// maxWaitKey is the context key of WithMaxWait.
type maxWaitKey struct{}

// WithMaxWait returns a copy of ctx under which a [Transport] sends a request
// only if its origin's turn is at most d away, in the place of the
// Transport's MaxWait (see Transport.MaxWait): refused requests return a
// [*TurnError] at once. A d of zero or less makes such requests wait for
// their turn however far away it is, whatever MaxWait says.
func WithMaxWait(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, maxWaitKey{}, max(d, 0))
}

// maxWaitOf returns the MaxWait of a request with context ctx; 0 for none.
func (t *Transport) maxWaitOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(maxWaitKey{}).(time.Duration); ok {
		return d
	}
	return t.cfg.maxWait
}

// identity returns the product token that decides a request with context ctx
// and header hdr (nil for none), and the User-Agent of ours it leaves with if
// it has none.
func (t *Transport) identity(ctx context.Context, hdr http.Header) (token, ua string, err error) {
	if v, _ := ctx.Value(agentKey{}).(*agentValue); v != nil {
		if v.ua == "" { // WithAgent(ctx, "*"): see errStarAnonymous
			return v.token, "", v.err
		}
		return v.token, v.ua, v.err
	}
	if t.cfg.err != nil {
		return "", "", t.cfg.err
	}
	if t.cfg.agent != "" {
		return t.cfg.agent, t.cfg.userAgent, nil
	}
	if vs := hdr["User-Agent"]; len(vs) > 0 {
		return t.agentOf(vs[0]), t.cfg.userAgent, nil
	}
	return t.cfg.anonAgent, t.cfg.userAgent, nil
}

// errStarAnonymous is the error of a request under WithAgent(ctx, "*") that
// has no User-Agent header: it has no identity to leave with that the "*"
// group it is decided by governs.
var errStarAnonymous = errors.New(`robots: request under WithAgent(ctx, "*") has no User-Agent header: ` +
	`it would be decided by the "*" group but leave as another agent; set its User-Agent header`)

// starAnonymous reports whether a request decided as agent with context ctx,
// header hdr and ua as the User-Agent of ours it would leave with, is under
// WithAgent(ctx, "*") with no User-Agent header (see errStarAnonymous).
func starAnonymous(ctx context.Context, hdr http.Header, agent, ua string) bool {
	if agent != "*" || ua != "" {
		return false
	}
	if _, ok := hdr["User-Agent"]; ok {
		return false
	}
	v, _ := ctx.Value(agentKey{}).(*agentValue)
	return v != nil && v.token == "*"
}

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
	at := noTurn
	if isRobotsTxt(req.URL) {
		s, at, err = t.robotsTxtSite(ctx, req.URL, req.Host, now)
	} else {
		var every time.Duration
		s, st, every, err = t.check(ctx, req.URL, req.Host, agent, t.fetchAgent(req.Header, ua), now)
		if err == nil {
			at, err = t.waitTurn(ctx, s, every, nil, false, now)
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
	// The next request is spaced from this one's answer: the site sees
	// them an interval apart, however long this one took to reach it.
	t.departed(s, at)
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

// fetchAgent returns the User-Agent a fetch of robots.txt caused by a
// request with header hdr is sent with: the request's, or else the
// Transport's own (UserAgent, or Agent as given), or else ua, the one the
// request leaves with. One fetch serves every token, so a request under
// [WithAgent] (a token such as Google-Extended, say, that no crawler sends)
// does not give the fetch its identity when the Transport has one.
func (t *Transport) fetchAgent(hdr http.Header, ua string) func() string {
	own := t.cfg.userAgent
	return func() string {
		if v := hdr.Get("User-Agent"); v != "" {
			return v
		}
		if own != "" {
			return own
		}
		return ua
	}
}

// robotsTxtSite returns the site of u with Host host, a request for
// /robots.txt that began at now, after waiting for its turn. It does not
// fetch robots.txt.
func (t *Transport) robotsTxtSite(ctx context.Context, u *url.URL, host string, now time.Duration) (*site, time.Duration, error) {
	k, _, err := authorityOf(u, host)
	if err != nil {
		return nil, noTurn, err
	}
	sh := t.cache.shard(k)
	s := sh.get(k)
	if s == nil {
		var evicted int
		s, evicted = t.cache.add(sh, k, now)
		t.stats.evictions.Add(uint64(evicted))
	}
	at, err := t.waitTurn(ctx, s, t.paceOf(s).fetchEvery(t.cfg.minDelay), nil, true, now)
	return s, at, err
}

// Check returns the verdict of the Transport's robots.txt cache for u,
// without sending a request to u: nil if a request would be sent, a
// [*DisallowedError] if it would be refused, or another error if u cannot be
// sent (no valid origin, a scheme other than http or https) or ctx is done
// before the robots.txt of u is known. Check fetches that robots.txt if
// needed, but does not wait for a turn. It decides as RoundTrip decides a
// request with context ctx and no User-Agent header: as the token of
// [WithAgent] if ctx has one, else as Agent, else as such a request leaves
// (see Agent: UserAgent's token, Go-http-client or the "*" group); under
// WithAgent(ctx, "*"), as the "*" group, though such a request is not sent
// (see [WithAgent]). Use [Transport.CheckRequest] to decide for a request
// that has a User-Agent.
func (t *Transport) Check(ctx context.Context, u *url.URL) error {
	t.once.Do(t.init)
	if u == nil {
		return errors.New("robots: nil URL")
	}
	_, _, err := t.checkRequest(ctx, u, "", nil)
	return err
}

// CheckRequest returns the verdict RoundTrip would give req, as Check does,
// without sending it or waiting for its turn. It does not modify req or close
// its body.
func (t *Transport) CheckRequest(req *http.Request) error {
	t.once.Do(t.init)
	if req.URL == nil {
		return errors.New("robots: nil Request.URL")
	}
	if agent, ua, err := t.identity(req.Context(), req.Header); err == nil && starAnonymous(req.Context(), req.Header, agent, ua) {
		return errStarAnonymous
	}
	_, _, err := t.checkRequest(req.Context(), req.URL, req.Host, req.Header)
	return err
}

// checkRequest decides for u as a request with Host host ("" for u's own)
// and header hdr, as RoundTrip would. If u is allowed and is not
// /robots.txt, it also returns the state that decided and the agent it
// decided for, as state.group takes it.
func (t *Transport) checkRequest(ctx context.Context, u *url.URL, host string, hdr http.Header) (*state, string, error) {
	if !httpScheme(u) {
		return nil, "", errScheme(u)
	}
	agent, ua, err := t.identity(ctx, hdr)
	if err != nil {
		return nil, "", err
	}
	if isRobotsTxt(u) {
		_, _, err := authorityOf(u, host)
		return nil, "", err
	}
	_, st, _, err := t.check(ctx, u, host, agent, t.fetchAgent(hdr, ua), t.now())
	return st, t.groupAgent(agent), err
}

// groupAgent returns agent as state.group and state.decide take it: "" for
// the Transport's own Agent, whose group is precomputed.
func (t *Transport) groupAgent(agent string) string {
	if agent == t.cfg.agent {
		return ""
	}
	return agent
}

// check decides for u, requested with Host host ("" for u's own; see
// authorityOf), as agent; userAgent gives the User-Agent that a fetch of
// robots.txt sends. If u is allowed, it returns its origin's site and the
// interval between requests to it, and the state that decided.
func (t *Transport) check(ctx context.Context, u *url.URL, host, agent string, userAgent func() string, now time.Duration) (*site, *state, time.Duration, error) {
	k, rt, err := authorityOf(u, host)
	if err != nil {
		return nil, nil, 0, err
	}
	if rt != nil {
		t.cache.routed(k, rt, now) // so that a load fetches by the same route
	}
	s, st, err := t.lookup(ctx, k, now, userAgent)
	if err != nil {
		return nil, nil, 0, err
	}
	group := t.groupAgent(agent)
	d := st.decide(now, group, target(u))
	if d.allowed && len(t.cfg.uses) > 0 && st.robots != nil && st.robots.HasUsage() {
		d = t.decideUses(st, group, target(u)) // see Transport.Uses
	}
	if d.allowed {
		if st.entry.Access != AccessSuccess {
			t.stats.noRules.add()
		}
		return s, st, t.interval(st, group), nil
	}
	switch {
	case d.err != nil:
		t.stats.refusedUnreachable.Add(1)
	case d.use != "":
		t.stats.refusedUsage.Add(1)
	default:
		t.stats.refusedRule.Add(1)
	}
	uc := *u
	de := &DisallowedError{URL: &uc, Agent: agent, Rule: d.rule, Line: d.line, Use: d.use, Err: d.err}
	if d.err != nil {
		de.RetryAt = st.entry.Expires
	}
	if t.debugging(ctx) {
		t.debugRefused(ctx, de)
	}
	return nil, nil, 0, de
}

// isRobotsTxt reports whether u asks for /robots.txt itself: its path and
// query as sent (see target), so that a URL whose Opaque says otherwise is
// checked like any other.
func isRobotsTxt(u *url.URL) bool {
	return u.Path == "/robots.txt" && u.Opaque == "" && u.RawQuery == "" && !u.ForceQuery &&
		(u.RawPath == "" || u.EscapedPath() == "/robots.txt")
}

// target returns the path and query of u, as robots.txt rules are matched
// against them (RFC 9309 §2.2.2).
func target(u *url.URL) string {
	p := "/"
	if u.RawQuery == "" && !u.ForceQuery && u.Opaque == "" {
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

// Stats are a Transport's counters since it was created.
type Stats struct {
	Hits      uint64 // requests decided by a fresh robots.txt in memory
	Misses    uint64 // requests that waited for robots.txt to be fetched or loaded from Store
	Evictions uint64 // origins dropped from memory to stay within MaxOrigins or MaxBytes

	Sent               uint64 // requests sent through Base, requests for /robots.txt included (not the Transport's own fetches)
	Refused            uint64 // requests refused (ErrDisallowed): the sum of the three below
	RefusedRule        uint64 // requests refused by a rule of robots.txt
	RefusedUnreachable uint64 // requests refused because robots.txt is unreachable (ErrUnreachable)
	RefusedUsage       uint64 // requests refused by a usage preference (see Transport.Uses)
	AllowedNoRules     uint64 // requests allowed with no rules: robots.txt unavailable (4xx), or unreachable for 30 days

	FetchSuccess     uint64 // robots.txt fetches with a 2xx result
	FetchUnavailable uint64 // robots.txt fetches with a 4xx result, or too many redirects
	FetchUnreachable uint64 // robots.txt fetches with a 429, 5xx, network error or unreadable body
	StoreHits        uint64 // fresh entries taken from Store instead of fetching

	NotYet    uint64        // requests not sent because their origin's turn was later than they could wait (ErrNotYet)
	PaceWaits uint64        // requests that waited for their origin's turn
	PaceWait  time.Duration // total time requests waited for their origin's turn
	Pauses    uint64        // origins paused by a Retry-After header
}

// Stats returns the Transport's counters. Each is read atomically; together
// they are not a snapshot of one instant.
func (t *Transport) Stats() Stats {
	s := &t.stats
	return Stats{
		Hits:               s.hitCount.load(),
		Misses:             s.misses.Load(),
		Evictions:          s.evictions.Load(),
		Sent:               s.sent.load(),
		Refused:            s.refusedRule.Load() + s.refusedUnreachable.Load() + s.refusedUsage.Load(),
		RefusedRule:        s.refusedRule.Load(),
		RefusedUnreachable: s.refusedUnreachable.Load(),
		RefusedUsage:       s.refusedUsage.Load(),
		AllowedNoRules:     s.noRules.load(),
		FetchSuccess:       s.fetches[AccessSuccess].Load(),
		FetchUnavailable:   s.fetches[AccessUnavailable].Load(),
		FetchUnreachable:   s.fetches[AccessUnreachable].Load(),
		StoreHits:          s.storeHits.Load(),
		NotYet:             s.notYet.Load(),
		PaceWaits:          s.paceWaits.Load(),
		PaceWait:           time.Duration(s.paceWait.Load()),
		Pauses:             s.pauses.Load(),
	}
}

// stats holds the counters. Those counted on the hot path, from many
// goroutines at once, are striped over cache lines.
type stats struct {
	hitCount, sent, noRules                       striped
	misses, evictions, storeHits                  atomic.Uint64
	refusedRule, refusedUnreachable, refusedUsage atomic.Uint64
	fetches                                       [3]atomic.Uint64 // by Access
	paceWaits, pauses, notYet                     atomic.Uint64
	paceWait                                      atomic.Int64 // nanoseconds
}

// striped is a counter over cache lines: each add goes to a stripe chosen at
// random, so that goroutines that count at once seldom share a line.
type striped [16]struct {
	n atomic.Uint64
	_ [56]byte
}

func (c *striped) add() { c[rand.Uint32()%uint32(len(c))].n.Add(1) }

func (c *striped) load() uint64 {
	var n uint64
	for i := range c {
		n += c[i].n.Load()
	}
	return n
}

func (s *stats) hit() { s.hitCount.add() }

func (s *stats) fetched(a Access) {
	if int(a) < len(s.fetches) {
		s.fetches[a].Add(1)
	}
}

// debugging reports whether the Logger takes debug records: a caller builds
// one only then, so that a Transport whose Logger does not allocates nothing
// for them.
func (t *Transport) debugging(ctx context.Context) bool {
	l := t.cfg.logger
	return l != nil && l.Enabled(ctx, slog.LevelDebug)
}

// debugRefused writes a debug record of a refusal.
func (t *Transport) debugRefused(ctx context.Context, de *DisallowedError) {
	attrs := []slog.Attr{slog.String("url", de.URL.Redacted()), slog.String("agent", de.Agent)}
	switch {
	case de.Err != nil:
		attrs = append(attrs, slog.String("why", "robots.txt unreachable"), slog.Any("err", de.Err), slog.Time("retry_at", de.RetryAt))
	case de.Use != "":
		attrs = append(attrs, slog.String("use", de.Use), slog.String("rule", de.Rule), slog.Int("line", de.Line))
	default:
		attrs = append(attrs, slog.String("rule", de.Rule), slog.Int("line", de.Line))
	}
	t.debug(ctx, "robots: refused", attrs...)
}

// debug writes a debug record. The caller checked t.debugging first. A
// Logger that panics here is ignored: a record is not worth a request.
func (t *Transport) debug(ctx context.Context, msg string, attrs ...slog.Attr) {
	defer func() { recover() }()
	t.cfg.logger.LogAttrs(ctx, slog.LevelDebug, msg, attrs...)
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
	if r.from != "" {
		attrs = append(attrs, slog.String("from", r.from)) // answered through a redirect to another origin
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
	if tok := compatibleToken(ua); tok != "" {
		return tok
	}
	return firstProduct(ua)
}

// compatibleToken returns the crawler's product token that a "compatible"
// comment names, "(compatible; Bot/1.0; …)", or "".
func compatibleToken(ua string) string {
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
	return ""
}

// firstProduct returns the first product outside comments of the User-Agent
// header ua that is not a browser's, with or without a version (RFC 9110
// §10.1.5), or "".
func firstProduct(ua string) string {
	depth := 0
	for f := range strings.FieldsSeq(ua) {
		if depth > 0 || strings.HasPrefix(f, "(") {
			depth += strings.Count(f, "(") - strings.Count(f, ")")
			continue
		}
		name, _, versioned := strings.Cut(f, "/")
		tok := tokenPrefix(name)
		if !versioned && tok != name {
			continue // a bare product ("ExampleBot") counts only whole
		}
		if tok != "" && !browserish(tok) {
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
