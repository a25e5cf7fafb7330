package otelrobots

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots"
	"github.com/jarcoal/httpmock"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// newMock returns a mock base with the origins the tests visit. Its pages
// answer 200, except busy.example's: /page answers 503 with Retry-After,
// /push 429 without.
func newMock() *httpmock.MockTransport {
	mock := httpmock.NewMockTransport()
	mock.RegisterNoResponder(httpmock.NewStringResponder(200, "page"))
	robotsTxt := map[string]string{
		"example.com":    "User-agent: *\nDisallow: /private\n",
		"signal.example": "Content-Signal: search=yes, ai-train=no\n",
		"slow.example":   "User-agent: *\nCrawl-delay: 10\n",
		"busy.example":   "",
		"a.example":      "",
		"b.example":      "",
		"c.example":      "",
	}
	for host, body := range robotsTxt {
		mock.RegisterResponder("GET", "https://"+host+"/robots.txt", httpmock.NewStringResponder(200, body))
	}
	mock.RegisterResponder("GET", "https://gone.example/robots.txt", httpmock.NewStringResponder(404, ""))
	mock.RegisterResponder("GET", "https://down.example/robots.txt", httpmock.NewStringResponder(500, ""))
	mock.RegisterResponder("GET", "https://busy.example/page",
		httpmock.NewStringResponder(503, "busy").HeaderSet(http.Header{"Retry-After": {"5"}}))
	mock.RegisterResponder("GET", "https://busy.example/push", httpmock.NewStringResponder(429, "slow down"))
	return mock
}

// get sends GET u through c with ctx and returns the error, reading and
// closing the body of a response.
func get(ctx context.Context, c *http.Client, u string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

func wantAllowed(t *testing.T, c *http.Client, u string) {
	t.Helper()
	if err := get(context.Background(), c, u); err != nil {
		t.Fatalf("GET %s: %v, want allowed", u, err)
	}
}

func wantRefused(t *testing.T, c *http.Client, u string) {
	t.Helper()
	if err := get(context.Background(), c, u); !errors.Is(err, robots.ErrDisallowed) {
		t.Fatalf("GET %s: %v, want ErrDisallowed", u, err)
	}
}

// newProvider returns a MeterProvider read by the returned ManualReader.
func newProvider(t *testing.T) (*sdkmetric.MeterProvider, *sdkmetric.ManualReader) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	return mp, r
}

