package matcher

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/f9014239/robots/usage"
)

// usageDir holds the shared usage-preference cases, through the link
// testdata/shared (see testdata/README.md). It is absent outside the
// project's workspace.
const usageDir = "../testdata/shared/usage"

// usageCase is one line of a usage file.
type usageCase struct {
	ID     string `json:"id"`
	Robots string `json:"robots"`
	Agent  string `json:"agent"`
	URL    string `json:"url"`
	Usage  string `json:"usage"`
}

func TestUsageConformance(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(usageDir, "*.jsonl"))
	if len(files) == 0 {
		t.Skipf("no usage cases: %s/*.jsonl not found", usageDir)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 16<<20)
			n := 0
			for line := 1; sc.Scan(); line++ {
				var c usageCase
				if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
					t.Fatalf("%s:%d: %v", file, line, err)
				}
				r := Parse([]byte(c.Robots))
				if got := r.Usage(c.Agent, c.URL).String(); got != c.Usage {
					t.Errorf("%s:%d %s: Usage(%q, %q) = %q want %q\nrobots.txt:\n%s",
						filepath.Base(file), line, c.ID, c.Agent, c.URL, got, c.Usage, c.Robots)
				}
				// The typed result says the same.
				if got := r.Usage(c.Agent, c.URL); got.String() != c.Usage || labelsText(got) != c.Usage {
					t.Errorf("%s:%d %s: Usage = %q, Labels %q, want %q", filepath.Base(file), line, c.ID, got.String(), labelsText(got), c.Usage)
				}
				n++
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Fatalf("%s holds no cases", file)
			}
		})
	}
}

// labelsText returns the canonical text of u built from u.Labels.
func labelsText(u usage.Preference) string {
	var parts []string
	for _, l := range u.Labels() {
		parts = append(parts, l.Label+"="+l.Value.String())
	}
	return strings.Join(parts, ", ")
}

// specExample is the worked example of draft-ietf-aipref-attach §4.4.
const specExample = `User-Agent: *
Allow: /
Disallow: /never/
Content-Usage: train-ai=n
Content-Usage: /ai-ok/ train-ai=y

User-Agent: ExampleBot
Allow: /
Content-Usage: train-ai=y
`

