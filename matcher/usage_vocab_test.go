package matcher

import (
	"bytes"
	"strings"
	"testing"

	"github.com/f9014239/robots/usage"
)

// TestVocab08 holds the conformance cases of the vocabulary of
// draft-ietf-aipref-vocab-08 and of Content-Signal's mapping onto it: each
// case names the section it follows, and what each of the vocabulary's
// three labels says.
func TestVocab08(t *testing.T) {
	type want struct{ trainAI, aiUse, search usage.Value }
	const (
		u = usage.Unknown
		y = usage.Allowed
		n = usage.Disallowed
	)
	for _, c := range []struct {
		name, robots, text string
		want               want
	}{
		// §4.2: ai-use is a label of its own.
		{"§4.2 ai-use", "User-agent: *\nContent-Usage: ai-use=n\n", "ai-use=n", want{u, n, u}},
		{"§4.2 ai-use y", "User-agent: *\nContent-Usage: ai-use=y, train-ai=n\n", "ai-use=y, train-ai=n", want{n, y, u}},
		// §4.1: train-ai (training of generative models) says nothing
		// of ai-use or search, nor they of it: no hierarchy.
		{"§4.1 train-ai alone", "User-agent: *\nContent-Usage: train-ai=n\n", "train-ai=n", want{n, u, u}},
		{"§4 no fallback", "User-agent: *\nContent-Usage: search=n\n", "search=n", want{u, u, n}},
		// §4.3: search is stated beside the other two; the override is
		// the crawler's (it asks for search alone), not the file's.
		{"§4.3 search beside", "User-agent: *\nContent-Usage: train-ai=n, ai-use=n, search=y\n", "ai-use=n, search=y, train-ai=n", want{n, n, y}},
		// Content-Signal: ai-train is train-ai, ai-input is ai-use.
		{"signal ai-input", "User-agent: *\nContent-Signal: ai-input=no\n", "ai-use=n", want{u, n, u}},
		{"signal ai-input yes", "User-agent: *\nContent-Signal: ai-input=yes, ai-train=no, search=yes\n", "ai-use=y, search=y, train-ai=n", want{n, y, y}},
		{"signal and usage combine", "User-agent: *\nContent-Signal: ai-input=yes\nContent-Usage: ai-use=n\n", "ai-use=n", want{u, n, u}},
		{"signal ai-input twice", "User-agent: *\nContent-Signal: ai-input=no, ai-use=yes\n", "ai-use=n", want{u, n, u}},
		// In a Content-Usage line, Content-Signal's names are unknown
		// labels, kept as written.
		{"usage ai-input", "User-agent: *\nContent-Usage: ai-input=n\n", "ai-input=n", want{u, u, u}},
		// §4: labels of earlier drafts are unknown labels: kept as
		// written, stating nothing about the three.
		{"legacy bots", "User-agent: *\nContent-Usage: bots=n\n", "bots=n", want{u, u, u}},
		{"legacy all", "User-agent: *\nContent-Usage: all=n\n", "all=n", want{u, u, u}},
		{"legacy tdm", "User-agent: *\nContent-Usage: tdm=n\n", "tdm=n", want{u, u, u}},
		{"legacy ai", "User-agent: *\nContent-Usage: ai=n\n", "ai=n", want{u, u, u}},
		{"legacy genai", "User-agent: *\nContent-Usage: genai=n\n", "genai=n", want{u, u, u}},
		{"legacy train-genai", "User-agent: *\nContent-Usage: train-genai=n\n", "train-genai=n", want{u, u, u}},
		{"legacy ai-output", "User-agent: *\nContent-Usage: ai-output=n\n", "ai-output=n", want{u, u, u}},
		{"legacy inference", "User-agent: *\nContent-Usage: inference=n\n", "inference=n", want{u, u, u}},
		{"legacy beside", "User-agent: *\nContent-Usage: all=n, search=y\n", "all=n, search=y", want{u, u, y}},
		{"legacy in signal", "User-agent: *\nContent-Signal: tdm=no, search=yes\n", "search=y, tdm=n", want{u, u, y}},
		// Bad input: bare keys, quoted values, other tokens state
		// nothing; the rest of the line still counts.
		{"bare and quoted", "User-agent: *\nContent-Usage: ai-use, train-ai=\"n\", search=?0, bots=n\n", "bots=n", want{u, u, u}},
		{"signal quoted", "User-agent: *\nContent-Signal: ai-input=\"no\", ai-train\n", "", want{u, u, u}},
	} {
		r := Parse([]byte(c.robots))
		p := r.Usage("AnyBot", "https://example.com/page")
		if got := p.String(); got != c.text || labelsText(p) != c.text {
			t.Errorf("%s: Usage = %q, Labels %q, want %q\n%s", c.name, got, labelsText(p), c.text, c.robots)
		}
		if got := (want{p.Get("train-ai"), p.Get("ai-use"), p.Get("search")}); got != c.want {
			t.Errorf("%s: train-ai, ai-use, search = %v, want %v\n%s", c.name, got, c.want, c.robots)
		}
		if p.Get("ai-input") != usage.Unknown && !strings.Contains(c.text, "ai-input") {
			t.Errorf("%s: Get(ai-input) = %v: Content-Signal's ai-input is reported as ai-use", c.name, p.Get("ai-input"))
		}
	}
}

