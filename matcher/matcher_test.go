package matcher

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// allowedUnder parses "User-agent: *" followed by rules and reports whether
// path is allowed.
func allowedUnder(rules, path string) bool {
	return Parse([]byte("User-agent: *\n"+rules)).Allowed("AnyBot", path)
}

func TestPatterns(t *testing.T) {
	// The worked examples of path matching in Google's robots.txt
	// documentation.
	cases := []struct {
		pattern string
		matches []string
		not     []string
	}{
		{"/", []string{"/", "/index.html", "/a/b?c"}, nil},
		{"/$", []string{"/"}, []string{"/index.html", "/?q", "/a"}},
		{"/fish/", []string{"/fish/", "/fish/?id=anything", "/fish/salmon.htm"},
			[]string{"/fish", "/fish.html", "/animals/fish/", "/Fish/Salmon.asp"}},
		{"/fish", []string{"/fish", "/fish.html", "/fish/salmon.html", "/fishheads", "/fishheads/yummy.html", "/fish.php?id=anything"},
			[]string{"/Fish.asp", "/catfish", "/?id=fish", "/desert/fish"}},
		{"/fish*", []string{"/fish", "/fish.html", "/fish/salmon.html", "/fishheads", "/fish.php?id=anything"},
			[]string{"/Fish.asp", "/catfish", "/?id=fish", "/desert/fish"}},
		{"/*.php", []string{"/index.php", "/filename.php", "/folder/filename.php", "/folder/filename.php?parameters", "/folder/any.php.file.html", "/filename.php/"},
			[]string{"/", "/windows.PHP"}},
		{"/*.php$", []string{"/filename.php", "/folder/filename.php"},
			[]string{"/filename.php?parameters", "/filename.php/", "/filename.php5", "/windows.PHP"}},
		{"/fish*.php", []string{"/fish.php", "/fishheads/catfish.php?parameters"}, []string{"/Fish.PHP"}},
		{"*.gif$", []string{"/a/b.gif", "/.gif"}, []string{"/a.gif?x", "/a.GIF"}},
		{"/a**b", []string{"/ab", "/axxb", "/a/b/c"}, []string{"/a", "/ba"}},
		{"/a$b", []string{"/a$b", "/a%24b", "/a$bc"}, []string{"/a", "/ab"}},
		{"/a$$", []string{"/a$", "/a%24"}, []string{"/a", "/a$x"}},
		{"fish", nil, []string{"/fish", "fish"}}, // no leading "/" or "*": matches nothing
	}
	for _, c := range cases {
		for _, p := range c.matches {
			if allowedUnder("Disallow: "+c.pattern, p) {
				t.Errorf("pattern %q should match %q", c.pattern, p)
			}
		}
		for _, p := range c.not {
			if !allowedUnder("Disallow: "+c.pattern, p) {
				t.Errorf("pattern %q should not match %q", c.pattern, p)
			}
		}
	}
}

func TestPrecedence(t *testing.T) {
	// RFC 9309 §2.2.2: the longest pattern wins; allow wins a tie.
	cases := []struct {
		url   string
		rules string
		want  bool
	}{
		{"/page", "Allow: /p\nDisallow: /\n", true},
		{"/folder/page", "Allow: /folder\nDisallow: /folder\n", true},
		{"/folder/page", "Disallow: /folder\nAllow: /folder\n", true},
		{"/page.htm", "Allow: /page\nDisallow: /*.htm\n", false},
		{"/page.php5", "Allow: /page\nDisallow: /*.ph\n", true},
		{"/", "Allow: /$\nDisallow: /\n", true},
		{"/page.htm", "Allow: /$\nDisallow: /\n", false},
		{"/fish", "Disallow: /fish\nAllow: /fish*\n", true},     // "*" counts in the length
		{"/x", "Allow: /\nDisallow: /*\n", false},               // "/*" is longer than "/"
		{"/ab", "Disallow: /a**b\nAllow: /a*b\n", true},         // runs of "*" count as one: a tie
		{"/%E3%83%84", "Allow: /%E3%83\nDisallow: /ツ\n", false}, // the normalised length counts
		{"/x", "Disallow: /\nAllow:\n", false},                  // an empty rule never decides
		{"/anything", "", true},
	}
	for _, c := range cases {
		if got := allowedUnder(c.rules, c.url); got != c.want {
			t.Errorf("Allowed(%q) under %q = %v want %v", c.url, c.rules, got, c.want)
		}
	}
}

