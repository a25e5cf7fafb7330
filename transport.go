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

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/internal/pacing"
	"github.com/f9014239/robots/webbotauth"
)

// ErrDisallowed is matched by every request refused under robots.txt:
// by a rule, a usage preference, or an unreachable robots.txt.
var ErrDisallowed = errors.New("robots: disallowed by robots.txt")

// ErrUnreachable is matched, beside [ErrDisallowed], by a request refused
// because its origin's robots.txt is unreachable (RFC 9309 §2.3.1.4). The
// refusal is temporary: see [DisallowedError.RetryAt].
var ErrUnreachable = errors.New("robots: robots.txt unreachable")

// DisallowedError reports a request refused under robots.txt. It matches
// [ErrDisallowed]. RoundTrip returns it with no response, so an
// [http.Client] returns it wrapped in a [*url.Error].
type DisallowedError struct {
	URL   *url.URL // the refused URL
	Agent string   // the product token matched; "*" if none
	Rule  string   // the deciding line, e.g. "Disallow: /private"; or ""
	Line  int      // the 1-based line number of Rule; 0 if Rule is ""
	Use   string   // the use refused (see Transport.Uses); or ""
	Err   error    // why the whole origin is refused; nil if a line did

	// RetryAt, when Err is not nil, is when robots.txt is fetched again;
	// a retry before then is refused the same way.
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

// The defaults of a Transport's fields, used when a field is zero.
const (
	DefaultTTL          = 24 * time.Hour   // TTL (RFC 9309 §2.4)
	DefaultFetchTimeout = 30 * time.Second // FetchTimeout
	// MaxBodySize, its least (RFC 9309 §2.5)
	DefaultMaxBodySize   = 500 << 10
	DefaultMaxOrigins    = 10000          // MaxOrigins
	DefaultMaxBytes      = 256 << 20      // MaxBytes
	DefaultMaxCrawlDelay = 24 * time.Hour // MaxCrawlDelay
	DefaultMaxRetryAfter = 24 * time.Hour // MaxRetryAfter
	DefaultTurnTimeout   = time.Minute    // TurnTimeout
	DefaultPaceDelay     = time.Second    // DefaultDelay
	// Backoff's fields
	DefaultBackoffFirst   = time.Minute
	DefaultBackoffMax     = 24 * time.Hour
	DefaultBackoffForgive = time.Hour
)

// Transport is an [http.RoundTripper] that obeys robots.txt: it sends a
// request through Base only if the robots.txt of its origin allows it for
// the crawler's product token, and otherwise returns a [*DisallowedError].
// It caches each origin's robots.txt in memory and fetches it at most once
// at a time. Only http and https URLs are sent.
//
// The zero value is a valid Transport that reads each request's product
// token from its User-Agent header. Fields must not be modified after first
// use. A Transport is safe for concurrent use by multiple goroutines, and
// should be reused rather than created as needed.
type Transport struct {
	// Base sends the allowed requests and the fetches of robots.txt. If
	// nil, http.DefaultTransport is used (net/http's own, if that has been
	// set to a Transport). A panic of Base during a fetch makes the fetch
	// unreachable; during an allowed request, it reaches the caller.
	Base http.RoundTripper

	// Agent is the crawler's product token, e.g. "ExampleBot", or a
	// User-Agent header that names one (see the package documentation);
	// "*" obeys the "*" group. If empty, each request's User-Agent decides.
	Agent string

	// UserAgent is the User-Agent of requests that have none (sent as a
	// copy) and of the fetches of robots.txt they cause. It must name
	// Agent's token, unless Agent is empty or "*"; otherwise every request
	// fails. If empty, Agent is used as given.
	UserAgent string

	// TTL is how long a fetched robots.txt is used; a shorter Cache-Control
	// max-age shortens it, to a minute at least. If zero, DefaultTTL.
	TTL time.Duration

	// FetchTimeout bounds each fetch of robots.txt, redirects and body
	// included, even if Base ignores the context: a longer one is
	// unreachable. If zero, DefaultFetchTimeout.
	FetchTimeout time.Duration

	// MaxBodySize is how much of a decoded robots.txt body is parsed; the
	// line it cuts is dropped. It is at least DefaultMaxBodySize.
	MaxBodySize int64

	// MaxOrigins and MaxBytes bound the origins cached and their memory
	// (parsed files, their bodies when Store is set, about 1 KiB of state
	// each); the least recently used (approximately) are dropped first. If
	// zero, DefaultMaxOrigins and DefaultMaxBytes.
	MaxOrigins int
	MaxBytes   int64

	// Store, if non-nil, shares fetched entries with other Transports. If
	// it is also a Locker, one fetch per origin happens among its users.
	Store fleet.Store

	// Logger, if non-nil, receives a record of each fetch of robots.txt,
	// each Store or Pacer error and, at the Debug level, each refusal and
	// each request held for its turn, with the request's context.
	Logger *slog.Logger

	// Every origin is paced: one request to it is in flight at a time,
	// and the next leaves no sooner than its interval after the answer to
	// the one before (see doc/pacing.md). The interval is the longest of
	// the delay the origin's robots.txt states (Crawl-delay, or
	// Request-rate n/T read as T/n, the longer), MinDelay, the adaptive
	// delay (twice the origin's recent response time, once that is 10 ms
	// or more, at most MaxCrawlDelay) and, for an origin that
	// states neither Crawl-delay nor Request-rate, DefaultDelay.
	//
	// DefaultDelay is the interval of an origin that states no delay; if
	// zero, DefaultPaceDelay (1 s). NoDefaultPace turns off DefaultDelay
	// and the adaptive delay: an origin that states no delay, with no
	// MinDelay, pause or back-off, then takes no turn and gets requests
	// with no limit, as a client that is not a crawler may want; robots.txt,
	// Crawl-delay, Request-rate, Retry-After, RateLimit, the back-off and
	// MinDelay still hold. The zero value is polite.
	DefaultDelay  time.Duration
	NoDefaultPace bool

	// IgnoreCrawlDelay ignores the delays robots.txt states (Crawl-delay
	// and Request-rate: the origin then takes DefaultDelay as if it stated
	// none); MaxCrawlDelay caps the delay honoured and the adaptive delay
	// (if zero, DefaultMaxCrawlDelay); MinDelay is the least time between
	// two requests to one origin. IgnoreRetryAfter turns off the pauses
	// that Retry-After sets; MaxRetryAfter caps them and those a RateLimit
	// field asks for (if zero, DefaultMaxRetryAfter). A cap that shortens
	// what a site asked for is logged (Warn), with the origin, the ask and
	// the cap.
	IgnoreCrawlDelay bool
	MaxCrawlDelay    time.Duration
	MinDelay         time.Duration
	IgnoreRetryAfter bool
	MaxRetryAfter    time.Duration

	// TurnTimeout bounds how long a request to a paced origin holds it:
	// one request to it is in flight at a time, and the next leaves an
	// interval after its answer (response headers or error), or after
	// TurnTimeout if the answer has not come by then. A request of this
	// Transport still awaited then counts as an answer that took
	// TurnTimeout; a hold in a Pacer whose holder is gone (a killed
	// process) costs the site only the hold. If zero, DefaultTurnTimeout.
	TurnTimeout time.Duration

	// Backoff pauses an origin that answers 429 or 503 without a usable
	// Retry-After (absent, zero, in the past, malformed, or ignored) or
	// RateLimit field;
	// its zero fields take DefaultBackoffFirst, DefaultBackoffMax and
	// DefaultBackoffForgive. Until a back-off is forgiven, the origin
	// gets one request at a time. IgnoreBackoff turns it off.
	Backoff       Backoff
	IgnoreBackoff bool

	// Uses names the uses the crawler makes of what it fetches ("train-ai",
	// "ai-use", "search", "use=reference", ...; Content-Signal's "ai-train"
	// and "ai-input" are read as "train-ai" and "ai-use"): a request whose
	// URL robots.txt marks "n" for one of them, or that the group of its
	// policy token (UseTokens) disallows, is refused with a
	// [*DisallowedError] that names the use. If empty, none is refused. A
	// crawler whose use qualifies as search names "search" alone: search
	// then overrides train-ai and ai-use (draft-ietf-aipref-vocab-08 §4.3).
	Uses []string

	// UseTokens names, per use, a policy token whose robots.txt groups say
	// where that use is allowed (draft-kelley-aipref-training-preference-signal):
	// {"train-ai": TOKEN} reads a group "User-agent: TOKEN" with its allow
	// and disallow lines as train-ai=y or n for each URL, answered by the
	// "*" groups where no group names TOKEN. UsageOf and CheckUsage report
	// it; Uses refuses by it. A token must be a product token. Empty by
	// default: no token is read.
	UseTokens map[string]string

	// MaxWait, if positive, is the longest a request waits for its turn:
	// one whose turn is further away fails at once with a [*TurnError]
	// (see [WithMaxWait]). If zero or negative, it waits until its context
	// is done.
	MaxWait time.Duration

	// Pacer, if non-nil, keeps the turns of each origin, so that the
	// Transports that share it share turns.
	Pacer fleet.Pacer

	// Signer, if non-nil, signs every request the Transport sends as it
	// leaves, with Web Bot Auth (see package webbotauth and
	// doc/identity.md): an allowed request after its turn, each redirect
	// hop (an http.Client calls RoundTrip per hop), each fetch of
	// robots.txt and each of its redirect hops, each signed over its own
	// authority and created when it is handed to Base. It signs a copy:
	// the caller's request is not modified; a request for a host the
	// Signer's Hosts do not list is sent as it is. A request that carries
	// Signature, Signature-Input or Signature-Agent already is refused
	// (webbotauth.ErrSigned), and one the Signer fails to sign
	// (webbotauth.ErrSign, ErrRequest) too: neither is sent, and the
	// error, returned with no response, matches those. A fetch of
	// robots.txt that cannot be signed is not sent either: robots.txt is
	// then unreachable and its origin refused until the fetch is retried.
	// If nil, nothing is signed, at no cost.
	Signer *webbotauth.Signer

	once   sync.Once
	cfg    config // set once, from the fields above
	cache  *cache // set once
	stats  stats
	logs                // set once
	turns  pacing.Turns // set once
	loader loader       // set once
	// the last User-Agent header → token derivation
	ua atomic.Pointer[uaToken]
	// named is set by NewTransport: Agent must name a token, even when
	// changed to "" afterwards.
	named bool

	// missed, if set (only by tests, through export_test.go), is called
	// on each miss before the load is waited for.
	missed func(originKey)
}

var _ http.RoundTripper = (*Transport)(nil)

// config is a Transport's fields, with defaults applied, frozen at first use.
type config struct {
	base      http.RoundTripper
	agent     string // the product token of Transport.Agent; "" if none
	userAgent string // the User-Agent of requests that have none; "" if none
	// with no agent, the token of a request without a User-Agent
	anonAgent    string
	err          error // why every request fails: an Agent with no token
	ttl          time.Duration
	fetchTimeout time.Duration
	maxBody      int64
	maxOrigins   int
	maxBytes     int64
	store        fleet.Store
	logger       *slog.Logger

	ignoreCrawlDelay bool
	maxCrawlDelay    time.Duration
	minDelay         time.Duration
	defaultDelay     time.Duration // 0 with NoDefaultPace
	ignoreRetryAfter bool
	maxRetryAfter    time.Duration
	maxWait          time.Duration // Transport.MaxWait; 0 for none
	turnTimeout      time.Duration
	// the cap of the adaptive delay: MaxCrawlDelay, or 0 with NoDefaultPace
	maxAdaptive time.Duration
	backoff     Backoff // First is 0 if IgnoreBackoff
	pacer       fleet.Pacer
	watcher     fleet.PauseWatcher // pacer, if it is one
	uses        useSet             // Transport.Uses and UseTokens
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
// is agent (see Transport.Agent). If agent names no product token, ""
// included, every request fails with an error that says so, as with a
// Transport whose Agent names none; a Transport that reads each request's
// token from its User-Agent header is a Transport{} with Agent left empty.
func NewTransport(base http.RoundTripper, agent string) *Transport {
	if base == nil {
		base = defaultBase()
	}
	return &Transport{Base: base, Agent: agent, named: true}
}

// Flush waits until the Transport has made every call it owes its Pacer and
// Store for the requests it has answered: the release of their turns, the
// pauses and back-offs their answers asked for (made on goroutines of
// their own for requests under MaxWait), and the fetches of robots.txt
// under way that a caller gave up waiting for (whose entries go to the
// Store). A program whose Pacer or Store outlives it (shared with other
// processes, or kept in a file) calls Flush before it exits, and before it
// closes them: a release lost at exit leaves the origin held for
// TurnTimeout, and a pause lost lets the next process send early. Each
// call it waits for is bounded by 2 seconds, and a fetch by FetchTimeout.
//
// Flush returns ctx's error if ctx is done first, and nil at once if
// nothing is owed. The Transport stays usable: calls owed by requests
// answered while Flush waits may be waited for too.
func (t *Transport) Flush(ctx context.Context) error {
	t.once.Do(t.init)
	return t.turns.Flush(ctx)
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
		defaultDelay:     t.DefaultDelay,
		ignoreRetryAfter: t.IgnoreRetryAfter,
		maxRetryAfter:    t.MaxRetryAfter,
		maxWait:          max(t.MaxWait, 0),
		turnTimeout:      t.TurnTimeout,
		backoff:          t.Backoff,
		pacer:            t.Pacer,
	}
	if c.turnTimeout <= 0 {
		c.turnTimeout = DefaultTurnTimeout
	}
	if c.backoff.First <= 0 {
		c.backoff.First = DefaultBackoffFirst
	}
	if c.backoff.Max <= 0 {
		c.backoff.Max = DefaultBackoffMax
	}
	c.backoff.Max = max(c.backoff.Max, c.backoff.First)
	if c.backoff.Forgive <= 0 {
		c.backoff.Forgive = DefaultBackoffForgive
	}
	if t.IgnoreBackoff {
		c.backoff = Backoff{}
	}
	c.watcher, _ = c.pacer.(fleet.PauseWatcher)
	c.uses = newUseSet(t.Uses, t.UseTokens)
	c.agent, c.err = tokenOf(t.Agent)
	if c.err == nil {
		c.err = c.uses.err
	}
	if c.err == nil && c.agent == "" && t.named {
		c.err = errors.New("robots: NewTransport: empty agent (for a token from each request's User-Agent, use a Transport with Agent empty)")
	}
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
	if t.Signer != nil {
		c.base = signingBase{base: c.base, signer: t.Signer}
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
	if c.defaultDelay <= 0 {
		c.defaultDelay = DefaultPaceDelay
	}
	c.maxAdaptive = c.maxCrawlDelay
	if t.NoDefaultPace {
		c.defaultDelay, c.maxAdaptive = 0, 0
	}
	t.cfg = c
	t.logs = logs{logger: c.logger}
	pc := pacing.Config{
		MinDelay: c.minDelay, MaxWait: c.maxWait, TurnTimeout: c.turnTimeout, MaxAdaptive: c.maxAdaptive,
		IgnoreRetryAfter: c.ignoreRetryAfter, MaxRetryAfter: c.maxRetryAfter, Backoff: c.backoff,
		Pacer: c.pacer, CallTimeout: storeTimeout, NotYet: turnError,
	}
	if c.logger != nil {
		pc.Log = turnLog{&t.logs}
	}
	t.turns.Init(pc, time.Now())
	t.cache = newCache(c.maxOrigins, c.maxBytes, &t.turns)
	t.loader = loader{logs: &t.logs, cfg: &t.cfg, cache: t.cache, stats: &t.stats, turns: &t.turns, missed: t.missed}
}

// now returns the time on the Transport's one clock, its pacing's (see
// pacing.Turns.Now): on the hot path it reads only the monotonic clock.
func (t *Transport) now() time.Duration { return t.turns.Now() }

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
// robots.txt of its origin allows it, in the origin's turn, and otherwise
// returns a nil response and a [*DisallowedError]. It fetches robots.txt
// first when the origin's copy is missing or expired. It gives up when req's
// context is done, and at once with a [*TurnError] if the turn is further
// away than MaxWait or than the context's deadline. A request for
// /robots.txt is sent unchecked, in its turn. A request with no User-Agent
// header is sent as a copy that has one (see UserAgent).
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
	var tk pacing.Ticket
	if isRobotsTxt(req.URL) {
		s, tk, err = t.robotsTxtSite(ctx, req.URL, req.Host, now)
	} else {
		var a pacing.Ask
		s, st, a, err = t.check(ctx, req.URL, req.Host, agent, t.fetchAgent(req.Header, ua), now)
		if err == nil && !t.turns.Free(s, a) {
			tk, err = t.turns.Wait(ctx, s, a, nil, now, req.URL)
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
	sent := now // when the request left, for the bursts of a back-off
	if tk.Taken() {
		sent = max(sent, tk.At()) // its turn: it left then, or at once
	}
	resp, err := t.cfg.base.RoundTrip(req)
	// The next request is spaced from this one's answer: the site sees
	// them an interval apart, however long this one took to reach it.
	if tk.Taken() {
		t.turns.Release(ctx, s, tk, sent, err != nil && ctx.Err() == nil)
	}
	if err == nil && resp != nil {
		t.turns.Answered(ctx, s, resp.StatusCode, resp.Header, sent)
		t.attachUsage(resp, req, st, agent) // see UsageOf
	}
	return resp, err
}

// robotsTxtSite returns the site of u with Host host, a request for
// /robots.txt that began at now, after waiting for its turn. It does not
// fetch robots.txt.
func (t *Transport) robotsTxtSite(ctx context.Context, u *url.URL, host string, now time.Duration) (*site, pacing.Ticket, error) {
	k, _, err := authorityOf(u, host)
	if err != nil {
		return nil, pacing.Ticket{}, err
	}
	sh := t.cache.shard(k)
	s := sh.get(k)
	if s == nil {
		s, _ = t.cache.add(sh, k, now)
	}
	tk, err := t.turns.Wait(ctx, s, t.turns.FetchAsk(s), nil, now, u)
	return s, tk, err
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