// TestLintVocab08: lint names each legacy label, says crawlers ignore it,
// and what to write instead.
func TestLintVocab08(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"Content-Usage: bots=n", `content-usage label "bots" is from an earlier draft: draft-ietf-aipref-vocab-08 does not define it, so crawlers ignore it; instead write each use it covered: train-ai, ai-use and search`},
		{"Content-Usage: all=n", "instead write each use it covered: train-ai, ai-use and search"},
		{"Content-Usage: tdm=y", "instead write each use it covered: train-ai, ai-use and search"},
		{"Content-Usage: ai=n", "instead write train-ai"},
		{"Content-Usage: genai=n", "instead write train-ai"},
		{"Content-Usage: train-genai=n", `"train-genai" is from an earlier draft`},
		{"Content-Usage: ai-output=n", "instead write ai-use"},
		{"Content-Usage: inference=n", "instead write ai-use"},
		{"Content-Usage: ai-input=n", `content-usage label "ai-input" is Content-Signal's name, not the IETF vocabulary's: crawlers ignore it in a Content-Usage line; instead write ai-use`},
		{"Content-Usage: ai-train=n", "instead write train-ai"},
		{"Content-Signal: train-ai=no", `content-signal label "train-ai" is the IETF vocabulary's name, not Content-Signal's: instead write ai-train, or use a Content-Usage line`},
		{"Content-Signal: ai-use=no", "instead write ai-input"},
		{"Content-Signal: genai=no", `content-signal label "genai" is not Content-Signal's: crawlers ignore it; instead write ai-train`},
		{"Content-Signal: tdm=no", "instead write each use it covered: search, ai-train and ai-input"},
	} {
		rep := Lint([]byte("User-agent: *\n" + c.line + "\n"))
		var msgs []string
		for _, d := range rep.Diagnostics {
			msgs = append(msgs, d.Message)
		}
		if len(msgs) != 1 || !strings.Contains(msgs[0], c.want) || rep.Diagnostics[0].Line != 2 {
			t.Errorf("Lint(%q) = %q, want one message on line 2 with %q", c.line, msgs, c.want)
		}
	}
	// The vocabulary's own labels, and Content-Signal's, are clean.
	for _, line := range []string{"Content-Usage: train-ai=n, ai-use=y, search=y", "Content-Signal: ai-train=no, ai-input=no, search=yes, use=reference"} {
		if rep := Lint([]byte("User-agent: *\n" + line + "\n")); len(rep.Diagnostics) != 0 {
			t.Errorf("Lint(%q) = %v, want nothing", line, rep.Diagnostics)
		}
	}
}

// badUsage is usage lines with every legacy and unknown label, bare keys,
// quoted values and statements that do not parse.
const badUsage = "Content-Usage: bots=n, all=n, tdm=n, ai=n, genai=n, train-genai=n, ai-output=n, inference=n, x-later=y\n" +
	"Content-Usage: train-ai, search=\"n\", ai-use=?0, ai-input=n, ai-train=n\n" +
	"Content-Signal: bots=no, tdm=no, ai-train=\"no\", search, genai=no, use=\"full\"\n" +
	"Content-Usage: Train-AI=n\n" +
	"content-usage:\n" +
	"Content-Signal: /x ai-input\n"