func TestNormalization(t *testing.T) {
	// Percent-encoding normalisation (RFC 9309 §2.2.2), for URLs and rules.
	cases := []struct {
		in, url, rule string
	}{
		{"/foo/bar?baz=quz", "/foo/bar?baz=quz", "/foo/bar?baz=quz"},
		{"/foo/bar/ツ", "/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84"},
		{"/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84"},
		{"/foo/bar/%62%61%7A", "/foo/bar/baz", "/foo/bar/baz"},
		{"/a%2fb", "/a%2Fb", "/a%2Fb"},
		{"/file-with-a-*.html", "/file-with-a-%2A.html", "/file-with-a-*.html"},
		{"/a$b$", "/a%24b%24", "/a%24b$"},
		{"/a**b***", "/a%2A%2Ab%2A%2A%2A", "/a*b*"},
		{"/100%", "/100%25", "/100%25"},
		{"/%zz%4", "/%25zz%254", "/%25zz%254"},
		{"/%7e%2D%5F%2e", "/~-_.", "/~-_."},
		{"/a b\"<>\\^`{|}\x7f\x01", "/a%20b%22%3C%3E%5C%5E%60%7B%7C%7D%7F%01", "/a%20b%22%3C%3E%5C%5E%60%7B%7C%7D%7F%01"},
		{"/:@!&'()+,;=", "/:@!&'()+,;=", "/:@!&'()+,;="},
		{"/%3a%3F", "/%3A%3F", "/%3A%3F"},
	}
	for _, c := range cases {
		if got := string(appendNormURL(nil, c.in)); got != c.url {
			t.Errorf("URL %q normalises to %q want %q", c.in, got, c.url)
		}
		if got := string(appendNormRule(nil, []byte(c.in))); got != c.rule {
			t.Errorf("rule %q normalises to %q want %q", c.in, got, c.rule)
		}
		if got := normalPath(c.in); got != c.url {
			t.Errorf("normalPath(%q) = %q want %q", c.in, got, c.url)
		}
	}
	// And so, end to end:
	matches := []struct{ rule, url string }{
		{"/foo/bar/%62%61%7A", "https://example.com/foo/bar/baz"},
		{"/foo/bar/baz", "https://example.com/foo/bar/%62%61%7a"},
		{"/a%2fb", "https://example.com/a%2Fb"},
		{"/ツ", "https://example.com/%E3%83%84"},
		{"/%e3%83%84", "https://example.com/ツ"},
		{"/file-with-a-%2A.html", "https://example.com/file-with-a-*.html"},
		{"/price-%24", "https://example.com/price-$"},
		{"/a b", "https://example.com/a%20b"},
	}
	for _, c := range matches {
		if allowedUnder("Disallow: "+c.rule+"\n", c.url) {
			t.Errorf("rule %q should match %q", c.rule, c.url)
		}
	}
	notMatches := []struct{ rule, url string }{
		{"/a%2fb", "https://example.com/a/b"}, // "/" is reserved: %2F stays encoded
		{"/foo?baz=https%3A%2F%2Ffoo.bar", "https://example.com/foo?baz=https://foo.bar"},
		{"/file-with-a-%2A.html", "https://example.com/file-with-a-x.html"},
	}
	for _, c := range notMatches {
		if !allowedUnder("Disallow: "+c.rule+"\n", c.url) {
			t.Errorf("rule %q should not match %q", c.rule, c.url)
		}
	}
}

func TestURLForms(t *testing.T) {
	cases := []struct {
		url, want string
	}{
		{"https://example.com/a/b?c=d#frag", "/a/b?c=d"},
		{"https://example.com", "/"},
		{"https://example.com#frag", "/"},
		{"https://example.com?q=1", "/?q=1"},
		{"http://user:pass@example.com:8080/x", "/x"},
		{"HTTP://EXAMPLE.COM/Path", "/Path"},
		{"//example.com/x?y", "/x?y"},
		{"/a/../b", "/a/../b"}, // dot segments are not removed
		{"/a;x=1", "/a;x=1"},
		{"/p?u=http://other/", "/p?u=http://other/"},
		{"a/b", "a/b"},
		{"", "/"},
		{"#top", "/"},
		{"?q", "/?q"},
		{"http://example.com#f?x", "/"},
		{"http://example.com/a?b#c?d", "/a?b"},
		{"/%7e/a b#f", "/~/a%20b"},
		{"https://example.com?a*b", "/?a%2Ab"},
	}
	for _, c := range cases {
		if got := normalPath(c.url); got != c.want {
			t.Errorf("normalPath(%q) = %q want %q", c.url, got, c.want)
		}
	}
}

func TestRobotsTxtAlwaysAllowed(t *testing.T) {
	r := Parse([]byte("User-agent: *\nDisallow: /\nDisallow: /robots.txt$\n"))
	for _, u := range []string{"/robots.txt", "https://example.com/robots.txt", "/robots%2Etxt", "http://x/robots.txt#f"} {
		if m := r.Match("AnyBot", u); m != (Match{Allowed: true}) {
			t.Errorf("Match(%q) = %+v want allowed by no rule", u, m)
		}
	}
	for _, u := range []string{"/robots.txt?x", "/robots.txt/", "/folder/robots.txt", "/ROBOTS.TXT"} {
		if r.Allowed("AnyBot", u) {
			t.Errorf("Allowed(%q) = true want false", u)
		}
	}
}

func TestGroups(t *testing.T) {
	// Which groups a crawler obeys (RFC 9309 §2.2.1).
	google := `user-agent: googlebot-news
disallow: /news-only

user-agent: *
disallow: /star-only

user-agent: googlebot
disallow: /googlebot-only
`
	mixed := `User-agent: A
Sitemap: https://example.com/sitemap.xml
Crawl-delay: 1
User-agent: B
Disallow: /ab

Disallow: /before-c

User-agent: c
User-agent: d
Disallow: /cd
User-agent: a
Disallow: /a2

User-agent: *
Disallow: /star1
User-agent: *
Disallow: /star2
`
	cases := []struct {
		body, agent, url string
		want             bool
	}{
		{google, "Googlebot-News", "/news-only", false},
		{google, "Googlebot-News", "/googlebot-only", true},
		{google, "Googlebot-News", "/star-only", true},
		{google, "Googlebot", "/googlebot-only", false},
		{google, "Googlebot", "/news-only", true},
		{google, "Storebot-Google", "/star-only", false},
		{google, "Storebot-Google", "/googlebot-only", true},
		{google, "OtherBot", "/star-only", false},
		{google, "googlebot/2.1", "/star-only", false}, // the caller's token is compared whole
		{google, "googlebot/2.1", "/googlebot-only", true},
		{google, "Googlebot-", "/star-only", false},

		{mixed, "a", "/ab", false},       // sitemap and crawl-delay lines do not end a group
		{mixed, "b", "/ab", false},       //
		{mixed, "a", "/a2", false},       // groups naming the crawler are combined
		{mixed, "b", "/a2", true},        //
		{mixed, "a", "/before-c", false}, // blank lines do not end a group either
		{mixed, "C", "/cd", false},
		{mixed, "D", "/ab", true},
		{mixed, "e", "/star1", false}, // "*" groups are combined
		{mixed, "e", "/star2", false},
		{mixed, "a", "/star1", true}, // and never with specific ones

		{"Disallow: /\nUser-agent: x\nAllow: /y\n", "x", "/z", true}, // rules before any user-agent are ignored
		{"Disallow: /\n", "x", "/z", true},
		{"User-agent: x\nDisallow: /\n", "y", "/z", true}, // no group and no "*": allowed

		// Product tokens in the file: the leading run of a-zA-Z0-9_-.
		{"User-agent: FooBot/1.2\nDisallow: /\n", "foobot", "/", false},
		{"User-agent: FooBot*\nDisallow: /\n", "FooBot", "/", false},
		{"User-agent: Foo Bar\nDisallow: /\n", "Foo", "/", false},
		{"User-agent: Foo Bar\nDisallow: /\n", "Foo Bar", "/", true},
		{"User-agent: MJ12bot\nDisallow: /\n", "MJ12bot", "/", false},
		{"User-agent: MJ12bot\nDisallow: /\n", "MJ", "/", true},
		{"User-agent: 360Spider\nDisallow: /\n", "360spider", "/", false},
		{"User-agent: Foo_Bar-2\nDisallow: /\n", "foo_bar-2", "/", false},
		{"User-agent: FooBot-Image\nDisallow: /\n", "FooBot", "/", true},
		{"User-agent: * FooBot\nDisallow: /\n", "BarBot", "/", false},
		{"User-agent: *\tFooBot\nDisallow: /\n", "BarBot", "/", false},
		{"User-agent: *FooBot\nDisallow: /\n", "BarBot", "/", true},
		{"User-agent: *FooBot\nDisallow: /\n", "FooBot", "/", true},

		// A specific group with no rules, or only empty ones, allows everything.
		{"User-agent: *\nDisallow: /\nUser-agent: FooBot\n", "FooBot", "/x", true},
		{"User-agent: *\nDisallow: /\nUser-agent: FooBot\nDisallow:\n", "FooBot", "/x", true},
	}
	for _, c := range cases {
		if got := Parse([]byte(c.body)).Allowed(c.agent, c.url); got != c.want {
			t.Errorf("Allowed(%q, %q) = %v want %v, robots.txt:\n%s", c.agent, c.url, got, c.want, c.body)
		}
	}
}

