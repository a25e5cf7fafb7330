package webbotauth

import (
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// The defaults of [DirectoryOptions].
const (
	// DefaultMaxAge is the Cache-Control max-age of a directory. A
	// verifier may use a key it cached until then, so it bounds how long a
	// key removed from the directory (a compromised one) still verifies.
	DefaultMaxAge = time.Hour
	// DefaultBindingLifetime is the lifetime of a directory response's
	// signatures. A verifier that got the keys from a list rather than
	// from the directory drops them once these expire, so the draft asks
	// for one well beyond how often such lists are republished.
	DefaultBindingLifetime = 7 * 24 * time.Hour
)

// A DirectoryKey is a key listed in a [Directory].
type DirectoryKey struct {
	// Key is the key, private so that the directory's response proves
	// that its publisher holds it (a signature per key).
	Key crypto.Signer
	// NotBefore and Expires, if not zero, are listed as the key's nbf and
	// exp: when verifiers start and stop accepting it.
	NotBefore, Expires time.Time
}

// DirectoryOptions configure a [Directory].
type DirectoryOptions struct {
	// MaxAge is the Cache-Control max-age of the response; if zero,
	// DefaultMaxAge.
	MaxAge time.Duration
	// BindingLifetime is from created to expires of the response's
	// signatures; if zero, DefaultBindingLifetime.
	BindingLifetime time.Duration
	// Timeout bounds a call to a Key that is not an ed25519.PrivateKey;
	// if zero, DefaultTimeout.
	Timeout time.Duration
	// Now, if non-nil, is the clock of the signatures' created.
	Now func() time.Time
}

// A Directory is an [http.Handler] that serves a key directory: the JSON
// Web Key Set of its keys, with media type [MediaType]. Mount it at
// [WellKnownPath] of the origin that Signature-Agent names (with FormURL, at
// the URL's path). It answers GET and HEAD with the directory, OPTIONS with
// 204 and Allow, and every other method with 405 Method Not Allowed and
// Allow; it does not look at the request's path, query or body.
//
// Each response is signed once per key (the draft's domain binding): a
// Content-Digest (RFC 9530, sha-256) of the body, and an HTTP Message
// Signature over the request's "@authority";req and "content-digest",
// tagged [DirectoryTag], labeled "binding" for the first key and
// "binding2", "binding3", ... for the others. A key that fails to sign (a
// KMS that is down) answers 503 Service Unavailable, with no body: a
// directory without its proof is not served.
//
// A Directory is safe for concurrent use; create it with [NewDirectory].
type Directory struct {
	keys    []dirKey
	body    []byte
	digest  string // the Content-Digest field value
	control string // the Cache-Control field value
	life    time.Duration
	timeout time.Duration
	now     func() time.Time
}

type dirKey struct {
	key   crypto.Signer
	edKey ed25519.PrivateKey
	pub   ed25519.PublicKey
	kid   string
}

// NewDirectory returns a Directory of keys, listed in the order given, or an
// error matching [ErrKey] for a key that is not Ed25519 (or is listed twice),
// or [ErrOptions] for a negative duration or an Expires not after NotBefore.
//
// To rotate keys, list the new key beside the old one, sign requests with
// the new one, and drop the old one from the list after the directory's
// MaxAge (and the old signatures' lifetime) has passed.
func NewDirectory(keys []DirectoryKey, o DirectoryOptions) (*Directory, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: a directory of no keys", ErrKey)
	}
	if o.MaxAge < 0 || o.BindingLifetime < 0 || o.Timeout < 0 {
		return nil, fmt.Errorf("%w: a negative duration", ErrOptions)
	}
	d := &Directory{life: o.BindingLifetime, timeout: o.Timeout, now: o.Now}
	if d.life == 0 {
		d.life = DefaultBindingLifetime
	}
	if d.timeout == 0 {
		d.timeout = DefaultTimeout
	}
	if d.now == nil {
		d.now = time.Now
	}
	maxAge := o.MaxAge
	if maxAge == 0 {
		maxAge = DefaultMaxAge
	}
	d.control = "max-age=" + strconv.FormatInt(int64(maxAge/time.Second), 10)
	var set struct {
		Keys []jwk `json:"keys"`
	}
	for i, k := range keys {
		pub, err := publicKey(k.Key)
		if err != nil {
			return nil, fmt.Errorf("directory key %d: %w", i, err)
		}
		if !k.NotBefore.IsZero() && !k.Expires.IsZero() && !k.Expires.After(k.NotBefore) {
			return nil, fmt.Errorf("%w: directory key %d expires before its NotBefore", ErrOptions, i)
		}
		kid, _ := Thumbprint(pub)
		for _, o := range d.keys {
			if o.kid == kid {
				return nil, fmt.Errorf("%w: directory key %d is listed twice", ErrKey, i)
			}
		}
		dk := dirKey{key: k.Key, pub: pub, kid: kid}
		dk.edKey, _ = k.Key.(ed25519.PrivateKey)
		d.keys = append(d.keys, dk)
		e := jwk{Kty: "OKP", Crv: "Ed25519", Kid: kid, X: b64url.EncodeToString(pub), Use: "sig"}
		if !k.NotBefore.IsZero() {
			e.Nbf = k.NotBefore.Unix()
		}
		if !k.Expires.IsZero() {
			e.Exp = k.Expires.Unix()
		}
		set.Keys = append(set.Keys, e)
	}
	var err error
	if d.body, err = json.Marshal(set); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(d.body)
	d.digest = "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
	return d, nil
}

