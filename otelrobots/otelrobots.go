// Package otelrobots reports the counters of a [robots.Transport] as
// OpenTelemetry metrics.
//
// [Instrument] registers asynchronous (observable) counters on a Meter whose
// instrumentation scope is [ScopeName]. At each collection a single callback
// reads [robots.Transport.Stats] once and observes every counter from it;
// nothing is added to the Transport's request path. The metrics are:
//
//	name                         unit         attributes            meaning
//	robots.requests              {request}    robots.outcome        requests by outcome:
//	                                                                  sent: sent through Base
//	                                                                  disallowed: refused by a rule of robots.txt
//	                                                                  unreachable: refused, robots.txt unreachable
//	                                                                  not_yet: not sent, turn too far away (MaxWait)
//	                                                                  usage_refused: refused by a usage preference (Uses)
//	robots.allowed_without_rules {request}                          requests allowed with no rules: robots.txt
//	                                                                unavailable (4xx), or unreachable for 30 days
//	robots.fetches               {fetch}      robots.access         robots.txt fetches by access result
//	                                                                (success, unavailable, unreachable; RFC 9309 §2.3.1)
//	robots.store.hits            {entry}                            fresh robots.txt entries taken from the Store
//	                                                                instead of fetching
//	robots.store.errors          {error}                            Store and Locker calls that failed (Get, Put,
//	                                                                TryLock), unreadable entries included
//	robots.cache.lookups         {lookup}     robots.cache.result   requests decided by robots.txt in memory (hit) or
//	                                                                that waited for it to be fetched or loaded (miss)
//	robots.cache.evictions       {origin}                           origins dropped from memory (MaxOrigins, MaxBytes)
//	robots.pace.waits            {request}                          requests that waited for their origin's turn
//	robots.pace.wait.time        s                                  total time requests waited for their turn
//	robots.pace.pauses           {pause}      robots.pause.reason   origins paused, by reason:
//	                                                                  retry_after: by a Retry-After header
//	                                                                  backoff: by a 429 or 503 without one
//	                                                                  (one per incident; see robots.Backoff)
//	robots.pace.in_flight_waits  {request}                          requests that waited for, or were refused
//	                                                                for, the answer to another request to their
//	                                                                paced origin
//
// All are cumulative and monotonic. The outcomes of robots.requests do not
// cover every request: one that fails before it is decided (a scheme other
// than http or https, a canceled context, an invalid Agent) has none.
//
// No metric carries the origin, the URL or the product token as an
// attribute: the origins a crawler visits are unbounded in number, and so
// would be the series of such metrics. Per-origin detail is for logs (see
// robots.Transport.Logger). The attributes given with [WithAttributes] are
// set once and added to every series; they tell apart Transports
// instrumented on one MeterProvider.
package otelrobots