func TestGroupNeverNil(t *testing.T) {
	for _, body := range []string{"", "User-agent: a\nDisallow: /\n", "<html><body>Not found</body></html>"} {
		r := Parse([]byte(body))
		for _, agent := range []string{"", "a", "b", "*"} {
			g := r.Group(agent)
			if g == nil {
				t.Fatalf("Group(%q) = nil for %q", agent, body)
			}
			if d, ok := g.CrawlDelay(); ok || d != 0 {
				t.Errorf("CrawlDelay() = %v, %v want 0, false", d, ok)
			}
		}
	}
}

func TestLeniency(t *testing.T) {
	// The file format, read leniently (RFC 9309 §2.2). Each body should
	// disallow /x for FooBot.
	cases := []struct {
		name string
		body string
		want bool
	}{
		{"canonical", "user-agent: FooBot\ndisallow: /x\n", false},
		{"case", "USER-AGENT: FooBot\nDisAllow: /x\n", false},
		{"useragent", "useragent: FooBot\ndisallow: /x\n", false},
		{"user agent", "user agent: FooBot\ndisallow: /x\n", false},
		{"user-agents", "user-agents: FooBot\ndisallow: /x\n", false},
		{"dissallow", "user-agent: FooBot\ndissallow: /x\n", false},
		{"dissalow", "user-agent: FooBot\ndissalow: /x\n", false},
		{"disalow", "user-agent: FooBot\ndisalow: /x\n", false},
		{"diasllow", "user-agent: FooBot\ndiasllow: /x\n", false},
		{"disallaw", "user-agent: FooBot\ndisallaw: /x\n", false},
		{"disallowed", "user-agent: FooBot\ndisallowed: /x\n", false},
		{"alow is not allow", "user-agent: FooBot\ndisallow: /\nalow: /x\n", false},
		{"allowance is allow", "user-agent: FooBot\ndisallow: /\nallowance: /x\n", true},
		{"no colon", "user-agent FooBot\ndisallow /x\n", false},
		{"no colon, three words", "user-agent: FooBot\ndisallow /x y\n", true},
		{"no colon, one word", "user-agent: FooBot\ndisallow\n", true},
		{"first colon separates", "user-agent: FooBot\ndisallow /y:/x\n", false},
		{"space around colon", "user-agent \t : \t FooBot\ndisallow   :   /x   \n", false},
		{"VT FF", "user-agent:\vFooBot\f\ndisallow:\v/x\n", false},
		{"comment", "# hello\nuser-agent: FooBot # me\ndisallow: /x#y\n", false},
		{"comment hides rule", "user-agent: FooBot\n# disallow: /x\n", true},
		{"CR", "user-agent: FooBot\rdisallow: /x\r", false},
		{"CRLF", "user-agent: FooBot\r\ndisallow: /x\r\n", false},
		{"mixed ends", "user-agent: FooBot\r\rdisallow: /y\n\r\ndisallow: /x", false},
		{"no final newline", "user-agent: FooBot\ndisallow: /x", false},
		{"BOM", "\xEF\xBB\xBFuser-agent: FooBot\ndisallow: /x\n", false},
		{"BOM prefix", "\xEF\xBBuser-agent: FooBot\ndisallow: /x\n", false},
		{"BOM prefix 1", "\xEFuser-agent: FooBot\ndisallow: /x\n", false},
		{"two BOMs", "\xEF\xBB\xBF\xEF\xBB\xBFuser-agent: FooBot\ndisallow: /x\n", true},
		{"BOM mid-file", "user-agent: FooBot\n\xEF\xBB\xBFdisallow: /x\n", true},
		{"NUL ends the line", "user-agent: FooBot\ndisallow: /x\x00yz\n", false},
		{"HTML around rules", "<html><pre>\nuser-agent: FooBot\ndisallow: /x\n</pre></html>\n", false},
		{"unknown keys", "foo: FooBot\nbar: /x\n", true},
		{"empty key", ": FooBot\ndisallow: /x\n", true},
		{"value case kept", "user-agent: FooBot\ndisallow: /X\n", true},
	}
	for _, c := range cases {
		if got := Parse([]byte(c.body)).Allowed("FooBot", "/x"); got != c.want {
			t.Errorf("%s: Allowed(/x) = %v want %v, robots.txt:\n%q", c.name, got, c.want, c.body)
		}
	}
}

