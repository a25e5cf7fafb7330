package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	// A test binary records no VCS information: version says so.
	code, stdout, stderr := runCmd(t, "", "version")
	if code != exitOK || stderr != "" || stdout != "robotstxt (devel), "+noVCS+", built with "+runtime.Version()+"\n" {
		t.Errorf("version = %d, %q, %q; want 0 and a line that says the build recorded no VCS information", code, stdout, stderr)
	}
	const mod = "github.com/f9014239/robots"
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, c := range []struct {
		info *debug.BuildInfo
		want string
	}{
		// go build in a checkout, modified and not.
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: mod, Version: "v0.0.0-20260701100000-0123456789ab+dirty"},
			Settings: vcs("vcs", "git", "vcs.revision", "0123456789abcdef0123", "vcs.time", "2026-07-01T10:00:00Z", "vcs.modified", "true")},
			"robotstxt v0.0.0-20260701100000-0123456789ab+dirty, revision 0123456789ab (modified), committed 2026-07-01T10:00:00Z, built with go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: mod, Version: "v1.2.3"},
			Settings: vcs("vcs.revision", "0123456789abcdef0123", "vcs.time", "2026-07-01T10:00:00Z", "vcs.modified", "false")},
			"robotstxt v1.2.3, revision 0123456789ab, committed 2026-07-01T10:00:00Z, built with go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: mod, Version: "(devel)"},
			Settings: vcs("vcs.revision", "0123456789abcdef0123", "vcs.time", "2026-07-01T10:00:00Z", "vcs.modified", "true")},
			"robotstxt (devel), revision 0123456789ab (modified), committed 2026-07-01T10:00:00Z, built with go1.26.8"},
		// go install of a release, or of a commit (a pseudo-version), from
		// the module proxy: no VCS settings.
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: mod, Version: "v1.2.3"}},
			"robotstxt v1.2.3, no revision: built from the module download, which records none, built with go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: mod, Version: "v0.0.0-20260701100000-0123456789ab"}},
			"robotstxt v0.0.0-20260701100000-0123456789ab, revision 0123456789ab, built with go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: mod, Version: "v1.2.4-0.20260701100000-0123456789ab"}},
			"robotstxt v1.2.4-0.20260701100000-0123456789ab, revision 0123456789ab, built with go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: mod, Version: "v1.3.0-rc.1.0.20260701100000-0123456789ab+incompatible"}},
			"robotstxt v1.3.0-rc.1.0.20260701100000-0123456789ab+incompatible, revision 0123456789ab, built with go1.26.8"},
		// go run, go test, -buildvcs=false: a checkout without VCS settings.
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: mod, Version: "(devel)"}, Settings: vcs("-buildmode", "exe")},
			"robotstxt (devel), " + noVCS + ", built with go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8"}, "robotstxt (devel), " + noVCS + ", built with go1.26.8"},
		{nil, "robotstxt, version unknown: the binary holds no build information, built with " + runtime.Version()},
	} {
		if got := versionText(c.info); got != c.want {
			t.Errorf("versionText(%+v) =\n%q, want\n%q", c.info, got, c.want)
		}
	}
	if !strings.Contains(noVCS, "built without VCS information") {
		t.Errorf("noVCS = %q does not say the build had no VCS information", noVCS)
	}
	if code, stdout, _ := runCmd(t, "", "help"); code != exitOK || !strings.Contains(stdout, "robotstxt version") {
		t.Errorf("help does not list version:\n%s", stdout)
	}
	if code, stdout, _ := runCmd(t, "", "version", "-h"); code != exitOK || !strings.Contains(stdout, "-buildvcs=false") {
		t.Errorf("version -h = %d:\n%s", code, stdout)
	}
	if code, _, stderr := runCmd(t, "", "version", "extra"); code != exitUsage || !strings.HasPrefix(stderr, "usage: robotstxt version") {
		t.Errorf("version extra = %d, %q; want a usage error", code, stderr)
	}
}
