package robots

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestParsePrice(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Price
		ok   bool
	}{
		{"USD 0.01", Price{"USD", "0.01"}, true},
		{"  usd   12  ", Price{"USD", "12"}, true},
		{"EUR 0", Price{"EUR", "0"}, true},
		{"XYZ 1.5", Price{"XYZ", "1.5"}, true}, // unknown, but a code's form: the caller's to refuse
		{"USD -0.01", Price{}, false},
		{"USD +1", Price{}, false},
		{"USD 1e3", Price{}, false},
		{"USD 1.", Price{}, false},
		{"USD .5", Price{}, false},
		{"USD 1234567890123456789", Price{}, false}, // 19 digits
		{"USD 999999999999999999", Price{"USD", "999999999999999999"}, true},
		{"dollars 1", Price{}, false},
		{"US 1", Price{}, false},
		{"U$D 1", Price{}, false},
		{"0.01", Price{}, false},
		{"USD 0.01 EUR 0.02", Price{}, false},
		{"", Price{}, false},
	} {
		got, err := ParsePrice(c.in)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("ParsePrice(%q) = %+v, %v; want %+v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestTermsOf(t *testing.T) {
	req, _ := http.NewRequest("GET", "https://example.com/news/article", nil)
	x402 := base64.StdEncoding.EncodeToString([]byte(`{"x402Version":2,"error":"PAYMENT-SIGNATURE header is required",` +
		`"accepts":[{"scheme":"exact","network":"eip155:8453","amount":"10000","asset":"0xA0b8","payTo":"0x2096","maxTimeoutSeconds":60}]}`))
	resp := &http.Response{StatusCode: 402, Request: req, Header: http.Header{
		"Crawler-Price":    {"USD 0.01"},
		"Crawler-Error":    {"MissingCrawlerPrice"},
		"Www-Authenticate": {`Bearer realm="x", License error="invalid_request", error_description="a license token is required, see \"terms\""`},
		"Payment-Required": {x402},
		"Link":             {`</rsl.xml>; rel="license"; type="application/rsl+xml", <https://example.com/next>; rel=next`, `<https://cdn.example.net/l.xml>; rel="nofollow license"`},
	}}
	got := TermsOf(resp)
	if !got.PaymentRequired() || got.Price == nil || *got.Price != (Price{"USD", "0.01"}) || got.CrawlerError != "MissingCrawlerPrice" {
		t.Errorf("TermsOf: %+v", got)
	}
	if got.License == nil || got.License.Error() != "invalid_request" || got.License.Params["error_description"] != `a license token is required, see "terms"` {
		t.Errorf("License: %+v", got.License)
	}
	if x := got.X402; x == nil || x.Version != 2 || x.Scheme != "exact" || x.Network != "eip155:8453" || x.Amount != "10000" || x.PayTo != "0x2096" || x.Accepts != 1 {
		t.Errorf("X402: %+v", got.X402)
	}
	if want := []string{"https://example.com/rsl.xml", "https://cdn.example.net/l.xml"}; strings.Join(got.Licenses, " ") != strings.Join(want, " ") {
		t.Errorf("Licenses %q, want %q", got.Licenses, want)
	}

	// Bad input: each field left out, nothing guessed, nothing unbounded.
	bad := &http.Response{StatusCode: 401, Header: http.Header{
		"Crawler-Price":    {"USD -5"},
		"Crawler-Charged":  {"USD 1" + strings.Repeat("0", 40)},
		"Crawler-Error":    {"<script>"},
		"Www-Authenticate": {`License error="unterminated`},
		"Payment-Required": {"not base64!"},
		"Link":             {`<relative>; rel=license`, `<ftp://example.com/l>; rel=license`, `<https://x.example/`},
	}}
	got = TermsOf(bad)
	if got.Price != nil || got.PriceInvalid != "USD -5" || got.Charged != nil || got.ChargedInvalid == "" || len(got.ChargedInvalid) > 64+len("…") ||
		got.CrawlerError != "" || got.X402 != nil || len(got.Licenses) != 0 {
		t.Errorf("TermsOf(bad) = %+v", got)
	}
	if got.License == nil || got.License.Error() != "" || got.PaymentRequired() != true {
		t.Errorf("a License challenge with broken quoting is still a challenge, with no params: %+v", got.License)
	}
	// 64 KiB of challenge parameters: at most 16 kept.
	many := "License " + strings.Repeat(`p=v, `, 64<<10/5)
	for i := range 40 {
		many += "q" + strings.Repeat("x", i) + `="v", `
	}
	got = TermsOf(&http.Response{StatusCode: 402, Header: http.Header{"Www-Authenticate": {many}}})
	if got.License == nil || len(got.License.Params) > 16 {
		t.Errorf("many params: %d kept", len(got.License.Params))
	}
	// After a token68 credential of another scheme.
	got = TermsOf(&http.Response{StatusCode: 401, Header: http.Header{"Www-Authenticate": {`Bearer abc==, License error="invalid_token"`}}})
	if got.License.Error() != "invalid_token" || !got.PaymentRequired() {
		t.Errorf("License after a token68: %+v", got.License)
	}
	if TermsOf(nil).PaymentRequired() {
		t.Error("nil response requires payment")
	}
	// A 401 without a License challenge is not a payment.
	if TermsOf(&http.Response{StatusCode: 401, Header: http.Header{"Www-Authenticate": {`Basic realm="x"`}}}).PaymentRequired() {
		t.Error("a Basic challenge read as a license")
	}
}

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
	if got := TermsOf(resp); got.Charged != nil {
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

// FuzzTermsOf: any header reads without a panic, within the bounds.
func FuzzTermsOf(f *testing.F) {
	f.Add("USD 0.01", `License error="invalid_request"`, "eyJ4NDAyVmVyc2lvbiI6Mn0=", `</l>; rel=license`)
	f.Add("USD -1", `License error="x`, "!!", `<ftp://x>; rel="license nofollow"`)
	f.Fuzz(func(t *testing.T, price, auth, x402, link string) {
		req, _ := http.NewRequest("GET", "https://example.com/a/b", nil)
		tm := TermsOf(&http.Response{StatusCode: 402, Request: req, Header: http.Header{
			"Crawler-Price": {price}, "Crawler-Charged": {price}, "Crawler-Error": {price},
			"Www-Authenticate": {auth}, "Payment-Required": {x402}, "Link": {link},
		}})
		if tm.Price != nil {
			if p, err := ParsePrice(tm.Price.String()); err != nil || p != *tm.Price {
				t.Fatalf("price %+v does not read back: %v", tm.Price, err)
			}
		}
		if tm.License != nil && len(tm.License.Params) > maxChallengeParams {
			t.Fatalf("%d params", len(tm.License.Params))
		}
		if len(tm.Licenses) > maxLicenseLinks || len(tm.PriceInvalid) > 64+len("…") {
			t.Fatalf("unbounded: %+v", tm)
		}
	})
}