import (
	"context"
	"errors"
	"math"
	"runtime/debug"

	"github.com/f9014239/robots"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ScopeName is the instrumentation scope of the metrics: the name of the
// Meter that [Instrument] gets from the MeterProvider.
const ScopeName = "github.com/f9014239/robots/otelrobots"

// Attribute keys of the metrics.
const (
	OutcomeKey     = attribute.Key("robots.outcome")      // of robots.requests
	AccessKey      = attribute.Key("robots.access")       // of robots.fetches
	CacheResultKey = attribute.Key("robots.cache.result") // of robots.cache.lookups
	PauseReasonKey = attribute.Key("robots.pause.reason") // of robots.pace.pauses
)

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
// which OpenTelemetry leaves undefined. An attribute with one of the keys
// of the metrics' own ([OutcomeKey], [AccessKey], [CacheResultKey],
// [PauseReasonKey]) is
// dropped.
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

	var errs []error
	i64 := func(name, unit, desc string) metric.Int64ObservableCounter {
		inst, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return inst
	}
	requests := i64("robots.requests", "{request}",
		"Requests by outcome: sent through the base transport, or refused by a rule of robots.txt, because robots.txt is unreachable, for now (their turn was too far away), or by a usage preference.")
	noRules := i64("robots.allowed_without_rules", "{request}",
		"Requests allowed with no rules: robots.txt unavailable (4xx), or unreachable for 30 days.")
	fetches := i64("robots.fetches", "{fetch}",
		"Fetches of robots.txt by access result.")
	storeHits := i64("robots.store.hits", "{entry}",
		"Fresh robots.txt entries taken from the Store instead of fetching.")
	storeErrors := i64("robots.store.errors", "{error}",
		"Store and Locker calls that failed (Get, Put, TryLock), unreadable entries included; the Transport goes on without the Store.")
	lookups := i64("robots.cache.lookups", "{lookup}",
		"Requests decided by a fresh robots.txt in memory (hit), or that waited for it to be fetched or loaded from the Store (miss).")
	evictions := i64("robots.cache.evictions", "{origin}",
		"Origins dropped from memory to stay within the Transport's bounds.")
	waits := i64("robots.pace.waits", "{request}",
		"Requests that waited for their origin's turn.")
	pauses := i64("robots.pace.pauses", "{pause}",
		"Origins paused, by reason: a Retry-After header (retry_after), or a 429 or 503 without one (backoff; one per incident).")
	inFlight := i64("robots.pace.in_flight_waits", "{request}",
		"Requests that waited for, or were refused for, the answer to another request to their paced origin.")
	waitTime, err := m.Float64ObservableCounter("robots.pace.wait.time", metric.WithUnit("s"),
		metric.WithDescription("Total time requests waited for their origin's turn."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	var extra []attribute.KeyValue
	for _, kv := range c.attrs {
		if kv.Key != OutcomeKey && kv.Key != AccessKey && kv.Key != CacheResultKey && kv.Key != PauseReasonKey {
			extra = append(extra, kv)
		}
	}
	with := func(kv ...attribute.KeyValue) metric.ObserveOption {
		return metric.WithAttributeSet(attribute.NewSet(append(append([]attribute.KeyValue(nil), extra...), kv...)...))
	}
	var (
		base         = with()
		sent         = with(OutcomeKey.String("sent"))
		disallowed   = with(OutcomeKey.String("disallowed"))
		unreachable  = with(OutcomeKey.String("unreachable"))
		notYet       = with(OutcomeKey.String("not_yet"))
		usageRefused = with(OutcomeKey.String("usage_refused"))
		fetchOK      = with(AccessKey.String("success"))
		fetchUnavail = with(AccessKey.String("unavailable"))
		fetchUnreach = with(AccessKey.String("unreachable"))
		hit          = with(CacheResultKey.String("hit"))
		miss         = with(CacheResultKey.String("miss"))
		retryAfter   = with(PauseReasonKey.String("retry_after"))
		backoff      = with(PauseReasonKey.String("backoff"))
	)
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := t.Stats()
		o.ObserveInt64(requests, count(s.Sent), sent)
		o.ObserveInt64(requests, count(s.RefusedRule), disallowed)
		o.ObserveInt64(requests, count(s.RefusedUnreachable), unreachable)
		o.ObserveInt64(requests, count(s.NotYet), notYet)
		o.ObserveInt64(requests, count(s.RefusedUsage), usageRefused)
		o.ObserveInt64(noRules, count(s.AllowedNoRules), base)
		o.ObserveInt64(fetches, count(s.FetchSuccess), fetchOK)
		o.ObserveInt64(fetches, count(s.FetchUnavailable), fetchUnavail)
		o.ObserveInt64(fetches, count(s.FetchUnreachable), fetchUnreach)
		o.ObserveInt64(storeHits, count(s.StoreHits), base)
		o.ObserveInt64(storeErrors, count(s.StoreErrors), base)
		o.ObserveInt64(lookups, count(s.CacheHits), hit)
		o.ObserveInt64(lookups, count(s.LoadWaits), miss)
		o.ObserveInt64(evictions, count(s.Evictions), base)
		o.ObserveInt64(waits, count(s.TurnWaits), base)
		o.ObserveFloat64(waitTime, s.TurnWaitTime.Seconds(), base)
		o.ObserveInt64(pauses, count(s.Pauses), retryAfter)
		o.ObserveInt64(pauses, count(s.Backoffs), backoff)
		o.ObserveInt64(inFlight, count(s.InFlightWaits), base)
		return nil
	}, requests, noRules, fetches, storeHits, storeErrors, lookups, evictions, waits, waitTime, pauses, inFlight)
}

// count converts a counter to an observation, saturating rather than
// wrapping to a negative value.
func count(n uint64) int64 {
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
