package webbotauth

import (
	"bufio"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots/internal/httpsigtest"
)

const testAgent = "https://crawler.example" + WellKnownPath

// funcSigner is a crypto.Signer whose Sign is f, with the public key of key.
type funcSigner struct {
	key ed25519.PrivateKey
	f   func(msg []byte) ([]byte, error)
}

func (s funcSigner) Public() crypto.PublicKey { return s.key.Public() }
func (s funcSigner) Sign(_ io.Reader, msg []byte, _ crypto.SignerOpts) ([]byte, error) {
	return s.f(msg)
}

type panicPublic struct{ crypto.Signer }

func (panicPublic) Public() crypto.PublicKey { panic("no public key") }

func TestNewBadInput(t *testing.T) {
	key := testKey(t)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, c := range []struct {
		name string
		o    Options
		want error
	}{
		{"no key", Options{}, ErrKey},
		{"RSA key", Options{Key: rsaKey}, ErrKey},
		{"ECDSA key", Options{Key: ecKey}, ErrKey},
		{"short Ed25519 key", Options{Key: key[:40]}, ErrKey},
		{"Ed25519 key with another public half", Options{Key: append(append(ed25519.PrivateKey{}, key[:32]...), make([]byte, 32)...)}, ErrKey},
		{"Public panics", Options{Key: panicPublic{key}}, ErrKey},
		{"negative lifetime", Options{Key: key, Lifetime: -time.Minute}, ErrOptions},
		{"lifetime under a second", Options{Key: key, Lifetime: time.Millisecond}, ErrOptions},
		{"lifetime of a year", Options{Key: key, Lifetime: 365 * 24 * time.Hour}, ErrOptions},
		{"lifetime of 25h", Options{Key: key, Lifetime: 25 * time.Hour}, ErrOptions},
		{"http agent", Options{Key: key, Agent: "http://crawler.example" + WellKnownPath}, ErrAgent},
		{"relative agent", Options{Key: key, Agent: WellKnownPath}, ErrAgent},
		{"agent with a query", Options{Key: key, Agent: testAgent + "?v=1"}, ErrAgent},
		{"agent with an empty query", Options{Key: key, Agent: testAgent + "?"}, ErrAgent},
		{"agent with a fragment", Options{Key: key, Agent: testAgent + "#k"}, ErrAgent},
		{"agent with user info", Options{Key: key, Agent: "https://u:p@crawler.example" + WellKnownPath}, ErrAgent},
		{"agent with parameters", Options{Key: key, Agent: `https://crawler.example";a=1`}, ErrAgent},
		{"origin form, other path", Options{Key: key, Agent: "https://crawler.example/keys.json", Form: FormOrigin}, ErrAgent},
		{"string form, other path", Options{Key: key, Agent: "https://crawler.example/keys.json", Form: FormString}, ErrAgent},
		{"unknown form", Options{Key: key, Form: Form(7)}, ErrOptions},
		{"uppercase label", Options{Key: key, Label: "Sig"}, ErrOptions},
		{"label with a digit first", Options{Key: key, Label: "1sig"}, ErrOptions},
		{"agent key with a space", Options{Key: key, AgentKey: "a b"}, ErrOptions},
		{"header Signature", Options{Key: key, Headers: []string{"Signature"}}, ErrOptions},
		{"header signature-agent", Options{Key: key, Headers: []string{"signature-agent"}}, ErrOptions},
		{"header with a space", Options{Key: key, Headers: []string{"x price"}}, ErrOptions},
		{"derived component as header", Options{Key: key, Headers: []string{"@query"}}, ErrOptions},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(c.o)
			if !errors.Is(err, c.want) || s != nil {
				t.Errorf("New = %v, %v; want nil, %v", s, err, c.want)
			}
		})
	}
	s, err := New(Options{Key: key})
	if err != nil || s.Lifetime() != DefaultLifetime || s.KeyID() != rfc9421KeyID {
		t.Errorf("New with a zero Lifetime: %v; lifetime %v, keyid %s", err, s.Lifetime(), s.KeyID())
	}
}

