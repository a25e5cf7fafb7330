package otelrobots

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode"

	"github.com/f9014239/robots/fleet"

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
// the attributes given ("" for none, else "k=v,...").
func zero(attrs string) map[string]float64 {
	m := map[string]float64{}
	for _, k := range counters {
		m[k.name+"{"+attrs+"}"] = 0
	}
	return m
}

// TestInstrument drives one Transport through every outcome and reads each
// metric back.
func TestInstrument(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mp, r := newProvider(t)
		tr := robots.NewTransport(newMock(), "ExampleBot")
		tr.NoDefaultPace = true // not about pacing
		tr.Uses = []string{"train-ai"}
		if _, err := Instrument(tr, WithMeterProvider(mp)); err != nil {
			t.Fatal(err)
		}
		wantSeries(t, collect(t, r), zero(""))

		c := &http.Client{Transport: tr}
		wantAllowed(t, c, "https://example.com/a")       // load wait, fetch success, sent
		wantAllowed(t, c, "https://example.com/b")       // cache hit, sent
		wantRefused(t, c, "https://example.com/private") // cache hit, refused by a rule
		wantAllowed(t, c, "https://gone.example/a")      // load wait, fetch unavailable, sent, allowed with no rules
		wantRefused(t, c, "https://down.example/a")      // load wait, fetch unreachable, refused unreachable
		wantRefused(t, c, "https://down.example/b")      // cache hit, refused unreachable
		wantRefused(t, c, "https://signal.example/a")    // load wait, fetch success, refused by usage
		start := time.Now()
		wantAllowed(t, c, "https://slow.example/a") // load wait, fetch success, waits the crawl-delay after the fetch, sent
		if d := time.Since(start); d != 10*time.Second {
			t.Fatalf("slow.example/a took %v, want 10s", d)
		}
		err := get(robots.WithMaxWait(context.Background(), time.Second), c, "https://slow.example/b") // cache hit, not yet
		if !errors.Is(err, robots.ErrNotYet) {
			t.Fatalf("slow.example/b: %v, want ErrNotYet", err)
		}
		wantAllowed(t, c, "https://busy.example/page") // load wait, fetch success, sent, paused by Retry-After
		time.Sleep(5 * time.Second)
		wantAllowed(t, c, "https://busy.example/push") // cache hit, turn wait, sent, backoff

		want := zero("")
		for k, v := range map[string]float64{
			"robots.cache_hits{}":          5,
			"robots.load_waits{}":          6,
			"robots.sent{}":                6,
			"robots.refused{}":             4,
			"robots.refused_rule{}":        1,
			"robots.refused_unreachable{}": 2,
			"robots.refused_usage{}":       1,
			"robots.allowed_no_rules{}":    1,
			"robots.fetch_success{}":       4,
			"robots.fetch_unavailable{}":   1,
			"robots.fetch_unreachable{}":   1,
			"robots.not_yet{}":             1,
			"robots.turn_waits{}":          1,
			"robots.turn_wait_time{}":      10,
			"robots.pauses{}":              1,
			"robots.backoffs{}":            1,
		} {
			want[k] = v
		}
		wantSeries(t, collect(t, r), want)
	})
}

