package robots

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
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
// for now because its origin's robots.txt is unreachable (RFC 9309
// §2.3.1.4; see [DisallowedError.RetryAt]).
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
	DefaultTTL           = 24 * time.Hour   // TTL (RFC 9309 §2.4)
	DefaultFetchTimeout  = 30 * time.Second // FetchTimeout
	DefaultMaxBodySize   = 500 << 10        // MaxBodySize, its least (RFC 9309 §2.5)
	DefaultMaxOrigins    = 10000            // MaxOrigins
	DefaultMaxBytes      = 256 << 20        // MaxBytes
	DefaultMaxCrawlDelay = 24 * time.Hour   // MaxCrawlDelay
	DefaultMaxRetryAfter = 24 * time.Hour   // MaxRetryAfter
	DefaultTurnTimeout   = time.Minute      // TurnTimeout
	DefaultPaceDelay     = time.Second      // DefaultDelay
	DefaultDomainCap     = 4                // DomainCap
	DefaultAddressCap    = 64               // AddressCap
	// Backoff's fields
	DefaultBackoffFirst   = time.Minute
	DefaultBackoffMax     = 24 * time.Hour
	DefaultBackoffForgive = time.Hour
)

// Transport is an [http.RoundTripper] that obeys robots.txt (see the package
// documentation); only http and https URLs are sent. The zero value reads
// each request's product token from its User-Agent header. Fields must not
// be modified after first use. A Transport is safe for concurrent use, and
// should be reused rather than created as needed.
type Transport struct {
	// Base sends the allowed requests and the fetches of robots.txt. If
	// nil, http.DefaultTransport is used.
	Base http.RoundTripper

	// Agent is the crawler's product token, e.g. "ExampleBot", or a
	// User-Agent header that names one (see the package documentation);
	// "*" obeys the "*" group. If empty, each request's User-Agent decides.
	Agent string

	// UserAgent is the User-Agent of requests that have none and of the
	// fetches of robots.txt; it must name Agent's token, or every request
	// fails. If empty, Agent is used as given.
	UserAgent string

	// TTL is how long a fetched robots.txt is used; a shorter Cache-Control
	// max-age shortens it, to a minute at least. If zero, DefaultTTL.
	TTL time.Duration

	// FetchTimeout bounds each fetch of robots.txt, redirects and body
	// included: a longer one is unreachable. If zero, DefaultFetchTimeout.
	FetchTimeout time.Duration

	// MaxBodySize is how much of a robots.txt is parsed; at least
	// DefaultMaxBodySize.
	MaxBodySize int64

	// MaxOrigins and MaxBytes bound the origins cached and their memory;
	// the least recently used are dropped first. If zero, the defaults.
	MaxOrigins int
	MaxBytes   int64

	// Store and Pacer, if non-nil, share fetched entries (one fetch per
	// origin among their users, if Store is a Locker) and the turns,
	// pauses and back-offs of each origin with other Transports.
	Store fleet.Store
	Pacer fleet.Pacer

	// Logger, if non-nil, records each fetch, each Store or Pacer error
	// and, at the Debug level, each refusal and wait.
	Logger *slog.Logger

	// DefaultDelay is the interval between an answer and the next request
	// to an origin that states no delay; if zero, DefaultPaceDelay (1 s).
	// No interval is shorter than MinDelay nor than the adaptive delay,
	// twice the origin's recent response time (doc/pacing.md).
	// NoDefaultPace turns off both, for a client that is not a crawler;
	// what the site asks still holds. The zero value is polite.
	DefaultDelay  time.Duration
	NoDefaultPace bool

	// IgnoreCrawlDelay ignores the delays and the Visit-time window
	// robots.txt states; MaxCrawlDelay caps the delay honoured (if zero,
	// DefaultMaxCrawlDelay); MinDelay is the least interval of any origin.
	// IgnoreRetryAfter turns off Retry-After's pauses; MaxRetryAfter caps
	// them and RateLimit's (if zero, DefaultMaxRetryAfter). A cap that
	// shortens what a site asked for is logged.
	IgnoreCrawlDelay bool
	MaxCrawlDelay    time.Duration
	MinDelay         time.Duration
	IgnoreRetryAfter bool
	MaxRetryAfter    time.Duration

	// TurnTimeout bounds how long a request holds its origin: the next
	// leaves an interval after its answer, or after TurnTimeout if none
	// has come. A request of this Transport still awaited then counts as
	// that slow; a hold in a Pacer whose holder is gone costs the site the
	// hold alone. If zero, DefaultTurnTimeout.
	TurnTimeout time.Duration

	// Backoff pauses an origin that answers 429 or 503 with no usable
	// Retry-After or RateLimit; its zero fields take the DefaultBackoff
	// constants. Until it is forgiven, the origin gets one request at a
	// time. IgnoreBackoff turns it off.
	Backoff       Backoff
	IgnoreBackoff bool

	// Uses names the uses the crawler makes of what it fetches
	// ("train-ai", "search", ...): a request whose URL robots.txt marks
	// "n" for one is refused, naming the use (doc/usage.md). UseTokens
	// names, per use, a policy token whose groups say where it is allowed.
	// Empty by default: nothing is refused for a use.
	Uses      []string
	UseTokens map[string]string

	// MaxWait, if positive, is the longest a request waits for its turn:
	// one whose turn is further away fails at once with a [*TurnError]
	// (see [WithMaxWait]). If zero, it waits until its context is done.
	MaxWait time.Duration

	// DomainCap caps the requests in flight to the origins of one
	// registrable domain (private suffixes included: a.github.io and
	// b.github.io stay apart), or of one group of GroupOf. AddressCap caps
	// an address two or more origins share, learned when Base is an
	// *http.Transport without a proxy; its cap starts at 4, grows while
	// answers are quick, and halves on pushback (AIMD). UncappedPrefixes
	// are never capped. If zero, the defaults; NoDomainCap and
	// NoAddressCap turn them off (doc/pacing.md).
	DomainCap        int
	NoDomainCap      bool
	GroupOf          func(origin string) string
	AddressCap       int
	NoAddressCap     bool
	UncappedPrefixes []netip.Prefix

	// Signer, if non-nil, signs every request the Transport sends (pages
	// after their turn, each redirect hop, each fetch of robots.txt) as it
	// leaves, with Web Bot Auth (package webbotauth, doc/identity.md), on a
	// copy. A request that carries Signature fields already, or that the
	// Signer fails to sign, is not sent: its error matches
	// webbotauth.ErrSigned or ErrSign; a fetch of robots.txt so is
	// unreachable. If nil, nothing is signed, at no cost.
	Signer *webbotauth.Signer

	// MaxPrice, if not empty, is the most the crawler pays for a page
	// under pay-per-crawl ("USD 0.01"; see pageterms.ParsePrice), sent as
	// crawler-max-price on each request that offers no price, fetches of
	// robots.txt excepted; sign it by naming it in the Signer's
	// Options.Headers. If malformed, every request fails. Empty by default:
	// nothing is offered, and a site that charges answers 402.
	MaxPrice string

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
	// learnAny, if set (only by tests), learns addresses through any
	// Base.
	learnAny bool
}

