package robots

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots/pageterms"
)

// A 402 is an answer, not pushback: whatever its Retry-After, the origin is
// neither paused nor backed off, and the next request goes at its turn.
func TestPaymentNotPushback(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		hdr    http.Header
	}{
		{"pay-per-crawl", 402, http.Header{"Crawler-Price": {"USD 0.01"}, "Retry-After": {"3600"}}},
		{"license 402", 402, http.Header{"Www-Authenticate": {`License error="invalid_request"`}, "Retry-After": {"3600"}}},
		{"license 401", 401, http.Header{"Www-Authenticate": {`License error="invalid_token"`}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var arrivals []time.Time
				tr := NewTransport(rtFunc(func(req *http.Request) (*http.Response, error) {
					if req.URL.Path == "/robots.txt" {
						return &http.Response{StatusCode: 404, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
					}
					mu.Lock()
					arrivals = append(arrivals, time.Now())
					mu.Unlock()
					return &http.Response{StatusCode: c.status, Header: c.hdr.Clone(), Body: http.NoBody, Request: req}, nil
				}), "ExampleBot")
				client := &http.Client{Transport: tr}
				for range 3 {
					resp, err := client.Get("https://example.com/page")
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
				}
				// the default pace (1 s), no more
				if d := arrivals[2].Sub(arrivals[0]); d > 3*time.Second {
					t.Errorf("3 requests took %v: paused or backed off", d)
				}
				st := tr.Stats()
				if st.Backoffs != 0 || st.Pauses != 0 || st.PaymentRequired != uint64(3*btoi(c.status == 402)) {
					t.Errorf("stats %+v", st)
				}
			})
		})
	}
}

func TestMaxPrice(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{}
	base := rtFunc(func(req *http.Request) (*http.Response, error) {
		mu.Lock()
		seen[req.URL.Path] = req.Header.Get("Crawler-Max-Price") + "|" + req.Header.Get("Crawler-Exact-Price")
		mu.Unlock()
		h := http.Header{}
		if req.URL.Path != "/robots.txt" && req.Header.Get("Crawler-Max-Price") != "" {
			h.Set("Crawler-Charged", "USD 0.01")
		}
		return &http.Response{StatusCode: 200, Header: h, Body: http.NoBody, Request: req}, nil
	})
	tr := noDefaultPace(NewTransport(base, "ExampleBot"))
	tr.MaxPrice = "usd 0.05"
	client := &http.Client{Transport: tr}
	wantAllowed(t, client, "https://example.com/a")
	req, _ := http.NewRequest("GET", "https://example.com/b", nil)
	req.Header.Set("Crawler-Exact-Price", "USD 0.01")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if seen["/robots.txt"] != "|" || seen["/a"] != "USD 0.05|" || seen["/b"] != "|USD 0.01" {
		t.Errorf("sent %q", seen)
	}
	if got := pageterms.TermsOf(resp); got.Charged != nil {
		t.Errorf("charged with an exact price the site did not take: %+v", got)
	}
	if st := tr.Stats(); st.Charged != 1 {
		t.Errorf("Charged %d, want 1", st.Charged)
	}

	bad := noDefaultPace(NewTransport(base, "ExampleBot"))
	bad.MaxPrice = "USD -1"
	if err := get(&http.Client{Transport: bad}, "https://example.com/c"); !errors.Is(err, errMaxPrice) {
		t.Errorf("malformed MaxPrice: %v", err)
	}
	if err := bad.CheckRequest(&http.Request{URL: &url.URL{Scheme: "https", Host: "example.com", Path: "/"}, Header: http.Header{}}); err == nil {
		t.Error("malformed MaxPrice: CheckRequest succeeds")
	}
}

// The License lines of robots.txt are exposed on the origin.
func TestOriginLicenses(t *testing.T) {
	body := "License: https://example.com/license.xml\nLicense: /relative.xml\nUser-agent: *\nDisallow: /private\n"
	tr := noDefaultPace(NewTransport(rtFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{}, Request: req, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}, nil
	}), "ExampleBot"))
	o, err := tr.Origin(context.Background(), mustURL("https://example.com/"))
	if err != nil || len(o.Licenses) != 1 || o.Licenses[0] != "https://example.com/license.xml" {
		t.Errorf("Origin: %+v, %v", o, err)
	}
}
