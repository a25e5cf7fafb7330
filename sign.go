package robots

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/f9014239/robots/webbotauth"
)

// signingBase is Base behind a Transport with a Signer: every request the
// Transport hands to Base (an allowed request, in its turn, each redirect
// hop of its client, each fetch of robots.txt and each hop of it) passes
// through it, and leaves signed, created as it leaves.
type signingBase struct {
	base   http.RoundTripper
	signer *webbotauth.Signer
}

// RoundTrip signs a clone of req and sends it through base. A request that
// cannot be signed is not sent: its body is closed and the error, which
// matches webbotauth.ErrSigned, ErrRequest or ErrSign, returned.
func (b signingBase) RoundTrip(req *http.Request) (*http.Response, error) {
	signed := req.Clone(req.Context())
	if err := b.signer.Sign(signed); err != nil {
		closeBody(req)
		return nil, fmt.Errorf("robots: signing the request for %s: %w", redact(req.URL), err)
	}
	return b.base.RoundTrip(signed)
}

// CloseIdleConnections closes the idle connections of base, if it can.
func (b signingBase) CloseIdleConnections() {
	type closeIdler interface{ CloseIdleConnections() }
	if ci, ok := b.base.(closeIdler); ok {
		ci.CloseIdleConnections()
	}
}

// Card returns the Signature Agent Card of the crawler this Transport is
// (see webbotauth.Card), with the fields that only the Transport can state
// truthfully filled from its settings: the product token and User-Agent
// (with no Agent, the UserAgent of requests that have none), that it obeys
// robots.txt, how a site can slow it and how fast it goes, as its pacing
// enforces them (doc/pacing.md), trigger "crawler", and the keys of its
// Signer (none without). The caller adds the name, contact, purpose and so
// on. It returns the error every request would fail with, if any.
func (t *Transport) Card() (webbotauth.Card, error) {
	t.once.Do(t.init)
	c := t.cfg
	if c.err != nil {
		return webbotauth.Card{}, c.err
	}
	card := webbotauth.Card{
		ProductToken:      c.agent,
		ExpectedUserAgent: c.userAgent,
		RFC9309Compliance: true,
		Trigger:           "crawler",
	}
	if card.ProductToken == "*" {
		card.ProductToken = ""
	}
	var control []string
	if !c.ignoreCrawlDelay {
		control = append(control, "robots.txt Crawl-delay and Request-rate (up to "+c.maxCrawlDelay.String()+")")
	}
	if !c.ignoreRetryAfter {
		control = append(control, "Retry-After on 429 and 503 (up to "+c.maxRetryAfter.String()+")")
	}
	control = append(control, "RateLimit fields")
	if c.backoff.First > 0 {
		control = append(control, "an exponential back-off on 429 and 503 without them (from "+c.backoff.First.String()+" to "+c.backoff.Max.String()+")")
	}
	if c.maxAdaptive > 0 {
		control = append(control, "slow answers (twice the response time between requests)")
	}
	card.RateControl = strings.Join(control, "; ")
	expect := "one request at a time per site"
	switch {
	case c.defaultDelay > 0 && c.minDelay > 0:
		expect += ", " + max(c.defaultDelay, c.minDelay).String() + " apart where robots.txt states no delay, never under " + c.minDelay.String()
	case c.defaultDelay > 0:
		expect += ", " + c.defaultDelay.String() + " apart where robots.txt states no delay"
	case c.minDelay > 0:
		expect += ", never under " + c.minDelay.String() + " apart"
	}
	card.RateExpectation = expect
	if t.Signer != nil {
		keys, err := webbotauth.KeySet(t.Signer.PublicKey())
		if err != nil {
			return webbotauth.Card{}, err
		}
		card.Keys = keys
	}
	return card, nil
}
