// Package otelrobots reports the counters of a [robots.Transport] as
// OpenTelemetry metrics.
//
// [Instrument] registers asynchronous (observable) counters on a Meter whose
// instrumentation scope is [ScopeName]. At each collection a single callback
// reads [robots.Transport.Stats] once and observes every counter from it;
// nothing is added to the Transport's request path.
//
// Each metric is one field of [robots.Stats], named "robots." and the
// field's name in snake case (Stats.CacheHits is robots.cache_hits), and
// means what the field does. The metrics are:
//
//	name                        unit       meaning
//	robots.cache_hits           {request}  requests decided by a fresh copy of robots.txt in memory
//	robots.load_waits           {request}  requests that waited for a load of robots.txt (a fetch,
//	                                       or the Store), whether or not they started it
//	robots.evictions            {origin}   origins dropped from memory (MaxOrigins, MaxBytes)
//	robots.sent                 {request}  requests sent through Base (fetches not included)
//	robots.refused              {request}  requests refused (ErrDisallowed): the sum of the three below
//	robots.refused_rule         {request}  refused by a rule of robots.txt
//	robots.refused_unreachable  {request}  refused as robots.txt is unreachable
//	robots.refused_usage        {request}  refused by a usage preference (Uses)
//	robots.allowed_no_rules     {request}  allowed with no rules to obey: robots.txt unavailable,
//	                                       or unreachable for 30 days
//	robots.fetch_success        {fetch}    fetches of robots.txt with a 2xx answer
//	robots.fetch_unavailable    {fetch}    fetches with a 4xx, or too many redirects
//	robots.fetch_unreachable    {fetch}    fetches with no answer, a 429 or a 5xx
//	robots.fetch_not_modified   {fetch}    conditional fetches answered 304 Not Modified: the copy
//	                                       held renewed, no body read
//	robots.store_hits           {entry}    fresh entries taken from the Store, not fetched
//	robots.store_errors         {error}    Store and Locker calls that failed, unreadable entries
//	                                       included
//	robots.not_yet              {request}  requests not sent, their turn too far (ErrNotYet)
//	robots.turn_waits           {request}  requests that waited for their turn
//	robots.turn_wait_time       s          the time they waited, in total
//	robots.pauses               {pause}    origins paused by Retry-After
//	robots.backoffs             {pause}    incidents of pushback: origins paused by the back-off
//	robots.in_flight_waits      {request}  requests that waited for, or were refused for, the
//	                                       answer to another request to their origin
//	robots.rate_limits          {pause}    pauses a RateLimit response field asked for
//	robots.default_pace_waits   {request}  requests that waited for, or were refused for,
//	                                       DefaultDelay (an origin that states no delay)
//	robots.slow_waits           {request}  requests that waited for, or were refused for, the
//	                                       adaptive delay of an origin that answers slowly
//	robots.request_rate_waits   {request}  requests that waited for, or were refused for, the
//	                                       interval of a Request-rate
//	robots.payment_required     {response} responses with status 402 Payment Required: answers,
//	                                       not pushback
//	robots.charged              {response} responses with a crawler-charged field
//	robots.visit_time_waits     {request}  requests held, or refused for now, until a Visit-time
//	                                       window opens
//	robots.domain_cap_waits     {request}  requests that waited for, or were refused for, room
//	                                       in their registrable domain's group
//	robots.address_cap_waits    {request}  requests that waited for, or were refused for, room
//	                                       at their server's address
//	robots.address_halvings     {halving}  halvings of an address's cap on requests in flight
//	robots.address_ceilings     {address}  times an address's cap grew to AddressCap
//
// [InstrumentFrontier] reports a [frontier.Frontier]'s Counts the same
// way, one metric a field, named "robots.frontier." and the field's name
// in snake case; the levels (queued, out, sites, held, ready) are gauges,
// the rest cumulative monotonic counters. The callback reads Counts once a
// collection, which visits each site the frontier holds, under its lock:
//
//	robots.frontier.queued            {url}     gauge    URLs queued, not handed out
//	robots.frontier.out               {url}     gauge    URLs handed out and not yet given back
//	robots.frontier.sites             {origin}  gauge    sites with a URL queued or out
//	robots.frontier.pushed            {url}     counter  URLs accepted by Push
//	robots.frontier.finished          {url}     counter  URLs done and forgotten, whatever the outcome
//	robots.frontier.refused           {url}     counter  URLs finished as refused by a rule of robots.txt
//	robots.frontier.unreachable       {url}     counter  URLs finished as refused because robots.txt is unreachable
//	robots.frontier.not_yet           {url}     counter  URLs refused for now (ErrNotYet) and queued again
//	robots.frontier.requeued          {url}     counter  URLs given back with Requeue, or answered with a canceled context
//	robots.frontier.retried           {url}     counter  answers the site deferred (429, 503, a failure that may pass), queued again
//	robots.frontier.gave_up           {url}     counter  URLs given up, deferred more than MaxRetries times
//	robots.frontier.held              {origin}  gauge    sites with URLs queued that wait for their turn
//	robots.frontier.ready             {origin}  gauge    sites whose turn has come, waiting for a worker
//	robots.frontier.turn_waits        {turn}    counter  turns that a site with URLs queued waited for
//	robots.frontier.turn_wait_time    s         counter  the time sites with URLs queued waited for their turns, in total
//	robots.frontier.idle_waits        {call}    counter  calls of Next that waited, no URL being ready
//	robots.frontier.idle_time         s         counter  the time calls of Next waited, in total
//
// All of the Transport's are cumulative and monotonic. The request counters do not cover every
// request: one that fails before it is decided (a scheme other than http or
// https, a canceled context, an invalid Agent) is in none of them.
//
// No metric has attributes of its own. None carries the origin, the URL or
// the product token: the origins a crawler visits are unbounded in number,
// and so would be the series of such metrics. Per-origin detail is for logs
// (see robots.Transport.Logger). The attributes given with [WithAttributes]
// are set once and added to every series; they tell apart Transports
// instrumented on one MeterProvider.
package otelrobots

