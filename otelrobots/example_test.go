package otelrobots_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sort"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/otelrobots"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func Example() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nDisallow: /private\n")
			return
		}
		fmt.Fprint(w, "page")
	}))
	defer site.Close()

	// A MeterProvider read on demand; in a service, one with a periodic or
	// Prometheus reader (see the README).
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	tr := robots.NewTransport(nil, "ExampleBot")
	reg, err := otelrobots.Instrument(tr,
		otelrobots.WithMeterProvider(mp),
		otelrobots.WithAttributes(attribute.String("crawler", "example")))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Unregister()

	client := &http.Client{Transport: tr}
	for _, path := range []string{"/a", "/b", "/private"} {
		resp, err := client.Get(site.URL + path)
		if err != nil {
			continue // refused: a *robots.DisallowedError
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	// The counters that are not zero; each is a field of robots.Stats.
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, p := range sum.DataPoints {
					if p.Value > 0 {
						lines = append(lines, fmt.Sprintf("%s{%s} %d", m.Name, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Value))
					}
				}
			}
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// robots.cache_hits{crawler=example} 2
	// robots.default_pace_waits{crawler=example} 2
	// robots.fetch_success{crawler=example} 1
	// robots.load_waits{crawler=example} 1
	// robots.refused_rule{crawler=example} 1
	// robots.refused{crawler=example} 1
	// robots.sent{crawler=example} 2
	// robots.turn_waits{crawler=example} 2
}
