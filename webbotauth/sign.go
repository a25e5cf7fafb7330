// Package webbotauth signs HTTP requests as Web Bot Auth asks
// (draft-ietf-webbotauth-httpsig-protocol-01): an HTTP Message Signature
// (RFC 9421) with an Ed25519 key, whose keyid is the key's JWK thumbprint
// (RFC 7638), tagged "web-bot-auth", beside a Signature-Agent field that
// names where the key is published. It also serves that key directory
// ([Directory]).
//
// A site that verifies the signature knows the request came from the
// holder of a key published at the Signature-Agent URL, which a
// User-Agent string cannot prove. Package robots signs every request a
// Transport sends with a [Signer] (see robots.Transport.Signer).
//
// The package imports only the standard library and golang.org/x/net.
package webbotauth

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// The names of the protocol.
const (
	// Tag is the tag parameter of a request's signature.
	Tag = "web-bot-auth"
	// DirectoryTag is the tag parameter of a directory response's
	// signature.
	DirectoryTag = "http-message-signatures-directory"
	// WellKnownPath is the path of a key directory at an origin.
	WellKnownPath = "/.well-known/http-message-signatures-directory"
	// MediaType is the media type of a key directory.
	MediaType = "application/http-message-signatures-directory+json"
)

// The defaults and limits of [Options].
const (
	// DefaultLifetime is a signature's lifetime, from created to expires,
	// when Options.Lifetime is zero. A request is signed as it leaves,
	// after its turn, so the lifetime need only cover its transmission and
	// the clocks' skew; anyone who sees a signature can replay it until it
	// expires. Five minutes absorbs a skew of minutes and stays within the
	// windows verifiers accept (some reject one of more than 8 minutes).
	DefaultLifetime = 5 * time.Minute
	// MaxLifetime is the longest Options.Lifetime: the draft recommends
	// that expires be no more than 24 hours after created.
	MaxLifetime = 24 * time.Hour
	// DefaultLabel is the label of a signature when Options.Label is
	// empty, and the key of its Signature-Agent member.
	DefaultLabel = "sig1"
	// DefaultTimeout bounds a call to a Key that is not an
	// ed25519.PrivateKey (a KMS, an HSM) when Options.Timeout is zero.
	DefaultTimeout = 10 * time.Second
)

// Errors of [New] and [Signer.Sign], matched with errors.Is.
var (
	// ErrAgent: a Signature-Agent URL that is not an absolute https URL
	// without user info, query or fragment, or, for the origin forms, not
	// the well-known directory of its origin.
	ErrAgent = errors.New("webbotauth: bad Signature-Agent URL")
	// ErrOptions: a label, a header name, a lifetime or a form that is
	// not allowed.
	ErrOptions = errors.New("webbotauth: bad options")
	// ErrExpires: expires not after created.
	ErrExpires = errors.New("webbotauth: expires is not after created")
	// ErrSigned: the request carries Signature, Signature-Input or
	// Signature-Agent already. Sign refuses it rather than replace a
	// signature the caller meant to send, or add one beside it.
	ErrSigned = errors.New("webbotauth: request already carries Signature headers")
	// ErrRequest: a request whose authority or a covered header cannot be
	// signed (no host, a host that is not a valid name, a value with a
	// control byte, which net/http would not send either).
	ErrRequest = errors.New("webbotauth: request cannot be signed")
	// ErrSign: the Key failed, panicked, outlasted its Timeout or
	// returned a signature that does not verify. Nothing is signed.
	ErrSign = errors.New("webbotauth: signing failed")
)

// Form is the syntax of the Signature-Agent field.
type Form int

