package webbotauth

import (
	"crypto/ed25519"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/f9014239/robots/internal/httpsigtest"
)

// vectorsFile is the shared Ed25519 vectors, through the link testdata/shared
// (see testdata/README.md). It is absent outside the project's workspace.
const vectorsFile = "../testdata/shared/webbotauth/vectors.json"

func TestMain(m *testing.M) {
	if _, err := os.Stat(vectorsFile); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "webbotauth: %s is absent: its vectors are skipped (the draft's own still run)\n", vectorsFile)
	}
	os.Exit(m.Run())
}

// rfc9421Key is the Ed25519 test key of RFC 9421 Appendix B.1.4, which the
// draft's vectors sign with (a JWK, as vectors.json gives it).
const rfc9421Key = `{"kty":"OKP","crv":"Ed25519","d":"n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}`

const rfc9421KeyID = "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U"

func testKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	k, err := ParseKey([]byte(rfc9421Key))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

type vectorCase struct {
	Name           string `json:"name"`
	TargetURL      string `json:"target_url"`
	Label          string `json:"label"`
	Created        int64  `json:"created"`
	Expires        int64  `json:"expires"`
	Nonce          string `json:"nonce"`
	SignatureAgent string `json:"signature_agent"`
	SignatureInput string `json:"signature_input"`
	SignatureBase  string `json:"signature_base"`
	Signature      string `json:"signature"`
}

// signVector signs a GET of c.TargetURL as c says, with agent (a URL) in
// form f under member key agentKey, and returns the request.
func signVector(t *testing.T, key ed25519.PrivateKey, c vectorCase, agent, agentKey string, f Form) *http.Request {
	t.Helper()
	s, err := New(Options{Key: key, Label: c.Label, Agent: agent, AgentKey: agentKey, Form: f})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", c.TargetURL, nil)
	req.Header = http.Header{}
	if err := s.SignParams(req, Params{Created: time.Unix(c.Created, 0), Expires: time.Unix(c.Expires, 0), Nonce: c.Nonce}); err != nil {
		t.Fatal(err)
	}
	return req
}

func checkFields(t *testing.T, req *http.Request, agent, input, sig string) {
	t.Helper()
	for _, f := range []struct{ name, want string }{
		{"Signature-Agent", agent}, {"Signature-Input", input}, {"Signature", sig},
	} {
		if got := req.Header.Get(f.name); got != f.want {
			t.Errorf("%s:\n got %s\nwant %s", f.name, got, f.want)
		}
	}
}

