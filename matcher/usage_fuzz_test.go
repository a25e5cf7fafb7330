package matcher

import (
	"strings"
	"testing"

	"github.com/f9014239/robots/internal/usagetab"
	"github.com/f9014239/robots/usage"
)

// FuzzUsage checks the usage lines: any body parses without a panic; the
// string, the typed result and a plain scan of every usage rule agree;
// the canonical text re-parses to the same preference; a disallowed URL
// has none.
func FuzzUsage(f *testing.F) {
	for i, body := range seedBodies(f) {
		f.Add(string(body), []string{"ExampleBot", "OtherBot"}[i%2], []string{"/ai-ok/x.pdf", "/ab", "/never/x"}[i%3])
	}
	f.Add(specExample, "OtherBot", "/ai-ok/x")
	f.Add(specExample, "examplebot", "/never/x")
	f.Add("Content-Signal: search=yes, ai-train=no\nUser-agent: *\nAllow: /\n", "bot", "/")
	f.Add("user-agent: *\ncontent-usage: /a* search=y\ncontent-usage: /*b train-ai=n, search=n\ncontent-signal: ai-input=no\n", "a", "/ab")
	f.Add("content-usage: /a train-ai=n\nuser-agent: *\ncontent-usage: /a search=y;x=1, foo=(y n)\n", "a", "/a?q")
	f.Add("user-agent: *\ncontent-usage: train-ai=\"n\", search=?1, x=n, x=y\ncontent-usage: /%C3%A9$ *=n\n", "z", "/é")
	f.Add(badUsage+"user-agent: *\ndisallow: /x\n"+badUsage, "AnyBot", "/a")
	f.Add("user-agent: *\ndisallow: /p/\n\nuser-agent: tok\ndisallow: /t/\ncontent-usage: ai-use=n, train-genai=n, bots\ncontent-signal: ai-input=no, ai-train=\"no\"\n", "tok", "/t/x")
	f.Fuzz(func(t *testing.T, body, agent, url string) {
		r := Parse([]byte(body))
		g := r.Group(agent)
		u := g.Usage(url)
		s := u.String()
		if got := r.Usage(agent, url).String(); got != s {
			t.Fatalf("ContentUsage = %q, Usage = %q", got, s)
		}
		if got := labelsText(u); got != s {
			t.Fatalf("Labels say %q, String %q", got, s)
		}
		for _, l := range u.Labels() {
			if len(l.Rules) == 0 || u.Get(l.Label) != l.Value {
				t.Fatalf("label %+v: no rule, or Get says %v", l, u.Get(l.Label))
			}
		}
		if want := bruteUsage(g, url); s != want {
			t.Fatalf("Usage(%q) = %q, every rule scanned says %q", url, s, want)
		}
		if s != "" && !g.Allowed(url) {
			t.Fatalf("disallowed %q has usage %q", url, s)
		}
		// agent as a policy token: its group is the crawler's, or none
		// (the "*" groups only when asked to answer).
		pg, pgNamed := r.PolicyGroup(agent, true), r.PolicyGroup(agent, false)
		switch {
		case pg != nil && pg.Allowed(url) != g.Allowed(url):
			t.Fatalf("PolicyGroup(%q).Allowed(%q) = %v, Group's %v", agent, url, pg.Allowed(url), g.Allowed(url))
		case pgNamed != nil && pgNamed != pg, pgNamed == nil && pg != nil && pg != r.Group("*"):
			t.Fatalf("PolicyGroup(%q) with and without star disagree", agent)
		}
		// A line added says its label, most restrictive first, and
		// changes no other.
		w := u.WithRule("train-ai", usage.Disallowed, usage.Rule{Rule: "Disallow: /", Line: 1})
		if w.Get("train-ai") != usage.Disallowed || labelsText(w) != w.String() {
			t.Fatalf("%q with train-ai=n added: %q, Labels %q", s, w, labelsText(w))
		}
		for _, l := range u.Labels() {
			if l.Label != "train-ai" && w.Get(l.Label) != l.Value {
				t.Fatalf("%q with train-ai=n added: %s is %v", s, l.Label, w.Get(l.Label))
			}
		}
		if s == "" {
			return
		}
		// The canonical text is a statement that says the same, as a
		// Content-Usage line and as a response header.
		if got := Parse([]byte("user-agent: *\ncontent-usage: / "+s+"\n")).Usage("x", "/").String(); got != s {
			t.Fatalf("canonical %q as a line says %q", s, got)
		}
		if got := (usage.Preference{}).WithHeader([]string{s}).String(); got != s {
			t.Fatalf("canonical %q as a header says %q", s, got)
		}
		if got := u.WithHeader([]string{s}).String(); got != s {
			t.Fatalf("%q with itself as a header says %q", s, got)
		}
	})
}

// bruteUsage is Usage's string for url under g, found by trying every
// usage rule of g and of the file, and combining what the most specific of
// each kind say as the lines of a tie are.
func bruteUsage(g *Group, url string) string {
	d, ug := g.usageGroup()
	if d == nil || !g.Allowed(url) {
		return ""
	}
	p := normalPath(url)
	var deciding []usagetab.ID
	for k := range 2 {
		var best []usagetab.ID
		bestN := -1
		for _, grp := range []*usageSet{&ug.g[k], &d.file.g[k]} {
			for i := range grp.rules(d) {
				r := &grp.rules(d)[i]
				if !ruleMatches(d.sub.arena, r, p) {
					continue
				}
				switch n := int(r.n()); {
				case n > bestN:
					best, bestN = []usagetab.ID{d.idOf(r)}, n
				case n == bestN:
					best = append(best, d.idOf(r))
				}
			}
		}
		deciding = append(deciding, best...)
	}
	if len(deciding) == 0 {
		return ""
	}
	return usagetab.Of[usage.Preference](d.t, [4]usagetab.ID{}, deciding).String()
}

func TestBruteUsageSeeds(t *testing.T) {
	// The fuzz target's reference, on the worked example.
	r := Parse([]byte(specExample))
	for _, c := range []struct{ agent, url, want string }{
		{"x", "/test", "train-ai=n"}, {"x", "/ai-ok/a", "train-ai=y"}, {"examplebot", "/never/", "train-ai=y"}, {"x", "/never/", ""},
	} {
		if got := bruteUsage(r.Group(c.agent), c.url); got != c.want || !strings.EqualFold(got, r.Usage(c.agent, c.url).String()) {
			t.Errorf("bruteUsage(%q, %q) = %q want %q", c.agent, c.url, got, c.want)
		}
	}
}