func TestUsageTable(t *testing.T) {
	tests := []struct {
		name, robots, agent, url, want string
	}{
		// draft-ietf-aipref-attach's worked example.
		{"example other", specExample, "OtherBot", "/test", "train-ai=n"},
		{"example never", specExample, "OtherBot", "/never/test", ""},
		{"example ai-ok", specExample, "OtherBot", "https://example.com/ai-ok/test", "train-ai=y"},
		{"example ExampleBot", specExample, "ExampleBot", "/never/test", "train-ai=y"},

		// 10.1: the lines.
		{"white space", "user-agent: *\n \tcontent-usage\t :\ttrain-ai=n \t\n", "a", "/", "train-ai=n"},
		{"mixed case key", "user-agent: *\nCoNtEnT-SiGnAl: search=yes\n", "a", "/", "search=y"},
		{"misspelt", "user-agent: *\ncontent-usages: train-ai=n\ncontentusage: train-ai=n\ncontent usage: train-ai=n\n", "a", "/", ""},
		{"no colon", "user-agent: *\ncontent-usage train-ai=n\n", "a", "/", ""},
		{"path and tab", "user-agent: *\ncontent-usage: /a\t\t train-ai=n\n", "a", "/a/b", "train-ai=n"},
		{"path only states nothing", "user-agent: *\ncontent-usage: train-ai=n\ncontent-usage: /a\n", "a", "/a/b", ""},
		{"path only loses elsewhere", "user-agent: *\ncontent-usage: train-ai=n\ncontent-usage: /a\n", "a", "/b", "train-ai=n"},
		{"star path", "user-agent: *\ncontent-usage: *.pdf train-ai=n\n", "a", "/x.pdf", "train-ai=n"},
		{"not a path", "user-agent: *\ncontent-usage: docs/ train-ai=n\n", "a", "/docs/", ""},
		{"ends a group", "user-agent: a\ncontent-signal: search=no\nuser-agent: b\n", "b", "/", ""},
		{"sitemap does not end a group", "user-agent: a\nsitemap: https://x/s.xml\nuser-agent: b\ncontent-signal: search=no\n", "a", "/", "search=n"},
		{"file level, no group", "content-signal: ai-train=no\n", "a", "/", "train-ai=n"},
		{"file level, specific group", "content-signal: ai-train=no\nuser-agent: a\ndisallow: /x\n", "a", "/y", "train-ai=n"},
		{"file level, other group", "content-signal: ai-train=no\nuser-agent: a\ndisallow: /x\n", "b", "/y", "train-ai=n"},
		{"file level, disallowed", "content-signal: ai-train=no\nuser-agent: a\ndisallow: /x\n", "a", "/x", ""},
		{"file level loses to longer", "content-usage: train-ai=n\nuser-agent: *\ncontent-usage: /a train-ai=y\n", "a", "/a", "train-ai=y"},
		{"file level ties group", "content-usage: /a train-ai=n\nuser-agent: *\ncontent-usage: /a search=y\n", "a", "/a", "search=y, train-ai=n"},
		{"groups combined", "user-agent: a\ncontent-usage: train-ai=n\n\nuser-agent: a\ncontent-signal: search=yes\n", "A", "/", "search=y, train-ai=n"},
		{"star not combined", "user-agent: *\ncontent-usage: train-ai=n\nuser-agent: a\nallow: /\n", "a", "/", ""},
		{"robots.txt", "user-agent: *\ndisallow: /\ncontent-usage: train-ai=n\n", "a", "/robots.txt", "train-ai=n"},
		{"fragment", "user-agent: *\ncontent-usage: /a$ train-ai=n\n", "a", "/a#frag", "train-ai=n"},
		{"comment", "user-agent: *\ncontent-usage: search=y#, train-ai=n\n", "a", "/", "search=y"},

		// 10.2: the statement.
		{"dictionary OWS", "user-agent: *\ncontent-usage: search=y ,\ttrain-ai=n\n", "a", "/", "search=y, train-ai=n"},
		{"trailing comma", "user-agent: *\ncontent-usage: search=y,\n", "a", "/", ""},
		{"inner list", "user-agent: *\ncontent-usage: search=(y n), train-ai=n\n", "a", "/", "train-ai=n"},
		{"yes in content-usage", "user-agent: *\ncontent-usage: search=yes\n", "a", "/", ""},
		{"y in content-signal", "user-agent: *\ncontent-signal: search=y\n", "a", "/", ""},
		{"bool last wins", "user-agent: *\ncontent-usage: train-ai=y, train-ai\n", "a", "/", ""},
		{"signal aliases", "user-agent: *\ncontent-signal: ai-train=yes, train-ai=no\n", "a", "/", "train-ai=n"},
		{"usage keeps ai-train", "user-agent: *\ncontent-usage: ai-train=n\n", "a", "/", "ai-train=n"},
		{"star key is a path", "user-agent: *\ncontent-usage: *=n\n", "a", "/", ""},
		{"star key", "user-agent: *\ncontent-usage: / *=n\n", "a", "/", "*=n"},
		{"params", "user-agent: *\ncontent-signal: search=yes;q=1\n", "a", "/", "search=y"},

		// 10.3: which statement applies.
		{"tie combined", "user-agent: *\ncontent-usage: /a* search=y\ncontent-usage: /*b train-ai=n, search=n\n", "a", "/ab", "search=n, train-ai=n"},
		{"tie one matches", "user-agent: *\ncontent-usage: /a* search=y\ncontent-usage: /*b train-ai=n\n", "a", "/ax", "search=y"},
		{"unparsed most specific", "user-agent: *\ncontent-usage: train-ai=n\ncontent-usage: /a Bad=n\n", "a", "/a", ""},
		{"unparsed tie", "user-agent: *\ncontent-usage: /a Bad=n\ncontent-usage: /a train-ai=n\n", "a", "/a", "train-ai=n"},
		{"kinds combined", "user-agent: *\ncontent-usage: /a train-ai=y\ncontent-signal: search=yes, ai-train=yes, ai-input=no\n", "a", "/a", "ai-input=n, search=y, train-ai=y"},
		{"kinds restrictive", "user-agent: *\ncontent-usage: train-ai=y\ncontent-signal: ai-train=no\n", "a", "/", "train-ai=n"},
		{"percent", "user-agent: *\ncontent-usage: /%7Euser/ train-ai=n\n", "a", "/~user/x", "train-ai=n"},
		{"raw non-ASCII url", "user-agent: *\ncontent-usage: /caf%c3%a9 train-ai=n\n", "a", "/café", "train-ai=n"},
		{"allow does not matter", "user-agent: *\nallow: /a\ncontent-usage: /a/b train-ai=n\n", "a", "/a/b", "train-ai=n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Parse([]byte(tt.robots))
			if got := r.Usage(tt.agent, tt.url).String(); got != tt.want {
				t.Errorf("Usage(%q, %q) = %q want %q\n%s", tt.agent, tt.url, got, tt.want, tt.robots)
			}
			if got := r.Group(tt.agent).Usage(tt.url); got.String() != tt.want || labelsText(got) != tt.want {
				t.Errorf("Group.Usage = %q, Labels %q, want %q", got, labelsText(got), tt.want)
			}
		})
	}
}

