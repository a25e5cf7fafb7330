package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	code, stdout, stderr := runCmd(t, "", "version")
	if code != exitOK || stderr != "" || !strings.HasPrefix(stdout, "robotstxt ") || !strings.HasSuffix(stdout, " "+runtime.Version()+"\n") {
		t.Errorf("version = %d, %q, %q; want 0 and a line ending in the Go version", code, stdout, stderr)
	}
	for _, c := range []struct {
		info *debug.BuildInfo
		want string
	}{
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/f9014239/robots", Version: "v1.2.3"}},
			"robotstxt v1.2.3, built with go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/f9014239/robots", Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-07-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			"robotstxt (devel), revision 0123456789ab (modified), committed 2026-07-01T10:00:00Z, built with go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8"}, "robotstxt (devel), built with go1.26.8"},
		{nil, "robotstxt (devel), built with " + runtime.Version()},
	} {
		if got := versionText(c.info); got != c.want {
			t.Errorf("versionText(%+v) = %q, want %q", c.info, got, c.want)
		}
	}
	if code, stdout, _ := runCmd(t, "", "help"); code != exitOK || !strings.Contains(stdout, "robotstxt version") {
		t.Errorf("help does not list version:\n%s", stdout)
	}
}
