package robots

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/f9014239/robots/internal/agenttoken"
)

// agentKey is the context key of WithAgent.
type agentKey struct{}

// agentValue is what WithAgent puts in a context.
type agentValue struct {
	token string
	ua    string // the User-Agent of requests that have none
	err   error
}

// WithAgent returns a copy of ctx under which a Transport decides and sends
// as the crawler that agent names (as Transport.Agent), in place of Agent:
// for a crawler with several identities, or to Check for another token. A
// request with no User-Agent leaves with agent as its User-Agent; under "*",
// or an agent that names no token, it fails.
func WithAgent(ctx context.Context, agent string) context.Context {
	tok, err := tokenOf(agent)
	if err == nil && tok == "" {
		err = errors.New("robots: WithAgent: empty agent")
	}
	ua := agent
	if tok == "*" {
		ua = ""
	}
	return context.WithValue(ctx, agentKey{}, &agentValue{token: tok, ua: ua, err: err})
}

// identity returns the product token that decides a request with context ctx
// and header hdr (nil for none), and the User-Agent of ours it leaves with if
// it has none.
func (t *Transport) identity(ctx context.Context, hdr http.Header) (token, ua string, err error) {
	if v, _ := ctx.Value(agentKey{}).(*agentValue); v != nil {
		if v.ua == "" { // WithAgent(ctx, "*"): see errStarAnonymous
			return v.token, "", v.err
		}
		return v.token, v.ua, v.err
	}
	if t.cfg.err != nil {
		return "", "", t.cfg.err
	}
	if t.cfg.agent != "" {
		return t.cfg.agent, t.cfg.userAgent, nil
	}
	if vs := hdr["User-Agent"]; len(vs) > 0 {
		return t.agentOf(vs[0]), t.cfg.userAgent, nil
	}
	return t.cfg.anonAgent, t.cfg.userAgent, nil
}

// errStarAnonymous is the error of a request under WithAgent(ctx, "*") that
// has no User-Agent header: it has no identity to leave with that the "*"
// group it is decided by governs.
var errStarAnonymous = errors.New(`robots: request under WithAgent(ctx, "*") has no User-Agent header: ` +
	`it would be decided by the "*" group but leave as another agent; set its User-Agent header`)

// starAnonymous reports whether a request decided as agent with context ctx,
// header hdr and ua as the User-Agent of ours it would leave with, is under
// WithAgent(ctx, "*") with no User-Agent header (see errStarAnonymous).
func starAnonymous(ctx context.Context, hdr http.Header, agent, ua string) bool {
	if agent != "*" || ua != "" {
		return false
	}
	if _, ok := hdr["User-Agent"]; ok {
		return false
	}
	v, _ := ctx.Value(agentKey{}).(*agentValue)
	return v != nil && v.token == "*"
}

// fetchAgent returns the User-Agent a fetch of robots.txt caused by a
// request with header hdr is sent with: the request's, or else the
// Transport's own (UserAgent, or Agent as given), or else ua, the one the
// request leaves with. One fetch serves every token, so a request under
// [WithAgent] (a token such as Google-Extended, say, that no crawler sends)
// does not give the fetch its identity when the Transport has one.
func (t *Transport) fetchAgent(hdr http.Header, ua string) func() string {
	own := t.cfg.userAgent
	return func() string {
		if v := hdr.Get("User-Agent"); v != "" {
			return v
		}
		if own != "" {
			return own
		}
		return ua
	}
}

// tokenOf returns the product token that agent, a token or a User-Agent
// header, names; "" for "", and an error if it names none.
func tokenOf(agent string) (string, error) {
	if agent == "" || agent == "*" {
		return agent, nil
	}
	if agenttoken.Prefix(agent) == agent {
		return agent, nil
	}
	if tok := agenttoken.Product(agent); tok != "" {
		// Words ("My Crawler") are not a User-Agent header: a header
		// names the crawler as Name/version, or in a compatible
		// comment, and the first word alone is not its token.
		if strings.ContainsAny(agent, " \t") && !strings.Contains(agent, tok+"/") && agenttoken.Compatible(agent) != tok {
			return "", fmt.Errorf("robots: agent %q is words, not a product token (want one word of letters, digits, '-' and '_', as in \"ExampleBot\", or a User-Agent header such as \"ExampleBot/1.0 (+https://example.com/bot)\")", agent)
		}
		return tok, nil
	}
	return "", fmt.Errorf("robots: agent %q names no product token (want a name of letters, digits, '-' and '_', as in \"ExampleBot\" or \"ExampleBot/1.0\")", agent)
}

// uaToken is one derivation of a product token from a User-Agent header.
type uaToken struct{ header, token string }

// agentOf returns the product token of the User-Agent header ua, or "*" if
// it names none (see Transport.Agent for the rule). The last answer is
// remembered, since a crawler usually sends one User-Agent.
func (t *Transport) agentOf(ua string) string {
	if c := t.ua.Load(); c != nil && c.header == ua {
		return c.token
	}
	tok := agenttoken.Product(ua)
	if tok == "" {
		tok = "*"
	}
	t.ua.Store(&uaToken{ua, tok})
	return tok
}