import (
	"context"
	"errors"
	"math"
	"runtime/debug"
	"time"

	"github.com/f9014239/robots"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ScopeName is the instrumentation scope of the metrics: the name of the
// Meter that [Instrument] gets from the MeterProvider.
const ScopeName = "github.com/f9014239/robots/otelrobots"

// counter is a metric: one field of robots.Stats, read by count (a uint64
// field) or by duration (a time.Duration field, observed in seconds).
type counter struct {
	name, unit, desc string
	count            func(robots.Stats) uint64
	duration         func(robots.Stats) time.Duration
}

func count(name, unit, desc string, f func(robots.Stats) uint64) counter {
	return counter{name: name, unit: unit, desc: desc, count: f}
}

func seconds(name, desc string, f func(robots.Stats) time.Duration) counter {
	return counter{name: name, unit: "s", desc: desc, duration: f}
}

// counters are the metrics, one for each field of robots.Stats, in its
// order; the descriptions are the fields' comments.
var counters = []counter{
	count("robots.cache_hits", "{request}", "Requests decided by a fresh copy of robots.txt in memory.", func(s robots.Stats) uint64 { return s.CacheHits }),
	count("robots.load_waits", "{request}", "Requests that waited for a load of robots.txt (a fetch, or the Store), whether or not they started it.", func(s robots.Stats) uint64 { return s.LoadWaits }),
	count("robots.evictions", "{origin}", "Origins dropped from memory, under MaxOrigins and under MaxBytes.", func(s robots.Stats) uint64 { return s.Evictions }),
	count("robots.sent", "{request}", "Requests sent through Base (fetches of robots.txt not included).", func(s robots.Stats) uint64 { return s.Sent }),
	count("robots.refused", "{request}", "Requests refused (ErrDisallowed): the sum of robots.refused_rule, robots.refused_unreachable and robots.refused_usage.", func(s robots.Stats) uint64 { return s.Refused }),
	count("robots.refused_rule", "{request}", "Requests refused by a rule of robots.txt.", func(s robots.Stats) uint64 { return s.RefusedRule }),
	count("robots.refused_unreachable", "{request}", "Requests refused as robots.txt is unreachable.", func(s robots.Stats) uint64 { return s.RefusedUnreachable }),
	count("robots.refused_usage", "{request}", "Requests refused by a usage preference (Uses).", func(s robots.Stats) uint64 { return s.RefusedUsage }),
	count("robots.allowed_no_rules", "{request}", "Requests allowed with no rules to obey: robots.txt unavailable, or unreachable for 30 days.", func(s robots.Stats) uint64 { return s.AllowedNoRules }),
	count("robots.fetch_success", "{fetch}", "Fetches of robots.txt with a 2xx answer.", func(s robots.Stats) uint64 { return s.FetchSuccess }),
	count("robots.fetch_unavailable", "{fetch}", "Fetches of robots.txt with a 4xx answer, or too many redirects.", func(s robots.Stats) uint64 { return s.FetchUnavailable }),
	count("robots.fetch_unreachable", "{fetch}", "Fetches of robots.txt with no answer, a 429 or a 5xx.", func(s robots.Stats) uint64 { return s.FetchUnreachable }),
	count("robots.fetch_not_modified", "{fetch}", "Conditional fetches of robots.txt answered 304 Not Modified, which renewed the copy held without a body.", func(s robots.Stats) uint64 { return s.FetchNotModified }),
	count("robots.store_hits", "{entry}", "Fresh robots.txt entries taken from the Store, not fetched.", func(s robots.Stats) uint64 { return s.StoreHits }),
	count("robots.store_errors", "{error}", "Store and Locker calls that failed, unreadable entries included.", func(s robots.Stats) uint64 { return s.StoreErrors }),
	count("robots.not_yet", "{request}", "Requests not sent, their turn too far (ErrNotYet).", func(s robots.Stats) uint64 { return s.NotYet }),
	count("robots.turn_waits", "{request}", "Requests that waited for their turn.", func(s robots.Stats) uint64 { return s.TurnWaits }),
	seconds("robots.turn_wait_time", "The time requests waited for their turn, in total.", func(s robots.Stats) time.Duration { return s.TurnWaitTime }),
	count("robots.pauses", "{pause}", "Origins paused by Retry-After.", func(s robots.Stats) uint64 { return s.Pauses }),
	count("robots.backoffs", "{pause}", "Incidents of pushback: origins paused by the back-off.", func(s robots.Stats) uint64 { return s.Backoffs }),
	count("robots.in_flight_waits", "{request}", "Requests that waited for, or were refused for, the answer to another request to their origin (ReasonInFlight).", func(s robots.Stats) uint64 { return s.InFlightWaits }),
	count("robots.rate_limits", "{pause}", "Pauses that a RateLimit response field asked for (a spent quota, or the rest spread over its window).", func(s robots.Stats) uint64 { return s.RateLimits }),
	count("robots.default_pace_waits", "{request}", "Requests that waited for, or were refused for, the interval DefaultDelay sets for an origin that states none (ReasonDefaultPace).", func(s robots.Stats) uint64 { return s.DefaultPaceWaits }),
	count("robots.slow_waits", "{request}", "Requests that waited for, or were refused for, the adaptive delay of an origin that answers slowly (ReasonSlowAnswers).", func(s robots.Stats) uint64 { return s.SlowWaits }),
	count("robots.request_rate_waits", "{request}", "Requests that waited for, or were refused for, the interval of a Request-rate (ReasonRequestRate).", func(s robots.Stats) uint64 { return s.RequestRateWaits }),
	count("robots.payment_required", "{response}", "Responses with status 402 Payment Required: answers, not pushback.", func(s robots.Stats) uint64 { return s.PaymentRequired }),
	count("robots.charged", "{response}", "Responses with a crawler-charged field: pages paid for.", func(s robots.Stats) uint64 { return s.Charged }),
	count("robots.visit_time_waits", "{request}", "Requests held, or refused for now, until the Visit-time window of their origin's robots.txt opens (ReasonVisitTime).", func(s robots.Stats) uint64 { return s.VisitTimeWaits }),
	count("robots.domain_cap_waits", "{request}", "Requests that waited for, or were refused for, room in their registrable domain's group (ReasonDomainCap).", func(s robots.Stats) uint64 { return s.DomainCapWaits }),
	count("robots.address_cap_waits", "{request}", "Requests that waited for, or were refused for, room at their server's address (ReasonAddressCap).", func(s robots.Stats) uint64 { return s.AddressCapWaits }),
	count("robots.address_halvings", "{halving}", "Halvings of an address's cap on requests in flight: a 429 or 503, a failure, or slowing answers.", func(s robots.Stats) uint64 { return s.AddressHalvings }),
	count("robots.address_ceilings", "{address}", "Times an address's cap on requests in flight grew to AddressCap: addresses that behave as front ends.", func(s robots.Stats) uint64 { return s.AddressCeilings }),
}

// Option configures [Instrument].
type Option interface {
	apply(*config)
}

type config struct {
	mp    metric.MeterProvider
	attrs []attribute.KeyValue
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithMeterProvider sets the MeterProvider the metrics are registered on.
// If it is not given, or is nil, the global MeterProvider
// (otel.GetMeterProvider) is used, as it is when Instrument is called.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.mp = mp })
}

// WithAttributes adds attrs to every series of the metrics, for example a
// crawler's name; several calls add up. They are set once, at Instrument.
// Give each Transport instrumented on one MeterProvider attributes of its
// own: two that observe the same series report duplicate observations,
// which OpenTelemetry leaves undefined.
func WithAttributes(attrs ...attribute.KeyValue) Option {
	return optionFunc(func(c *config) { c.attrs = append(c.attrs, attrs...) })
}

// Instrument registers the metrics of t, described in the package
// documentation, and returns their registration: its Unregister stops the
// callback that reads t, after which the metrics of t are no longer
// reported. t is not modified, and may be instrumented before or after its
// first use. An error is returned, and nothing registered, if t is nil or
// the MeterProvider refuses an instrument.
//
// Instrument is safe for concurrent use; the callback it registers may run
// concurrently with t's requests.
func Instrument(t *robots.Transport, opts ...Option) (metric.Registration, error) {
	if t == nil {
		return nil, errors.New("otelrobots: Instrument: nil Transport")
	}
	return instrument(t.Stats, opts...)
}

// instrument registers the counters, observed from stats.
func instrument(stats func() robots.Stats, opts ...Option) (metric.Registration, error) {
	var c config
	for _, o := range opts {
		o.apply(&c)
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	var mopts []metric.MeterOption
	if v := version(); v != "" {
		mopts = append(mopts, metric.WithInstrumentationVersion(v))
	}
	m := c.mp.Meter(ScopeName, mopts...)

	var (
		ints   = make([]metric.Int64ObservableCounter, len(counters))
		floats = make([]metric.Float64ObservableCounter, len(counters))
		insts  = make([]metric.Observable, len(counters))
		errs   []error
	)
	for i, k := range counters {
		var err error
		if k.duration != nil {
			floats[i], err = m.Float64ObservableCounter(k.name, metric.WithUnit(k.unit), metric.WithDescription(k.desc))
			insts[i] = floats[i]
		} else {
			ints[i], err = m.Int64ObservableCounter(k.name, metric.WithUnit(k.unit), metric.WithDescription(k.desc))
			insts[i] = ints[i]
		}
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	attrs := metric.WithAttributeSet(attribute.NewSet(c.attrs...))
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := stats()
		for i, k := range counters {
			if k.duration != nil {
				o.ObserveFloat64(floats[i], k.duration(s).Seconds(), attrs)
			} else {
				o.ObserveInt64(ints[i], saturate(k.count(s)), attrs)
			}
		}
		return nil
	}, insts...)
}

// saturate converts a counter to an observation, saturating rather than
// wrapping to a negative value.
func saturate(n uint64) int64 {
	if n > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(n)
}

// version returns the version of this module in the running binary's build
// information, or "" if it is not known.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return versionOf(bi)
}

// versionOf returns the version of this module in bi: "" in a development
// build, or when the module is replaced by a directory.
func versionOf(bi *debug.BuildInfo) string {
	v := ""
	if bi.Main.Path == ScopeName {
		v = bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == ScopeName {
			v = d.Version
			if d.Replace != nil {
				v = d.Replace.Version // "" when replaced by a directory
			}
		}
	}
	if v == "(devel)" {
		v = ""
	}
	return v
}
