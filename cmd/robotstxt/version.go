package main

import (
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"
)

// runVersion prints the command's version, from its build information.
func runVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprint(stdout, versionUsage)
			return exitOK
		}
		fmt.Fprint(stderr, versionUsage)
		return exitUsage
	}
	info, _ := debug.ReadBuildInfo() // nil when the binary has none
	fmt.Fprintln(stdout, versionText(info))
	return exitOK
}

const versionUsage = `usage: robotstxt version

Prints the version of the module the command was built from and the version
control revision it was built at, or why the build did not record one, and
the Go version that built it. go build in a git checkout records the
revision; go run, go test and -buildvcs=false do not.
`

// noVCS says why a build of a checkout ("(devel)") has no revision.
const noVCS = "no revision: built without VCS information (go run, go test, -buildvcs=false and builds outside a git checkout record none)"

// pseudoRev matches the revision at the end of a pseudo-version, as in
// v0.0.0-20260701100000-0123456789ab or v1.2.4-0.20260701100000-0123456789ab+dirty.
var pseudoRev = regexp.MustCompile(`[-.][0-9]{14}-([0-9a-f]{12})(\+[0-9A-Za-z.-]*)?$`)

// versionText describes a build: the module's version, the version control
// revision (from the build's VCS settings, or else from a pseudo-version),
// whether the checkout was modified and when the revision was committed, or
// why there is no revision; and the Go version. info may be nil.
func versionText(info *debug.BuildInfo) string {
	goVersion := runtime.Version()
	if info == nil {
		return "robotstxt, version unknown: the binary holds no build information, built with " + goVersion
	}
	if info.GoVersion != "" {
		goVersion = info.GoVersion
	}
	version := info.Main.Version
	var rev, at, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if version == "" {
		version = "(devel)"
	}
	s := "robotstxt " + version
	switch m := pseudoRev.FindStringSubmatch(version); {
	case rev != "":
		s += ", revision " + rev[:min(len(rev), 12)]
		if modified == "true" {
			s += " (modified)"
		}
		if at != "" {
			s += ", committed " + at
		}
	case m != nil:
		s += ", revision " + m[1]
	case version == "(devel)":
		s += ", " + noVCS
	default:
		// A release built from its module download, as by go install
		// …@v1.2.3: the version names the source.
		s += ", no revision: built from the module download, which records none"
	}
	return s + ", built with " + goVersion
}