// JSON returns the directory's body: its JSON Web Key Set. The caller must
// not modify it.
func (d *Directory) JSON() []byte { return d.body }

// ServeHTTP serves the directory, as the type's documentation says.
func (d *Directory) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const allow = "GET, HEAD, OPTIONS"
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodOptions:
		w.Header().Set("Allow", allow)
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		w.Header().Set("Allow", allow)
		http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	auth, err := authority(r.Host, scheme)
	if err != nil {
		http.Error(w, "400 bad request: no valid Host", http.StatusBadRequest)
		return
	}
	input, sig, err := d.bind(r, auth)
	if err != nil {
		http.Error(w, "503 the directory cannot be signed", http.StatusServiceUnavailable)
		return
	}
	h := w.Header()
	h.Set("Content-Type", MediaType)
	h.Set("Cache-Control", d.control)
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Content-Digest", d.digest)
	h.Set("Signature-Input", input)
	h.Set("Signature", sig)
	h.Set("Content-Length", strconv.Itoa(len(d.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(d.body)
	}
}

// bind returns the Signature-Input and Signature field values of a response
// to r, whose authority is auth: a signature per key.
func (d *Directory) bind(r *http.Request, auth string) (input, sig string, err error) {
	created := d.now().Truncate(time.Second)
	for i, k := range d.keys {
		label := "binding"
		if i > 0 {
			label += strconv.Itoa(i + 1)
		}
		params := `("@authority";req "content-digest");created=` + strconv.FormatInt(created.Unix(), 10) +
			";expires=" + strconv.FormatInt(created.Add(d.life).Unix(), 10) +
			`;keyid="` + k.kid + `";tag="` + DirectoryTag + `"`
		base := `"@authority";req: ` + auth + "\n" +
			`"content-digest": ` + d.digest + "\n" +
			`"@signature-params": ` + params
		var s []byte
		if k.edKey != nil {
			s = ed25519.Sign(k.edKey, []byte(base))
		} else if s, err = signBounded(r.Context(), k.key, k.pub, []byte(base), d.timeout); err != nil {
			return "", "", err
		}
		if i > 0 {
			input += ", "
			sig += ", "
		}
		input += label + "=" + params
		sig += label + "=:" + base64.StdEncoding.EncodeToString(s) + ":"
	}
	return input, sig, nil
}
