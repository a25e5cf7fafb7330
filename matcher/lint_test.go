package matcher

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLint(t *testing.T) {
	body := "\xEF\xBB\xBFDisallow: /early\n" + // 1
		"User-agent: GoogleBot/2.1\n" + // 2
		"useragent: *\n" + // 3
		"dissallow: /a\n" + // 4
		"disallow /b\n" + // 5
		"Disallow:\n" + // 6
		"Allow: private\n" + // 7
		"Crawl-delay: soon\n" + // 8
		"Crawl-delay: 1.5\n" + // 9
		"Sitemap: /sitemap.xml\n" + // 10
		"Sitemap: https://example.com/s.xml\n" + // 11
		"Foo: bar\n" + // 12
		"<html>\n" + // 13
		"Disallow: /caf\xE9\n" + // 14
		"# only a comment\n" + // 15
		"User-agent: *Bot\n" + // 16
		"Allow: /\n" // 17
	rep := Lint([]byte(body))
	want := []struct {
		line    int
		message string // a word of it
	}{
		{1, "byte-order mark"},
		{1, "before any user-agent"},
		{2, `counts as "GoogleBot"`},
		{3, `"useragent" read as "user-agent"`},
		{4, `"dissallow" read as "disallow"`},
		{5, "missing colon"},
		{7, "matches nothing"},
		{8, "invalid crawl-delay"},
		{10, "not an absolute URL"},
		{12, `unknown key "Foo"`},
		{13, "unparseable"},
		{14, "UTF-8"},
		{14, "percent-encode them, as /caf%E9"},
		{16, "no product token"},
	}
	if len(rep.Diagnostics) != len(want) {
		for _, d := range rep.Diagnostics {
			t.Log(d)
		}
		t.Fatalf("Lint found %d diagnostics want %d", len(rep.Diagnostics), len(want))
	}
	for i, w := range want {
		d := rep.Diagnostics[i]
		if d.Line != w.line || !strings.Contains(d.Message, w.message) {
			t.Errorf("diagnostic %d = %v want line %d: %q", i, d, w.line, w.message)
		}
	}
	if d := rep.Diagnostics[4]; d.Text != "dissallow: /a" {
		t.Errorf("diagnostic Text = %q want the line as written", d.Text)
	}
	wantGroups := []GroupInfo{
		{Line: 2, Agents: []string{"googlebot", "*"}, Rules: 3, CrawlDelay: 1500 * time.Millisecond, HasCrawlDelay: true},
		{Line: 16, Agents: []string{""}, Rules: 1},
	}
	if len(rep.Groups) != len(wantGroups) {
		t.Fatalf("Groups = %+v want %+v", rep.Groups, wantGroups)
	}
	for i, g := range rep.Groups {
		w := wantGroups[i]
		if g.Line != w.Line || !slices.Equal(g.Agents, w.Agents) || g.Rules != w.Rules || g.CrawlDelay != w.CrawlDelay || g.HasCrawlDelay != w.HasCrawlDelay {
			t.Errorf("Groups[%d] = %+v want %+v", i, g, w)
		}
	}
	if want := []string{"/sitemap.xml", "https://example.com/s.xml"}; !slices.Equal(rep.Sitemaps, want) {
		t.Errorf("Sitemaps = %q want %q", rep.Sitemaps, want)
	}
	if !slices.Equal(rep.Sitemaps, Parse([]byte(body)).Sitemaps()) {
		t.Errorf("Lint and Parse disagree on sitemaps")
	}
	if rep.Size != len(body) {
		t.Errorf("Size = %d want %d", rep.Size, len(body))
	}
}

func TestLintClean(t *testing.T) {
	body := "User-agent: *\nDisallow: /private\nAllow: /private/ok\n\n# bye\nSitemap: https://example.com/s.xml\n"
	if rep := Lint([]byte(body)); len(rep.Diagnostics) != 0 {
		t.Errorf("Lint(clean file) = %v want no diagnostics", rep.Diagnostics)
	}
}

func TestLintSize(t *testing.T) {
	line := "# " + strings.Repeat("p", 97) + "\n" // 100 bytes
	body := "User-agent: *\n" + strings.Repeat(line, 6000) + "Disallow: /\n"
	rep := Lint([]byte(body))
	if len(rep.Diagnostics) != 1 {
		t.Fatalf("Lint = %v want one diagnostic", rep.Diagnostics)
	}
	// Byte 512000 lies on line 1 + 5120 (line 1 is 14 bytes).
	if d := rep.Diagnostics[0]; d.Line != 5121 || !strings.Contains(d.Message, "bytes") {
		t.Errorf("diagnostic = %v want the size on line 5121", d)
	}
	if len(Lint([]byte(body[:MaxSize])).Diagnostics) != 0 {
		t.Errorf("a body of exactly MaxSize bytes is reported")
	}
}

func TestLintUserAgentTokens(t *testing.T) {
	cases := []struct {
		value, agent, message string
	}{
		{"FooBot", "foobot", ""},
		{"*", "*", ""},
		{"* # all", "*", ""},
		{"* FooBot", "*", ""},
		{"FooBot/1.2", "foobot", `counts as "FooBot"`},
		{"Foo Bar", "foo", `counts as "Foo"`},
		{"MJ12bot", "mj12bot", ""},
		{"*FooBot", "", "no product token"},
		{"", "", "empty user-agent"},
	}
	for _, c := range cases {
		rep := Lint([]byte("User-agent: " + c.value + "\nDisallow: /\n"))
		msg := ""
		if len(rep.Diagnostics) > 0 {
			msg = rep.Diagnostics[0].Message
		}
		if len(rep.Groups) != 1 || !slices.Equal(rep.Groups[0].Agents, []string{c.agent}) {
			t.Errorf("User-agent: %s: groups %+v want agent %q", c.value, rep.Groups, c.agent)
		}
		if c.message == "" && len(rep.Diagnostics) != 0 || !strings.Contains(msg, c.message) {
			t.Errorf("User-agent: %s: diagnostics %v want %q", c.value, rep.Diagnostics, c.message)
		}
	}
}

// TestLintAllowAll: the most common robots.txt, an empty Disallow that allows
// everything, is not a problem.
func TestLintAllowAll(t *testing.T) {
	if r := Lint([]byte("User-agent: *\nDisallow:\n")); len(r.Diagnostics) != 0 {
		t.Errorf("diagnostics %v, want none", r.Diagnostics)
	}
	if r := Lint([]byte("User-agent: *\nAllow:\n")); len(r.Diagnostics) != 1 {
		t.Errorf("diagnostics %v, want the empty allow", r.Diagnostics)
	}
}
