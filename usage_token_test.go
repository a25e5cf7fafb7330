package robots

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/f9014239/robots/usage"
	"github.com/jarcoal/httpmock"
)

// placeholderToken stands for the policy token of AI training, whose text
// draft-kelley-aipref-training-preference-signal has not published.
const placeholderToken = "Example-Training-Token"

// tokenRobots names the policy token in a group of its own.
const tokenRobots = `User-agent: *
Disallow: /private/

User-agent: ExampleBot
Allow: /

User-agent: Example-Training-Token
Disallow: /no-train/
Allow: /no-train/ok
Content-Usage: /cu/ train-ai=y
`

// tokenMock serves body as example.com's robots.txt and a page at every
// other path.
func tokenMock(body string) *httpmock.MockTransport {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, body))
	mock.RegisterNoResponder(httpmock.NewStringResponder(200, "page"))
	return mock
}

// pagesSent returns how many requests other than for robots.txt mock has
// answered.
func pagesSent(mock *httpmock.MockTransport) int {
	return mock.GetTotalCallCount() - mock.GetCallCountInfo()["GET "+exampleRobots]
}

// TestUseTokens: the group of a policy token answers its use, through the
// same matcher: UsageOf and CheckUsage report it, with the deciding line,
// and Uses refuses by it as by a Content-Usage "n".
func TestUseTokens(t *testing.T) {
	mock := tokenMock(tokenRobots)
	tokens := map[string]string{"train-ai": placeholderToken}
	for _, c := range []struct {
		path, want string
		rule       usage.Rule
	}{
		{"/page", "train-ai=y", usage.Rule{Rule: "User-agent: " + placeholderToken, Line: 7}},
		{"/no-train/x", "train-ai=n", usage.Rule{Rule: "Disallow: /no-train/", Line: 8}},
		{"/no-train/ok", "train-ai=y", usage.Rule{Rule: "Allow: /no-train/ok", Line: 9}},
		// The token's group disallows nothing under /private/: the
		// crawler's own group lets it fetch there.
		{"/private/x", "train-ai=y", usage.Rule{Rule: "User-agent: " + placeholderToken, Line: 7}},
	} {
		// Without Uses, nothing is refused; the use is reported.
		tr := &Transport{Base: mock, Agent: "ExampleBot", UseTokens: tokens}
		client := &http.Client{Transport: tr}
		u := UsageOf(getResp(t, client, "https://example.com"+c.path))
		labels := u.Labels()
		if u.String() != c.want || len(labels) != 1 || len(labels[0].Rules) != 1 || labels[0].Rules[0] != c.rule {
			t.Errorf("%s: UsageOf = %q, labels %+v; want %q from %+v", c.path, u, labels, c.want, c.rule)
		}
		cu, err := tr.CheckUsage(context.Background(), &url.URL{Scheme: "https", Host: "example.com", Path: c.path})
		if err != nil || cu.String() != c.want {
			t.Errorf("%s: CheckUsage = %q, %v; want %q", c.path, cu, err, c.want)
		}
		// With Uses, a "n" refuses before anything is sent.
		tr = &Transport{Base: mock, Agent: "ExampleBot", UseTokens: tokens, Uses: []string{"train-ai"}}
		before := pagesSent(mock)
		err = get(&http.Client{Transport: tr}, "https://example.com"+c.path)
		sent := pagesSent(mock) - before
		if c.want == "train-ai=y" {
			if err != nil || sent != 1 {
				t.Errorf("%s with Uses: %v, sent %d; want sent", c.path, err, sent)
			}
			continue
		}
		de, ok := errors.AsType[*DisallowedError](err)
		if !ok || !errors.Is(err, ErrDisallowed) || sent != 0 || de.Use != "train-ai" || de.Rule != c.rule.Rule || de.Line != c.rule.Line ||
			!strings.Contains(de.Error(), "train-ai=n") {
			t.Errorf("%s with Uses: %v (%+v), sent %d; want refused for train-ai by %+v", c.path, err, de, sent, c.rule)
		}
		if st := tr.Stats(); st.RefusedUsage != 1 || st.RefusedRule != 0 {
			t.Errorf("%s: Stats %+v, want one refusal for a use", c.path, st)
		}
	}
	// A use with a token but not in Uses refuses nothing; a use in
	// Uses without a token is decided by usage lines alone.
	tr := &Transport{Base: mock, Agent: "ExampleBot", UseTokens: tokens, Uses: []string{"search"}}
	if err := get(&http.Client{Transport: tr}, "https://example.com/no-train/x"); err != nil {
		t.Errorf("Uses search, token for train-ai: %v", err)
	}
}