const (
	// FormURL, the default, is a Dictionary member, keyed by the label,
	// whose value is the full directory URL:
	// sig1="https://crawler.example/.well-known/http-message-signatures-directory"
	// (draft-ietf-webbotauth-httpsig-protocol-01 §4.1).
	FormURL Form = iota
	// FormOrigin is a Dictionary member whose value is the origin of the
	// directory URL, which must then be the origin's well-known directory:
	// sig1="https://crawler.example", as Google's agent sends.
	FormOrigin
	// FormString is the earlier drafts' bare String, the origin:
	// "https://crawler.example", which Cloudflare's verifier (on
	// draft-meunier-http-message-signatures-directory-03) and ChatGPT's
	// agent use. The directory URL must be the origin's well-known one.
	FormString
)

// Options configure a [Signer]. Only Key is required.
type Options struct {
	// Key signs. Its public key must be Ed25519: an ed25519.PrivateKey,
	// or any crypto.Signer (a KMS, an HSM) whose Public returns an
	// ed25519.PublicKey and whose Sign takes the message whole
	// (crypto.Hash(0)), as ed25519.PrivateKey's does.
	Key crypto.Signer

	// Agent is the URL of the key directory, sent in Signature-Agent and
	// covered by the signature: an absolute https URL, e.g.
	// "https://crawler.example/.well-known/http-message-signatures-directory".
	// If empty, requests carry no Signature-Agent: only a verifier that
	// knows the key by its thumbprint verifies them, and -01 requires the
	// field, so leave it empty only to test.
	Agent string

	// Form is the syntax of Signature-Agent; the zero value is FormURL.
	Form Form

	// Label names the signature in Signature-Input and Signature, and
	// AgentKey the Signature-Agent member it covers (FormURL and
	// FormOrigin). Each is a structured-field key (lowercase letters,
	// digits, "_-.*", starting with a letter or "*"); if empty,
	// DefaultLabel and Label.
	Label    string
	AgentKey string

	// Lifetime is from created to expires: positive, at most
	// MaxLifetime; if zero, DefaultLifetime.
	Lifetime time.Duration

	// Nonce adds a nonce parameter: 64 random bytes, base64.
	Nonce bool

	// Method and Path add "@method" and "@path" to the covered
	// components, which otherwise are "@authority" and the
	// Signature-Agent field: a signature over the authority alone can be
	// replayed on any path of that site until it expires.
	Method, Path bool

	// Headers names header fields to cover too (e.g. a price header of
	// pay-per-crawl), each a token, in any case; Signature,
	// Signature-Input and Signature-Agent are not allowed. A named field
	// absent from a request is not covered on that request.
	Headers []string

	// Timeout bounds a call to a Key that is not an ed25519.PrivateKey;
	// if zero, DefaultTimeout. A signer that takes longer fails with
	// ErrSign (its call goes on, on its own goroutine, until it returns).
	Timeout time.Duration

	// Hosts, if not empty, are the only hosts whose requests are signed:
	// a name ("example.com", which its subdomains do not match) or a
	// pattern "*.example.com" (its subdomains, not itself), in any case,
	// without a port; a non-ASCII name is matched in Punycode. Sign leaves
	// a request for another host as it is, and returns nil. If empty,
	// every request is signed.
	Hosts []string

	// Now, if non-nil, is the clock of created; time.Now if nil.
	Now func() time.Time
}

// A Signer signs requests with one key. It is safe for concurrent use;
// create it with [New].
type Signer struct {
	key     crypto.Signer
	edKey   ed25519.PrivateKey // Key, if it is one: signed inline
	pub     ed25519.PublicKey
	keyID   string
	timeout time.Duration
	life    time.Duration
	nonce   bool
	now     func() time.Time

	hosts    map[string]bool // Options.Hosts' names; nil if every host
	suffixes []string        // Options.Hosts' patterns, as ".example.com"

	label   string
	method  bool
	path    bool
	headers []string // lowercase

	agentField string // the Signature-Agent field value; "" if none
	agentID    string // its component identifier: "signature-agent";key="sig1"
	agentValue string // its component value
}

