package robots

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/f9014239/robots/internal/agenttoken"
	"github.com/f9014239/robots/internal/usagetab"
	"github.com/f9014239/robots/matcher"
	"github.com/f9014239/robots/usage"
)

// Usage preferences: Content-Usage lines (draft-ietf-aipref-attach) and
// Content-Signal lines (Cloudflare's Content Signals Policy) of robots.txt,
// and a response's own Content-Usage header, say how what is fetched may be
// used. They never change whether a request is sent, unless Transport.Uses
// asks for it.

// starAnswersTokens says whether the "*" groups of a robots.txt answer for a
// policy token of Transport.UseTokens that no group names. They do, as for
// any product token under RFC 9309 §2.2.1:
// draft-kelley-aipref-training-preference-signal changes neither the path
// language, nor longest-match precedence, nor the group structure of
// robots.txt; a path that a site disallows to every crawler is one it has
// not offered for any use (fail closed: where unsure whether a rule
// applies, refuse); and a token that sites have not yet learnt to name is
// still answered by what they wrote for everyone. If the draft's published
// text says otherwise, this is the one switch.
const starAnswersTokens = true

// useSet is Transport.Uses and Transport.UseTokens as a Transport reads
// them.
type useSet struct {
	uses   []string   // Transport.Uses, Content-Signal's names read as the vocabulary's
	tokens []useToken // Transport.UseTokens, sorted by use
	err    error      // what is wrong with them, or nil
}

// useToken is a policy token and the use whose group it names.
type useToken struct{ use, token string }

// newUseSet returns the useSet of Transport.Uses uses and
// Transport.UseTokens tokens.
func newUseSet(uses []string, tokens map[string]string) useSet {
	var s useSet
	for _, u := range uses {
		s.uses = append(s.uses, usagetab.SignalLabel(u)) // ai-train is train-ai, ai-input ai-use
	}
	for use, tok := range tokens {
		s.tokens = append(s.tokens, useToken{use, tok})
	}
	slices.SortFunc(s.tokens, func(a, b useToken) int { return strings.Compare(a.use, b.use) })
	for i, t := range s.tokens {
		switch {
		case s.err != nil:
		case t.use == "" || useRank(t.use) > 0:
			s.err = fmt.Errorf("robots: UseTokens: %q is not a use a policy token can stand for", t.use)
		case t.token == "" || agenttoken.Prefix(t.token) != t.token:
			s.err = fmt.Errorf("robots: UseTokens[%q] = %q is not a product token (want letters, digits, '-' and '_')", t.use, t.token)
		}
		s.tokens[i].use = usagetab.SignalLabel(t.use)
	}
	return s
}

// token returns the policy token of use, or "".
func (s *useSet) token(use string) string {
	for _, t := range s.tokens {
		if t.use == use {
			return t.token
		}
	}
	return ""
}

// states reports whether r states something about a use: a usage line, or
// a group that answers one of the policy tokens.
func (s *useSet) states(r *matcher.Robots) bool {
	if r == nil {
		return false
	}
	if r.HasUsage() {
		return true
	}
	for _, t := range s.tokens {
		if r.PolicyGroup(t.token, starAnswersTokens) != nil {
			return true
		}
	}
	return false
}

// decides reports whether the Transport's Uses can refuse a request that
// st's robots.txt allows.
func (s *useSet) decides(st *state) bool {
	return len(s.uses) > 0 && st.robots != nil && s.states(st.robots)
}

// usageWithTokens returns u, the preference that r's usage lines state for
// target, with what the group of each policy token says of its use.
func (s *useSet) usageWithTokens(u usage.Preference, r *matcher.Robots, target string) usage.Preference {
	for _, t := range s.tokens {
		g := r.PolicyGroup(t.token, starAnswersTokens)
		if g == nil {
			continue
		}
		m := g.Match(target)
		v := usage.Allowed
		if !m.Allowed {
			v = usage.Disallowed
		}
		rule := usage.Rule{Rule: m.Rule, Line: m.Line}
		if m.Rule == "" {
			// No rule decides: the group allows it, as every group
			// allows what none of its rules disallows.
			rule.Rule = "User-agent: *"
			if r.PolicyGroup(t.token, false) != nil {
				rule.Rule = "User-agent: " + t.token // a group names it
			}
			if lines := g.Lines(); len(lines) > 0 {
				rule.Line = lines[0]
			}
		}
		u = u.WithRule(t.use, v, rule)
	}
	return u
}