func TestMatchRule(t *testing.T) {
	body := "User-agent: *\nDisallow: /private\ndisallow:/a%2fb**c$\nALLOW: /private/ok\nAllow: /ツ\n"
	cases := []struct {
		url  string
		want Match
	}{
		{"/private/x", Match{false, "Disallow: /private", 2}},
		{"/private/ok/1", Match{true, "Allow: /private/ok", 4}},
		{"/a%2Fbxc", Match{false, "Disallow: /a%2fb**c$", 3}},
		{"/%E3%83%84", Match{true, "Allow: /ツ", 5}},
		{"/public", Match{Allowed: true}},
	}
	r := Parse([]byte(body))
	for _, c := range cases {
		if got := r.Match("x", c.url); got != c.want {
			t.Errorf("Match(%q) = %+v want %+v", c.url, got, c.want)
		}
	}
}

func TestCrawlDelay(t *testing.T) {
	cases := []struct {
		body  string
		agent string
		want  time.Duration
		ok    bool
	}{
		{"User-agent: *\nCrawl-delay: 10\n", "x", 10 * time.Second, true},
		{"User-agent: *\nCrawl-delay: 0.5\n", "x", 500 * time.Millisecond, true},
		{"User-agent: *\nCrawl-delay: .25\n", "x", 250 * time.Millisecond, true},
		{"User-agent: *\nCrawl-delay: 0\n", "x", 0, true},
		{"User-agent: *\ncrawl-delay: 2.0000000001\n", "x", 2 * time.Second, true},
		{"User-agent: *\nCrawldelay: 3\n", "x", 3 * time.Second, true},
		{"User-agent: *\nCrawl-delay 4\n", "x", 4 * time.Second, true},
		{"User-agent: *\nCrawl-delay: -1\n", "x", 0, false},
		{"User-agent: *\nCrawl-delay: NaN\n", "x", 0, false},
		{"User-agent: *\nCrawl-delay: 1e3\n", "x", 1000 * time.Second, true},
		{"User-agent: *\nCrawl-delay: 1e308\n", "x", math.MaxInt64, true}, // the longest: capped by the Transport
		{"User-agent: *\nCrawl-delay: 2.5E-1\n", "x", 250 * time.Millisecond, true},
		{"User-agent: *\nCrawl-delay: -5\n", "x", 0, false},
		{"User-agent: *\nCrawl-delay: -1e3\n", "x", 0, false},
		{"User-agent: *\nCrawl-delay: 1e\n", "x", 0, false},
		{"User-agent: *\nCrawl-delay: 10s\n", "x", 0, false},
		{"User-agent: *\nCrawl-delay: .\n", "x", 0, false},
		{"User-agent: *\nCrawl-delay:\n", "x", 0, false},
		{"User-agent: *\nCrawl-delay: 99999999999999999999\n", "x", math.MaxInt64, true},
		{"Crawl-delay: 5\nUser-agent: *\n", "x", 0, false}, // before any group
		{"User-agent: *\nCrawl-delay: 2\nCrawl-delay: 7\nCrawl-delay: 1\n", "x", 7 * time.Second, true},
		{"User-agent: a\nCrawl-delay: 2\nDisallow: /\nUser-agent: a\nCrawl-delay: 5\n", "a", 5 * time.Second, true},
		{"User-agent: a\nCrawl-delay: 2\nDisallow: /a\nUser-agent: *\nDisallow: /\nCrawl-delay: 9\n", "a", 2 * time.Second, true},
		{"User-agent: a\nCrawl-delay: 2\nDisallow: /a\nUser-agent: *\nDisallow: /\nCrawl-delay: 9\n", "b", 9 * time.Second, true},
		{"User-agent: a\nCrawl-delay: 2\nUser-agent: *\nDisallow: /\nCrawl-delay: 9\n", "a", 9 * time.Second, true}, // one group
		{"User-agent: a\nCrawl-delay: 2\n", "b", 0, false},
	}
	for _, c := range cases {
		d, ok := Parse([]byte(c.body)).Group(c.agent).CrawlDelay()
		if d != c.want || ok != c.ok {
			t.Errorf("CrawlDelay() = %v, %v want %v, %v, robots.txt:\n%s", d, ok, c.want, c.ok, c.body)
		}
	}
}

func TestSitemaps(t *testing.T) {
	body := "Sitemap: https://example.com/a.xml\nUser-agent: *\nsite-map: https://example.com/b.xml # comment\nDisallow: /\nSitemap:\nSITEMAP: /relative.xml\n"
	r := Parse([]byte(body))
	want := []string{"https://example.com/a.xml", "https://example.com/b.xml", "/relative.xml"}
	got := r.Sitemaps()
	if !slices.Equal(got, want) {
		t.Fatalf("Sitemaps() = %q want %q", got, want)
	}
	got[0] = "changed"
	if r.Sitemaps()[0] != want[0] {
		t.Errorf("Sitemaps() returned the Robots' own slice")
	}
	if got := Parse(nil).Sitemaps(); len(got) != 0 {
		t.Errorf("Sitemaps() of an empty file = %q", got)
	}
}

func TestLongLinesAndBigFiles(t *testing.T) {
	// No line-length cap, and no parse-size cap: the 500 KiB read limit is
	// the fetcher's (see Parse).
	long := "/" + strings.Repeat("a", 100_000)
	r := Parse([]byte("User-agent: *\nDisallow: " + long + "b\n"))
	if !r.Allowed("x", long) || r.Allowed("x", long+"b") {
		t.Errorf("a 100 kB rule is not matched exactly")
	}
	filler := strings.Repeat("# "+strings.Repeat("p", 98)+"\n", 6000) // 600 kB
	r = Parse([]byte("User-agent: *\n" + filler + "Disallow: /\n"))
	if r.Allowed("x", "/y") {
		t.Errorf("a rule after 600 kB of comments is ignored")
	}
}

