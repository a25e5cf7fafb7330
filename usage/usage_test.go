package usage

import (
	"fmt"
	"slices"
	"testing"

	"github.com/f9014239/robots/internal/usagetab"
)

func TestZeroPreference(t *testing.T) {
	var p Preference
	if p.String() != "" || !p.IsZero() || p.Get("train-ai") != Unknown || p.Use() != "" || len(p.Rules()) != 0 || len(p.Labels()) != 0 {
		t.Errorf("zero Preference states something: %q %v %v", p, p.Rules(), p.Labels())
	}
}

func TestWithHeader(t *testing.T) {
	p := Preference{}.WithHeader([]string{"train-ai=n", "search=y, x=?1"})
	if got := p.String(); got != "search=y, train-ai=n" {
		t.Errorf("String = %q", got)
	}
	p = p.WithHeader([]string{"search=n"})
	if got, want := p.Rules(), []Rule{{Rule: "Content-Usage: train-ai=n, search=y, x=?1, search=n"}}; !slices.Equal(got, want) {
		t.Errorf("Rules = %v want %v", got, want)
	}
	if p.Get("search") != Disallowed || p.Get("train-ai") != Disallowed || p.Get("x") != Unknown {
		t.Errorf("Get: %v %v %v", p.Get("search"), p.Get("train-ai"), p.Get("x"))
	}
	if q := p.WithHeader([]string{"not a dictionary ("}); q.String() != p.String() {
		t.Errorf("a header that does not parse changed %q to %q", p, q)
	}
}