// TestUsageManyRules checks groups large enough to be indexed against a
// plain scan of every rule.
func TestUsageManyRules(t *testing.T) {
	var b strings.Builder
	b.WriteString("content-usage: search=y\nuser-agent: *\n")
	for i := range 40 {
		fmt.Fprintf(&b, "content-usage: /d%d/ train-ai=%s\n", i, "yn"[i%2:i%2+1])
		fmt.Fprintf(&b, "content-signal: /d%d/*.pdf$ ai-input=no\n", i)
	}
	b.WriteString("content-usage: /d1 train-ai=n\n")
	r := Parse([]byte(b.String()))
	for _, tt := range []struct{ url, want string }{
		{"/", "search=y"},
		{"/d1", "train-ai=n"},
		{"/d1/x", "train-ai=n"},
		{"/d2/x", "train-ai=y"},
		{"/d2/x.pdf", "ai-input=n, train-ai=y"},
		{"/d39/y/z.pdf", "ai-input=n, train-ai=n"},
		{"/d40/", "search=y"},
	} {
		if got := r.Usage("bot", tt.url).String(); got != tt.want {
			t.Errorf("Usage(%q) = %q want %q", tt.url, got, tt.want)
		}
	}
}

func TestUsageRules(t *testing.T) {
	r := Parse([]byte("Content-Signal: search=yes, ai-train=no\nUser-agent: *\nContent-Usage: /a/ train-ai=y\ncontent-usage: /a/ search=n\n"))
	u := r.Usage("bot", "/a/b")
	// Content-Usage decides search=n, train-ai=y; Content-Signal search=y,
	// train-ai=n; together, the most restrictive.
	if got, want := u.String(), "search=n, train-ai=n"; got != want {
		t.Fatalf("Usage = %q want %q", got, want)
	}
	want := []usage.Rule{{Rule: "Content-Signal: search=yes, ai-train=no", Line: 1}, {Rule: "Content-Usage: /a/ train-ai=y", Line: 3}, {Rule: "Content-Usage: /a/ search=n", Line: 4}}
	if got := u.Rules(); !slices.Equal(got, want) {
		t.Errorf("Rules = %v want %v", got, want)
	}
	labels := u.Labels()
	if len(labels) != 2 || labels[0].Label != "search" || labels[0].Value != usage.Disallowed ||
		!slices.Equal(labels[0].Rules, want[2:3]) || labels[1].Label != "train-ai" || labels[1].Value != usage.Disallowed ||
		!slices.Equal(labels[1].Rules, want[0:1]) {
		t.Errorf("Labels = %+v", labels)
	}
	if g := u.Get("train-ai"); g != usage.Disallowed {
		t.Errorf("Get(train-ai) = %v", g)
	}
	if g := u.Get("ai-input"); g != usage.Unknown {
		t.Errorf("Get(ai-input) = %v", g)
	}
	// Elsewhere only the file-level line decides.
	u = r.Usage("bot", "/b")
	if got := u.Rules(); !slices.Equal(got, want[:1]) || u.Get("train-ai") != usage.Disallowed {
		t.Errorf("Rules = %v, Get = %v", got, u.Get("train-ai"))
	}
	// A response header combines, most restrictive first.
	h := u.WithHeader([]string{"search=n", "foo=y"})
	if got, want := h.String(), "foo=y, search=n, train-ai=n"; got != want {
		t.Errorf("WithHeader = %q want %q", got, want)
	}
	if got := h.Rules(); len(got) != 2 || got[1] != (usage.Rule{Rule: "Content-Usage: search=n, foo=y"}) {
		t.Errorf("WithHeader Rules = %v", got)
	}
	if got := u.WithHeader([]string{"Search=n"}).String(); got != u.String() {
		t.Errorf("unparsed header changed %q to %q", u, got)
	}
	if got := (usage.Preference{}).WithHeader([]string{"train-ai=n"}).String(); got != "train-ai=n" {
		t.Errorf("header alone = %q", got)
	}
	if !(usage.Preference{}).IsZero() || (usage.Preference{}).String() != "" || len((usage.Preference{}).Labels()) != 0 {
		t.Error("zero Usage states something")
	}
}