func TestBacktracking(t *testing.T) {
	// Greedy segment matching needs no backtracking.
	r := Parse([]byte("User-agent: *\nDisallow: /*a*a*a*a*a*a*a*a*a*a*b\nDisallow: /*a*a*a*a*a*a*a*a*a*a*c$\n"))
	path := "/" + strings.Repeat("a", 2000)
	if !r.Allowed("x", path) {
		t.Errorf("matched without a b or c")
	}
	if r.Allowed("x", path+"b") || r.Allowed("x", path+"c") {
		t.Errorf("not matched with a b or c")
	}
	if !r.Allowed("x", path+"cx") {
		t.Errorf("$ ignored")
	}
}

func TestManyAgents(t *testing.T) {
	// Tokens that share long prefixes, in a file naming many crawlers, each
	// with a rule of its own.
	var b strings.Builder
	var agents []string
	for i := range 300 {
		agent := fmt.Sprintf("Bot%03d", i)
		switch i % 4 {
		case 1:
			agent = "googlebot-" + agent
		case 2:
			agent = "Googlebot-" + agent + "-Extra"
		}
		agents = append(agents, agent)
		fmt.Fprintf(&b, "User-agent: %s\nDisallow: /%s\n\n", agent, strings.ToLower(agent))
	}
	b.WriteString("User-agent: googlebot\nDisallow: /g\nUser-agent: *\nDisallow: /star\n")
	r := Parse([]byte(b.String()))
	for _, agent := range agents {
		for _, a := range []string{agent, strings.ToUpper(agent), strings.ToLower(agent)} {
			if r.Allowed(a, "/"+strings.ToLower(agent)) || !r.Allowed(a, "/star") {
				t.Errorf("agent %q does not get its own group", a)
			}
		}
		if !r.Allowed(agent+"x", "/"+strings.ToLower(agent)) || r.Allowed(agent+"x", "/star") {
			t.Errorf("agent %q gets the group of %q", agent+"x", agent)
		}
	}
	if r.Allowed("GoogleBot", "/g") || !r.Allowed("googlebo", "/g") || !r.Allowed("googlebot-", "/g") {
		t.Errorf("googlebot's group is not exactly googlebot's")
	}
}

func TestConcurrentUse(t *testing.T) {
	// Groups are indexed on first use; many goroutines may get there at
	// once. Run with -race.
	var b strings.Builder
	b.WriteString("User-agent: a\nUser-agent: b\n")
	for i := range 100 {
		fmt.Fprintf(&b, "Disallow: /%d/\nAllow: /%d/*.html$\n", i, i)
	}
	b.WriteString("User-agent: *\nDisallow: /private\n")
	body := []byte(b.String())
	urls := []string{"/1/x", "/1/x.html", "/99/", "/private", "/public"}
	want := make(map[string]bool)
	for _, agent := range []string{"a", "b", "c"} {
		for _, u := range urls {
			want[agent+u] = Parse(body).Allowed(agent, u)
		}
	}
	r := Parse(body)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for _, agent := range []string{"a", "b", "c"} {
				for _, u := range urls {
					if got := r.Allowed(agent, u); got != want[agent+u] {
						t.Errorf("Allowed(%q, %q) = %v want %v", agent, u, got, want[agent+u])
					}
				}
			}
		})
	}
	wg.Wait()
}

func TestKeyFold8(t *testing.T) {
	for c := 0; c < 256; c++ {
		for _, s := range []string{string(rune(0)) + "x", "ab", "abcdefgh", "AbCdEfGhIj"} {
			s = strings.Replace(s, "b", string([]byte{byte(c)}), 1)
			want := uint64(0)
			for i := range 8 {
				want <<= 8
				if i < len(s) {
					b := s[i]
					if 'A' <= b && b <= 'Z' {
						b += 'a' - 'A'
					}
					want |= uint64(b)
				}
			}
			if got := keyFold8(s); got != want {
				t.Fatalf("keyFold8(%q) = %#x want %#x", s, got, want)
			}
		}
	}
}

func TestGroupLines(t *testing.T) {
	body := []byte("# groups\n" +
		"user-agent: a\n" + // 2
		"user-agent: b\n" +
		"disallow: /x\n" +
		"\n" +
		"user-agent: *\n" + // 6
		"disallow: /\n" +
		"user-agent: a\n" + // 8
		"allow: /y\n" +
		"user-agent: c\n" + // 10
		"sitemap: https://example.com/s.xml\n" +
		"user-agent: *\n" +
		"crawl-delay: 1\n")
	cases := []struct {
		agent string
		want  []int
	}{
		{"a", []int{2, 8}},
		{"B", []int{2}},
		{"c", []int{10}},
		{"other", []int{6, 10}},
	}
	r := Parse(body)
	for _, c := range cases {
		if got := r.Group(c.agent).Lines(); !slices.Equal(got, c.want) {
			t.Errorf("Group(%q).Lines() = %v want %v", c.agent, got, c.want)
		}
	}
	// The lines are those Lint reports for the groups.
	var lintLines []int
	for _, g := range Lint(body).Groups {
		lintLines = append(lintLines, g.Line)
	}
	if want := []int{2, 6, 8, 10}; !slices.Equal(lintLines, want) {
		t.Errorf("Lint groups at lines %v want %v", lintLines, want)
	}
	if got := Parse([]byte("disallow: /\n")).Group("a").Lines(); got != nil {
		t.Errorf("Lines() with no group = %v want nil", got)
	}
}

