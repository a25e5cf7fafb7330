package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestCheckLicense: check reports a robots.txt's License lines (RSL 1.0),
// from a file and from a site, in text and in JSON; lint lists them and no
// longer calls the key unknown.
func TestCheckLicense(t *testing.T) {
	body := "License: https://example.com/license.xml\nUser-agent: *\nDisallow: /private\nLicense: relative.xml\n"
	f := writeFile(t, []byte(body))
	code, stdout, _ := runCmd(t, "", "check", f, "/private")
	want := "disallowed /private Disallow: /private (line 3); group * (line 2); license https://example.com/license.xml"
	if code != exitFlagged || !equal(lines(stdout), []string{want}) {
		t.Errorf("check = %d\n%s\nwant\n%s", code, stdout, want)
	}

	s := newSite(t, robotsHandler(http.StatusOK, body))
	_, stdout, stderr := runCmd(t, "", "check", "-json", s.URL+"/", "/public")
	var v verdict
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || len(v.Licenses) != 1 || v.Licenses[0] != "https://example.com/license.xml" {
		t.Errorf("check -json: %s (%v); stderr %s", stdout, err, stderr)
	}

	_, stdout, _ = runCmd(t, "", "lint", "-json", f)
	var l lintJSON
	if err := json.Unmarshal([]byte(stdout), &l); err != nil || len(l.Licenses) != 1 {
		t.Fatalf("lint -json: %s (%v)", stdout, err)
	}
	for _, d := range l.Diagnostics {
		if strings.Contains(d.Message, "unknown") {
			t.Errorf("lint: %+v", d)
		}
	}
	if len(l.Diagnostics) != 1 || l.Diagnostics[0].Line != 4 {
		t.Errorf("lint diagnostics %+v, want the relative URL on line 4", l.Diagnostics)
	}
}

// TestLintVisitTime: lint shows a group's Visit-time window, and reports a
// window that never opens, a bare Request-rate and a path to percent-encode,
// each with its line.
func TestLintVisitTime(t *testing.T) {
	f := writeFile(t, []byte("User-agent: *\nVisit-time: 0600-0845\nVisit-time: 0800-0800\nRequest-rate: 10\nDisallow: /a b\n"))
	code, stdout, _ := runCmd(t, "", "lint", "-json", f)
	var l lintJSON
	if err := json.Unmarshal([]byte(stdout), &l); err != nil {
		t.Fatal(err)
	}
	if code != exitFlagged || len(l.Groups) != 1 || l.Groups[0].VisitTime != "0600-0845 UTC" {
		t.Errorf("lint = %d, groups %+v", code, l.Groups)
	}
	lines := map[int]bool{}
	for _, d := range l.Diagnostics {
		lines[d.Line] = true
	}
	if len(l.Diagnostics) != 3 || !lines[3] || !lines[4] || !lines[5] {
		t.Errorf("diagnostics %+v", l.Diagnostics)
	}
	_, stdout, _ = runCmd(t, "", "lint", f)
	if !strings.Contains(stdout, "visits only 0600-0845 UTC") || !strings.Contains(stdout, "as /a%20b") {
		t.Errorf("lint says\n%s", stdout)
	}
}
