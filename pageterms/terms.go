package pageterms

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Price is an amount of money as pay-per-crawl writes it: a currency code
// and a decimal amount, "USD 0.01".
type Price struct {
	// Currency is three upper-case ASCII letters, in the form of ISO 4217
	// ("USD"). No list of codes is checked: a code unknown to the caller
	// is the caller's to refuse.
	Currency string
	// Amount is the decimal amount as sent: one or more digits, an
	// optional fraction, never negative ("0.01", "12").
	Amount string
}

// String returns the price as the fields write it: "USD 0.01", or "" for the
// zero Price.
func (p Price) String() string {
	if p.Currency == "" && p.Amount == "" {
		return ""
	}
	return p.Currency + " " + p.Amount
}

// maxAmountDigits bounds the digits of a Price's amount, both sides of the
// point together: far beyond any price, short enough that no caller's
// arithmetic on it overflows an int64 of the smallest units.
const maxAmountDigits = 18

// ParsePrice reads a price field value: a currency code of three ASCII
// letters (upper-cased), white space, and a non-negative decimal amount of at
// most 18 digits ("USD 0.01"). Anything else (a negative or signed amount, an
// exponent, a longer code, more fields) is an error.
func ParsePrice(s string) (Price, error) {
	cur, amt, ok := strings.Cut(strings.TrimSpace(s), " ")
	amt = strings.TrimSpace(amt)
	if !ok || len(cur) != 3 || !isDecimal(amt) {
		return Price{}, fmt.Errorf("pageterms: malformed price %q: want a currency code and an amount, as \"USD 0.01\"", truncate(s, 64))
	}
	for i := 0; i < 3; i++ {
		c := cur[i] | 0x20
		if c < 'a' || c > 'z' {
			return Price{}, fmt.Errorf("pageterms: malformed price %q: currency %q is not three letters", truncate(s, 64), cur)
		}
	}
	return Price{Currency: strings.ToUpper(cur), Amount: amt}, nil
}

// isDecimal reports whether s is 1*DIGIT [ "." 1*DIGIT ], of at most
// maxAmountDigits digits.
func isDecimal(s string) bool {
	whole, frac, hasPoint := strings.Cut(s, ".")
	if whole == "" || (hasPoint && frac == "") || len(whole)+len(frac) > maxAmountDigits {
		return false
	}
	return digits(whole) && (!hasPoint || digits(frac))
}

// digits reports whether s is 1*DIGIT.
func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// truncate returns s cut to n bytes, for an error message.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// LicenseChallenge is a WWW-Authenticate challenge of the License scheme
// (RSL 1.0): the site asks for a license token for the resource.
type LicenseChallenge struct {
	// Params are the challenge's auth-params, names lower-cased, values
	// unquoted: "error", "error_description", "realm", ... At most 16
	// are kept, each value at most 1 KiB.
	Params map[string]string
}

// Error returns the challenge's error parameter ("invalid_request",
// "invalid_token", ...), or "".
func (c *LicenseChallenge) Error() string {
	if c == nil {
		return ""
	}
	return c.Params["error"]
}

// X402 is one way of paying that an x402 payment requirement offers (the
// first of its "accepts" list whose fields are strings), as x402's version 2
// sends it in the PAYMENT-REQUIRED response field.
type X402 struct {
	Version int    // x402Version
	Error   string // why payment is required, as the site puts it
	Scheme  string // "exact", ...
	Network string // the chain ("eip155:8453", "base-sepolia")
	Amount  string // in the asset's smallest units, as sent
	Asset   string // the token's address
	PayTo   string // the recipient
	// Accepts is how many ways of paying the requirement lists.
	Accepts int
}