// TestTable builds a table as a parser does and asks what lines decide
// together.
func TestTable(t *testing.T) {
	var b usagetab.Builder
	a, path := b.Add(usagetab.ContentUsage, 1, []byte("/a/ train-ai=n"))
	if string(path) != "/a/" {
		t.Errorf("path %q", path)
	}
	c, path := b.Add(usagetab.ContentSignal, 2, []byte("ai-train=yes, search=yes, use=full"))
	if path != nil {
		t.Errorf("path %q of a line without one", path)
	}
	d, _ := b.Add(usagetab.ContentSignal, 3, []byte("use=reference, ai-input=no"))
	e, _ := b.Add(usagetab.ContentUsage, 4, []byte("train-ai=n"))
	if !b.Same(a, e) || b.Same(a, c) {
		t.Errorf("Same: lines 1 and 4 state one thing, lines 1 and 2 two")
	}
	set := b.Union([]usagetab.ID{c, d})
	b.Combine([]usagetab.ID{a}, []usagetab.ID{set})
	tab := b.Table()

	p := usagetab.Of[Preference](tab, [4]usagetab.ID{a, set}, nil)
	if got, want := p.String(), "ai-use=n, search=y, train-ai=n, use=reference"; got != want {
		t.Errorf("String = %q want %q", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { _ = p.String() }); n != 0 {
		t.Errorf("String of a combined preference allocates %v times", n)
	}
	if got := fmt.Sprint(p.Rules()); got != "[{Content-Usage: /a/ train-ai=n 1} {Content-Signal: ai-train=yes, search=yes, use=full 2} {Content-Signal: use=reference, ai-input=no 3}]" {
		t.Errorf("Rules = %s", got)
	}
	if got := fmt.Sprint(p.Labels()); got != "[{ai-use n [{Content-Signal: use=reference, ai-input=no 3}]} {search y [{Content-Signal: ai-train=yes, search=yes, use=full 2}]} {train-ai n [{Content-Usage: /a/ train-ai=n 1}]} {use reference [{Content-Signal: use=reference, ai-input=no 3}]}]" {
		t.Errorf("Labels = %s", got)
	}
	if p.Use() != "reference" || p.Get("use") != Unknown || p.Get("train-ai") != Disallowed {
		t.Errorf("Use = %q, Get(use) = %v, Get(train-ai) = %v", p.Use(), p.Get("use"), p.Get("train-ai"))
	}
	if got := usagetab.Of[Preference](tab, [4]usagetab.ID{c}, []usagetab.ID{e}).String(); got != "search=y, train-ai=n, use=full" {
		t.Errorf("a line and a tie: %q", got)
	}
	if tab.Size() <= 0 {
		t.Errorf("Size = %d", tab.Size())
	}
}

func TestLint(t *testing.T) {
	for _, tt := range []struct {
		k     Kind
		value string
		want  []string
	}{
		{ContentUsage, "/a train-ai=n, search=y", nil},
		{ContentSignal, "ai-train=no, search=yes", nil},
		{ContentUsage, "*.pdf train-ai=maybe", []string{`content-usage path "*.pdf" does not start with "/"`, `content-usage value of "train-ai" is maybe, not y or n: unknown`}},
		{ContentSignal, "/x", []string{"content-signal line has no statement; it states nothing"}},
		{ContentUsage, "Train-AI=n", []string{"content-usage statement has a key in upper case (keys are lower case): it does not parse and states nothing"}},
		{ContentSignal, "search=y", []string{`content-signal value of "search" is y, not yes or no: unknown`}},
		{ContentSignal, "use=reference, ai-input=no", nil},
		{ContentSignal, "use=all", []string{`content-signal value of "use" is all, not immediate, reference or full: unknown`}},
		{ContentUsage, "train-genai=n, search=maybe", []string{
			`content-usage label "train-genai" is from an earlier draft: draft-ietf-aipref-vocab-08 does not define it, so crawlers ignore it; instead write train-ai`,
			`content-usage value of "search" is maybe, not y or n: unknown`}},
	} {
		if got := Lint(tt.k, []byte(tt.value)); !slices.Equal(got, tt.want) {
			t.Errorf("Lint(%v, %q) = %q want %q", tt.k, tt.value, got, tt.want)
		}
	}
}

func TestStrings(t *testing.T) {
	if ContentUsage.String() != "Content-Usage" || ContentSignal.String() != "Content-Signal" {
		t.Error("Kind.String")
	}
	// A Kind converts to the Table's, and back.
	if usagetab.Kind(ContentUsage) != usagetab.ContentUsage || usagetab.Kind(ContentSignal) != usagetab.ContentSignal ||
		usagetab.ContentSignal.String() != ContentSignal.String() {
		t.Error("usagetab.Kind does not match Kind")
	}
	var got []string
	for v := Unknown; v <= Full; v++ {
		got = append(got, v.String())
	}
	if want := []string{"unknown", "y", "n", "immediate", "reference", "full"}; !slices.Equal(got, want) {
		t.Errorf("Value.String: %q", got)
	}
}

// A response's own Content-Usage header combines with what robots.txt
// says, label by label, "n" first.
func ExamplePreference_WithHeader() {
	p := Preference{}.WithHeader([]string{"train-ai=n, search=y"})
	fmt.Println(p, p.Get("train-ai"), p.Rules()[0].Rule)
	// Output: search=y, train-ai=n n Content-Usage: train-ai=n, search=y
}

// TestWithRule: a line added says its label, most restrictive first, and
// is named among the deciding lines in line order, before a header.
func TestWithRule(t *testing.T) {
	p := Preference{}.WithHeader([]string{"search=y"})
	p = p.WithRule("train-ai", Allowed, Rule{Rule: "Allow: /a", Line: 9})
	p = p.WithRule("train-ai", Disallowed, Rule{Rule: "Disallow: /a/b", Line: 4})
	if got := p.String(); got != "search=y, train-ai=n" {
		t.Errorf("String = %q", got)
	}
	if got, want := fmt.Sprint(p.Rules()), "[{Disallow: /a/b 4} {Allow: /a 9} {Content-Usage: search=y 0}]"; got != want {
		t.Errorf("Rules = %s want %s", got, want)
	}
	if got, want := fmt.Sprint(p.Labels()), "[{search y [{Content-Usage: search=y 0}]} {train-ai n [{Disallow: /a/b 4}]}]"; got != want {
		t.Errorf("Labels = %s want %s", got, want)
	}
	// A header added after keeps the lines.
	if q := p.WithHeader([]string{"search=n"}); q.String() != "search=n, train-ai=n" || len(q.Rules()) != 3 {
		t.Errorf("with a header after: %q %v", q, q.Rules())
	}
	// Nothing else is a value a line states.
	for _, v := range []Value{Unknown, Reference} {
		if q := (Preference{}).WithRule("train-ai", v, Rule{}); !q.IsZero() {
			t.Errorf("WithRule(%v) = %q", v, q)
		}
	}
	if q := (Preference{}).WithRule("", Disallowed, Rule{}); !q.IsZero() {
		t.Errorf("WithRule of no label = %q", q)
	}
	// p is a value: adding to a copy leaves it.
	_ = p.WithRule("ai-use", Disallowed, Rule{Rule: "Disallow: /", Line: 1})
	if p.Get("ai-use") != Unknown {
		t.Error("WithRule changed the Preference it was called on")
	}
}
