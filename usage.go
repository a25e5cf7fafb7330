package robots

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/f9014239/robots/matcher"
	"github.com/f9014239/robots/usage"
)

// Usage preferences: Content-Usage lines (draft-ietf-aipref-attach) and
// Content-Signal lines (Cloudflare's Content Signals Policy) of robots.txt,
// and a response's own Content-Usage header, say how what is fetched may be
// used. They never change whether a request is sent, unless Transport.Uses
// asks for it.

// usageKey is the context key of a responseUsage, on the context of the
// Request of a response whose origin's robots.txt states a preference.
type usageKey struct{}

// responseUsage is what UsageOf needs of the robots.txt copy that was in
// use when a response was fetched: a preference applies to the copy in
// use when the response was fetched, so holding it keeps that copy.
type responseUsage struct {
	group  *matcher.Group
	target string
}

// attachUsage records on resp the copy of robots.txt that st holds, for
// UsageOf. It is called only for origins whose robots.txt states a
// preference: for the others, responses carry nothing.
func (t *Transport) attachUsage(resp *http.Response, req *http.Request, st *state, agent string) {
	ru := &responseUsage{group: st.groupOf(t.groupAgent(agent)), target: target(req.URL)}
	sent := resp.Request
	if sent == nil {
		sent = req
	}
	resp.Request = sent.WithContext(context.WithValue(sent.Context(), usageKey{}, ru))
}

// decideUses refuses a request for target, which robots.txt allows, when
// st's usage preference marks it "n" for one of the Transport's Uses.
func (t *Transport) decideUses(st *state, agent, target string) decision {
	u := st.groupOf(agent).Usage(target)
	for _, use := range t.cfg.uses {
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
// its origin said of its URL, for the crawler that sent it, when it was
// fetched, combined with the response's own Content-Usage header (see "Usage
// preferences" in the package documentation). For a response that did not
// come through a Transport, it is what the header says. It fetches nothing.
//
//	resp, err := client.Get("https://example.com/article")
//	...
//	if robots.UsageOf(resp).Get("train-ai") == usage.Disallowed {
//		// keep it out of the training set
//	}
func UsageOf(resp *http.Response) usage.Preference {
	if resp == nil {
		return usage.Preference{}
	}
	var u usage.Preference
	if resp.Request != nil {
		if ru, ok := resp.Request.Context().Value(usageKey{}).(*responseUsage); ok {
			u = ru.group.Usage(ru.target)
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
	if err != nil || st == nil || st.robots == nil || !st.robots.HasUsage() {
		return usage.Preference{}, err
	}
	return st.groupOf(group).Usage(target(u)), nil
}
