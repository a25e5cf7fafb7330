package otelrobots

import (
	"context"
	"errors"
	"time"

	"github.com/f9014239/robots/frontier"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// frontierMetric is a metric of a frontier: one field of frontier.Counts,
// a cumulative counter (count or duration) or, for a level, a gauge.
type frontierMetric struct {
	name, unit, desc string
	gauge            bool
	count            func(frontier.Counts) uint64
	duration         func(frontier.Counts) time.Duration
}

func level(name, unit, desc string, f func(frontier.Counts) int) frontierMetric {
	return frontierMetric{name: name, unit: unit, desc: desc, gauge: true, count: func(c frontier.Counts) uint64 { return uint64(max(f(c), 0)) }}
}

func total(name, unit, desc string, f func(frontier.Counts) uint64) frontierMetric {
	return frontierMetric{name: name, unit: unit, desc: desc, count: f}
}

func totalTime(name, desc string, f func(frontier.Counts) time.Duration) frontierMetric {
	return frontierMetric{name: name, unit: "s", desc: desc, duration: f}
}

// frontierMetrics are the metrics of a frontier, one for each field of
// frontier.Counts, in its order.
var frontierMetrics = []frontierMetric{
	level("robots.frontier.queued", "{url}", "URLs queued, not handed out.", func(c frontier.Counts) int { return c.Queued }),
	level("robots.frontier.out", "{url}", "URLs handed out and not yet given back.", func(c frontier.Counts) int { return c.Out }),
	level("robots.frontier.sites", "{origin}", "Sites with a URL queued or out.", func(c frontier.Counts) int { return c.Sites }),
	total("robots.frontier.pushed", "{url}", "URLs accepted by Push.", func(c frontier.Counts) uint64 { return c.Pushed }),
	total("robots.frontier.finished", "{url}", "URLs done and forgotten, whatever the outcome.", func(c frontier.Counts) uint64 { return c.Finished }),
	total("robots.frontier.refused", "{url}", "URLs finished as refused by a rule of robots.txt.", func(c frontier.Counts) uint64 { return c.Refused }),
	total("robots.frontier.unreachable", "{url}", "URLs finished as refused because robots.txt is unreachable.", func(c frontier.Counts) uint64 { return c.Unreachable }),
	total("robots.frontier.not_yet", "{url}", "URLs refused for now (ErrNotYet) and queued again.", func(c frontier.Counts) uint64 { return c.NotYet }),
	total("robots.frontier.requeued", "{url}", "URLs given back with Requeue, or answered with a canceled context.", func(c frontier.Counts) uint64 { return c.Requeued }),
	total("robots.frontier.retried", "{url}", "Answers the site deferred (429, 503, a failure that may pass), queued again.", func(c frontier.Counts) uint64 { return c.Retried }),
	total("robots.frontier.gave_up", "{url}", "URLs given up, deferred more than MaxRetries times.", func(c frontier.Counts) uint64 { return c.GaveUp }),
	level("robots.frontier.held", "{origin}", "Sites with URLs queued that wait for their turn.", func(c frontier.Counts) int { return c.Held }),
	level("robots.frontier.ready", "{origin}", "Sites whose turn has come, waiting for a worker.", func(c frontier.Counts) int { return c.Ready }),
	total("robots.frontier.turn_waits", "{turn}", "Turns that a site with URLs queued waited for.", func(c frontier.Counts) uint64 { return c.TurnWaits }),
	totalTime("robots.frontier.turn_wait_time", "The time sites with URLs queued waited for their turns, in total.", func(c frontier.Counts) time.Duration { return c.TurnWaitTime }),
	total("robots.frontier.idle_waits", "{call}", "Calls of Next that waited, no URL being ready.", func(c frontier.Counts) uint64 { return c.IdleWaits }),
	totalTime("robots.frontier.idle_time", "The time calls of Next waited, in total.", func(c frontier.Counts) time.Duration { return c.IdleTime }),
}

// InstrumentFrontier registers the metrics of f, described in the package
// documentation, on the same terms as Instrument: the callback reads
// f.Counts once a collection (which visits every site f holds, under its
// lock), and no metric has attributes but those given with
// [WithAttributes]. An error is returned, and nothing registered, if f is
// nil or the MeterProvider refuses an instrument.
func InstrumentFrontier(f *frontier.Frontier, opts ...Option) (metric.Registration, error) {
	if f == nil {
		return nil, errors.New("otelrobots: InstrumentFrontier: nil Frontier")
	}
	return instrumentFrontier(f.Counts, opts...)
}

func instrumentFrontier(counts func() frontier.Counts, opts ...Option) (metric.Registration, error) {
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
	type inst struct {
		gauge  metric.Int64ObservableGauge
		ints   metric.Int64ObservableCounter
		floats metric.Float64ObservableCounter
	}
	var (
		is    = make([]inst, len(frontierMetrics))
		insts = make([]metric.Observable, len(frontierMetrics))
		errs  []error
	)
	for i, k := range frontierMetrics {
		var err error
		switch {
		case k.gauge:
			is[i].gauge, err = m.Int64ObservableGauge(k.name, metric.WithUnit(k.unit), metric.WithDescription(k.desc))
			insts[i] = is[i].gauge
		case k.duration != nil:
			is[i].floats, err = m.Float64ObservableCounter(k.name, metric.WithUnit(k.unit), metric.WithDescription(k.desc))
			insts[i] = is[i].floats
		default:
			is[i].ints, err = m.Int64ObservableCounter(k.name, metric.WithUnit(k.unit), metric.WithDescription(k.desc))
			insts[i] = is[i].ints
		}
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	attrs := metric.WithAttributeSet(attribute.NewSet(c.attrs...))
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		n := counts()
		for i, k := range frontierMetrics {
			switch {
			case k.gauge:
				o.ObserveInt64(is[i].gauge, saturate(k.count(n)), attrs)
			case k.duration != nil:
				o.ObserveFloat64(is[i].floats, k.duration(n).Seconds(), attrs)
			default:
				o.ObserveInt64(is[i].ints, saturate(k.count(n)), attrs)
			}
		}
		return nil
	}, insts...)
}