var _ http.RoundTripper = (*Transport)(nil)

// NewTransport returns a Transport that sends through base (nil:
// [http.DefaultTransport]) as the crawler whose product token agent names;
// if it names none, "" included, every request fails with an error that
// says so (a Transport{} reads each request's token from its User-Agent).
func NewTransport(base http.RoundTripper, agent string) *Transport {
	if base == nil {
		base = defaultBase()
	}
	return &Transport{Base: base, Agent: agent, named: true}
}

// Flush waits until the Transport has made every call it owes its Pacer and
// Store for the requests it has answered (releases, pauses and back-offs
// that requests under MaxWait report on goroutines of their own; fetches of
// robots.txt a caller gave up waiting for), or until ctx is done, and then
// returns ctx's error. A program whose Pacer or Store outlives it calls
// Flush before it exits and closes them: a release lost at exit holds the
// origin for TurnTimeout, a pause lost lets the next process send early.
// Each call is bounded by 2 seconds, a fetch by FetchTimeout. The Transport
// stays usable.
func (t *Transport) Flush(ctx context.Context) error {
	t.once.Do(t.init)
	return t.turns.Flush(ctx)
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
// returns a [*DisallowedError]; a [*TurnError] at once if the turn is past
// MaxWait or the context's deadline. A request for /robots.txt is sent
// unchecked, in its turn; one with no User-Agent, as a copy with one.
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
	var held bool // by a Visit-time window
	robotsTxt := isRobotsTxt(req.URL)
	if robotsTxt {
		s, tk, err = t.robotsTxtSite(ctx, req.URL, req.Host, now)
	} else {
		var a pacing.Ask
		for at := now; ; at = t.now() {
			s, st, a, err = t.check(ctx, req.URL, req.Host, agent, t.fetchAgent(req.Header, ua), at)
			if err != nil {
				break
			}
			h, herr := t.visitHold(ctx, s, st, agent, req.URL, now)
			held = held || h
			if err = herr; err != nil || !h {
				break
			}
			// Held until a Visit-time window opened: robots.txt may
			// have expired meanwhile, and is decided on again.
		}
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
	if t.cfg.maxPrice != "" && !robotsTxt && offersNoPrice(req.Header) {
		req = req.Clone(ctx)
		req.Header.Set("Crawler-Max-Price", t.cfg.maxPrice)
	}
	if tk.Learns() {
		req = req.WithContext(t.turns.Traced(req.Context(), s, tk, req.URL))
	}
	t.stats.sent.add()
	sent := now // when the request left, for the bursts of a back-off
	if held {
		sent = t.now()
	}
	if tk.Taken() {
		sent = max(sent, tk.At()) // its turn: it left then, or at once
	}
	if tk.Taken() && ctx.Err() != nil {
		// Cancelled as its turn came: not sent, and no answer.
		t.turns.GiveBack(ctx, s, tk)
		closeBody(req)
		return nil, fmt.Errorf("robots: waiting for the turn of %s: %w", s.origin, ctx.Err())
	}
	resp, err := t.send(ctx, req, s, tk, sent)
	// The next request is spaced from this one's answer: the site sees
	// them an interval apart, however long this one took to reach it. A
	// request that failed (a network error, a timeout, or its caller's
	// cancel, whose answer is unknown) never lowers the origin's
	// response-time estimate.
	if tk.Taken() {
		t.turns.Release(ctx, s, tk, sent, err != nil)
	}
	if err == nil && resp != nil {
		// A 402 is not pushback: Answered pauses nothing for it (see
		// pageterms.TermsOf). It is counted, as is a charge.
		if resp.StatusCode == http.StatusPaymentRequired {
			t.stats.paymentRequired.Add(1)
		}
		if _, ok := resp.Header["Crawler-Charged"]; ok {
			t.stats.charged.Add(1)
		}
		t.turns.Answered(ctx, s, resp.StatusCode, resp.Header, sent)
		t.attachUsage(resp, req, st, agent) // see UsageOf
	}
	return resp, err
}

// send sends req through Base. If Base panics, the turn tk of s (taken at
// sent) and its room are released, as a failed answer, before the panic
// goes on to the caller: a Base that panics leaks no turn nor room.
func (t *Transport) send(ctx context.Context, req *http.Request, s *site, tk pacing.Ticket, sent time.Duration) (resp *http.Response, err error) {
	defer func() {
		if v := recover(); v != nil {
			if tk.Taken() {
				t.turns.Release(ctx, s, tk, sent, true)
			}
			panic(v)
		}
	}()
	return t.cfg.base.RoundTrip(req)
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

// errMaxPrice is the error of every request of a Transport whose MaxPrice
// is malformed.
var errMaxPrice = errors.New("robots: Transport.MaxPrice")

// offersNoPrice reports whether h has neither crawler-max-price nor
// crawler-exact-price.
func offersNoPrice(h http.Header) bool {
	_, max := h["Crawler-Max-Price"]
	_, exact := h["Crawler-Exact-Price"]
	return !max && !exact
}