func TestUsageNoGroup(t *testing.T) {
	// A file with no "*" group: a crawler that no group names obeys no
	// group, but the file-level lines apply.
	r := Parse([]byte("Content-Signal: search=no\nUser-agent: a\nDisallow: /\n"))
	g := r.Group("b")
	if !g.Allowed("/x") || g.Lines() != nil {
		t.Errorf("no group: Allowed %v, Lines %v", g.Allowed("/x"), g.Lines())
	}
	if _, ok := g.CrawlDelay(); ok {
		t.Error("no group has a crawl-delay")
	}
	if got := g.Usage("/x").String(); got != "search=n" {
		t.Errorf("ContentUsage = %q", got)
	}
	if got := r.Usage("a", "/x").String(); got != "" {
		t.Errorf("disallowed: ContentUsage = %q", got)
	}
}

func TestUsageMemoryNoPreference(t *testing.T) {
	// A file that states no preference holds nothing more.
	body := []byte("User-agent: *\nDisallow: /private\n")
	r := Parse(body)
	if r.HasUsage() || r.usage != nil {
		t.Fatal("usage data for a file without usage lines")
	}
	withUsage := Parse(append(body, "Content-Usage: train-ai=n\n"...))
	if !withUsage.HasUsage() || withUsage.Size() <= r.Size() {
		t.Errorf("Size with usage %d, without %d", withUsage.Size(), r.Size())
	}
}

func TestContentUsageDoesNotAllocate(t *testing.T) {
	r := Parse([]byte("Content-Signal: search=yes, ai-train=no\n" + specExample + "Content-Signal: ai-input=no\n"))
	for _, tt := range []struct{ agent, url, want string }{
		{"OtherBot", "https://example.com/test", "search=y, train-ai=n"},
		{"OtherBot", "/ai-ok/x?y=1", "search=y, train-ai=n"},
		{"ExampleBot", "/caf%C3%A9", "ai-input=n, search=y, train-ai=n"},
		{"NoBot", "/never/x", ""},
	} {
		var got string
		if n := testing.AllocsPerRun(100, func() { got = r.Usage(tt.agent, tt.url).String() }); n != 0 {
			t.Errorf("Usage(%q, %q) allocates %v times", tt.agent, tt.url, n)
		}
		if got != tt.want {
			t.Errorf("Usage(%q, %q) = %q want %q", tt.agent, tt.url, got, tt.want)
		}
	}
}

func TestLintUsage(t *testing.T) {
	body := "Content-Signal: search=yes, ai-train=no\n" + // fine
		"User-agent: *\n" +
		"Content-Usage: Train-AI=n\n" + // 3: upper case
		"Content-Usage: train-ai=yes, search\n" + // 4: yes, bare key
		"Content-Usage: *.pdf train-ai=n\n" + // 5: path
		"Content-Usage: docs/ train-ai=n\n" + // 6: path read as statement
		"Content-Usage: /x train-ai=n,,\n" + // 7: does not parse
		"Content-Signal: search=y\n" + // 8: y in Content-Signal
		"Content-Usage: /a/ train-ai=n, search=y\n" + // fine
		"User-agent: b\n"
	rep := Lint([]byte(body))
	want := map[int][]string{
		3: {"upper case"},
		4: {`"train-ai" is yes, not y or n`, `"search" is a bare key`},
		5: {`path "*.pdf" does not start with "/"`},
		6: {`path "docs/" does not start with "/"`},
		7: {"does not parse"},
		8: {`"search" is y, not yes or no`},
	}
	got := map[int][]string{}
	for _, d := range rep.Diagnostics {
		got[d.Line] = append(got[d.Line], d.Message)
	}
	for line, msgs := range want {
		if len(got[line]) != len(msgs) {
			t.Errorf("line %d: %q, want %d diagnostics", line, got[line], len(msgs))
			continue
		}
		for i, m := range msgs {
			if !strings.Contains(got[line][i], m) {
				t.Errorf("line %d: %q does not say %q", line, got[line][i], m)
			}
		}
	}
	for line := range got {
		if want[line] == nil {
			t.Errorf("line %d: unexpected %q", line, got[line])
		}
	}
	// Usage lines are rules of their group: "User-agent: b" starts another.
	if len(rep.Groups) != 2 || rep.Groups[0].Usage != 7 || rep.Groups[1].Usage != 0 {
		t.Errorf("groups %+v", rep.Groups)
	}
}

