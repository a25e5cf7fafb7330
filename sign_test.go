package robots

import (
	"bufio"
	"context"
	"crypto"
	"crypto/ed25519"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots/internal/httpsigtest"
	"github.com/f9014239/robots/webbotauth"
)

const signAgent = "https://crawler.example" + webbotauth.WellKnownPath

// signKey is a fixed Ed25519 key of the tests (its seed is 32 bytes of 7).
func signKey() ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = 7
	}
	return ed25519.NewKeyFromSeed(seed)
}

func newSigner(t testing.TB, key crypto.Signer) *webbotauth.Signer {
	t.Helper()
	s, err := webbotauth.New(webbotauth.Options{Key: key, Agent: signAgent, Method: true, Path: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// keyVerifier verifies the signatures of signKey at the real time.
func keyVerifier() *httpsigtest.Verifier {
	key := signKey()
	pub := key.Public().(ed25519.PublicKey)
	kid, _ := webbotauth.Thumbprint(pub)
	return &httpsigtest.Verifier{Keys: map[string]ed25519.PublicKey{kid: pub}, Now: time.Now(), Skew: time.Second}
}

// arrival is a request as a server saw it, and its verdict.
type arrival struct {
	authority, path string
	sig             *httpsigtest.Signature
	err             error
}

// recorder is a test server's log of arrivals.
type recorder struct {
	mu  sync.Mutex
	got []arrival
}

func (r *recorder) add(req *http.Request) {
	v := keyVerifier()
	sig, err := v.Verify(req, webbotauth.DefaultLabel)
	r.mu.Lock()
	r.got = append(r.got, arrival{req.Host, req.URL.Path, sig, err})
	r.mu.Unlock()
}

func (r *recorder) arrivals() []arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]arrival(nil), r.got...)
}

// TestSignedRedirect sends a request through a real http.Client to a server
// on 127.0.0.1 that redirects to another: each robots.txt fetch, the first
// hop and the hop to the other host arrive signed, each over its own
// authority, and the caller's request is left unsigned.
func TestSignedRedirect(t *testing.T) {
	var log recorder
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		io.WriteString(w, "User-agent: *\nAllow: /\n")
	}))
	defer b.Close()
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		if r.URL.Path == "/start" {
			http.Redirect(w, r, b.URL+"/page", http.StatusFound)
			return
		}
		io.WriteString(w, "User-agent: *\nAllow: /\n")
	}))
	defer a.Close()
	tr := noDefaultPace(NewTransport(nil, "ExampleBot"))
	tr.Signer = newSigner(t, signKey())
	client := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()

	req, _ := http.NewRequest("GET", a.URL+"/start", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(req.Header) != 0 {
		t.Errorf("the caller's request was changed: %v", req.Header)
	}
	hostA, hostB := strings.TrimPrefix(a.URL, "http://"), strings.TrimPrefix(b.URL, "http://")
	want := []struct{ authority, path string }{
		{hostA, "/robots.txt"}, {hostA, "/start"}, {hostB, "/robots.txt"}, {hostB, "/page"},
	}
	got := log.arrivals()
	if len(got) != len(want) {
		t.Fatalf("%d arrivals, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.authority != w.authority || g.path != w.path {
			t.Errorf("arrival %d: %s%s, want %s%s", i, g.authority, g.path, w.authority, w.path)
			continue
		}
		if g.err != nil {
			t.Errorf("%s%s: not verified: %v", g.authority, g.path, g.err)
			continue
		}
		if wantBase := `"@authority": ` + w.authority + "\n"; !strings.Contains(g.sig.Base, wantBase) {
			t.Errorf("%s%s: base %q does not cover its authority", g.authority, g.path, g.sig.Base)
		}
		if g.sig.Agent != `"`+signAgent+`"` {
			t.Errorf("%s%s: Signature-Agent %s", g.authority, g.path, g.sig.Agent)
		}
	}
}