// TestBadUsageSameVerdicts: usage lines with every legacy and unknown
// label, however malformed, change no verdict of any real file, state what
// the reference (every usage rule scanned) says, and querying their
// preference does not allocate.
func TestBadUsageSameVerdicts(t *testing.T) {
	bodies, _ := readCorpus(t)
	agents := []string{"Googlebot", "bingbot", "AnyBot", "GPTBot"}
	checked := 0
	for i, body := range bodies {
		if i%4 != 0 || len(body) > 64<<10 {
			continue // a quarter of the corpus, its files up to 64 KiB, is enough
		}
		plain := Parse(body)
		// File-level lines before the first group, and lines in the
		// last group.
		// (A byte-order mark stays first.)
		bom, rest := []byte(nil), body
		if bytes.HasPrefix(body, []byte("\ufeff")) {
			bom, rest = body[:3], body[3:]
		}
		bad := Parse(bytes.Join([][]byte{bom, []byte(badUsage), rest, []byte("\n" + badUsage)}, nil))
		for _, agent := range agents {
			for _, url := range sampleURLs(body) {
				if plain.Allowed(agent, url) != bad.Allowed(agent, url) {
					t.Fatalf("corpus file %d: %s %q: usage lines changed the verdict to %v", i, agent, url, bad.Allowed(agent, url))
				}
				got := bad.Usage(agent, url)
				if s := got.String(); !bad.Allowed(agent, url) && s != "" {
					t.Fatalf("corpus file %d: %s %q disallowed but usage %q", i, agent, url, s)
				}
				if want := bruteUsage(bad.Group(agent), url); got.String() != want {
					t.Fatalf("corpus file %d: %s %q: usage %q, every usage rule scanned says %q", i, agent, url, got, want)
				}
				if v := got.Get("train-ai"); v != usage.Unknown {
					t.Fatalf("corpus file %d: %s %q: train-ai %v, from lines that state none", i, agent, url, v)
				}
				checked++
			}
		}
		if i%64 == 0 {
			g := bad.Group(agents[i%len(agents)])
			url := "/some/page.html?q=1"
			if n := testing.AllocsPerRun(20, func() { _ = g.Usage(url).String() }); n != 0 {
				t.Errorf("corpus file %d: Usage(%q).String() allocates %v times", i, url, n)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no corpus file checked")
	}
}

// sampleURLs returns URLs to ask of a robots.txt body: the paths of its
// rules, one below them, and the root.
func sampleURLs(body []byte) []string {
	urls := []string{"/", "/x/legacy.html"}
	for line := range strings.SplitSeq(string(body), "\n") {
		k, v, ok := strings.Cut(line, ":")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok || k != "allow" && k != "disallow" {
			continue
		}
		v, _, _ = strings.Cut(v, "#")
		if v = strings.TrimSpace(v); strings.HasPrefix(v, "/") && len(urls) < 24 {
			urls = append(urls, v, strings.TrimSuffix(v, "$")+"a/b")
		}
	}
	return urls
}

// TestPolicyGroup: the group of a policy token
// (draft-kelley-aipref-training-preference-signal) is found as a crawler's
// is, and the "*" groups answer a token no group names only when asked to.
func TestPolicyGroup(t *testing.T) {
	const token = "Example-Training-Token" // a placeholder: the draft's token is not published
	for _, c := range []struct {
		name, robots string
		star         bool
		want         map[string]int // URL: 1 allowed, 0 disallowed, -1 no group answers
	}{
		{"named", "User-agent: *\nDisallow: /\n\nUser-agent: example-training-token\nDisallow: /no/\n", false, map[string]int{"/a": 1, "/no/x": 0}},
		{"named, star asked", "User-agent: *\nDisallow: /\n\nUser-agent: Example-Training-Token\nDisallow: /no/\n", true, map[string]int{"/a": 1, "/no/x": 0}},
		{"named twice", "User-agent: Example-Training-Token\nDisallow: /a\n\nUser-agent: Example-Training-Token\nDisallow: /b\n", false, map[string]int{"/a": 0, "/b": 0, "/c": 1}},
		{"star", "User-agent: *\nDisallow: /private/\n\nUser-agent: OtherBot\nAllow: /\n", true, map[string]int{"/a": 1, "/private/x": 0}},
		{"star not asked", "User-agent: *\nDisallow: /private/\n", false, map[string]int{"/a": -1, "/private/x": -1}},
		{"no star", "User-agent: OtherBot\nDisallow: /\n", true, map[string]int{"/a": -1}},
		{"file-level usage only", "Content-Usage: train-ai=n\n", true, map[string]int{"/a": -1}},
		{"empty", "", true, map[string]int{"/a": -1}},
		{"a prefix is not the token", "User-agent: Example-Training\nDisallow: /\n", false, map[string]int{"/a": -1}},
	} {
		r := Parse([]byte(c.robots))
		g := r.PolicyGroup(token, c.star)
		for url, want := range c.want {
			got := -1
			if g != nil {
				got = 0
				if g.Allowed(url) {
					got = 1
				}
			}
			if got != want {
				t.Errorf("%s: PolicyGroup(star %v) on %s = %d want %d", c.name, c.star, url, got, want)
			}
		}
		if n := testing.AllocsPerRun(50, func() { r.PolicyGroup(token, c.star) }); n != 0 {
			t.Errorf("%s: PolicyGroup allocates %v times", c.name, n)
		}
	}
}