// collect reads the metrics of ScopeName from r, as series named
// "name{k=v,...}" (attributes sorted by key) with their values. It fails
// the test if a metric is not a cumulative monotonic sum.
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	got := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, ScopeName)
			continue
		}
		for _, m := range sm.Metrics {
			series := func(attrs attribute.Set) string {
				return m.Name + "{" + attrs.Encoded(attribute.DefaultEncoder()) + "}"
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if !d.IsMonotonic || d.Temporality != metricdata.CumulativeTemporality {
					t.Errorf("%s: monotonic %v, temporality %v, want a cumulative monotonic sum", m.Name, d.IsMonotonic, d.Temporality)
				}
				for _, p := range d.DataPoints {
					got[series(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Sum[float64]:
				if !d.IsMonotonic || d.Temporality != metricdata.CumulativeTemporality {
					t.Errorf("%s: monotonic %v, temporality %v, want a cumulative monotonic sum", m.Name, d.IsMonotonic, d.Temporality)
				}
				for _, p := range d.DataPoints {
					got[series(p.Attributes)] = p.Value
				}
			default:
				t.Errorf("%s: data %T, want a sum", m.Name, m.Data)
			}
		}
	}
	return got
}

// wantSeries fails the test unless got holds exactly want.
func wantSeries(t *testing.T, got, want map[string]float64) {
	t.Helper()
	var diffs []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			diffs = append(diffs, "missing "+k)
		} else if g != w {
			diffs = append(diffs, k+": got "+ftoa(g)+", want "+ftoa(w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, "unexpected "+k+" = "+ftoa(g))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("series differ:\n\t%s", strings.Join(diffs, "\n\t"))
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// zero returns the series of a Transport that has done nothing, each with
// the attribute prefix given ("" for none, else "k=v,").
func zero(prefix string) map[string]float64 {
	m := map[string]float64{}
	for _, o := range []string{"sent", "disallowed", "unreachable", "not_yet", "usage_refused"} {
		m["robots.requests{"+prefix+"robots.outcome="+o+"}"] = 0
	}
	for _, a := range []string{"success", "unavailable", "unreachable"} {
		m["robots.fetches{"+prefix+"robots.access="+a+"}"] = 0
	}
	m["robots.cache.lookups{"+prefix+"robots.cache.result=hit}"] = 0
	m["robots.cache.lookups{"+prefix+"robots.cache.result=miss}"] = 0
	bare := strings.TrimSuffix(prefix, ",")
	for _, name := range []string{"robots.allowed_without_rules", "robots.store.hits", "robots.store.errors", "robots.cache.evictions",
		"robots.pace.waits", "robots.pace.wait.time", "robots.pace.in_flight_waits"} {
		m[name+"{"+bare+"}"] = 0
	}
	m["robots.pace.pauses{"+prefix+"robots.pause.reason=retry_after}"] = 0
	m["robots.pace.pauses{"+prefix+"robots.pause.reason=backoff}"] = 0
	return m
}

// TestInstrument drives one Transport through every outcome and reads each
// metric back.
func TestInstrument(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mp, r := newProvider(t)
		tr := robots.NewTransport(newMock(), "ExampleBot")
		tr.Uses = []string{"train-ai"}
		if _, err := Instrument(tr, WithMeterProvider(mp)); err != nil {
			t.Fatal(err)
		}
		wantSeries(t, collect(t, r), zero(""))

		c := &http.Client{Transport: tr}
		wantAllowed(t, c, "https://example.com/a")       // miss, fetch success, sent
		wantAllowed(t, c, "https://example.com/b")       // hit, sent
		wantRefused(t, c, "https://example.com/private") // hit, disallowed
		wantAllowed(t, c, "https://gone.example/a")      // miss, fetch unavailable, sent, allowed without rules
		wantRefused(t, c, "https://down.example/a")      // miss, fetch unreachable, unreachable
		wantRefused(t, c, "https://down.example/b")      // hit, unreachable
		wantRefused(t, c, "https://signal.example/a")    // miss, fetch success, usage refused
		start := time.Now()
		wantAllowed(t, c, "https://slow.example/a") // miss, fetch success, waits the crawl-delay after the fetch, sent
		if d := time.Since(start); d != 10*time.Second {
			t.Fatalf("slow.example/a took %v, want 10s", d)
		}
		err := get(robots.WithMaxWait(context.Background(), time.Second), c, "https://slow.example/b") // hit, not yet
		if !errors.Is(err, robots.ErrNotYet) {
			t.Fatalf("slow.example/b: %v, want ErrNotYet", err)
		}
		wantAllowed(t, c, "https://busy.example/page") // miss, fetch success, sent, paused by Retry-After
		time.Sleep(5 * time.Second)
		wantAllowed(t, c, "https://busy.example/push") // hit, waited, sent, backoff

		want := zero("")
		for k, v := range map[string]float64{
			"robots.requests{robots.outcome=sent}":                6,
			"robots.requests{robots.outcome=disallowed}":          1,
			"robots.requests{robots.outcome=unreachable}":         2,
			"robots.requests{robots.outcome=not_yet}":             1,
			"robots.requests{robots.outcome=usage_refused}":       1,
			"robots.allowed_without_rules{}":                      1,
			"robots.fetches{robots.access=success}":               4,
			"robots.fetches{robots.access=unavailable}":           1,
			"robots.fetches{robots.access=unreachable}":           1,
			"robots.cache.lookups{robots.cache.result=hit}":       5,
			"robots.cache.lookups{robots.cache.result=miss}":      6,
			"robots.pace.waits{}":                                 1,
			"robots.pace.wait.time{}":                             10,
			"robots.pace.pauses{robots.pause.reason=retry_after}": 1,
			"robots.pace.pauses{robots.pause.reason=backoff}":     1,
		} {
			want[k] = v
		}
		wantSeries(t, collect(t, r), want)
	})
}

// TestInstruments checks the names, units and descriptions, and the scope.
func TestInstruments(t *testing.T) {
	mp, r := newProvider(t)
	if _, err := Instrument(robots.NewTransport(newMock(), "ExampleBot"), WithMeterProvider(mp)); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if len(rm.ScopeMetrics) != 1 {
		t.Fatalf("%d scopes, want 1", len(rm.ScopeMetrics))
	}
	sm := rm.ScopeMetrics[0]
	if sm.Scope.Name != ScopeName || sm.Scope.Version != version() {
		t.Errorf("scope %q %q, want %q %q", sm.Scope.Name, sm.Scope.Version, ScopeName, version())
	}
	units := map[string]string{
		"robots.requests":              "{request}",
		"robots.allowed_without_rules": "{request}",
		"robots.fetches":               "{fetch}",
		"robots.store.hits":            "{entry}",
		"robots.store.errors":          "{error}",
		"robots.cache.lookups":         "{lookup}",
		"robots.cache.evictions":       "{origin}",
		"robots.pace.waits":            "{request}",
		"robots.pace.wait.time":        "s",
		"robots.pace.pauses":           "{pause}",
		"robots.pace.in_flight_waits":  "{request}",
	}
	for _, m := range sm.Metrics {
		u, ok := units[m.Name]
		if !ok {
			t.Errorf("unexpected metric %s", m.Name)
			continue
		}
		delete(units, m.Name)
		if m.Unit != u {
			t.Errorf("%s: unit %q, want %q", m.Name, m.Unit, u)
		}
		if m.Description == "" {
			t.Errorf("%s: no description", m.Name)
		}
	}
	for name := range units {
		t.Errorf("missing metric %s", name)
	}
}

// TestEvictions reads robots.cache.evictions of a Transport bounded to two
// origins.
func TestEvictions(t *testing.T) {
	mp, r := newProvider(t)
	tr := &robots.Transport{Base: newMock(), Agent: "ExampleBot", MaxOrigins: 2}
	if _, err := Instrument(tr, WithMeterProvider(mp)); err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: tr}
	wantAllowed(t, c, "https://a.example/")
	wantAllowed(t, c, "https://b.example/")
	wantAllowed(t, c, "https://a.example/") // a is used again; b is not
	wantAllowed(t, c, "https://c.example/") // evicts b
	got := collect(t, r)
	if n := got["robots.cache.evictions{}"]; n != 1 {
		t.Errorf("robots.cache.evictions = %v, want 1", n)
	}
	if n := got["robots.cache.lookups{robots.cache.result=miss}"]; n != 3 {
		t.Errorf("cache misses = %v, want 3", n)
	}
}