// TestUsageConcurrent asks one file from many goroutines at once, so that
// the race detector sees the usage groups' indexes built while others
// read them.
func TestUsageConcurrent(t *testing.T) {
	var b strings.Builder
	b.WriteString("content-signal: search=yes\nuser-agent: *\n")
	for i := range 40 {
		fmt.Fprintf(&b, "content-usage: /d%d/ train-ai=n\n", i)
	}
	r := Parse([]byte(b.String()))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			url := fmt.Sprintf("/d%d/x", i)
			if got, want := r.Usage("bot", url).String(), "search=y, train-ai=n"; got != want {
				t.Errorf("Usage(%q) = %q want %q", url, got, want)
			}
		})
	}
	wg.Wait()
}

// TestUsageManyFileLines has more lines before the first group than are
// copied into each group: the file's lines and a group's own then tie at
// query time.
func TestUsageManyFileLines(t *testing.T) {
	var b strings.Builder
	for i := range maxCopied + 4 {
		fmt.Fprintf(&b, "content-usage: l%02d=n\n", i)
	}
	b.WriteString("content-usage: /p/ x=y\ncontent-signal: search=yes\n")
	b.WriteString("user-agent: a\ncontent-usage: own=y\nuser-agent: b\ndisallow: /z\n")
	r := Parse([]byte(b.String()))
	var all []string
	for i := range maxCopied + 4 {
		all = append(all, fmt.Sprintf("l%02d=n", i))
	}
	for _, tt := range []struct{ agent, url, want string }{
		{"a", "/", strings.Join(all, ", ") + ", own=y, search=y"},
		{"b", "/", strings.Join(all, ", ") + ", search=y"},
		{"a", "/p/1", "search=y, x=y"},
		{"c", "/p/1", "search=y, x=y"},
	} {
		u := r.Usage(tt.agent, tt.url)
		if got := u.String(); got != tt.want || labelsText(u) != tt.want {
			t.Errorf("Usage(%q, %q) = %q want %q", tt.agent, tt.url, got, tt.want)
		}
		if got, want := len(u.Rules()), strings.Count(tt.want, "=")-strings.Count(tt.want, "search")+1; tt.url == "/" && got != want {
			t.Errorf("Usage(%q, %q) has %d deciding lines, want %d", tt.agent, tt.url, got, want)
		}
	}
}

// TestContentSignalUse: Content-Signal's use key says how much of a page may
// be used; the least of those that apply wins, and unknown values state
// nothing.
func TestContentSignalUse(t *testing.T) {
	for _, c := range []struct{ robots, url, want, use string }{
		{"User-agent: *\nContent-Signal: search=yes, ai-train=no, use=reference\n", "/a", "search=y, train-ai=n, use=reference", "reference"},
		{"User-agent: *\nContent-Signal: use=immediate\n", "/a", "use=immediate", "immediate"},
		{"User-agent: *\nContent-Signal: use=all, ai-input=no\n", "/a", "ai-input=n", ""},
		{"User-agent: *\nContent-Signal: use=\"full\"\n", "/a", "", ""},
		{"User-agent: *\nContent-Signal: use=reference\nContent-Signal: use=full\n", "/a", "use=reference", "reference"},
		{"User-agent: *\nContent-Signal: use=full\nContent-Signal: /x/ use=immediate\nContent-Signal: /x/ use=reference\n", "/x/1", "use=immediate", "immediate"},
		{"User-agent: *\nContent-Signal: use=full\nContent-Signal: /x/ use=immediate\n", "/y", "use=full", "full"},
		// In Content-Usage, use is an ordinary label.
		{"User-agent: *\nContent-Usage: use=n\nContent-Signal: use=full\n", "/a", "use=n, use=full", "full"},
	} {
		r := Parse([]byte(c.robots))
		u := r.Usage("AnyBot", c.url)
		if got := u.String(); got != c.want || labelsText(u) != c.want {
			t.Errorf("%q %s: Usage %q, Labels %q; want %q", c.robots, c.url, got, labelsText(u), c.want)
		}
		if got := u.Use(); got != c.use {
			t.Errorf("%q %s: Use() = %q, want %q", c.robots, c.url, got, c.use)
		}
		if c.use != "" {
			for _, l := range u.Labels() {
				if l.Label == "use" && l.Value.String() == c.use && len(l.Rules) == 0 {
					t.Errorf("%q %s: the use label names no rule", c.robots, c.url)
				}
			}
		}
	}
}
