package webbotauth

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/f9014239/robots/internal/httpsigtest"
)

// TestDirectoryRotation serves two keys, the old and the new, as a rotation
// does: both are listed with their nbf and exp, and the response carries a
// valid binding signature of each, over the authority asked and the body.
func TestDirectoryRotation(t *testing.T) {
	old := testKey(t)
	newKey, _ := GenerateKey(nil)
	now := time.Unix(1_800_000_000, 0)
	d, err := NewDirectory([]DirectoryKey{
		{Key: old, Expires: now.Add(24 * time.Hour)},
		{Key: newKey, NotBefore: now},
	}, DirectoryOptions{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d)
	defer srv.Close()
	resp, err := http.Get(srv.URL + WellKnownPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != MediaType || resp.Header.Get("Cache-Control") != "max-age=3600" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	var set struct {
		Keys []struct {
			Kty, Crv, Kid, X, Use string
			Nbf, Exp              int64
		}
	}
	if err := json.Unmarshal(body, &set); err != nil || len(set.Keys) != 2 {
		t.Fatalf("%s: %v", body, err)
	}
	pubs := map[string]ed25519.PublicKey{}
	for i, k := range set.Keys {
		x, _ := base64.RawURLEncoding.DecodeString(k.X)
		kid, _ := Thumbprint(x)
		if k.Kty != "OKP" || k.Crv != "Ed25519" || k.Kid != kid || k.Use != "sig" {
			t.Errorf("key %d: %+v", i, k)
		}
		pubs[kid] = x
	}
	if set.Keys[0].Exp != now.Unix()+86400 || set.Keys[0].Nbf != 0 || set.Keys[1].Nbf != now.Unix() || set.Keys[1].Exp != 0 {
		t.Errorf("nbf/exp: %+v", set.Keys)
	}
	// The binding: Content-Digest of the body, and a signature per key.
	sum := sha256.Sum256(body)
	digest := "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
	if got := resp.Header.Get("Content-Digest"); got != digest {
		t.Errorf("Content-Digest %s, want %s", got, digest)
	}
	inputs, err := httpsfv.UnmarshalDictionary(resp.Header.Values("Signature-Input"))
	if err != nil {
		t.Fatal(err)
	}
	sigs, err := httpsfv.UnmarshalDictionary(resp.Header.Values("Signature"))
	if err != nil {
		t.Fatal(err)
	}
	authority := strings.TrimPrefix(srv.URL, "http://")
	seen := map[string]bool{}
	for _, label := range inputs.Names() {
		m, _ := inputs.Get(label)
		list := m.(httpsfv.InnerList)
		params, _ := httpsfv.Marshal(list)
		base := `"@authority";req: ` + authority + "\n\"content-digest\": " + digest + "\n\"@signature-params\": " + params
		kid, _ := list.Params.Get("keyid")
		tag, _ := list.Params.Get("tag")
		s, _ := sigs.Get(label)
		sig, _ := s.(httpsfv.Item).Value.([]byte)
		if tag != DirectoryTag || !ed25519.Verify(pubs[kid.(string)], []byte(base), sig) {
			t.Errorf("binding %s (tag %v, keyid %v) does not verify", label, tag, kid)
		}
		seen[kid.(string)] = true
	}
	if len(seen) != 2 {
		t.Errorf("bindings of %d keys, want 2", len(seen))
	}
}

// TestDirectoryMethods asks the directory with every method.
func TestDirectoryMethods(t *testing.T) {
	d, err := NewDirectory([]DirectoryKey{{Key: testKey(t)}}, DirectoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "TRACE", "PROPFIND", "get"} {
		req := httptest.NewRequest(m, "https://crawler.example"+WellKnownPath, strings.NewReader("x"))
		w := httptest.NewRecorder()
		d.ServeHTTP(w, req)
		want := http.StatusMethodNotAllowed
		switch m {
		case "GET", "HEAD":
			want = http.StatusOK
		case "OPTIONS":
			want = http.StatusNoContent
		}
		if w.Code != want {
			t.Errorf("%s: %d, want %d", m, w.Code, want)
		}
		if want != http.StatusOK && w.Header().Get("Allow") != "GET, HEAD, OPTIONS" {
			t.Errorf("%s: Allow %q", m, w.Header().Get("Allow"))
		}
		if m == "HEAD" && (w.Body.Len() != 0 || w.Header().Get("Content-Length") != strconv.Itoa(len(d.JSON()))) {
			t.Errorf("HEAD: body %q, Content-Length %s", w.Body, w.Header().Get("Content-Length"))
		}
	}
	// A request with no valid Host.
	req := httptest.NewRequest("GET", "https://crawler.example"+WellKnownPath, nil)
	req.Host = "a b"
	w := httptest.NewRecorder()
	d.ServeHTTP(w, req)
	if w.Code != http.StatusBadRequest {
		t.Errorf("bad Host: %d", w.Code)
	}
}

func TestDirectoryBadInput(t *testing.T) {
	key := testKey(t)
	now := time.Now()
	for name, keys := range map[string][]DirectoryKey{
		"no keys":        nil,
		"nil key":        {{}},
		"listed twice":   {{Key: key}, {Key: key}},
		"short key":      {{Key: key[:10]}},
		"exp before nbf": {{Key: key, NotBefore: now, Expires: now.Add(-time.Hour)}},
	} {
		if d, err := NewDirectory(keys, DirectoryOptions{}); err == nil || d != nil {
			t.Errorf("%s: NewDirectory = %v, %v; want an error", name, d, err)
		}
	}
	if _, err := NewDirectory([]DirectoryKey{{Key: key}}, DirectoryOptions{MaxAge: -1}); !errors.Is(err, ErrOptions) {
		t.Errorf("negative MaxAge: %v", err)
	}
	// A key that fails to sign: 503, no keys served without their proof.
	d, err := NewDirectory([]DirectoryKey{{Key: funcSigner{key, func([]byte) ([]byte, error) { return nil, errors.New("HSM offline") }}}}, DirectoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	d.ServeHTTP(w, httptest.NewRequest("GET", "https://crawler.example"+WellKnownPath, nil))
	if w.Code != http.StatusServiceUnavailable || strings.Contains(w.Body.String(), "keys") {
		t.Errorf("failing key: %d %s", w.Code, w.Body)
	}
}

// TestRotationVerifies: during a rotation the directory lists both keys; a
// verifier that knows only the directory verifies requests signed with the
// new key, and those the old key signed before the switch, and after the
// old key is dropped, only the new key's.
func TestRotationVerifies(t *testing.T) {
	old := testKey(t)
	newKey, _ := GenerateKey(nil)
	now := time.Now()
	keysOf := func(d *Directory) map[string]ed25519.PublicKey {
		var set struct{ Keys []struct{ Kid, X string } }
		if err := json.Unmarshal(d.JSON(), &set); err != nil {
			t.Fatal(err)
		}
		keys := map[string]ed25519.PublicKey{}
		for _, k := range set.Keys {
			x, _ := base64.RawURLEncoding.DecodeString(k.X)
			keys[k.Kid] = x
		}
		return keys
	}
	sign := func(k ed25519.PrivateKey) *http.Request {
		s, err := New(Options{Key: k, Agent: testAgent})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("GET", "https://example.com/", nil)
		if err := s.Sign(req); err != nil {
			t.Fatal(err)
		}
		return req
	}
	both, err := NewDirectory([]DirectoryKey{{Key: old, Expires: now.Add(time.Hour)}, {Key: newKey, NotBefore: now}}, DirectoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := &httpsigtest.Verifier{Keys: keysOf(both), Now: now.Add(time.Second), Skew: time.Second}
	for name, req := range map[string]*http.Request{"old": sign(old), "new": sign(newKey)} {
		if _, err := v.Verify(req, DefaultLabel); err != nil {
			t.Errorf("the %s key's signature, both keys published: %v", name, err)
		}
	}
	after, err := NewDirectory([]DirectoryKey{{Key: newKey}}, DirectoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v.Keys = keysOf(after)
	if _, err := v.Verify(sign(newKey), DefaultLabel); err != nil {
		t.Errorf("the new key, alone: %v", err)
	}
	if _, err := v.Verify(sign(old), DefaultLabel); err == nil {
		t.Error("the old key's signature verifies after the old key was dropped")
	}
}
