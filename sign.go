package robots

import (
	"fmt"
	"net/http"

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