// TestSignedAtTurn: a request that waits for its turn is signed when it
// leaves, not when it was made; and its signature, replayed after it
// expires or on another path, is refused.
func TestSignedAtTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var sent []*http.Request // as received
		var at []time.Time       // when Base got them
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			var b strings.Builder
			req.Write(&b)
			r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(b.String())))
			if err != nil {
				return nil, err
			}
			r.TLS = nil
			mu.Lock()
			sent, at = append(sent, r), append(at, time.Now())
			mu.Unlock()
			if req.URL.Path == "/robots.txt" {
				return textResponse(req, "User-agent: *\nCrawl-delay: 30\n"), nil
			}
			return textResponse(req, "page"), nil
		})
		tr := &Transport{Base: base, Agent: "ExampleBot", Signer: newSigner(t, signKey())}
		client := &http.Client{Transport: tr}
		start := time.Now()
		for _, p := range []string{"/1", "/2"} {
			resp, err := client.Get("http://site.example" + p)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		if len(sent) != 3 {
			t.Fatalf("%d requests sent, want robots.txt and two pages", len(sent))
		}
		v := keyVerifier()
		for i, r := range sent {
			v.Now = at[i]
			sig, err := v.Verify(r, webbotauth.DefaultLabel)
			if err != nil {
				t.Fatalf("%s: %v", r.URL.Path, err)
			}
			// created is when it left, in whole seconds.
			if !sig.Created.Equal(at[i].Truncate(time.Second)) {
				t.Errorf("%s: created %v, sent at %v", r.URL.Path, sig.Created, at[i])
			}
		}
		if second := at[2]; second.Sub(start) < 30*time.Second {
			t.Errorf("the second page left %v after the first: want its turn, 30 s", second.Sub(start))
		}
		sig, _ := v.Verify(sent[2], webbotauth.DefaultLabel)
		if sig.Created.Before(start.Add(30 * time.Second).Truncate(time.Second)) {
			t.Errorf("created %v is before the turn (%v)", sig.Created, start.Add(30*time.Second))
		}
		// Replayed after it expired, or on another path: refused.
		v.Now = at[2].Add(webbotauth.DefaultLifetime)
		if _, err := v.Verify(sent[2], webbotauth.DefaultLabel); err == nil {
			t.Error("an expired signature verifies")
		}
		v.Now = at[2]
		sent[2].URL.Path = "/admin"
		if _, err := v.Verify(sent[2], webbotauth.DefaultLabel); err == nil {
			t.Error("a signature verifies on another path")
		}
	})
}

func textResponse(req *http.Request, body string) *http.Response {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/plain"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: req, ContentLength: int64(len(body))}
}

// failingKey is an Ed25519 public key whose Sign fails.
type failingKey struct{ ed25519.PrivateKey }

func (failingKey) Sign(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
	return nil, errors.New("KMS unavailable")
}

// TestSignerFailsClosed: a Signer that fails sends nothing, robots.txt
// included, and the request fails with an error that says why.
func TestSignerFailsClosed(t *testing.T) {
	var log recorder
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		io.WriteString(w, "User-agent: *\nAllow: /\n")
	}))
	defer srv.Close()
	tr := noDefaultPace(NewTransport(nil, "ExampleBot"))
	tr.Signer = newSigner(t, failingKey{signKey()})
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	_, err := client.Get(srv.URL + "/page")
	if !errors.Is(err, webbotauth.ErrSign) || !errors.Is(err, ErrDisallowed) {
		t.Errorf("a page whose robots.txt could not be signed: %v; want ErrSign and ErrDisallowed", err)
	}
	_, err = client.Get(srv.URL + "/robots.txt")
	if !errors.Is(err, webbotauth.ErrSign) {
		t.Errorf("robots.txt: %v, want ErrSign", err)
	}
	if got := log.arrivals(); len(got) != 0 {
		t.Errorf("%d requests arrived from a failing signer: %+v", len(got), got)
	}
}

// TestSignedAlready: a request that carries a Signature field is refused,
// not sent with its own or ours.
func TestSignedAlready(t *testing.T) {
	var log recorder
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		io.WriteString(w, "User-agent: *\nAllow: /\n")
	}))
	defer srv.Close()
	tr := noDefaultPace(NewTransport(nil, "ExampleBot"))
	tr.Signer = newSigner(t, signKey())
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(context.Background(), "GET", srv.URL+"/page", strings.NewReader("body"))
	req.Header.Set("Signature", "sig1=:AAAA:")
	body := &closeCounter{Reader: strings.NewReader("body")}
	req.Body = body
	_, err := (&http.Client{Transport: tr}).Do(req)
	if !errors.Is(err, webbotauth.ErrSigned) {
		t.Errorf("Do = %v, want ErrSigned", err)
	}
	if body.closed != 1 {
		t.Errorf("the body was closed %d times, want once", body.closed)
	}
	for _, a := range log.arrivals() {
		if a.path != "/robots.txt" {
			t.Errorf("%s arrived", a.path)
		}
	}
}