// Terms is what a response says of payment and licenses: the price it asks,
// the charge it made, the error it gives, the license it requires. The
// Transport reads none of it to decide anything: a 402 is an answer, not
// pushback (it neither pauses nor backs off the origin), and whether to pay,
// license or give up is the caller's.
type Terms struct {
	// Status is the response's status code.
	Status int

	// Price is what the site asks for the resource (crawler-price), nil
	// if it asks nothing or the field is malformed (PriceInvalid then).
	Price *Price
	// Charged is what the site charged for it (crawler-charged), nil if
	// nothing or malformed (ChargedInvalid then).
	Charged *Price
	// PriceInvalid and ChargedInvalid hold a malformed crawler-price or
	// crawler-charged, cut to 64 bytes; "" otherwise.
	PriceInvalid, ChargedInvalid string
	// CrawlerError is the code of crawler-error ("MissingCrawlerPrice",
	// "InvalidCrawlerMaxPrice", ...): a token of at most 64 letters and
	// digits, or "" if none or malformed.
	CrawlerError string

	// License is the License challenge of a WWW-Authenticate field (RSL
	// 1.0), or nil.
	License *LicenseChallenge
	// X402 is the payment requirement of a PAYMENT-REQUIRED field (x402),
	// or nil if none, or if it is not base64 JSON of at most 8 KiB. A
	// requirement in the body (x402's version 1) is not read: the body is
	// the caller's.
	X402 *X402
	// Licenses are the targets of the response's Link rel="license"
	// (absolute http or https URLs, at most 16), in order.
	Licenses []string
}

// PaymentRequired reports whether the response asks for payment or a
// license: a 402, or a 401 with a License challenge.
func (t Terms) PaymentRequired() bool {
	return t.Status == http.StatusPaymentRequired || (t.Status == http.StatusUnauthorized && t.License != nil)
}

// TermsOf returns what resp says of payment and licenses (see Terms). It
// reads only resp's header: it neither reads nor closes the body, and works
// on any response, whether or not it came through a Transport. Each field is
// read within a bound (see Terms); what is malformed is left out, never
// guessed at.
//
//	resp, err := client.Get("https://example.com/article")
//	...
//	if t := pageterms.TermsOf(resp); t.PaymentRequired() {
//		log.Printf("%s asks %s (%s)", resp.Request.URL, t.Price, t.CrawlerError)
//	}
func TermsOf(resp *http.Response) Terms {
	if resp == nil {
		return Terms{}
	}
	t := Terms{Status: resp.StatusCode}
	h := resp.Header
	if v := h.Get("Crawler-Price"); v != "" {
		if p, err := ParsePrice(v); err == nil {
			t.Price = &p
		} else {
			t.PriceInvalid = truncate(v, 64)
		}
	}
	if v := h.Get("Crawler-Charged"); v != "" {
		if p, err := ParsePrice(v); err == nil {
			t.Charged = &p
		} else {
			t.ChargedInvalid = truncate(v, 64)
		}
	}
	if v := strings.TrimSpace(h.Get("Crawler-Error")); v != "" && len(v) <= 64 && isCode(v) {
		t.CrawlerError = v
	}
	for _, v := range h.Values("Www-Authenticate") {
		if c := licenseChallenge(v); c != nil {
			t.License = c
			break
		}
	}
	if v := h.Get("Payment-Required"); v != "" {
		t.X402 = parseX402(v)
	}
	t.Licenses = licenseLinks(h.Values("Link"), resp.Request)
	return t
}