// New returns a Signer of o, or an error matching [ErrKey], [ErrAgent] or
// [ErrOptions].
func New(o Options) (*Signer, error) {
	pub, err := publicKey(o.Key)
	if err != nil {
		return nil, err
	}
	s := &Signer{key: o.Key, pub: pub, nonce: o.Nonce, method: o.Method, path: o.Path, now: o.Now}
	s.edKey, _ = o.Key.(ed25519.PrivateKey)
	s.keyID, _ = Thumbprint(pub)
	s.timeout = o.Timeout
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	if s.now == nil {
		s.now = time.Now
	}
	switch {
	case o.Lifetime == 0:
		s.life = DefaultLifetime
	case o.Lifetime < time.Second || o.Lifetime > MaxLifetime:
		return nil, fmt.Errorf("%w: Lifetime %v: it must be from 1s to %v", ErrOptions, o.Lifetime, MaxLifetime)
	default:
		s.life = o.Lifetime
	}
	s.label = o.Label
	if s.label == "" {
		s.label = DefaultLabel
	}
	if !isKey(s.label) {
		return nil, fmt.Errorf("%w: Label %q is not a structured-field key", ErrOptions, o.Label)
	}
	agentKey := o.AgentKey
	if agentKey == "" {
		agentKey = s.label
	}
	if !isKey(agentKey) {
		return nil, fmt.Errorf("%w: AgentKey %q is not a structured-field key", ErrOptions, o.AgentKey)
	}
	for _, h := range o.Headers {
		name := strings.ToLower(h)
		if !httpguts.ValidHeaderFieldName(h) {
			return nil, fmt.Errorf("%w: header %q is not a field name", ErrOptions, h)
		}
		switch name {
		case "signature", "signature-input", "signature-agent":
			return nil, fmt.Errorf("%w: header %q cannot be covered as a named header", ErrOptions, h)
		}
		if !contains(s.headers, name) {
			s.headers = append(s.headers, name)
		}
	}
	for _, h := range o.Hosts {
		suffix := strings.HasPrefix(h, "*.")
		name, err := authority(strings.TrimPrefix(h, "*."), "")
		if err != nil || strings.ContainsAny(name, ":*") {
			return nil, fmt.Errorf("%w: Hosts: %q is not a host name or a pattern *.name", ErrOptions, h)
		}
		if s.hosts == nil {
			s.hosts = make(map[string]bool)
		}
		if suffix {
			s.suffixes = append(s.suffixes, "."+name)
		} else {
			s.hosts[name] = true
		}
	}
	if o.Form < FormURL || o.Form > FormString {
		return nil, fmt.Errorf("%w: Form %d", ErrOptions, o.Form)
	}
	if o.Agent != "" {
		value, err := agentValue(o.Agent, o.Form)
		if err != nil {
			return nil, err
		}
		s.agentValue = quote(value)
		if o.Form == FormString {
			s.agentField = s.agentValue
			s.agentID = `"signature-agent"`
		} else {
			s.agentField = agentKey + "=" + s.agentValue
			s.agentID = `"signature-agent";key="` + agentKey + `"`
		}
	}
	return s, nil
}

// agentValue returns the value that Signature-Agent carries for the
// directory URL raw in form f.
func agentValue(raw string, f Form) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrAgent, err)
	}
	switch {
	case u.Scheme != "https":
		return "", fmt.Errorf("%w: %q is not an https URL", ErrAgent, raw)
	case u.Host == "" || u.Opaque != "":
		return "", fmt.Errorf("%w: %q has no host", ErrAgent, raw)
	case u.User != nil:
		return "", fmt.Errorf("%w: %q has user info", ErrAgent, raw)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#"):
		// A verifier drops the query from the identifier: one key set
		// would have as many names as spellings.
		return "", fmt.Errorf("%w: %q has a query or a fragment", ErrAgent, raw)
	}
	host, err := authority(u.Host, "https")
	if err != nil {
		return "", fmt.Errorf("%w: host %q", ErrAgent, u.Host)
	}
	u.Host = host
	if f == FormURL {
		return checkString(u.String())
	}
	if u.Path != WellKnownPath && u.Path != "" && u.Path != "/" {
		return "", fmt.Errorf("%w: %q: with an origin in Signature-Agent, verifiers fetch %s of that origin", ErrAgent, raw, WellKnownPath)
	}
	return checkString("https://" + u.Host)
}