// TestStoreHits reads robots.store.hits of a Transport that finds robots.txt
// in a Store another Transport filled.
func TestStoreHits(t *testing.T) {
	mp, r := newProvider(t)
	store := &robots.MemoryStore{}
	mock := newMock()
	first := &robots.Transport{Base: mock, Agent: "ExampleBot", Store: store}
	second := &robots.Transport{Base: mock, Agent: "ExampleBot", Store: store}
	if _, err := Instrument(second, WithMeterProvider(mp)); err != nil {
		t.Fatal(err)
	}
	wantAllowed(t, &http.Client{Transport: first}, "https://example.com/a")
	wantAllowed(t, &http.Client{Transport: second}, "https://example.com/a")
	want := zero("")
	want["robots.store.hits{}"] = 1
	want["robots.cache.lookups{robots.cache.result=miss}"] = 1
	want["robots.requests{robots.outcome=sent}"] = 1
	wantSeries(t, collect(t, r), want)
}

// failingStore is a robots.Store whose every call fails.
type failingStore struct{}

func (failingStore) Get(context.Context, string) (*robots.Entry, error) {
	return nil, errors.New("store down")
}

func (failingStore) Put(context.Context, string, *robots.Entry) error {
	return errors.New("store down")
}

// TestStoreErrors reads robots.store.errors of a Transport whose Store
// fails: its Get and its Put.
func TestStoreErrors(t *testing.T) {
	mp, r := newProvider(t)
	tr := &robots.Transport{Base: newMock(), Agent: "ExampleBot", Store: failingStore{}, Logger: slog.New(slog.DiscardHandler)}
	if _, err := Instrument(tr, WithMeterProvider(mp)); err != nil {
		t.Fatal(err)
	}
	wantAllowed(t, &http.Client{Transport: tr}, "https://example.com/a")
	want := zero("")
	want["robots.store.errors{}"] = 2
	want["robots.fetches{robots.access=success}"] = 1
	want["robots.cache.lookups{robots.cache.result=miss}"] = 1
	want["robots.requests{robots.outcome=sent}"] = 1
	wantSeries(t, collect(t, r), want)
}

// TestUnregister checks that a Transport's metrics are no longer reported
// once unregistered.
func TestUnregister(t *testing.T) {
	mp, r := newProvider(t)
	tr := robots.NewTransport(newMock(), "ExampleBot")
	reg, err := Instrument(tr, WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: tr}
	wantAllowed(t, c, "https://example.com/a")
	if n := collect(t, r)["robots.requests{robots.outcome=sent}"]; n != 1 {
		t.Fatalf("sent = %v before Unregister, want 1", n)
	}
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}
	wantAllowed(t, c, "https://example.com/b")
	wantSeries(t, collect(t, r), map[string]float64{})
}

