package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/f9014239/robots/internal/httpsigtest"
	"github.com/f9014239/robots/webbotauth"
)

// TestKeygenSignedCrawl: keygen writes a key and prints its directory and
// card; crawl -sign-key signs every request with it, robots.txt included,
// as a verifier on the site finds; the site serves the directory with the
// handler of package webbotauth.
func TestKeygenSignedCrawl(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key.pem")
	code, stdout, stderr := runCmd(t, "", "keygen", "-agent", "ExampleBot", keyFile)
	if code != exitOK {
		t.Fatalf("keygen = %d\n%s", code, stderr)
	}
	out := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(out) != 2 {
		t.Fatalf("keygen printed %d lines, want the directory and the card:\n%s", len(out), stdout)
	}
	var set struct {
		Keys []struct{ Kid, X string }
	}
	if err := json.Unmarshal([]byte(out[0]), &set); err != nil || len(set.Keys) != 1 {
		t.Fatalf("directory %s: %v", out[0], err)
	}
	var card map[string]any
	if err := json.Unmarshal([]byte(out[1]), &card); err != nil {
		t.Fatal(err)
	}
	if card["rfc9309-product-token"] != "ExampleBot" || card["rfc9309-compliance"] != true || card["trigger"] != "crawler" ||
		!strings.Contains(card["rate-expectation"].(string), "one request at a time per site, 1s apart") || card["keys"] == nil {
		t.Errorf("card %s", out[1])
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v, %v", fi, err)
	}
	key, err := readKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := webbotauth.Thumbprint(key.Public().(ed25519.PublicKey))
	if set.Keys[0].Kid != kid {
		t.Errorf("directory kid %s, key %s", set.Keys[0].Kid, kid)
	}
	// keygen does not overwrite a key.
	if code, _, stderr := runCmd(t, "", "keygen", keyFile); code != exitUsage || !strings.Contains(stderr, "exists") {
		t.Errorf("keygen over a key = %d, %s", code, stderr)
	}
	// A rotation: the key in use, then the new one.
	code, stdout, _ = runCmd(t, "", "keygen", "-format", "jwk", filepath.Join(dir, "new.jwk"), keyFile)
	if code != exitOK || !strings.HasPrefix(stdout, `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"`+kid+`"`) || strings.Count(strings.Split(stdout, "\n")[0], `"kid"`) != 2 {
		t.Errorf("keygen with a key in use = %d\n%s", code, stdout)
	}
	if _, err := readKey(filepath.Join(dir, "new.jwk")); err != nil {
		t.Error(err)
	}

	// The crawl, against a site that verifies each request and serves the
	// directory.
	directory, err := webbotauth.NewDirectory([]webbotauth.DirectoryKey{{Key: key}}, webbotauth.DirectoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	agentURL := "https://crawler.example" + webbotauth.WellKnownPath
	v := &httpsigtest.Verifier{Keys: map[string]ed25519.PublicKey{kid: key.Public().(ed25519.PublicKey)}, Skew: time.Second}
	var mu sync.Mutex
	var verified, refused []string
	demo := demoHandler(10 * time.Millisecond)
	s := newSite(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == webbotauth.WellKnownPath {
			directory.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		v.Now = time.Now()
		sig, err := v.Verify(r, webbotauth.DefaultLabel)
		if err == nil && sig.Agent == `"`+agentURL+`"` && len(sig.Components) == 4 {
			verified = append(verified, r.URL.Path)
		} else {
			refused = append(refused, r.URL.Path+": "+err.Error())
		}
		mu.Unlock()
		demo.ServeHTTP(w, r)
	}))
	code, stdout, stderr = runCmd(t, "", "crawl", "-agent", "robotstxt", "-max", "3", "-sign-key", keyFile, "-signature-agent", agentURL, s.URL+"/")
	if code != exitOK {
		t.Fatalf("crawl = %d\n%s\n%s", code, stdout, stderr)
	}
	mu.Lock()
	if len(refused) > 0 || len(verified) < 2 || verified[0] != "/robots.txt" {
		t.Errorf("verified %v, refused %v; want every request verified, robots.txt first", verified, refused)
	}
	mu.Unlock()
	resp, err := http.Get(s.URL + webbotauth.WellKnownPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != webbotauth.MediaType || resp.Header.Get("Signature") == "" {
		t.Errorf("directory: %d %v", resp.StatusCode, resp.Header)
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestCrawlSignFlagsBad(t *testing.T) {
	dir := t.TempDir()
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 1024)
	der, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	rsaFile := filepath.Join(dir, "rsa.pem")
	os.WriteFile(rsaFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
	keyFile := filepath.Join(dir, "key.pem")
	if code, _, stderr := runCmd(t, "", "keygen", keyFile); code != exitOK {
		t.Fatal(stderr)
	}
	agentURL := "https://crawler.example" + webbotauth.WellKnownPath
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-sign-key", keyFile}, "needs -signature-agent"},
		{[]string{"-signature-agent", agentURL}, "needs -sign-key"},
		{[]string{"-sign-key", rsaFile, "-signature-agent", agentURL}, "not an Ed25519 key"},
		{[]string{"-sign-key", filepath.Join(dir, "none"), "-signature-agent", agentURL}, "no such file"},
		{[]string{"-sign-key", keyFile, "-signature-agent", "http://crawler.example/"}, "not an https URL"},
		{[]string{"-sign-key", keyFile, "-signature-agent", agentURL + "?v=2"}, "query"},
		{[]string{"-sign-key", keyFile, "-signature-agent", agentURL, "-signature-agent-form", "dict"}, "want url, origin or string"},
	} {
		args := append(append([]string{"crawl"}, c.args...), "http://127.0.0.1:1/")
		code, stdout, stderr := runCmd(t, "", args...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, c.want) {
			t.Errorf("crawl %v = %d, %q, %q; want a usage error that says %q", c.args, code, stdout, stderr, c.want)
		}
	}
}

func TestKeygenHelp(t *testing.T) {
	code, stdout, stderr := runCmd(t, "", "keygen", "-h")
	if code != exitOK || !strings.HasPrefix(stdout, "usage: robotstxt keygen") || !strings.Contains(stdout, "-format") || stderr != "" {
		t.Errorf("keygen -h = %d, %q, %q", code, stdout, stderr)
	}
	if code, _, stderr := runCmd(t, "", "keygen"); code != exitUsage || !strings.Contains(stderr, "usage: robotstxt keygen") {
		t.Errorf("keygen without FILE = %d, %q", code, stderr)
	}
	code, stdout, _ = runCmd(t, "", "crawl", "-h")
	for _, f := range []string{"-sign-key FILE", "-signature-agent URL", "-signature-agent-form", "Web Bot Auth"} {
		if code != exitOK || !strings.Contains(stdout, f) {
			t.Errorf("crawl -h does not say %q", f)
		}
	}
}