// TestSharedVectors reproduces the shared vectors byte for byte: the
// @authority-only form (no Signature-Agent) and the dictionary form.
func TestSharedVectors(t *testing.T) {
	data, err := os.ReadFile(vectorsFile)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip(vectorsFile + " is absent")
	} else if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Key   json.RawMessage `json:"key"`
		KeyID string          `json:"keyid"`
		Cases []vectorCase    `json:"cases"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	key, err := ParseKey(v.Key)
	if err != nil {
		t.Fatal(err)
	}
	if kid, _ := Thumbprint(key.Public().(ed25519.PublicKey)); kid != v.KeyID {
		t.Errorf("Thumbprint = %s, want %s", kid, v.KeyID)
	}
	if len(v.Cases) < 2 {
		t.Fatalf("%d cases, want the two forms", len(v.Cases))
	}
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			agent, agentKey := "", ""
			if c.SignatureAgent != "" {
				// agent2="https://signature-agent.test"
				var ok bool
				agentKey, agent, ok = cutMember(c.SignatureAgent)
				if !ok {
					t.Fatalf("signature_agent %q", c.SignatureAgent)
				}
			}
			req := signVector(t, key, c, agent, agentKey, FormURL)
			checkFields(t, req, c.SignatureAgent, c.SignatureInput, c.Signature)
			if got := signatureBase(t, req, c.Label); got != c.SignatureBase {
				t.Errorf("signature base:\n got %q\nwant %q", got, c.SignatureBase)
			}
		})
	}
}

// cutMember splits a dictionary of one member key="value".
func cutMember(s string) (key, value string, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '=' {
			v := s[i+1:]
			if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
				return "", "", false
			}
			return s[:i], v[1 : len(v)-1], true
		}
	}
	return "", "", false
}

// TestDraftVectors reproduces the draft's other Ed25519 vectors
// (draft-ietf-webbotauth-httpsig-protocol-01, "Test Vectors"): the
// dictionary form, the legacy sf-string form and the signed directory
// response.
func TestDraftVectors(t *testing.T) {
	key := testKey(t)
	if kid, _ := Thumbprint(key.Public().(ed25519.PublicKey)); kid != rfc9421KeyID {
		t.Errorf("Thumbprint = %s, want %s", kid, rfc9421KeyID)
	}
	t.Run("dictionary", func(t *testing.T) {
		c := vectorCase{TargetURL: "https://example.com/path/to/resource", Label: "sig2", Created: 1735689600, Expires: 4889289600,
			Nonce: "n9p433xm+NJ3ph3upfBIGmsuwHw387YV7Q/F+6BSpGCVjYCqQw6rznNA8PVVLySrAWsv0hQtFioQb6E1YsauiA=="}
		req := signVector(t, key, c, "https://signature-agent.test", "agent2", FormURL)
		checkFields(t, req, `agent2="https://signature-agent.test"`,
			`sig2=("@authority" "signature-agent";key="agent2");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=4889289600;nonce="n9p433xm+NJ3ph3upfBIGmsuwHw387YV7Q/F+6BSpGCVjYCqQw6rznNA8PVVLySrAWsv0hQtFioQb6E1YsauiA==";tag="web-bot-auth"`,
			`sig2=:RdNFx5Bj6au3YgAMQL/RzmUlZE8QZLIaXGRpw985hWnwPfMxT228NMk6ehRS1PSl4e8PhbNZACSanGdhEwYCCg==:`)
	})
	t.Run("legacy string", func(t *testing.T) {
		c := vectorCase{TargetURL: "https://example.com/path/to/resource", Label: "sig2", Created: 1735689600, Expires: 1735693200,
			Nonce: "e8N7S2MFd/qrd6T2R3tdfAuuANngKI7LFtKYI/vowzk4lAZYadIX6wW25MwG7DCT9RUKAJ0qVkU0mEeLElW1qg=="}
		req := signVector(t, key, c, "https://signature-agent.test"+WellKnownPath, "", FormString)
		checkFields(t, req, `"https://signature-agent.test"`,
			`sig2=("@authority" "signature-agent");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=1735693200;nonce="e8N7S2MFd/qrd6T2R3tdfAuuANngKI7LFtKYI/vowzk4lAZYadIX6wW25MwG7DCT9RUKAJ0qVkU0mEeLElW1qg==";tag="web-bot-auth"`,
			`sig2=:jdq0SqOwHdyHr9+r5jw3iYZH6aNGKijYp/EstF4RQTQdi5N5YYKrD+mCT1HA1nZDsi6nJKuHxUi/5Syp3rLWBA==:`)
		const base = "\"@authority\": example.com\n\"signature-agent\": \"https://signature-agent.test\"\n\"@signature-params\": (\"@authority\" \"signature-agent\");created=1735689600;keyid=\"poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U\";alg=\"ed25519\";expires=1735693200;nonce=\"e8N7S2MFd/qrd6T2R3tdfAuuANngKI7LFtKYI/vowzk4lAZYadIX6wW25MwG7DCT9RUKAJ0qVkU0mEeLElW1qg==\";tag=\"web-bot-auth\""
		if got := signatureBase(t, req, "sig2"); got != base {
			t.Errorf("signature base:\n got %q\nwant %q", got, base)
		}
	})
	t.Run("directory response", func(t *testing.T) {
		d, err := NewDirectory([]DirectoryKey{{Key: key}}, DirectoryOptions{
			Now:             func() time.Time { return time.Unix(1735689600, 0) },
			BindingLifetime: time.Unix(4889289600, 0).Sub(time.Unix(1735689600, 0)),
		})
		if err != nil {
			t.Fatal(err)
		}
		const body = `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs","use":"sig"}]}`
		req := httptest.NewRequest("GET", "https://signature-agent.test"+WellKnownPath, nil)
		req.Header.Set("Accept", MediaType)
		req.TLS = &tls.ConnectionState{}
		w := httptest.NewRecorder()
		d.ServeHTTP(w, req)
		resp := w.Result()
		got, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(got) != body {
			t.Errorf("directory: %d %s\nwant 200 %s", resp.StatusCode, got, body)
		}
		for _, f := range []struct{ name, want string }{
			{"Content-Type", MediaType},
			{"Content-Digest", "sha-256=:CADMT2aBdV/rqQr/NIru64ERQkCobVvllA4V0fLFDu0=:"},
			{"Signature-Input", `binding=("@authority";req "content-digest");created=1735689600;expires=4889289600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";tag="http-message-signatures-directory"`},
			{"Signature", "binding=:l6P8R67tm3kujAxbHWio7ll01qrEZ0dKD/WWlGhNYEmTnFZM8Wt0VQ9zqGfvo7T/UMkBxsigzChM1Gpz7gOVBg==:"},
		} {
			if got := resp.Header.Get(f.name); got != f.want {
				t.Errorf("%s:\n got %s\nwant %s", f.name, got, f.want)
			}
		}
	})
}

// signatureBase is the base that a server receiving req rebuilds.
func signatureBase(t *testing.T, req *http.Request, label string) string {
	t.Helper()
	base, _, err := httpsigtest.Base(req, label)
	if err != nil {
		t.Fatal(err)
	}
	return base
}