// TestUseTokensCombine: the token's verdict combines with the usage lines
// that apply to the crawler, most restrictive first.
func TestUseTokensCombine(t *testing.T) {
	mock := tokenMock("Content-Signal: ai-train=yes, search=yes\n" + tokenRobots)
	tr := &Transport{Base: mock, Agent: "ExampleBot", UseTokens: map[string]string{"ai-train": placeholderToken}}
	client := &http.Client{Transport: tr}
	for path, want := range map[string]string{
		"/page":       "search=y, train-ai=y",
		"/no-train/x": "search=y, train-ai=n", // Content-Signal says yes, the token's group no
	} {
		u := UsageOf(getResp(t, client, "https://example.com"+path))
		if u.String() != want {
			t.Errorf("%s: UsageOf = %q want %q", path, u, want)
		}
		if want == "search=y, train-ai=n" {
			if r := u.Rules(); len(r) != 2 || r[0].Line != 1 || r[1] != (usage.Rule{Rule: "Disallow: /no-train/", Line: 9}) {
				t.Errorf("%s: Rules = %+v", path, r)
			}
		}
	}
}

// TestUseTokensStar: a "*" group answers a token that no group names (see
// starAnswersTokens); a file with neither says nothing of the use.
func TestUseTokensStar(t *testing.T) {
	for _, c := range []struct {
		name, robots, path, want string
		refused                  bool
		rule                     usage.Rule // that decides train-ai, if not zero
	}{
		{"star answers", "User-agent: *\nDisallow: /private/\n\nUser-agent: ExampleBot\nAllow: /\n", "/private/x", "train-ai=n", true, usage.Rule{Rule: "Disallow: /private/", Line: 2}},
		{"star allows", "User-agent: *\nDisallow: /private/\n\nUser-agent: ExampleBot\nAllow: /\n", "/page", "train-ai=y", false, usage.Rule{Rule: "User-agent: *", Line: 1}},
		{"named, star ignored", "User-agent: *\nDisallow: /\n\nUser-agent: ExampleBot\nAllow: /\n\nUser-agent: " + placeholderToken + "\nDisallow: /x\n", "/page", "train-ai=y", false, usage.Rule{Rule: "User-agent: " + placeholderToken, Line: 7}},
		{"no star, no token", "User-agent: ExampleBot\nDisallow: /private/\n", "/page", "", false, usage.Rule{}},
		{"empty file", "", "/page", "", false, usage.Rule{}},
		{"file-level lines only", "Content-Usage: search=y\n", "/page", "search=y", false, usage.Rule{}},
	} {
		mock := tokenMock(c.robots)
		tr := &Transport{Base: mock, Agent: "ExampleBot", UseTokens: map[string]string{"train-ai": placeholderToken}}
		u := UsageOf(getResp(t, &http.Client{Transport: tr}, "https://example.com"+c.path))
		if u.String() != c.want {
			t.Errorf("%s: UsageOf = %q want %q", c.name, u, c.want)
		}
		if c.rule != (usage.Rule{}) {
			if l := u.Labels(); len(l) != 1 || len(l[0].Rules) != 1 || l[0].Rules[0] != c.rule {
				t.Errorf("%s: Labels = %+v, want decided by %+v", c.name, l, c.rule)
			}
		}
		tr = &Transport{Base: mock, Agent: "ExampleBot", UseTokens: map[string]string{"train-ai": placeholderToken}, Uses: []string{"train-ai"}}
		err := get(&http.Client{Transport: tr}, "https://example.com"+c.path)
		if refused := errors.Is(err, ErrDisallowed); refused != c.refused || !refused && err != nil {
			t.Errorf("%s: with Uses: %v, want refused %v", c.name, err, c.refused)
		}
	}
}