func TestParseKey(t *testing.T) {
	key := testKey(t)
	pkcs8, err := MarshalPKCS8(key)
	if err != nil {
		t.Fatal(err)
	}
	private, err := MarshalPrivateJWK(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range [][]byte{pkcs8, private, []byte(rfc9421Key)} {
		if k, err := ParseKey(data); err != nil || !k.Equal(key) {
			t.Errorf("ParseKey(%s) = %v", data, err)
		}
	}
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 1024)
	rsaDER, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalECPrivateKey(ecKey)
	for name, data := range map[string]string{
		"RSA PKCS8":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: rsaDER})),
		"EC key":       string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER})),
		"bad DER":      string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}})),
		"public JWK":   `{"kty":"OKP","crv":"Ed25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}`,
		"X25519 JWK":   `{"kty":"OKP","crv":"X25519","d":"n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU"}`,
		"short d":      `{"kty":"OKP","crv":"Ed25519","d":"n4Ni"}`,
		"x of another": `{"kty":"OKP","crv":"Ed25519","d":"n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU","x":"AAAAj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}`,
		"bad JSON":     `{"kty":`,
		"nothing":      "",
		"text":         "hello",
		"huge":         strings.Repeat("x", maxKeyFile+1),
	} {
		if k, err := ParseKey([]byte(data)); !errors.Is(err, ErrKey) || k != nil {
			t.Errorf("ParseKey(%s) = %v, %v; want ErrKey", name, k, err)
		}
	}
}

// verifier returns a verifier of key's signatures at now.
func verifier(key ed25519.PrivateKey, now time.Time) *httpsigtest.Verifier {
	kid, _ := Thumbprint(key.Public().(ed25519.PublicKey))
	return &httpsigtest.Verifier{Keys: map[string]ed25519.PublicKey{kid: key.Public().(ed25519.PublicKey)}, Now: now}
}

