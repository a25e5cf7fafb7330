package pageterms

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
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