// TestManyRulesOnOnePrefix: a prefix shared by many rules of one kind (all
// plain, all exact, all wild, or mixed) is matched without reading past the
// group's rules, as the reference matcher would.
func TestManyRulesOnOnePrefix(t *testing.T) {
	for _, shape := range [][]refRule{
		{{pattern: "/private/ok-but-cut", allow: true}},
		{{pattern: "/x$"}},
		{{pattern: "/x*y"}},
		{{pattern: "/x", allow: true}, {pattern: "/x$"}},
	} {
		rules := []refRule{{pattern: "/private/"}}
		for range 40 {
			rules = append(rules, shape...)
		}
		for i := range 20 {
			rules = append(rules, refRule{pattern: fmt.Sprintf("/other%d", i)})
		}
		for i := range rules {
			rules[i].line = i + 2
		}
		r := Parse(refBody(rules))
		for _, p := range []string{"/private/ok-but-cut", "/private/ok-but-cut/z", "/x", "/xay", "/x/", "/private/no", "/"} {
			if got, want := r.Allowed("bot", p), refMatch(rules, p).Allowed; got != want {
				t.Errorf("%q, rules %v×40: Allowed = %v, reference %v", p, shape, got, want)
			}
		}
	}
}

// TestRuleAsWritten checks that Match reports a rule exactly as written,
// whether its normalised pattern is the same, decodes to it, or needs an
// edit to give it back.
func TestRuleAsWritten(t *testing.T) {
	var modes [3]int // kept as normalised, decoded, edited
	for _, pat := range []string{
		"/a", "/a b\"", "/\x80\x81\x82", "/ツ", "/%%", "/a%", "/a%2", "/a%41", "/%2541", "/%25", "/a$$", "/a$", "/a%24",
		"/%af", "/%Af", "/%aF", "/%2f/%2F", "/**a", "/a***$", "*%61", "/%7e%7E~", "/a%20b c", "/a%2x%", "/%e3%83%84ツ",
	} {
		body := "User-agent: *\nDisallow: " + pat + "\n"
		r := Parse([]byte(body))
		checkWritten(t, []byte(body), r)
		m := r.Match("bot", "/")
		if len(r.rules) != 1 {
			t.Fatalf("%q: %d rules", pat, len(r.rules))
		}
		switch rl := &r.rules[0]; {
		case rl.written():
			modes[2]++
		case rl.decoded():
			modes[1]++
		default:
			modes[0]++
		}
		var b strings.Builder
		r.rules[0].writeWritten(&b, r.arena)
		if b.String() != pat {
			t.Errorf("%q: as written %q", pat, b.String())
		}
		for _, u := range []string{"/", "/a", "/a b%22", "/%80%81%82", "/ツ"} {
			if m = r.Match("bot", u); !m.Allowed && m.Rule != "Disallow: "+pat {
				t.Errorf("%q: Match(%q).Rule = %q", pat, u, m.Rule)
			}
		}
	}
	if modes[0] == 0 || modes[1] == 0 || modes[2] == 0 {
		t.Errorf("patterns kept as normalised, decoded, edited: %v; want some of each", modes)
	}
	t.Logf("patterns kept as normalised, decoded, edited: %v", modes)
}

// TestRuleLines checks the line numbers that Match and usage Rules report
// when rules lie close together and far apart: each rule's line is kept as
// a byte counted from a mark, and a new mark starts after 255 lines.
func TestRuleLines(t *testing.T) {
	var b strings.Builder
	line := 0
	add := func(s string) {
		b.WriteString(s)
		line++
	}
	add("User-agent: *\n")
	want := map[string]int{}
	gaps := []int{0, 0, 1, 253, 254, 255, 256, 0, 257, 1000, 0, 70000, 3, 511, 512}
	for i := range 40 { // more than linearMax: the group is indexed
		for range gaps[i%len(gaps)] {
			add("# comment\n")
		}
		p := fmt.Sprintf("/r%d/", i)
		add("Disallow: " + p + "\n")
		want[p] = line
		if i%7 == 0 { // a usage rule of a path that is allowed
			u := fmt.Sprintf("/u%d/", i)
			add("Content-Usage: " + u + " train-ai=n\n")
			want["usage "+u] = line
		}
	}
	r := Parse([]byte(b.String()))
	for p, l := range want {
		if u, ok := strings.CutPrefix(p, "usage "); ok {
			if got := r.Usage("bot", u+"x").Rules(); len(got) != 1 || got[0].Line != l {
				t.Errorf("Usage(%q).Rules() = %v want line %d", u, got, l)
			}
			continue
		}
		if m := r.Match("bot", p+"x"); m.Rule != "Disallow: "+p || m.Line != l {
			t.Errorf("Match(%q) = %+v want line %d", p, m, l)
		}
	}
}

// TestCapPattern checks how a pattern longer than a rule holds is cut: an
// allow rule is dropped, a disallow rule keeps a prefix with no escape cut
// in two, which matches every path the whole does.
func TestCapPattern(t *testing.T) {
	const pat = "/ab%2Fc*d$"
	for _, c := range []struct {
		limit int
		want  string
	}{
		{3, "/ab"}, {4, "/ab"}, {5, "/ab"}, {6, "/ab%2F"}, {7, "/ab%2Fc"}, {8, "/ab%2Fc*"}, {9, "/ab%2Fc*d"},
	} {
		arena := []byte("xy" + pat)
		got, ok := capPattern(arena, 2, c.limit, false)
		if !ok || string(got) != "xy"+c.want {
			t.Errorf("limit %d: %q, %v want %q", c.limit, got[2:], ok, c.want)
		}
		disallow := Parse([]byte("user-agent: *\ndisallow: " + pat + "\n"))
		cut := Parse([]byte("user-agent: *\ndisallow: " + c.want + "\n"))
		for _, u := range []string{"/ab/cd", "/ab%2fcd", "/ab%2Fcxd", "/ab%2Fc", "/a"} {
			if !disallow.Allowed("bot", u) && cut.Allowed("bot", u) {
				t.Errorf("limit %d: %q allows %s, which %q disallows", c.limit, c.want, u, pat)
			}
		}
		if got, ok := capPattern([]byte("xy"+pat), 2, c.limit, true); ok || string(got) != "xy" {
			t.Errorf("limit %d: an allow rule is kept as %q", c.limit, got)
		}
	}
}