func TestSignRequest(t *testing.T) {
	key := testKey(t)
	now := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		name, url, host string
		o               Options
		header          http.Header
		authority       string
		agent           string // the Signature-Agent field
		components      string
	}{
		{name: "default", url: "https://Example.COM:443/a?b=c", o: Options{Agent: testAgent},
			authority: "example.com", agent: `sig1="https://crawler.example/.well-known/http-message-signatures-directory"`,
			components: `"@authority" "signature-agent";key="sig1"`},
		{name: "origin form", url: "https://example.com/", o: Options{Agent: testAgent, Form: FormOrigin, Label: "g"},
			authority: "example.com", agent: `g="https://crawler.example"`, components: `"@authority" "signature-agent";key="g"`},
		{name: "string form", url: "https://example.com/", o: Options{Agent: "https://crawler.example", Form: FormString},
			authority: "example.com", agent: `"https://crawler.example"`, components: `"@authority" "signature-agent"`},
		{name: "user info", url: "https://user:pass@example.com:8443/x", o: Options{Agent: testAgent},
			authority: "example.com:8443", agent: `sig1="https://crawler.example/.well-known/http-message-signatures-directory"`,
			components: `"@authority" "signature-agent";key="sig1"`},
		{name: "non-ASCII host", url: "https://bücher.example/", o: Options{Agent: testAgent},
			authority: "xn--bcher-kva.example", agent: `sig1="https://crawler.example/.well-known/http-message-signatures-directory"`,
			components: `"@authority" "signature-agent";key="sig1"`},
		{name: "Host set", url: "http://10.0.0.1:80/", host: "Site.example:80", o: Options{Agent: testAgent},
			authority: "site.example", agent: `sig1="https://crawler.example/.well-known/http-message-signatures-directory"`,
			components: `"@authority" "signature-agent";key="sig1"`},
		{name: "method, path and headers", url: "https://example.com/a%20b/c?q=1", o: Options{Agent: testAgent, Method: true, Path: true, Nonce: true, Headers: []string{"Crawler-Price", "X-Absent"}},
			header: http.Header{"Crawler-Price": {" USD 0.01 "}}, authority: "example.com",
			agent:      `sig1="https://crawler.example/.well-known/http-message-signatures-directory"`,
			components: `"@method" "@authority" "@path" "signature-agent";key="sig1" "crawler-price"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.o.Key = key
			c.o.Now = func() time.Time { return now }
			s, err := New(c.o)
			if err != nil {
				t.Fatal(err)
			}
			req, err := http.NewRequest("GET", c.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = c.host
			for k, v := range c.header {
				req.Header[k] = v
			}
			if err := s.Sign(req); err != nil {
				t.Fatal(err)
			}
			if got := req.Header.Get("Signature-Agent"); got != c.agent {
				t.Errorf("Signature-Agent = %s, want %s", got, c.agent)
			}
			// What a server receives: the request as net/http writes it.
			srv := receive(t, req)
			if h := strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(srv.Host), ":443"), ":80"); h != c.authority {
				t.Errorf("sent Host %s, signed authority %s", srv.Host, c.authority)
			}
			v := verifier(key, now.Add(time.Minute))
			sig, err := v.Verify(srv, s.label)
			if err != nil {
				t.Fatalf("verify: %v\n%s", err, srv.Header)
			}
			if got := strings.Join(sig.Components, " "); got != c.components {
				t.Errorf("components %s, want %s", got, c.components)
			}
			if !strings.HasPrefix(sig.Base, `"@authority": `+c.authority+"\n") && !strings.Contains(sig.Base, "\n\"@authority\": "+c.authority+"\n") {
				t.Errorf("base %q, want authority %s", sig.Base, c.authority)
			}
			if !sig.Created.Equal(now) || !sig.Expires.Equal(now.Add(DefaultLifetime)) || sig.KeyID != rfc9421KeyID {
				t.Errorf("created %v expires %v keyid %s", sig.Created, sig.Expires, sig.KeyID)
			}
			if c.o.Nonce && len(sig.Nonce) != 88 {
				t.Errorf("nonce %q, want 64 bytes in base64", sig.Nonce)
			}
			// Expired, or tampered with: rejected.
			if _, err := verifier(key, now.Add(DefaultLifetime)).Verify(srv, s.label); err == nil {
				t.Error("an expired signature verifies")
			}
			srv.Host = "other.example"
			if _, err := v.Verify(srv, s.label); err == nil {
				t.Error("a signature verifies for another authority")
			}
		})
	}
}

// receive returns req as a server reads it, written as net/http writes it.
func receive(t *testing.T, req *http.Request) *http.Request {
	t.Helper()
	var b strings.Builder
	if err := req.Write(&b); err != nil {
		t.Fatal(err)
	}
	srv, err := http.ReadRequest(bufioReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if req.URL.Scheme == "https" {
		srv.TLS = tlsState
	}
	return srv
}

func TestSignBadRequest(t *testing.T) {
	key := testKey(t)
	s, err := New(Options{Key: key, Agent: testAgent, Headers: []string{"X-Note"}})
	if err != nil {
		t.Fatal(err)
	}
	created := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		name string
		req  func() *http.Request
		p    Params
		want error
	}{
		{"expires before created", func() *http.Request { return httptest.NewRequest("GET", "https://example.com/", nil) },
			Params{Created: created, Expires: created.Add(-time.Second)}, ErrExpires},
		{"expires at created", func() *http.Request { return httptest.NewRequest("GET", "https://example.com/", nil) },
			Params{Created: created, Expires: created.Add(time.Millisecond)}, ErrExpires},
		{"signed already", func() *http.Request {
			r := httptest.NewRequest("GET", "https://example.com/", nil)
			r.Header.Set("Signature-Input", `sig1=("@authority")`)
			return r
		}, Params{Created: created, Expires: created.Add(time.Minute)}, ErrSigned},
		{"Signature-Agent set", func() *http.Request {
			r := httptest.NewRequest("GET", "https://example.com/", nil)
			r.Header.Set("Signature-Agent", `"https://other.example"`)
			return r
		}, Params{Created: created, Expires: created.Add(time.Minute)}, ErrSigned},
		{"no host", func() *http.Request { return &http.Request{URL: &url0, Header: http.Header{}} },
			Params{Created: created, Expires: created.Add(time.Minute)}, ErrRequest},
		{"host with a space", func() *http.Request {
			r := httptest.NewRequest("GET", "https://example.com/", nil)
			r.Host = "a b.example"
			return r
		}, Params{Created: created, Expires: created.Add(time.Minute)}, ErrRequest},
		{"host with a line break", func() *http.Request {
			r := httptest.NewRequest("GET", "https://example.com/", nil)
			r.Host = "a.example\n\"@method\": POST"
			return r
		}, Params{Created: created, Expires: created.Add(time.Minute)}, ErrRequest},
		{"header with a line break", func() *http.Request {
			r := httptest.NewRequest("GET", "https://example.com/", nil)
			r.Header["X-Note"] = []string{"a\n\"@method\": POST"}
			return r
		}, Params{Created: created, Expires: created.Add(time.Minute)}, ErrRequest},
		{"nonce with a quote", func() *http.Request { return httptest.NewRequest("GET", "https://example.com/", nil) },
			Params{Created: created, Expires: created.Add(time.Minute), Nonce: "a\nb"}, ErrOptions},
		{"nil request", func() *http.Request { return nil }, Params{Created: created, Expires: created.Add(time.Minute)}, ErrRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := c.req()
			var before http.Header
			if req != nil {
				before = req.Header.Clone()
			}
			if err := s.SignParams(req, c.p); !errors.Is(err, c.want) {
				t.Errorf("SignParams = %v, want %v", err, c.want)
			}
			if req != nil && len(req.Header) != len(before) {
				t.Errorf("a failed signing changed the header: %v", req.Header)
			}
		})
	}
}

// TestSignerFails: a Key that errs, panics, hangs or signs wrong signs
// nothing, with ErrSign.
func TestSignerFails(t *testing.T) {
	key := testKey(t)
	var hung chan struct{} // closed at the end of each case
	for _, c := range []struct {
		name string
		f    func(msg []byte) ([]byte, error)
	}{
		{"error", func([]byte) ([]byte, error) { return nil, errors.New("KMS unavailable") }},
		{"panic", func([]byte) ([]byte, error) { panic("KMS driver bug") }},
		{"wrong signature", func(msg []byte) ([]byte, error) { return ed25519.Sign(key, append(msg, 'x')), nil }},
		{"short signature", func([]byte) ([]byte, error) { return []byte{1}, nil }},
		{"hang", func([]byte) ([]byte, error) { <-hung; return nil, nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				hung = make(chan struct{})
				defer close(hung)
				s, err := New(Options{Key: funcSigner{key, c.f}, Agent: testAgent, Timeout: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				req := httptest.NewRequest("GET", "https://example.com/", nil)
				if err := s.Sign(req); !errors.Is(err, ErrSign) {
					t.Errorf("Sign = %v, want ErrSign", err)
				}
				if len(req.Header) != 0 {
					t.Errorf("a failed signing set %v", req.Header)
				}
			})
		})
	}
	// A foreign signer that works: its signature verifies.
	s, err := New(Options{Key: funcSigner{key, func(msg []byte) ([]byte, error) { return ed25519.Sign(key, msg), nil }}, Agent: testAgent})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "https://example.com/", nil)
	if err := s.Sign(req); err != nil {
		t.Fatal(err)
	}
	if _, err := verifier(key, time.Now()).Verify(req, DefaultLabel); err != nil {
		t.Error(err)
	}
	// The request's context bounds the call too.
	synctest.Test(t, func(t *testing.T) {
		block := make(chan struct{})
		s, _ := New(Options{Key: funcSigner{key, func([]byte) ([]byte, error) { <-block; return nil, nil }}, Agent: testAgent})
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, "GET", "https://example.com/", nil)
		if err := s.Sign(req); !errors.Is(err, ErrSign) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Sign with a done context = %v", err)
		}
		close(block)
	})
}

var (
	url0     url.URL // a URL with no host
	tlsState = &tls.ConnectionState{}
)

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }

// TestHosts: with Options.Hosts, only the requests for the hosts listed are
// signed; the others are left as they are, their own Signature fields too.
func TestHosts(t *testing.T) {
	s, err := New(Options{Key: testKey(t), Agent: testAgent, Hosts: []string{"Example.com", "*.shop.example", "bücher.example"}})
	if err != nil {
		t.Fatal(err)
	}
	for url, signed := range map[string]bool{
		"https://example.com/":           true,
		"https://EXAMPLE.com:8443/":      true,
		"https://www.example.com/":       false,
		"https://a.shop.example/":        true,
		"https://a.b.shop.example/":      true,
		"https://shop.example/":          false,
		"https://xn--bcher-kva.example/": true,
		"https://other.example/":         false,
		"http://[::1]:8080/":             false,
	} {
		req := httptest.NewRequest("GET", url, nil)
		req.Header = http.Header{}
		if !signed {
			req.Header.Set("Signature", "theirs=:AAAA:")
		}
		if err := s.Sign(req); err != nil {
			t.Errorf("%s: %v", url, err)
		}
		if got := req.Header.Get("Signature-Input") != ""; got != signed {
			t.Errorf("%s: signed %v, want %v", url, got, signed)
		}
	}
	for _, bad := range []string{"", "example.com:443", "*", "*.", "a b", "https://example.com"} {
		if _, err := New(Options{Key: testKey(t), Hosts: []string{bad}}); !errors.Is(err, ErrOptions) {
			t.Errorf("Hosts %q: %v, want ErrOptions", bad, err)
		}
	}
}

// TestAuthority: the authority signed is the one net/http sends.
func TestAuthority(t *testing.T) {
	for url, want := range map[string]string{
		"https://Example.COM:443/":     "example.com",
		"http://example.com:80/":       "example.com",
		"http://example.com:443/":      "example.com:443",
		"https://u:p@bücher.example/":  "xn--bcher-kva.example",
		"http://[fe80::1%25en0]:8080/": "[fe80::1]:8080",
		"http://[::1]/":                "[::1]",
	} {
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Authority(req)
		if err != nil || got != want {
			t.Errorf("Authority(%s) = %q, %v; want %q", url, got, err, want)
		}
		// What net/http sends, normalized as RFC 9421 §2.2.3 says.
		srv := receive(t, req)
		sent := strings.ToLower(srv.Host)
		if req.URL.Scheme == "https" {
			sent = strings.TrimSuffix(sent, ":443")
		} else {
			sent = strings.TrimSuffix(sent, ":80")
		}
		if sent != want {
			t.Errorf("%s: net/http sends Host %q, the signature covers %q", url, srv.Host, want)
		}
	}
}

// BenchmarkSign signs a GET over @method, @authority, @path and
// Signature-Agent, the header reset each time.
func BenchmarkSign(b *testing.B) {
	s, err := New(Options{Key: testKey(b), Agent: testAgent, Method: true, Path: true})
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("GET", "https://example.com/articles/2024/robots-and-you.html", nil)
	b.ReportAllocs()
	for b.Loop() {
		req.Header = http.Header{}
		if err := s.Sign(req); err != nil {
			b.Fatal(err)
		}
	}
}