// checkString returns v if it can be a structured-field String (printable
// ASCII), or an error matching [ErrAgent].
func checkString(v string) (string, error) {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return "", fmt.Errorf("%w: %q has a byte a structured-field string cannot hold", ErrAgent, v)
		}
	}
	return v, nil
}

// KeyID returns the keyid of the signatures: the key's JWK thumbprint.
func (s *Signer) KeyID() string { return s.keyID }

// PublicKey returns the key's public key.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.pub }

// Lifetime returns the time from created to expires.
func (s *Signer) Lifetime() time.Duration { return s.life }

// Params are the times and nonce of one signature.
type Params struct {
	Created time.Time
	Expires time.Time // must be after Created
	Nonce   string    // sent as the nonce parameter if not empty
}

// Sign signs req as it is now, created now, and adds its Signature-Agent (if
// Options.Agent is set), Signature-Input and Signature fields to req.Header
// (creating it if nil). Sign modifies req.Header: a RoundTripper that did
// not create req signs a clone (http.Request.Clone). The request's context
// bounds a call to a Key that is not an ed25519.PrivateKey.
//
// A request for a host that Options.Hosts does not list is left as it is.
// A request that carries any of those three fields already fails with
// ErrSigned. A request whose authority cannot be signed fails with
// ErrRequest, and one the Key cannot sign with ErrSign; req is then left as
// it was. The authority signed is the one sent: the Host field's (req.Host,
// or else the URL's host) in lowercase ASCII (a non-ASCII name in Punycode,
// as net/http sends it), without user info or a default port.
func (s *Signer) Sign(req *http.Request) error {
	created := s.now().Truncate(time.Second)
	p := Params{Created: created, Expires: created.Add(s.life)}
	if s.nonce {
		var b [64]byte
		if _, err := rand.Read(b[:]); err != nil {
			return fmt.Errorf("%w: nonce: %v", ErrSign, err)
		}
		p.Nonce = base64.StdEncoding.EncodeToString(b[:])
	}
	return s.SignParams(req, p)
}