// isCode reports whether s is letters, digits, '_' and '-' only.
func isCode(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// The bounds of what TermsOf reads.
const (
	maxChallengeParams = 16
	maxParamValue      = 1 << 10
	maxX402            = 8 << 10
	maxLicenseLinks    = 16
)

// licenseChallenge returns the License challenge in the WWW-Authenticate
// field value v (RFC 9110 §11.6.1: challenges separated by commas, each a
// scheme and auth-params), or nil if it has none. The parameters are read up
// to the next challenge; a parameter whose quoting is broken ends them.
func licenseChallenge(v string) *LicenseChallenge {
	var c *LicenseChallenge
	for v != "" {
		v = strings.TrimLeft(v, " \t,")
		tok := httpToken(v)
		if tok == "" {
			// the rest of a token68 ("abc=="), or garbage: skip to
			// the next comma
			i := strings.IndexByte(v, ',')
			if i < 0 {
				return c
			}
			v = v[i+1:]
			continue
		}
		rest := strings.TrimLeft(v[len(tok):], " \t")
		if strings.HasPrefix(rest, "=") {
			// an auth-param of the current challenge
			name := strings.ToLower(tok)
			val, after, ok := paramValue(strings.TrimLeft(rest[1:], " \t"))
			if !ok {
				return c
			}
			if c != nil && len(c.Params) < maxChallengeParams && len(val) <= maxParamValue {
				if _, dup := c.Params[name]; !dup {
					c.Params[name] = val
				}
			}
			v = after
			continue
		}
		// a new challenge's scheme
		if c != nil {
			return c
		}
		if strings.EqualFold(tok, "License") {
			c = &LicenseChallenge{Params: map[string]string{}}
		}
		v = rest
	}
	return c
}

// httpToken returns the token (RFC 9110 §5.6.2) that begins s, or "".
func httpToken(s string) string {
	i := 0
	for i < len(s) && isTchar(s[i]) {
		i++
	}
	return s[:i]
}

func isTchar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// paramValue reads a token or a quoted-string at the start of s and returns
// it, unquoted, and the rest of s after it; ok is false for a quoted-string
// with no end.
func paramValue(s string) (val, rest string, ok bool) {
	if !strings.HasPrefix(s, `"`) {
		tok := httpToken(s)
		return tok, s[len(tok):], true
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 == len(s) {
				return "", "", false
			}
			i++
			if b.Len() < maxParamValue+1 {
				b.WriteByte(s[i])
			}
		case '"':
			return b.String(), s[i+1:], true
		default:
			if b.Len() < maxParamValue+1 {
				b.WriteByte(s[i])
			}
		}
	}
	return "", "", false
}

// parseX402 reads an x402 PaymentRequired object, base64 JSON, from a
// PAYMENT-REQUIRED field value, or returns nil.
func parseX402(v string) *X402 {
	v = strings.TrimSpace(v)
	if len(v) > maxX402 {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(v); err != nil {
			return nil
		}
	}
	var pr struct {
		Version int               `json:"x402Version"`
		Error   string            `json:"error"`
		Accepts []json.RawMessage `json:"accepts"`
	}
	if json.Unmarshal(raw, &pr) != nil {
		return nil
	}
	x := &X402{Version: pr.Version, Error: truncate(pr.Error, maxParamValue), Accepts: len(pr.Accepts)}
	for _, a := range pr.Accepts {
		var r struct {
			Scheme, Network, Amount, Asset, PayTo string
			MaxAmountRequired                     string `json:"maxAmountRequired"`
		}
		if json.Unmarshal(a, &r) != nil {
			continue
		}
		if r.Amount == "" {
			r.Amount = r.MaxAmountRequired // the name of version 1
		}
		x.Scheme, x.Network, x.Amount, x.Asset, x.PayTo = r.Scheme, r.Network, r.Amount, r.Asset, r.PayTo
		break
	}
	return x
}

// licenseLinks returns the targets of the Link field values (RFC 8288) whose
// rel includes "license", resolved against req's URL and kept if absolute
// http or https, at most maxLicenseLinks.
func licenseLinks(values []string, req *http.Request) []string {
	var out []string
	for _, v := range values {
		for v != "" && len(out) < maxLicenseLinks {
			v = strings.TrimLeft(v, " \t,")
			if !strings.HasPrefix(v, "<") {
				break
			}
			end := strings.IndexByte(v, '>')
			if end < 0 {
				break
			}
			target := v[1:end]
			v = v[end+1:]
			license := false
			// the link's parameters, to the next link
			for {
				v = strings.TrimLeft(v, " \t")
				if !strings.HasPrefix(v, ";") {
					break
				}
				v = strings.TrimLeft(v[1:], " \t")
				name := httpToken(v)
				if name == "" {
					break
				}
				v = strings.TrimLeft(v[len(name):], " \t")
				val := ""
				if strings.HasPrefix(v, "=") {
					var ok bool
					if val, v, ok = paramValue(strings.TrimLeft(v[1:], " \t")); !ok {
						return out
					}
				}
				if strings.EqualFold(name, "rel") {
					for r := range strings.FieldsSeq(val) {
						if strings.EqualFold(r, "license") {
							license = true
						}
					}
				}
			}
			if !license {
				continue
			}
			u, err := url.Parse(target)
			if err == nil && !u.IsAbs() && req != nil && req.URL != nil {
				u = req.URL.ResolveReference(u)
			}
			if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
				out = append(out, u.String())
			}
		}
	}
	return out
}