// TestLongPatterns checks patterns at and past the longest a rule holds,
// and wildcard patterns whose literal prefix is too long for the rule
// record to hold its length.
func TestLongPatterns(t *testing.T) {
	long := "/" + strings.Repeat("a", maxPattern) // one byte past the cap
	r := Parse([]byte("user-agent: *\nallow: " + long + "\ndisallow: " + long + "\n"))
	if got := r.Match("bot", long); got.Allowed || got.Line != 3 {
		t.Errorf("a disallow past the cap, cut: %+v, want refused by line 3", Match{Allowed: got.Allowed, Line: got.Line})
	}
	if r.Allowed("bot", long[:maxPattern]) {
		t.Errorf("the cut disallow does not refuse its own first %d bytes", maxPattern)
	}
	// Literal prefixes of 254 bytes (held in the record) and 255 and more
	// (searched for), each with a path it matches and one it does not.
	for _, n := range []int{1, 254, 255, 256, 1000} {
		lit := "/" + strings.Repeat("b", n-1)
		r := Parse([]byte("user-agent: *\ndisallow: " + lit + "*x\nallow: " + lit + "*\n"))
		if r.Allowed("bot", lit+"yyx") || !r.Allowed("bot", lit+"yy") || !r.Allowed("bot", lit[:n-1]+"cx") {
			t.Errorf("literal of %d bytes: wrong verdicts", n)
		}
		if got := r.rules[0].lit(r.arena); int(got) != n {
			t.Errorf("literal of %d bytes: lit = %d", n, got)
		}
	}
}

// byPrints reports whether g is scanned by its rules' prints: a group of
// up to linearMax rules, or a larger one that its first use found few
// candidates in. It is false for a larger group before its first use.
func (g *Group) byPrints() bool {
	if g.scanned() {
		return true
	}
	ix := g.idx.Load()
	return ix != nil && ix.prints != ""
}

// TestConcurrentFirstUse has goroutines use, for the first time and at
// once, groups of more than linearMax rules, which are sorted and scanned
// or indexed on first use, and small groups. Run with -race.
func TestConcurrentFirstUse(t *testing.T) {
	var b strings.Builder
	for g := range 4 {
		fmt.Fprintf(&b, "User-agent: mid%d\n", g)
		n := 20 + 10*g // scanned
		if g%2 == 0 {
			n = scanMax/2 + 1 + 10*g // indexed
		}
		for i := range n {
			fmt.Fprintf(&b, "Disallow: /%c%c/%d\nAllow: /%c%c/%d/*.html$\n", 'a'+i%26, 'a'+g, i, 'a'+i%26, 'a'+g, i)
		}
		fmt.Fprintf(&b, "User-agent: small%d\nDisallow: /%c\nAllow: /%c/ok\n", g, 'a'+g, 'a'+g)
	}
	// A "*" group whose best rule for /aa/0/star comes after a worse one
	// in the file: scanned before it is sorted, it would decide wrong.
	b.WriteString("User-agent: *\nDisallow: /private\nDisallow: /aa\n")
	for i := range scanMax {
		fmt.Fprintf(&b, "Allow: /%c%c/%d/star\n", 'a'+i%26, 'a'+i%4, i)
	}
	body := []byte(b.String())
	agents := []string{"mid0", "mid1", "mid2", "mid3", "small0", "small1", "small2", "small3", "other"}
	var urls []string
	for i := range 30 {
		urls = append(urls, fmt.Sprintf("/%c%c/%d", 'a'+i%26, 'a'+i%4, i), fmt.Sprintf("/%c%c/%d/x.html", 'a'+i%26, 'a'+i%4, i))
	}
	urls = append(urls, "/", "/a", "/b/ok", "/private", "/aa/0/star", "/bb/1/star", "/ca/2/star")
	ref := Parse(body)
	want := make(map[string]Match)
	for _, a := range agents {
		for _, u := range urls {
			want[a+u] = ref.Match(a, u)
		}
	}
	if !want["other/aa/0/star"].Allowed {
		t.Fatal("reference: /aa/0/star not allowed to other")
	}
	r := Parse(body)
	for _, a := range []string{"mid0", "mid1", "other"} {
		if g := r.Group(a); !g.indexed() || g.byPrints() {
			t.Fatalf("the group of %s, of %d rules, is decided before its first use", a, g.hi-g.lo)
		}
	}
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Go(func() {
			for k := range agents {
				a := agents[(k+w)%len(agents)]
				for _, u := range urls {
					m := want[a+u]
					if got := r.Allowed(a, u); got != m.Allowed {
						t.Errorf("Allowed(%q, %q) = %v want %v", a, u, got, m.Allowed)
					}
					if got := r.Match(a, u); got != m {
						t.Errorf("Match(%q, %q) = %+v want %+v", a, u, got, m)
					}
				}
			}
		})
	}
	wg.Wait()
	// Both ways of a first use were taken.
	for a, scanned := range map[string]bool{"mid0": false, "mid1": true, "mid2": false, "mid3": true, "other": false} {
		if g := r.Group(a); g.byPrints() != scanned {
			t.Errorf("the group of %s, of %d rules: scanned %v, want %v", a, g.hi-g.lo, g.byPrints(), scanned)
		}
	}
}

