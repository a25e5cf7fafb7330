package webbotauth

import "encoding/json"

// A Card is a Signature Agent Card (draft-meunier-webbotauth-registry-04):
// what an agent says of itself to the sites and registries that ask, as
// JSON. Every field is optional; empty ones are left out. A Transport of
// package robots fills the fields that only it can state truthfully (see
// robots.Transport.Card).
type Card struct {
	Name              string `json:"name,omitempty"`
	Contact           string `json:"contact,omitempty"` // an email address or a URL
	About             string `json:"about,omitempty"`   // a URL, or inline text
	Logo              string `json:"logo,omitempty"`
	ExpectedUserAgent string `json:"expected-user-agent,omitempty"`
	// ProductToken is the token that robots.txt groups name
	// (RFC 9309 §2.2.1), and RFC9309Compliance whether the agent obeys
	// them.
	ProductToken      string `json:"rfc9309-product-token,omitempty"`
	RFC9309Compliance bool   `json:"rfc9309-compliance,omitempty"`
	Trigger           string `json:"trigger,omitempty"` // "crawler" or "fetcher"
	Purpose           string `json:"purpose,omitempty"` // e.g. "search", "train-ai"
	TargetedContent   string `json:"targeted-content,omitempty"`
	// RateControl says how a site can slow the agent, RateExpectation
	// how fast it goes.
	RateControl     string   `json:"rate-control,omitempty"`
	RateExpectation string   `json:"rate-expectation,omitempty"`
	KnownURLs       []string `json:"known-urls,omitempty"`
	// Keys is a JSON Web Key Set (see KeySet), or the URL of a directory
	// as a JSON string.
	Keys json.RawMessage `json:"keys,omitempty"`
}