// SignParams is Sign with the given times and nonce (reproducing a test
// vector, say). Expires must be after Created (ErrExpires otherwise); it is
// not held to Options.Lifetime. The times are sent in whole seconds.
func (s *Signer) SignParams(req *http.Request, p Params) error {
	if req == nil || req.URL == nil {
		return fmt.Errorf("%w: no request URL", ErrRequest)
	}
	if !p.Expires.After(p.Created) || p.Expires.Unix() <= p.Created.Unix() {
		return fmt.Errorf("%w: created %d, expires %d", ErrExpires, p.Created.Unix(), p.Expires.Unix())
	}
	if p.Nonce != "" {
		if _, err := checkString(p.Nonce); err != nil {
			return fmt.Errorf("%w: nonce %q is not a structured-field string", ErrOptions, p.Nonce)
		}
	}
	authority, err := Authority(req)
	if err != nil {
		return err
	}
	if s.hosts != nil && !s.covers(authority) {
		return nil
	}
	h := req.Header
	for _, name := range [...]string{"Signature", "Signature-Input", "Signature-Agent"} {
		if _, ok := h[name]; ok {
			return fmt.Errorf("%w: %s", ErrSigned, name)
		}
	}

	// The covered components, and the signature base (RFC 9421 §2.5).
	base := make([]byte, 0, 512)
	params := make([]byte, 0, 256)
	params = append(params, '(')
	component := func(id, value string) {
		if len(params) > 1 {
			params = append(params, ' ')
		}
		params = append(params, id...)
		base = append(base, id...)
		base = append(base, ": "...)
		base = append(base, value...)
		base = append(base, '\n')
	}
	if s.method {
		m := req.Method
		if m == "" {
			m = http.MethodGet
		}
		if !httpguts.ValidHeaderFieldName(m) { // a token, as a method is
			return fmt.Errorf("%w: method %q", ErrRequest, m)
		}
		component(`"@method"`, m)
	}
	component(`"@authority"`, authority)
	if s.path {
		p := req.URL.EscapedPath()
		if req.URL.Opaque != "" {
			p, _, _ = strings.Cut(req.URL.RequestURI(), "?")
		}
		if p == "" {
			p = "/"
		}
		if !printable(p) {
			return fmt.Errorf("%w: path %q", ErrRequest, p)
		}
		component(`"@path"`, p)
	}
	if s.agentField != "" {
		component(s.agentID, s.agentValue)
	}
	for _, name := range s.headers {
		vs := h.Values(name)
		if len(vs) == 0 {
			continue
		}
		var v strings.Builder
		for i, x := range vs {
			if i > 0 {
				v.WriteString(", ")
			}
			x = strings.Trim(x, " \t")
			if !httpguts.ValidHeaderFieldValue(x) {
				// A control byte (a line break, say): net/http
				// would not send it, and it could forge a line of
				// the signature base.
				return fmt.Errorf("%w: header %s has a control byte", ErrRequest, name)
			}
			v.WriteString(x)
		}
		component(`"`+name+`"`, v.String())
	}
	params = append(params, ")"...)
	params = append(params, ";created="...)
	params = strconv.AppendInt(params, p.Created.Unix(), 10)
	params = append(params, `;keyid="`...)
	params = append(params, s.keyID...)
	params = append(params, `";alg="ed25519";expires=`...)
	params = strconv.AppendInt(params, p.Expires.Unix(), 10)
	if p.Nonce != "" {
		params = append(params, ";nonce="...)
		params = append(params, quote(p.Nonce)...)
	}
	params = append(params, `;tag="`+Tag+`"`...)
	base = append(base, `"@signature-params": `...)
	base = append(base, params...)

	sig, err := s.sign(req.Context(), base)
	if err != nil {
		return err
	}
	if h == nil {
		h = make(http.Header, 3)
		req.Header = h
	}
	// The three values share one array, each slice capped, and each
	// string is built in one allocation.
	values := make([]string, 3)
	var in strings.Builder
	in.Grow(len(s.label) + 1 + len(params))
	in.WriteString(s.label)
	in.WriteByte('=')
	in.Write(params)
	values[1] = in.String()
	var enc [88]byte // base64 of an Ed25519 signature, 64 bytes
	var out strings.Builder
	out.Grow(len(s.label) + 3 + len(enc))
	out.WriteString(s.label)
	out.WriteString("=:")
	base64.StdEncoding.Encode(enc[:], sig)
	out.Write(enc[:base64.StdEncoding.EncodedLen(len(sig))])
	out.WriteByte(':')
	values[2] = out.String()
	if s.agentField != "" {
		values[0] = s.agentField
		h["Signature-Agent"] = values[0:1:1]
	}
	h["Signature-Input"] = values[1:2:2]
	h["Signature"] = values[2:3:3]
	return nil
}

// sign signs msg with the key: inline for an ed25519.PrivateKey, and
// otherwise on a goroutine bounded by ctx and the timeout, its panic
// recovered, its signature verified.
func (s *Signer) sign(ctx context.Context, msg []byte) ([]byte, error) {
	if s.edKey != nil {
		return ed25519.Sign(s.edKey, msg), nil
	}
	return signBounded(ctx, s.key, s.pub, msg, s.timeout)
}