// TestUseTokensBad: a token that is not a product token fails every
// request, saying so, rather than reading a group no site could write.
func TestUseTokensBad(t *testing.T) {
	mock := tokenMock(tokenRobots)
	for _, tokens := range []map[string]string{
		{"train-ai": "Example Token"},
		{"train-ai": ""},
		{"train-ai": "Token/1.0"},
		{"": placeholderToken},
		{"use=full": placeholderToken},
	} {
		tr := &Transport{Base: mock, Agent: "ExampleBot", UseTokens: tokens}
		err := get(&http.Client{Transport: tr}, "https://example.com/page")
		if err == nil || !strings.Contains(err.Error(), "UseTokens") {
			t.Errorf("UseTokens %q: %v, want an error that names UseTokens", tokens, err)
		}
	}
}

// TestUsesVocab08: Uses reads Content-Signal's names as the vocabulary's,
// and a crawler that does search asks for search alone, which overrides
// train-ai and ai-use (draft-ietf-aipref-vocab-08 §4.3).
func TestUsesVocab08(t *testing.T) {
	mock := tokenMock("User-agent: *\nContent-Usage: train-ai=n, ai-use=n, search=y\nContent-Usage: /s/ search=n\nContent-Signal: /in/ ai-input=no\n")
	for _, c := range []struct {
		uses []string
		path string
		use  string // refused for it, or ""
	}{
		{[]string{"search"}, "/page", ""}, // §4.3: search alone, the others do not refuse
		{[]string{"search"}, "/s/x", "search"},
		{[]string{"ai-use"}, "/page", "ai-use"},   // §4.2
		{[]string{"ai-input"}, "/page", "ai-use"}, // Content-Signal's name
		{[]string{"train-ai"}, "/page", "train-ai"},
		{[]string{"search", "train-ai"}, "/page", "train-ai"}, // not search alone: a use that trains
		{[]string{"train-genai"}, "/page", ""},                // a legacy label: nothing states it
	} {
		tr := &Transport{Base: mock, Agent: "ExampleBot", Uses: c.uses}
		err := get(&http.Client{Transport: tr}, "https://example.com"+c.path)
		de, _ := errors.AsType[*DisallowedError](err)
		switch {
		case c.use == "" && err != nil, c.use != "" && (de == nil || de.Use != c.use):
			t.Errorf("Uses %v %s: %v, want refused for %q", c.uses, c.path, err, c.use)
		}
	}
}

// ExampleTransport_useTokens reads AI training preferences from the group
// of a policy token (the token here is a placeholder: see UseTokens).
func ExampleTransport_useTokens() {
	mock := tokenMock(tokenRobots)
	tr := &Transport{
		Base:      mock,
		Agent:     "ExampleBot",
		UseTokens: map[string]string{"train-ai": placeholderToken},
		Uses:      []string{"train-ai"},
	}
	client := &http.Client{Transport: tr}
	resp, err := client.Get("https://example.com/page")
	if err == nil {
		fmt.Println(UsageOf(resp))
		resp.Body.Close()
	}
	_, err = client.Get("https://example.com/no-train/a")
	fmt.Println(err)
	// Output:
	// train-ai=y
	// Get "https://example.com/no-train/a": robots: robots.txt says train-ai=n for https://example.com/no-train/a: "Disallow: /no-train/" (line 8)
}
