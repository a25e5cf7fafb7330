package webbotauth

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrKey is matched by the error of a key that is not an Ed25519 key: a key
// of another type (RSA, ECDSA), one of the wrong size, or a key file that
// holds none.
var ErrKey = errors.New("webbotauth: not an Ed25519 key")

// publicKey returns the Ed25519 public key of k, or an error matching
// [ErrKey]. It does not panic, whatever k is: a short ed25519.PrivateKey, or
// a Signer whose Public panics, is an error.
func publicKey(k crypto.Signer) (pub ed25519.PublicKey, err error) {
	switch k := k.(type) {
	case nil:
		return nil, fmt.Errorf("%w: no key", ErrKey)
	case ed25519.PrivateKey:
		if len(k) != ed25519.PrivateKeySize {
			return nil, fmt.Errorf("%w: an Ed25519 private key is %d bytes, not %d", ErrKey, ed25519.PrivateKeySize, len(k))
		}
		// The public half must be the seed's: a key assembled by hand
		// with another public key would sign what no verifier accepts.
		if !ed25519.NewKeyFromSeed(k.Seed()).Equal(k) {
			return nil, fmt.Errorf("%w: the public half of the Ed25519 private key is not its seed's", ErrKey)
		}
		return ed25519.PublicKey(k[32:]), nil
	}
	defer func() {
		if v := recover(); v != nil {
			pub, err = nil, fmt.Errorf("%w: the signer's Public panicked: %v", ErrKey, v)
		}
	}()
	switch p := k.Public().(type) {
	case ed25519.PublicKey:
		if len(p) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("%w: an Ed25519 public key is %d bytes, not %d", ErrKey, ed25519.PublicKeySize, len(p))
		}
		return p, nil
	case nil:
		return nil, fmt.Errorf("%w: the signer has no public key", ErrKey)
	default:
		return nil, fmt.Errorf("%w: the signer's public key is a %T", ErrKey, p)
	}
}

// b64url is the base64url alphabet without padding of JWK (RFC 7515 §2).
var b64url = base64.RawURLEncoding

// Thumbprint returns the JWK SHA-256 thumbprint of an Ed25519 public key,
// base64url-encoded: the keyid of its signatures and the kid of its entry in
// a directory (RFC 7638 §3, RFC 8037 Appendix A.3). It returns an error
// matching [ErrKey] if pub is not 32 bytes.
func Thumbprint(pub ed25519.PublicKey) (string, error) {
	if len(pub) != ed25519.PublicKeySize {
		return "", fmt.Errorf("%w: an Ed25519 public key is %d bytes, not %d", ErrKey, ed25519.PublicKeySize, len(pub))
	}
	// The required members in lexicographic order, no white space
	// (RFC 7638 §3.2, §3.3); base64url has no character JSON escapes.
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + b64url.EncodeToString(pub) + `"}`))
	return b64url.EncodeToString(sum[:]), nil
}

// jwk is an Ed25519 key as a JSON Web Key (RFC 8037 §2), its members in
// the order a directory lists them.
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	Kid string `json:"kid,omitempty"`
	X   string `json:"x"`
	D   string `json:"d,omitempty"`
	Use string `json:"use,omitempty"`
	Nbf int64  `json:"nbf,omitempty"`
	Exp int64  `json:"exp,omitempty"`
}

// maxKeyFile bounds the key files ParseKey reads.
const maxKeyFile = 64 << 10

// ParseKey returns the Ed25519 private key in data: a JSON Web Key
// ({"kty":"OKP","crv":"Ed25519","d":...}, RFC 8037 §2; its "x", if present,
// must match "d") or a PEM block "PRIVATE KEY" holding a PKCS #8 Ed25519
// key (RFC 8410), as `openssl genpkey -algorithm ed25519` writes. Any other
// key, an RSA key included, is an error matching [ErrKey].
func ParseKey(data []byte) (ed25519.PrivateKey, error) {
	if len(data) > maxKeyFile {
		return nil, fmt.Errorf("%w: a key file of %d bytes (at most %d)", ErrKey, len(data), maxKeyFile)
	}
	s := strings.TrimSpace(string(data))
	if strings.HasPrefix(s, "{") {
		var k jwk
		if err := json.Unmarshal([]byte(s), &k); err != nil {
			return nil, fmt.Errorf("%w: a JWK that does not parse: %v", ErrKey, err)
		}
		if k.Kty != "OKP" || k.Crv != "Ed25519" {
			return nil, fmt.Errorf("%w: a JWK with kty %q and crv %q (want OKP and Ed25519)", ErrKey, k.Kty, k.Crv)
		}
		if k.D == "" {
			return nil, fmt.Errorf("%w: a public JWK (no \"d\"): signing needs the private key", ErrKey)
		}
		seed, err := b64url.DecodeString(k.D)
		if err != nil || len(seed) != ed25519.SeedSize {
			return nil, fmt.Errorf("%w: the JWK's \"d\" is not a base64url 32-byte seed", ErrKey)
		}
		key := ed25519.NewKeyFromSeed(seed)
		if k.X != "" && k.X != b64url.EncodeToString(key[32:]) {
			return nil, fmt.Errorf("%w: the JWK's \"x\" is not the public key of its \"d\"", ErrKey)
		}
		return key, nil
	}
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, fmt.Errorf("%w: neither a JWK nor a PEM block", ErrKey)
	}
	if block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%w: a PEM block %q (want a PKCS #8 \"PRIVATE KEY\")", ErrKey, block.Type)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: the PKCS #8 key is a %T", ErrKey, k)
	}
	return key, nil
}

// GenerateKey returns a new Ed25519 private key read from rand
// (crypto/rand's Reader if nil).
func GenerateKey(random io.Reader) (ed25519.PrivateKey, error) {
	if random == nil {
		random = rand.Reader
	}
	_, key, err := ed25519.GenerateKey(random)
	return key, err
}

// MarshalPrivateJWK returns key as a private JSON Web Key (RFC 8037 §2),
// with its thumbprint as kid: a key file that ParseKey reads.
func MarshalPrivateJWK(key ed25519.PrivateKey) ([]byte, error) {
	pub, err := publicKey(key)
	if err != nil {
		return nil, err
	}
	kid, _ := Thumbprint(pub)
	return json.Marshal(jwk{Kty: "OKP", Crv: "Ed25519", Kid: kid, X: b64url.EncodeToString(pub), D: b64url.EncodeToString(key.Seed())})
}

// MarshalPKCS8 returns key as a PEM block "PRIVATE KEY" (PKCS #8, RFC
// 8410): a key file that ParseKey and OpenSSL read.
func MarshalPKCS8(key ed25519.PrivateKey) ([]byte, error) {
	if _, err := publicKey(key); err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// KeySet returns the public JSON Web Key Set of pub, its kid the
// thumbprint: a directory's body without nbf and exp, or the keys of a
// Signature Agent Card.
func KeySet(pubs ...ed25519.PublicKey) ([]byte, error) {
	var set struct {
		Keys []jwk `json:"keys"`
	}
	for _, pub := range pubs {
		kid, err := Thumbprint(pub)
		if err != nil {
			return nil, err
		}
		set.Keys = append(set.Keys, jwk{Kty: "OKP", Crv: "Ed25519", Kid: kid, X: b64url.EncodeToString(pub), Use: "sig"})
	}
	return json.Marshal(set)
}
