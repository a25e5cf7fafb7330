package matcher

import (
	"slices"
	"strings"
	"testing"
)

// License lines (RSL 1.0) are global: read wherever they stand, absolute
// http(s) URLs only, and they neither end nor join a group.
func TestLicenses(t *testing.T) {
	body := "License: https://example.com/license.xml\n" +
		"User-agent: ExampleBot\n" +
		"License: /relative/license.xml\n" +
		"License: https://cdn.example.net/rsl.xml\n" +
		"Licence: http://example.org/l.xml\n" +
		"License:\n" +
		"License: ftp://example.com/l.xml\n" +
		"User-agent: OtherBot\n" +
		"Disallow: /private\n"
	r := Parse([]byte(body))
	want := []string{"https://example.com/license.xml", "https://cdn.example.net/rsl.xml", "http://example.org/l.xml"}
	if got := r.Licenses(); !slices.Equal(got, want) {
		t.Errorf("Licenses() = %q, want %q", got, want)
	}
	// The License lines inside the group do not split it: ExampleBot and
	// OtherBot share the group.
	if r.Group("ExampleBot").Allowed("/private") {
		t.Error("a License line split the group")
	}
	if Parse([]byte("User-agent: *\nDisallow: /\n")).Licenses() != nil {
		t.Error("Licenses of a file without them is not nil")
	}
	rep := Lint([]byte(body))
	if !slices.Equal(rep.Licenses, want) {
		t.Errorf("Lint: Licenses %q, want %q", rep.Licenses, want)
	}
	var msgs []string
	for _, d := range rep.Diagnostics {
		msgs = append(msgs, d.String())
		if strings.Contains(d.Message, "unknown key") {
			t.Errorf("License called unknown: %s", d)
		}
	}
	all := strings.Join(msgs, "\n")
	for _, w := range []string{`line 3: license is not an absolute http or https URL`, `line 6: empty license value ignored`, `line 7: license is not an absolute`} {
		if !strings.Contains(all, w) {
			t.Errorf("Lint does not say %q:\n%s", w, all)
		}
	}
}