type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// BenchmarkRoundTripSigned compares an allowed request to a cached origin,
// unpaced, sent unsigned and signed (Ed25519, @method, @authority, @path
// and Signature-Agent).
func BenchmarkRoundTripSigned(b *testing.B) {
	base := benchBase{page: &http.Response{StatusCode: 200, Body: http.NoBody}}
	req, _ := http.NewRequest("GET", "https://example.com/articles/2024/robots-and-you.html", nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 (compatible; ExampleBot/1.0; +https://example.com/bot)")
	for _, c := range []struct {
		name   string
		signer *webbotauth.Signer
	}{
		{"unsigned", nil},
		{"signed", newSigner(b, signKey())},
	} {
		tr := &Transport{NoDefaultPace: true, Base: base, Agent: "ExampleBot", Signer: c.signer}
		if _, err := tr.RoundTrip(req); err != nil { // warm the cache
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tr.RoundTrip(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestCard: the card states the pacing the Transport enforces.
func TestCard(t *testing.T) {
	for _, c := range []struct {
		name         string
		tr           *Transport
		control, not string
		expect       string
		keys         bool
	}{
		{"default", NewTransport(nil, "ExampleBot"), "robots.txt Crawl-delay", "",
			"one request at a time per site, 1s apart where robots.txt states no delay", false},
		{"signed, ignoring Crawl-delay", &Transport{Agent: "ExampleBot", IgnoreCrawlDelay: true, Signer: newSigner(t, signKey())}, "Retry-After", "Crawl-delay",
			"one request at a time per site, 1s apart where robots.txt states no delay", true},
		{"no default pace, MinDelay", &Transport{Agent: "ExampleBot", NoDefaultPace: true, MinDelay: 2 * time.Second, IgnoreRetryAfter: true, IgnoreBackoff: true}, "RateLimit", "Retry-After",
			"one request at a time per site, never under 2s apart", false},
		{"DefaultDelay and MinDelay", &Transport{Agent: "ExampleBot", DefaultDelay: 5 * time.Second, MinDelay: 2 * time.Second}, "back-off", "",
			"one request at a time per site, 5s apart where robots.txt states no delay, never under 2s", false},
	} {
		card, err := c.tr.Card()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if card.ProductToken != "ExampleBot" || !card.RFC9309Compliance || card.Trigger != "crawler" || card.RateExpectation != c.expect ||
			!strings.Contains(card.RateControl, c.control) || c.not != "" && strings.Contains(card.RateControl, c.not) || (card.Keys != nil) != c.keys {
			t.Errorf("%s: card %+v", c.name, card)
		}
	}
	if _, err := NewTransport(nil, "").Card(); err == nil {
		t.Error("the card of a Transport with no agent: no error")
	}
}

// TestSignedRobotsRedirect: a fetch of robots.txt redirected to another
// host is signed at each hop, over that hop's authority.
func TestSignedRobotsRedirect(t *testing.T) {
	var log recorder
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		io.WriteString(w, "User-agent: *\nDisallow: /private\n")
	}))
	defer b.Close()
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		if r.URL.Path == "/robots.txt" {
			http.Redirect(w, r, b.URL+"/robots.txt", http.StatusMovedPermanently)
			return
		}
		io.WriteString(w, "page")
	}))
	defer a.Close()
	tr := noDefaultPace(NewTransport(nil, "ExampleBot"))
	tr.Signer = newSigner(t, signKey())
	defer tr.CloseIdleConnections()
	if err := tr.Check(context.Background(), mustURL(a.URL+"/private/x")); !errors.Is(err, ErrDisallowed) {
		t.Fatalf("Check = %v, want disallowed by the redirected robots.txt", err)
	}
	got := log.arrivals()
	hostA, hostB := strings.TrimPrefix(a.URL, "http://"), strings.TrimPrefix(b.URL, "http://")
	if len(got) != 2 || got[0].authority != hostA || got[1].authority != hostB {
		t.Fatalf("arrivals %+v, want robots.txt at %s then %s", got, hostA, hostB)
	}
	for _, g := range got {
		if g.err != nil || !strings.Contains(g.sig.Base, `"@authority": `+g.authority+"\n") {
			t.Errorf("%s%s: %v, base %v", g.authority, g.path, g.err, g.sig)
		}
	}
}