// TestTwoTransports instruments two Transports on one MeterProvider, told
// apart by their attributes.
func TestTwoTransports(t *testing.T) {
	mp, r := newProvider(t)
	mock := newMock()
	a := robots.NewTransport(mock, "ExampleBot")
	b := robots.NewTransport(mock, "OtherBot")
	if _, err := Instrument(a, WithMeterProvider(mp), WithAttributes(attribute.String("crawler", "a"))); err != nil {
		t.Fatal(err)
	}
	if _, err := Instrument(b, WithMeterProvider(mp), WithAttributes(attribute.String("crawler", "b"), attribute.String("env", "test"))); err != nil {
		t.Fatal(err)
	}
	wantAllowed(t, &http.Client{Transport: a}, "https://example.com/a")
	wantAllowed(t, &http.Client{Transport: a}, "https://example.com/b")
	wantRefused(t, &http.Client{Transport: b}, "https://example.com/private")

	want := zero("crawler=a,")
	for k, v := range zero("crawler=b,env=test,") {
		want[k] = v
	}
	for k, v := range map[string]float64{
		"robots.requests{crawler=a,robots.outcome=sent}":                    1 + 1,
		"robots.fetches{crawler=a,robots.access=success}":                   1,
		"robots.cache.lookups{crawler=a,robots.cache.result=miss}":          1,
		"robots.cache.lookups{crawler=a,robots.cache.result=hit}":           1,
		"robots.requests{crawler=b,env=test,robots.outcome=disallowed}":     1,
		"robots.fetches{crawler=b,env=test,robots.access=success}":          1,
		"robots.cache.lookups{crawler=b,env=test,robots.cache.result=miss}": 1,
	} {
		want[k] = v
	}
	wantSeries(t, collect(t, r), want)
}

// TestAttributesKeepOwnKeys checks that an attribute given with
// WithAttributes under one of the metrics' own keys is dropped.
func TestAttributesKeepOwnKeys(t *testing.T) {
	mp, r := newProvider(t)
	tr := robots.NewTransport(newMock(), "ExampleBot")
	if _, err := Instrument(tr, WithMeterProvider(mp), WithAttributes(OutcomeKey.String("bogus"), AccessKey.String("bogus"), CacheResultKey.String("bogus"))); err != nil {
		t.Fatal(err)
	}
	wantAllowed(t, &http.Client{Transport: tr}, "https://example.com/a")
	want := zero("")
	want["robots.requests{robots.outcome=sent}"] = 1
	want["robots.fetches{robots.access=success}"] = 1
	want["robots.cache.lookups{robots.cache.result=miss}"] = 1
	wantSeries(t, collect(t, r), want)
}

// TestGlobalMeterProvider checks that Instrument uses the global
// MeterProvider when none is given.
func TestGlobalMeterProvider(t *testing.T) {
	mp, r := newProvider(t)
	prev := otel.GetMeterProvider()
	otel.SetMeterProvider(mp)
	t.Cleanup(func() { otel.SetMeterProvider(prev) })
	tr := robots.NewTransport(newMock(), "ExampleBot")
	if _, err := Instrument(tr); err != nil {
		t.Fatal(err)
	}
	wantAllowed(t, &http.Client{Transport: tr}, "https://example.com/a")
	if n := collect(t, r)["robots.requests{robots.outcome=sent}"]; n != 1 {
		t.Errorf("sent = %v, want 1", n)
	}
}

func TestInstrumentNil(t *testing.T) {
	mp, _ := newProvider(t)
	if reg, err := Instrument(nil, WithMeterProvider(mp)); err == nil || reg != nil {
		t.Errorf("Instrument(nil) = %v, %v; want an error", reg, err)
	}
}

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		want int64
	}{{0, 0}, {1 << 62, 1 << 62}, {1<<63 - 1, 1<<63 - 1}, {1 << 63, 1<<63 - 1}, {1<<64 - 1, 1<<63 - 1}} {
		if got := count(c.n); got != c.want {
			t.Errorf("count(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

func TestVersionOf(t *testing.T) {
	dep := func(v string, r *debug.Module) *debug.Module {
		return &debug.Module{Path: ScopeName, Version: v, Replace: r}
	}
	for _, c := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"main, devel", debug.BuildInfo{Main: debug.Module{Path: ScopeName, Version: "(devel)"}}, ""},
		{"main, tagged", debug.BuildInfo{Main: debug.Module{Path: ScopeName, Version: "v1.2.3"}}, "v1.2.3"},
		{"absent", debug.BuildInfo{Main: debug.Module{Path: "example.com/app"}}, ""},
		{"dependency", debug.BuildInfo{Deps: []*debug.Module{{Path: "example.com/other", Version: "v9.0.0"}, dep("v1.2.3", nil)}}, "v1.2.3"},
		{"replaced by a directory", debug.BuildInfo{Deps: []*debug.Module{dep("v0.0.0", &debug.Module{Path: "../otelrobots"})}}, ""},
		{"replaced by a version", debug.BuildInfo{Deps: []*debug.Module{dep("v1.2.3", &debug.Module{Path: "example.com/fork", Version: "v1.2.4"})}}, "v1.2.4"},
	} {
		if got := versionOf(&c.bi); got != c.want {
			t.Errorf("%s: versionOf = %q, want %q", c.name, got, c.want)
		}
	}
}
