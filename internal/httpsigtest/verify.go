// Package httpsigtest verifies Web Bot Auth request signatures for the
// tests of package webbotauth and of the Transport. It is written from RFC
// 9421 (§2, §3.2) and RFC 9651 alone, apart from the signing code it
// checks: it parses what a server receives and rebuilds the signature base
// from it.
package httpsigtest

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"
)

// Signature is a verified signature.
type Signature struct {
	Label      string
	Components []string // the covered component identifiers, serialized
	Created    time.Time
	Expires    time.Time
	KeyID      string
	Nonce      string
	Tag        string
	Agent      string // the Signature-Agent value covered; "" if none
	Base       string // the signature base
}

// Verifier checks signatures with known keys.
type Verifier struct {
	Keys map[string]ed25519.PublicKey // by keyid
	Now  time.Time                    // of the freshness check
	Skew time.Duration                // tolerated for created in the future
}

// Base returns the signature base of the signature labeled label in r, as
// a server that received r rebuilds it, and the parsed signature.
func Base(r *http.Request, label string) (string, *Signature, error) {
	inputs, err := httpsfv.UnmarshalDictionary(r.Header.Values("Signature-Input"))
	if err != nil {
		return "", nil, fmt.Errorf("Signature-Input: %v", err)
	}
	m, ok := inputs.Get(label)
	if !ok {
		return "", nil, fmt.Errorf("no Signature-Input %q", label)
	}
	list, ok := m.(httpsfv.InnerList)
	if !ok {
		return "", nil, fmt.Errorf("Signature-Input %q is not an inner list", label)
	}
	s := &Signature{Label: label}
	var b strings.Builder
	for _, it := range list.Items {
		name, ok := it.Value.(string)
		if !ok || name != strings.ToLower(name) {
			return "", nil, fmt.Errorf("component %v is not a lowercase string", it.Value)
		}
		id, err := httpsfv.Marshal(it)
		if err != nil {
			return "", nil, err
		}
		value, err := componentValue(r, name, it.Params)
		if err != nil {
			return "", nil, fmt.Errorf("%s: %v", id, err)
		}
		if name == "signature-agent" {
			s.Agent = value
		}
		if strings.ContainsAny(value, "\r\n") {
			return "", nil, fmt.Errorf("%s: a line break", id)
		}
		s.Components = append(s.Components, id)
		b.WriteString(id + ": " + value + "\n")
	}
	params, err := httpsfv.Marshal(list)
	if err != nil {
		return "", nil, err
	}
	b.WriteString(`"@signature-params": ` + params)
	for _, k := range list.Params.Names() {
		v, _ := list.Params.Get(k)
		switch k {
		case "created", "expires":
			n, ok := v.(int64)
			if !ok {
				return "", nil, fmt.Errorf("%s is not an integer", k)
			}
			if k == "created" {
				s.Created = time.Unix(n, 0)
			} else {
				s.Expires = time.Unix(n, 0)
			}
		case "keyid", "nonce", "tag", "alg":
			str, ok := v.(string)
			if !ok {
				return "", nil, fmt.Errorf("%s is not a string", k)
			}
			switch k {
			case "keyid":
				s.KeyID = str
			case "nonce":
				s.Nonce = str
			case "tag":
				s.Tag = str
			case "alg":
				if str != "ed25519" {
					return "", nil, fmt.Errorf("alg %q", str)
				}
			}
		}
	}
	s.Base = b.String()
	return s.Base, s, nil
}

// componentValue returns the value of component name with params in r
// (RFC 9421 §2.1, §2.2).
func componentValue(r *http.Request, name string, params *httpsfv.Params) (string, error) {
	switch name {
	case "@authority":
		host := strings.ToLower(r.Host)
		if r.TLS != nil {
			host = strings.TrimSuffix(host, ":443")
		} else {
			host = strings.TrimSuffix(host, ":80")
		}
		return host, nil
	case "@method":
		return r.Method, nil
	case "@path":
		p := r.URL.EscapedPath()
		if p == "" {
			p = "/"
		}
		return p, nil
	}
	if strings.HasPrefix(name, "@") {
		return "", errors.New("unknown derived component")
	}
	vs := r.Header.Values(name)
	if len(vs) == 0 {
		return "", errors.New("absent")
	}
	if key, ok := params.Get("key"); ok {
		k, ok := key.(string)
		if !ok {
			return "", errors.New("key is not a string")
		}
		d, err := httpsfv.UnmarshalDictionary(vs)
		if err != nil {
			return "", err
		}
		m, ok := d.Get(k)
		if !ok {
			return "", fmt.Errorf("no member %q", k)
		}
		return httpsfv.Marshal(m.(httpsfv.Item))
	}
	for i, v := range vs {
		vs[i] = strings.TrimSpace(v)
	}
	return strings.Join(vs, ", "), nil
}

// Verify verifies the signature labeled label in r: its base, its
// Ed25519 signature by the key of its keyid, its tag, and that it is
// fresh at v.Now.
func (v *Verifier) Verify(r *http.Request, label string) (*Signature, error) {
	base, s, err := Base(r, label)
	if err != nil {
		return nil, err
	}
	sigs, err := httpsfv.UnmarshalDictionary(r.Header.Values("Signature"))
	if err != nil {
		return nil, fmt.Errorf("Signature: %v", err)
	}
	m, ok := sigs.Get(label)
	if !ok {
		return nil, fmt.Errorf("no Signature %q", label)
	}
	it, ok := m.(httpsfv.Item)
	if !ok {
		return nil, errors.New("Signature is not an item")
	}
	sig, ok := it.Value.([]byte)
	if !ok {
		return nil, errors.New("Signature is not a byte sequence")
	}
	pub, ok := v.Keys[s.KeyID]
	if !ok {
		return nil, fmt.Errorf("unknown keyid %q", s.KeyID)
	}
	if !ed25519.Verify(pub, []byte(base), sig) {
		return nil, errors.New("the signature does not verify")
	}
	if s.Tag != "web-bot-auth" {
		return nil, fmt.Errorf("tag %q", s.Tag)
	}
	if s.Created.IsZero() || s.Expires.IsZero() {
		return nil, errors.New("no created or expires")
	}
	if s.Created.After(v.Now.Add(v.Skew)) {
		return nil, fmt.Errorf("created %v is after %v", s.Created, v.Now)
	}
	if !v.Now.Before(s.Expires) {
		return nil, fmt.Errorf("expired at %v (now %v)", s.Expires, v.Now)
	}
	return s, nil
}
