package otelrobots

import (
	"context"
	"reflect"
	"testing"

	"github.com/f9014239/robots/frontier"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// TestInstrumentFrontier reads back each metric of a frontier: the levels
// as gauges, the totals as cumulative monotonic sums, with the attributes
// given and no other.
func TestInstrumentFrontier(t *testing.T) {
	mp, r := newProvider(t)
	f := new(frontier.Frontier)
	reg, err := InstrumentFrontier(f, WithMeterProvider(mp), WithAttributes(attribute.String("crawler", "a")))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"http://a.example/1", "http://a.example/2", "http://b.example/"} {
		f.Push(u)
	}
	u, _ := f.Next(context.Background())
	f.Done(u, nil)
	f.Next(context.Background()) // out

	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			series := func(attrs attribute.Set) string {
				return m.Name + "{" + attrs.Encoded(attribute.DefaultEncoder()) + "}"
			}
			switch d := m.Data.(type) {
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					got[series(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Sum[int64]:
				if !d.IsMonotonic || d.Temporality != metricdata.CumulativeTemporality {
					t.Errorf("%s: not a cumulative monotonic sum", m.Name)
				}
				for _, p := range d.DataPoints {
					got[series(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					got[series(p.Attributes)] = p.Value
				}
			default:
				t.Errorf("%s: data %T", m.Name, m.Data)
			}
		}
	}
	want := map[string]float64{}
	for _, k := range frontierMetrics {
		want[k.name+"{crawler=a}"] = 0
	}
	for name, v := range map[string]float64{"queued": 1, "out": 1, "sites": 2, "pushed": 3, "finished": 1, "ready": 1} {
		want["robots.frontier."+name+"{crawler=a}"] = v
	}
	want["robots.frontier.idle_waits{crawler=a}"] = got["robots.frontier.idle_waits{crawler=a}"] // no wait here, or one: not the subject
	wantSeries(t, got, want)
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}
	if _, err := InstrumentFrontier(nil); err == nil {
		t.Error("a nil Frontier is instrumented")
	}
}

// TestCountsFields: every field of frontier.Counts has its metric, named
// after it, in its order.
func TestCountsFields(t *testing.T) {
	ct := reflect.TypeFor[frontier.Counts]()
	if ct.NumField() != len(frontierMetrics) {
		t.Fatalf("frontier.Counts has %d fields, %d metrics", ct.NumField(), len(frontierMetrics))
	}
	for i := range ct.NumField() {
		if want := "robots.frontier." + snake(ct.Field(i).Name); frontierMetrics[i].name != want {
			t.Errorf("field %s: metric %s, want %s", ct.Field(i).Name, frontierMetrics[i].name, want)
		}
	}
}
