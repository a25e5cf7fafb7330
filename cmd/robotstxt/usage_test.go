package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const usageFile = `Content-Signal: search=yes, ai-train=no
User-agent: *
Disallow: /x
Content-Usage: /ai/ train-ai=y
Content-Usage: Train-AI=n
Content-Usage: *.pdf train-ai=maybe
Content-Signal: search=y
`

func TestCheckUsage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "robots.txt")
	if err := os.WriteFile(file, []byte(usageFile), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "", "check", file, "/a", "/ai/b", "/x/1")
	if code != exitFlagged {
		t.Errorf("check = %d, stderr %s", code, stderr)
	}
	for _, want := range []string{
		// The line that decided, not those that matched: 5 and 7 tie
		// with 1 and state nothing (they do not parse), and 4's
		// train-ai=y loses to 1's ai-train=no.
		"allowed /a no rule matched; group * (line 2); usage search=y, train-ai=n (line 1)",
		"allowed /ai/b no rule matched; group * (line 2); usage search=y, train-ai=n (line 1)",
		"disallowed /x/1 Disallow: /x (line 3); group * (line 2)",
	} {
		if !contains(lines(stdout), want) {
			t.Errorf("check output lacks %q:\n%s", want, stdout)
		}
	}
	_, stdout, _ = runCmd(t, "", "check", "-json", file, "/ai/b", "/x/1")
	var v, d verdict
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	if v.Usage != "search=y, train-ai=n" || len(v.UsageRules) != 1 ||
		v.UsageRules[0] != (usageRuleJSON{Line: 1, Rule: "Content-Signal: search=yes, ai-train=no"}) {
		t.Errorf("check -json /ai/b = %+v", v)
	}
	if d.Usage != "" || d.UsageRules != nil || strings.Contains(stdout, `"usage":""`) {
		t.Errorf("a disallowed URL has a usage: %s", stdout)
	}
}

func TestCheckUsageSite(t *testing.T) {
	s := newSite(t, demoHandler(10*time.Millisecond))
	code, stdout, stderr := runCmd(t, "", "check", s.URL, "/blog/", "/")
	if code != exitOK {
		t.Errorf("check = %d, stderr %s", code, stderr)
	}
	for _, want := range []string{
		"allowed " + s.URL + "/blog/ no rule matched; group robotstxt, examplebot (line 3); usage ai-use=n, search=y, train-ai=y, use=reference (lines 11, 12)",
		"allowed " + s.URL + "/ no rule matched; group robotstxt, examplebot (line 3); usage ai-use=n, search=y, train-ai=n, use=reference (lines 10, 12)",
	} {
		if !contains(lines(stdout), want) {
			t.Errorf("check output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestLintUsage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "robots.txt")
	if err := os.WriteFile(file, []byte(usageFile), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stdout, _ := runCmd(t, "", "lint", file)
	for _, want := range []string{
		"line 5: content-usage statement has a key in upper case (keys are lower case): it does not parse and states nothing",
		`line 6: content-usage path "*.pdf" does not start with "/"`,
		`line 6: content-usage value of "train-ai" is maybe, not y or n: unknown`,
		`line 7: content-signal value of "search" is y, not yes or no: unknown`,
		"line 2: *: 1 rule, 4 usage lines", // line 1 belongs to no group
	} {
		if !contains(lines(stdout), want) {
			t.Errorf("lint output lacks %q:\n%s", want, stdout)
		}
	}
}

// TestCheckUse: Content-Signal's use key is shown, and given alone in the
// JSON form; the least extent stated applies.
func TestCheckUse(t *testing.T) {
	file := writeFile(t, []byte("User-agent: *\nContent-Signal: search=yes,ai-train=no,use=reference\nContent-Signal: /a/ use=full\nContent-Signal: /a/ use=immediate\nAllow: /\n"))
	code, stdout, _ := runCmd(t, "", "check", file, "/x", "/a/b")
	for _, want := range []string{
		"allowed /x Allow: / (line 5); group * (line 1); usage search=y, train-ai=n, use=reference (line 2)",
		"allowed /a/b Allow: / (line 5); group * (line 1); usage use=immediate (line 4)", // 3's use=full loses
	} {
		if code != exitOK || !contains(lines(stdout), want) {
			t.Errorf("check = %d, output lacks %q:\n%s", code, want, stdout)
		}
	}
	_, stdout, _ = runCmd(t, "", "check", "-json", file, "/x")
	var v verdict
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || v.Use != "reference" || v.Usage != "search=y, train-ai=n, use=reference" {
		t.Errorf("check -json: %+v, %v; want use reference", v, err)
	}
}