// usageKey is the context key of a responseUsage, on the context of the
// Request of a response whose origin's robots.txt states a preference.
type usageKey struct{}

// responseUsage is what UsageOf needs of the robots.txt copy that was in
// use when a response was fetched: a preference applies to the copy in
// use when the response was fetched, so holding it keeps that copy.
type responseUsage struct {
	robots *matcher.Robots
	group  *matcher.Group
	target string
	uses   *useSet // for the policy tokens
}

// attachUsage records on resp the copy of robots.txt that st holds, for
// UsageOf, if it states a preference (see useSet.states): for the others,
// responses carry nothing.
func (t *Transport) attachUsage(resp *http.Response, req *http.Request, st *state, agent string) {
	if st == nil || !t.cfg.uses.states(st.robots) {
		return
	}
	ru := &responseUsage{robots: st.robots, group: st.groupOf(t.groupAgent(agent)), target: target(req.URL), uses: &t.cfg.uses}
	sent := resp.Request
	if sent == nil {
		sent = req
	}
	resp.Request = sent.WithContext(context.WithValue(sent.Context(), usageKey{}, ru))
}

// decideUses refuses a request for target, which robots.txt allows, when
// st's usage preference marks it "n" for one of the Transport's Uses, or
// the group of the use's policy token disallows it.
func (t *Transport) decideUses(st *state, agent, target string) decision {
	for _, use := range t.cfg.uses.uses {
		tok := t.cfg.uses.token(use)
		if tok == "" {
			continue
		}
		if g := st.robots.PolicyGroup(tok, starAnswersTokens); g != nil && !g.Allowed(target) {
			m := g.Match(target)
			return decision{use: use, rule: m.Rule, line: m.Line}
		}
	}
	u := st.groupOf(agent).Usage(target)
	for _, use := range t.cfg.uses.uses {
		label, want := use, usage.Unknown
		if r := useRank(use); r > 0 {
			// "use=full": refused where the site allows less.
			label, want = "use", usage.Immediate+usage.Value(r-1)
			if site := useRank("use=" + u.Use()); site == 0 || site >= r {
				continue
			}
		} else if u.Get(use) != usage.Disallowed {
			continue
		}
		d := decision{use: use}
		for _, l := range u.Labels() {
			if l.Label == label && (want == usage.Unknown || l.Value < want) && len(l.Rules) > 0 {
				d.rule, d.line = l.Rules[0].Rule, l.Rules[0].Line
			}
		}
		return d
	}
	return decision{allowed: true}
}

// useRank returns the rank of use, a value of Transport.Uses, if it names
// an extent of Content-Signal's use key: 1 for "use=immediate", 2 for
// "use=reference", 3 for "use=full"; 0 otherwise.
func useRank(use string) int {
	switch use {
	case "use=immediate":
		return 1
	case "use=reference":
		return 2
	case "use=full":
		return 3
	}
	return 0
}

// UsageOf returns the usage preference of a response: what the robots.txt of
// its origin said of its URL, for the crawler that sent it, combined with the
// response's own Content-Usage header (only that, for a response that did
// not come through a Transport). It fetches nothing:
// UsageOf(resp).Get("train-ai") == usage.Disallowed keeps a page out of a
// training set.
func UsageOf(resp *http.Response) usage.Preference {
	if resp == nil {
		return usage.Preference{}
	}
	var u usage.Preference
	if resp.Request != nil {
		if ru, ok := resp.Request.Context().Value(usageKey{}).(*responseUsage); ok {
			u = ru.uses.usageWithTokens(ru.group.Usage(ru.target), ru.robots, ru.target)
		}
	}
	return u.WithHeader(resp.Header.Values("Content-Usage"))
}

// CheckUsage is [Transport.Check] that also returns the usage preference
// that the cached robots.txt of u states for u: the zero Preference when u is
// refused or none is stated. [UsageOf] adds a response's own header.
func (t *Transport) CheckUsage(ctx context.Context, u *url.URL) (usage.Preference, error) {
	t.once.Do(t.init)
	if u == nil {
		return usage.Preference{}, errors.New("robots: nil URL")
	}
	st, group, err := t.checkRequest(ctx, u, "", nil)
	if err != nil || st == nil || !t.cfg.uses.states(st.robots) {
		return usage.Preference{}, err
	}
	return t.cfg.uses.usageWithTokens(st.groupOf(group).Usage(target(u)), st.robots, target(u)), nil
}
