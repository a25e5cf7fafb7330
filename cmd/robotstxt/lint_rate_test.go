package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLintRequestRate: lint reports a malformed Request-rate and states a
// group's interval, in text and in JSON.
func TestLintRequestRate(t *testing.T) {
	body := "User-agent: *\nRequest-rate: 1/5x\nRequest-rate: 30/1m\n"
	code, stdout, _ := runCmd(t, body, "lint", "-")
	if code != exitFlagged || !strings.Contains(stdout, `invalid request-rate "1/5x" ignored`) ||
		!strings.Contains(stdout, "request-rate one each 2s") {
		t.Errorf("lint = %d\n%s", code, stdout)
	}
	code, stdout, _ = runCmd(t, body, "lint", "-json", "-")
	var rep lintJSON
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("lint -json: %v in %s", err, stdout)
	}
	if code != exitFlagged || len(rep.Diagnostics) != 1 || len(rep.Groups) != 1 ||
		rep.Groups[0].RequestRate == nil || *rep.Groups[0].RequestRate != 2 {
		t.Errorf("lint -json = %d, %+v", code, rep)
	}
}
