package webbotauth

import (
	"crypto/tls"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/f9014239/robots/internal/httpsigtest"
)

// FuzzSign signs requests of any host, path and header value: Sign never
// panics, and what it signs verifies, its base holding no line of the
// caller's making.
func FuzzSign(f *testing.F) {
	f.Add("example.com", "/a b/%20?q", "USD 0.01")
	f.Add("Bücher.example:443", "", "a\nb")
	f.Add("[fe80::1%en0]:80", "//x", " v ")
	f.Add("a.example\n\"@method\": POST", "/", "")
	key := testKey(f)
	s, err := New(Options{Key: key, Agent: testAgent, Method: true, Path: true, Nonce: true, Headers: []string{"X-Price"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, host, path, value string) {
		v := verifier(key, time.Now().Add(time.Second))
		req := &http.Request{Method: "GET", URL: &url.URL{Scheme: "https", Host: host, Path: path}, Host: host,
			Header: http.Header{"X-Price": {value}}}
		if err := s.Sign(req); err != nil {
			return
		}
		// What the server receives: the Host net/http sends, over TLS.
		a, err := Authority(req)
		if err != nil {
			t.Fatalf("signed, but no authority: %v", err)
		}
		req.Host, req.TLS = a, &tls.ConnectionState{}
		base, sig, err := httpsigtest.Base(req, DefaultLabel)
		if err != nil {
			t.Fatalf("signed, but the verifier cannot rebuild the base: %v", err)
		}
		if n := strings.Count(base, "\n"); n != len(sig.Components) {
			t.Fatalf("a base of %d lines for %d components:\n%s", n+1, len(sig.Components), base)
		}
		if _, err := v.Verify(req, DefaultLabel); err != nil {
			t.Fatalf("signed, but does not verify: %v\n%s", err, base)
		}
	})
}