// TestConcurrentFirstUseOfStar has many goroutines ask a freshly parsed
// file, at once, for agents it does not name, whose "*" group of more than
// linearMax rules is sorted and found scanned on that first use, with its
// best rule for some URLs after worse ones in the file. Run with -race.
func TestConcurrentFirstUseOfStar(t *testing.T) {
	var b strings.Builder
	b.WriteString("User-agent: named\nDisallow: /\nUser-agent: *\nDisallow: /aa\nDisallow: /private\n")
	for i := range 60 {
		fmt.Fprintf(&b, "Allow: /%c%c/%d/star\nDisallow: /%c%c/%d/star/no\n", 'a'+i%26, 'a'+i%4, i, 'a'+i%26, 'a'+i%4, i)
	}
	body := []byte(b.String())
	var urls []string
	for i := range 60 {
		urls = append(urls, fmt.Sprintf("/%c%c/%d/star", 'a'+i%26, 'a'+i%4, i), fmt.Sprintf("/%c%c/%d/star/no", 'a'+i%26, 'a'+i%4, i),
			fmt.Sprintf("https://example.com/%c%c/%d/star?x", 'a'+i%26, 'a'+i%4, i), fmt.Sprintf("/%c%c/%d/%%7estar", 'a'+i%26, 'a'+i%4, i))
	}
	urls = append(urls, "/", "/aa", "/aa/0/star", "/private/x", "/public")
	want := make(map[string]Match)
	for _, u := range urls {
		want[u] = refMatchOf(t, body, u)
	}
	if !want["/aa/0/star"].Allowed || want["/aa/0/star/no"].Allowed {
		t.Fatal("reference: /aa/0/star not allowed, or /aa/0/star/no allowed")
	}
	for range 5 {
		r := Parse(body)
		if !r.starLazy || r.starIx.Load() != nil {
			t.Fatalf("the * group of %d rules is decided before its first use", r.starHi-r.starLo)
		}
		var wg sync.WaitGroup
		for w := range 32 {
			wg.Go(func() {
				for k := range urls {
					u := urls[(k+7*w)%len(urls)]
					m := want[u]
					if got := r.Allowed("other", u); got != m.Allowed {
						t.Errorf("Allowed(other, %q) = %v want %v", u, got, m.Allowed)
					}
					if got := r.Match("other", u); got != m {
						t.Errorf("Match(other, %q) = %+v want %+v", u, got, m)
					}
				}
			})
		}
		wg.Wait()
		if r.starIx.Load() == nil || !r.Group("other").byPrints() {
			t.Fatal("the * group is not scanned after its first use")
		}
	}
}

// refMatchOf is the verdict of the reference scan of every rule, for the
// agent "other", of body, whose "*" group is its last.
func refMatchOf(t *testing.T, body []byte, url string) Match {
	t.Helper()
	var rs []refRule
	lines := strings.Split(string(body), "\n")
	star := false
	for i, l := range lines {
		if l == "User-agent: *" {
			star = true
			continue
		}
		if k, v, ok := strings.Cut(l, ": "); star && ok {
			rs = append(rs, refRule{allow: k == "Allow", pattern: v, line: i + 1})
		}
	}
	p, _ := pathQuery(url)
	return refMatch(rs, p)
}

// TestFirstUseOfLargeGroup asks, as the first query of a freshly parsed
// file, a URL whose deciding rule comes after a worse one in the file, of
// a "*" group and of a named group of more than linearMax rules: the rules
// must be sorted on that first use, whichever way the query comes.
func TestFirstUseOfLargeGroup(t *testing.T) {
	var b strings.Builder
	for _, ua := range []string{"*", "named"} {
		fmt.Fprintf(&b, "User-agent: %s\nDisallow: /aa\n", ua)
		for i := range scanMax {
			fmt.Fprintf(&b, "Allow: /%c%c/%d/x\n", 'a'+i%26, 'a'+i%4, i)
		}
	}
	// And a group of fewer rules, scanned from its first use, with the
	// same rule after a worse one.
	b.WriteString("User-agent: small\nDisallow: /aa\n")
	for i := range 20 {
		fmt.Fprintf(&b, "Allow: /%c%c/%d/x\n", 'a'+i%26, 'a'+i%4, i)
	}
	body := []byte(b.String())
	for _, agent := range []string{"other", "named", "small"} {
		for _, ask := range []struct {
			name string
			f    func(r *Robots) bool
		}{
			{"Allowed", func(r *Robots) bool { return r.Allowed(agent, "/aa/0/x") }},
			{"Group.Allowed", func(r *Robots) bool { return r.Group(agent).Allowed("/aa/0/x") }},
			{"Match", func(r *Robots) bool { return r.Match(agent, "/aa/0/x").Allowed }},
		} {
			r := Parse(body)
			g := r.Group(agent)
			if g.byPrints() {
				t.Fatalf("%s: a group of %d rules, scanned before its first use", agent, g.hi-g.lo)
			}
			if !ask.f(r) {
				t.Errorf("%s(%q, /aa/0/x) on first use: disallowed, want allowed (Allow: /aa/0/x is longer)", ask.name, agent)
			}
			if g.byPrints() != (agent == "small") {
				t.Errorf("%s: a group of %d rules, scanned %v after its first use", agent, g.hi-g.lo, g.byPrints())
			}
		}
	}
}

// TestAgentSearch checks the agent search of files naming a few agents
// against a map: each named token finds its group in any case, and any
// other token the "*" group.
func TestAgentSearch(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	letters := []string{"a", "B", "bot", "-", "_", "9", "googlebot"}
	token := func() string {
		var b strings.Builder
		for range 1 + rng.Intn(4) {
			b.WriteString(letters[rng.Intn(len(letters))])
		}
		return b.String()
	}
	for range 3000 {
		var b strings.Builder
		named := map[string]int{}
		for i := range 1 + rng.Intn(5) {
			tok := token()
			fmt.Fprintf(&b, "User-agent: %s\nDisallow: /%d\n\n", tok, i)
			if _, ok := named[strings.ToLower(tok)]; !ok {
				named[strings.ToLower(tok)] = i
			}
		}
		b.WriteString("User-agent: *\nDisallow: /star\n")
		r := Parse([]byte(b.String()))
		for range 20 {
			q := token()
			if rng.Intn(2) == 0 {
				for k := range named {
					q = strings.ToUpper(k)
					break
				}
			}
			i, ok := named[strings.ToLower(q)]
			got := r.Match(q, "/star").Allowed
			if ok {
				if got != true || r.Allowed(q, fmt.Sprintf("/%d", i)) {
					t.Fatalf("%q does not get its own group in\n%s", q, b.String())
				}
			} else if got != false {
				t.Fatalf("%q, which no group names, does not get the \"*\" group in\n%s", q, b.String())
			}
		}
	}
}