// signBounded calls key.Sign on its own goroutine and waits for it at most
// timeout, or until ctx is done.
func signBounded(ctx context.Context, key crypto.Signer, pub ed25519.PublicKey, msg []byte, timeout time.Duration) ([]byte, error) {
	type answer struct {
		sig []byte
		err error
	}
	done := make(chan answer, 1) // the goroutine never blocks on it
	go func() {
		var a answer
		defer func() {
			if v := recover(); v != nil {
				a = answer{err: fmt.Errorf("%w: the key panicked: %v", ErrSign, v)}
			}
			done <- a
		}()
		a.sig, a.err = key.Sign(rand.Reader, msg, crypto.Hash(0))
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case a := <-done:
		if a.err != nil {
			if errors.Is(a.err, ErrSign) {
				return nil, a.err
			}
			return nil, fmt.Errorf("%w: %w", ErrSign, a.err)
		}
		if !ed25519.Verify(pub, msg, a.sig) {
			return nil, fmt.Errorf("%w: the key's signature does not verify with its public key", ErrSign)
		}
		return a.sig, nil
	case <-timer.C:
		return nil, fmt.Errorf("%w: the key did not answer within %v", ErrSign, timeout)
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrSign, ctx.Err())
	}
}

// covers reports whether Options.Hosts lists the host of authority.
func (s *Signer) covers(authority string) bool {
	host := authority
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.HasSuffix(host, "]") {
		host = host[:i]
	}
	if s.hosts[host] {
		return true
	}
	for _, suffix := range s.suffixes {
		if strings.HasSuffix(host, suffix) {
			return true
		}
	}
	return false
}

// Authority returns the @authority component of req (RFC 9421 §2.2.3): the
// host and port it is sent to, as its Host field carries them, in lowercase
// ASCII (Punycode for a non-ASCII name, as net/http sends it), without a
// default port. It returns an error matching [ErrRequest] for a request with
// no host or with one that is not a valid host.
func Authority(req *http.Request) (string, error) {
	host := req.Host
	if host == "" && req.URL != nil {
		host = req.URL.Host
	}
	if host == "" {
		return "", fmt.Errorf("%w: no host", ErrRequest)
	}
	scheme := ""
	if req.URL != nil {
		scheme = strings.ToLower(req.URL.Scheme)
	}
	return authority(host, scheme)
}

// authority normalizes host, of a URL of scheme, as Authority does.
func authority(host, scheme string) (string, error) {
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:] // user info is not sent in Host
	}
	// net/http sends an IPv6 address without its zone.
	if strings.HasPrefix(host, "[") {
		if i := strings.LastIndexByte(host, ']'); i > 0 {
			if j := strings.LastIndexByte(host[:i], '%'); j > 0 {
				host = host[:j] + host[i:]
			}
		}
	}
	ascii, err := httpguts.PunycodeHostPort(host)
	if err != nil {
		return "", fmt.Errorf("%w: host %q: %v", ErrRequest, host, err)
	}
	a := strings.ToLower(ascii)
	if !httpguts.ValidHostHeader(a) || strings.ContainsAny(a, " \"\\") {
		return "", fmt.Errorf("%w: host %q", ErrRequest, host)
	}
	switch {
	case scheme == "https" && strings.HasSuffix(a, ":443"):
		a = a[:len(a)-4]
	case scheme == "http" && strings.HasSuffix(a, ":80"):
		a = a[:len(a)-3]
	}
	if a == "" || strings.HasPrefix(a, ":") {
		return "", fmt.Errorf("%w: host %q", ErrRequest, host)
	}
	return a, nil
}

// quote returns v as a structured-field String (RFC 9651 §3.3.3); v holds
// printable ASCII only.
func quote(v string) string {
	if !strings.ContainsAny(v, `"\`) {
		return `"` + v + `"`
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		if v[i] == '"' || v[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	b.WriteByte('"')
	return b.String()
}

// isKey reports whether k is a structured-field key (RFC 9651 §3.1.2).
func isKey(k string) bool {
	if k == "" || !(k[0] >= 'a' && k[0] <= 'z' || k[0] == '*') {
		return false
	}
	for i := 1; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '*') {
			return false
		}
	}
	return true
}

// printable reports whether v is visible ASCII.
func printable(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] <= 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