// snake returns a Go name in snake case: InFlightWaits is in_flight_waits,
// TTLHits ttl_hits.
func snake(name string) string {
	var b strings.Builder
	rs := []rune(name)
	for i, r := range rs {
		if i > 0 && unicode.IsUpper(r) &&
			(!unicode.IsUpper(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

func TestSnake(t *testing.T) {
	for in, want := range map[string]string{
		"Sent": "sent", "CacheHits": "cache_hits", "InFlightWaits": "in_flight_waits",
		"TurnWaitTime": "turn_wait_time", "TTLHits": "ttl_hits", "Fetch2xx": "fetch2xx",
	} {
		if got := snake(in); got != want {
			t.Errorf("snake(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStatsFields checks that every exported field of robots.Stats has
// exactly its metric, "robots." and the field's name in snake case, which
// reports the field: a uint64 as an integer counter with a unit in braces,
// a time.Duration as a float counter in seconds. Each field of the Stats
// observed holds a value of its own, so that a metric that reads another
// field is caught.
func TestStatsFields(t *testing.T) {
	var s robots.Stats
	v := reflect.ValueOf(&s).Elem()
	want := map[string]float64{}
	units := map[string]string{}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		name := "robots." + snake(f.Name)
		n := i + 1
		switch f.Type {
		case reflect.TypeFor[uint64]():
			v.Field(i).SetUint(uint64(n))
			want[name+"{k=v}"] = float64(n)
			units[name] = "{"
		case reflect.TypeFor[time.Duration]():
			v.Field(i).SetInt(int64(n)*int64(time.Second) + int64(time.Second/2))
			want[name+"{k=v}"] = float64(n) + 0.5
			units[name] = "s"
		default:
			t.Errorf("Stats.%s: a %s, for which otelrobots has no kind of metric", f.Name, f.Type)
		}
	}
	if len(counters) != len(want) {
		t.Errorf("%d counters for %d fields of Stats", len(counters), len(want))
	}

	mp, r := newProvider(t)
	if _, err := instrument(func() robots.Stats { return s }, WithMeterProvider(mp), WithAttributes(attribute.String("k", "v"))); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			u, ok := units[m.Name]
			if !ok {
				continue // reported by wantSeries
			}
			_, isFloat := m.Data.(metricdata.Sum[float64])
			if u == "s" && (m.Unit != "s" || !isFloat) {
				t.Errorf("%s: unit %q, %T; want s, a float counter", m.Name, m.Unit, m.Data)
			}
			if u == "{" && (!strings.HasPrefix(m.Unit, "{") || !strings.HasSuffix(m.Unit, "}") || isFloat) {
				t.Errorf("%s: unit %q, %T; want {...}, an integer counter", m.Name, m.Unit, m.Data)
			}
			if m.Description == "" {
				t.Errorf("%s: no description", m.Name)
			}
		}
	}
	wantSeries(t, collect(t, r), want)
}

// TestInstruments checks the units and the scope.
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
		"robots.cache_hits":          "{request}",
		"robots.load_waits":          "{request}",
		"robots.evictions":           "{origin}",
		"robots.sent":                "{request}",
		"robots.refused":             "{request}",
		"robots.refused_rule":        "{request}",
		"robots.refused_unreachable": "{request}",
		"robots.refused_usage":       "{request}",
		"robots.allowed_no_rules":    "{request}",
		"robots.fetch_success":       "{fetch}",
		"robots.fetch_unavailable":   "{fetch}",
		"robots.fetch_unreachable":   "{fetch}",
		"robots.fetch_not_modified":  "{fetch}",
		"robots.store_hits":          "{entry}",
		"robots.store_errors":        "{error}",
		"robots.not_yet":             "{request}",
		"robots.turn_waits":          "{request}",
		"robots.turn_wait_time":      "s",
		"robots.pauses":              "{pause}",
		"robots.backoffs":            "{pause}",
		"robots.in_flight_waits":     "{request}",
		"robots.rate_limits":         "{pause}",
		"robots.default_pace_waits":  "{request}",
		"robots.slow_waits":          "{request}",
		"robots.request_rate_waits":  "{request}",
		"robots.payment_required":    "{response}",
		"robots.charged":             "{response}",
		"robots.visit_time_waits":    "{request}",
		"robots.domain_cap_waits":    "{request}",
		"robots.address_cap_waits":   "{request}",
		"robots.address_halvings":    "{halving}",
		"robots.address_ceilings":    "{address}",
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
	}
	for name := range units {
		t.Errorf("missing metric %s", name)
	}
}

// metricName matches what may be a metric's name in the documentation.
var metricName = regexp.MustCompile(`\brobots[._][a-z][a-z0-9_.]*[a-z0-9]`)

// TestDocs checks that the package documentation and the README list every
// metric with its unit, and name no metric that does not exist, in
// OpenTelemetry's form or in Prometheus's (robots_turn_wait_time_seconds_total).
func TestDocs(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "otelrobots.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	pkgDoc := f.Doc.Text()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{"robots.txt": true}
	for _, k := range counters {
		known[k.name] = true
		prom := strings.ReplaceAll(k.name, ".", "_")
		if k.unit == "s" {
			prom += "_seconds"
		}
		known[prom+"_total"] = true

		row := regexp.MustCompile(`(?m)^\t` + regexp.QuoteMeta(k.name) + ` +` + regexp.QuoteMeta(k.unit) + ` `)
		if !row.MatchString(pkgDoc) {
			t.Errorf("package doc: no row for %s %s", k.name, k.unit)
		}
		if !strings.Contains(string(readme), "| `"+k.name+"` | `"+k.unit+"` |") {
			t.Errorf("README.md: no row for %s %s", k.name, k.unit)
		}
	}
	known["robots.frontier"] = true // the prefix, as the docs name it
	for _, k := range frontierMetrics {
		known[k.name] = true
		prom := strings.ReplaceAll(k.name, ".", "_")
		if k.unit == "s" {
			prom += "_seconds"
		}
		known[prom+"_total"], known[prom] = true, true
		row := regexp.MustCompile(`(?m)^\t` + regexp.QuoteMeta(k.name) + ` +` + regexp.QuoteMeta(k.unit) + ` `)
		if !row.MatchString(pkgDoc) {
			t.Errorf("package doc: no row for %s %s", k.name, k.unit)
		}
		if !strings.Contains(string(readme), "| `"+k.name+"` | `"+k.unit+"` |") {
			t.Errorf("README.md: no row for %s %s", k.name, k.unit)
		}
	}
	for file, text := range map[string]string{"package doc": pkgDoc, "README.md": string(readme)} {
		for _, name := range metricName.FindAllString(text, -1) {
			if !known[name] {
				t.Errorf("%s: %s is no metric", file, name)
			}
		}
	}
}

// TestEvictions reads robots.evictions of a Transport bounded to two
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
	if n := got["robots.evictions{}"]; n != 1 {
		t.Errorf("robots.evictions = %v, want 1", n)
	}
	if n := got["robots.load_waits{}"]; n != 3 {
		t.Errorf("robots.load_waits = %v, want 3", n)
	}
}

// TestStoreHits reads robots.store_hits of a Transport that finds robots.txt
// in a Store another Transport filled.
func TestStoreHits(t *testing.T) {
	mp, r := newProvider(t)
	store := &fleet.MemoryStore{}
	mock := newMock()
	first := &robots.Transport{Base: mock, Agent: "ExampleBot", Store: store}
	second := &robots.Transport{Base: mock, Agent: "ExampleBot", Store: store}
	if _, err := Instrument(second, WithMeterProvider(mp)); err != nil {
		t.Fatal(err)
	}
	wantAllowed(t, &http.Client{Transport: first}, "https://example.com/a")
	wantAllowed(t, &http.Client{Transport: second}, "https://example.com/a")
	want := zero("")
	want["robots.store_hits{}"] = 1
	want["robots.load_waits{}"] = 1
	want["robots.sent{}"] = 1
	wantSeries(t, collect(t, r), want)
}

// failingStore is a fleet.Store whose every call fails.
type failingStore struct{}

func (failingStore) Get(context.Context, string) (*fleet.Entry, error) {
	return nil, errors.New("store down")
}

func (failingStore) Put(context.Context, string, *fleet.Entry) error {
	return errors.New("store down")
}

// TestStoreErrors reads robots.store_errors of a Transport whose Store
// fails: its Get and its Put.
func TestStoreErrors(t *testing.T) {
	mp, r := newProvider(t)
	tr := &robots.Transport{Base: newMock(), Agent: "ExampleBot", Store: failingStore{}, Logger: slog.New(slog.DiscardHandler), NoDefaultPace: true}
	if _, err := Instrument(tr, WithMeterProvider(mp)); err != nil {
		t.Fatal(err)
	}
	wantAllowed(t, &http.Client{Transport: tr}, "https://example.com/a")
	want := zero("")
	want["robots.store_errors{}"] = 2
	want["robots.fetch_success{}"] = 1
	want["robots.load_waits{}"] = 1
	want["robots.sent{}"] = 1
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
	if n := collect(t, r)["robots.sent{}"]; n != 1 {
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
	a.NoDefaultPace, b.NoDefaultPace = true, true // not about pacing
	if _, err := Instrument(a, WithMeterProvider(mp), WithAttributes(attribute.String("crawler", "a"))); err != nil {
		t.Fatal(err)
	}
	if _, err := Instrument(b, WithMeterProvider(mp), WithAttributes(attribute.String("crawler", "b"), attribute.String("env", "test"))); err != nil {
		t.Fatal(err)
	}
	wantAllowed(t, &http.Client{Transport: a}, "https://example.com/a")
	wantAllowed(t, &http.Client{Transport: a}, "https://example.com/b")
	wantRefused(t, &http.Client{Transport: b}, "https://example.com/private")

	want := zero("crawler=a")
	for k, v := range zero("crawler=b,env=test") {
		want[k] = v
	}
	for k, v := range map[string]float64{
		"robots.sent{crawler=a}":                   1 + 1,
		"robots.fetch_success{crawler=a}":          1,
		"robots.load_waits{crawler=a}":             1,
		"robots.cache_hits{crawler=a}":             1,
		"robots.refused{crawler=b,env=test}":       1,
		"robots.refused_rule{crawler=b,env=test}":  1,
		"robots.fetch_success{crawler=b,env=test}": 1,
		"robots.load_waits{crawler=b,env=test}":    1,
	} {
		want[k] = v
	}
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
	if n := collect(t, r)["robots.sent{}"]; n != 1 {
		t.Errorf("sent = %v, want 1", n)
	}
}

func TestInstrumentNil(t *testing.T) {
	mp, _ := newProvider(t)
	if reg, err := Instrument(nil, WithMeterProvider(mp)); err == nil || reg != nil {
		t.Errorf("Instrument(nil) = %v, %v; want an error", reg, err)
	}
}

func TestSaturate(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		want int64
	}{{0, 0}, {1 << 62, 1 << 62}, {1<<63 - 1, 1<<63 - 1}, {1 << 63, 1<<63 - 1}, {1<<64 - 1, 1<<63 - 1}} {
		if got := saturate(c.n); got != c.want {
			t.Errorf("saturate(%d) = %d, want %d", c.n, got, c.want)
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
