package robots

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/internal/agenttoken"
	"github.com/f9014239/robots/internal/pacing"
	"github.com/f9014239/robots/pageterms"
)

// config is a Transport's fields, with defaults applied, frozen at first use.
type config struct {
	base      http.RoundTripper
	agent     string // the product token of Transport.Agent; "" if none
	userAgent string // the User-Agent of requests that have none; "" if none
	// with no agent, the token of a request without a User-Agent
	anonAgent    string
	err          error  // why every request fails: an Agent with no token
	maxPrice     string // MaxPrice, normalised; "" if none
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
	if t.MaxPrice != "" {
		p, err := pageterms.ParsePrice(t.MaxPrice)
		if err != nil && c.err == nil {
			c.err = fmt.Errorf("%w: %w", errMaxPrice, err)
		}
		c.maxPrice = p.String()
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
	} else if tok := agenttoken.Product(c.userAgent); tok != "" {
		c.anonAgent = tok
	}
	gc := pacing.GroupConfig{GroupOf: t.GroupOf, Uncapped: t.UncappedPrefixes}
	if !t.NoDomainCap {
		gc.DomainCap = cmp.Or(max(t.DomainCap, 0), DefaultDomainCap)
	}
	if !t.NoAddressCap {
		gc.AddressCeiling = cmp.Or(max(t.AddressCap, 0), DefaultAddressCap)
		if tr, ok := c.base.(*http.Transport); ok {
			gc.Learn, gc.Proxy = true, tr.Proxy
		}
		gc.Learn = gc.Learn || t.learnAny
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
		Pacer: c.pacer, CallTimeout: storeTimeout, NotYet: turnError, Groups: gc,
	}
	if c.logger != nil {
		pc.Log = turnLog{&t.logs}
	}
	t.turns.Init(pc, time.Now())
	t.cache = newCache(c.maxOrigins, c.maxBytes, &t.turns)
	t.loader = loader{logs: &t.logs, cfg: &t.cfg, cache: t.cache, stats: &t.stats, turns: &t.turns, missed: t.missed}
}
