package main

import (
	"fmt"
	"io"
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
	info, _ := debug.ReadBuildInfo()
	fmt.Fprintln(stdout, versionText(info))
	return exitOK
}

const versionUsage = `usage: robotstxt version

Prints the version of the module the command was built from ("(devel)" for a
build from a checkout, with its commit when the build recorded one) and the
Go version that built it.
`

// versionText describes a build: the module's version, or "(devel)" with
// the version control revision and commit time when they were recorded, and
// the Go version. info may be nil.
func versionText(info *debug.BuildInfo) string {
	goVersion := runtime.Version()
	version := ""
	var rev, at, modified string
	if info != nil {
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
		version = info.Main.Version
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
	}
	if version == "" {
		version = "(devel)"
	}
	s := "robotstxt " + version
	if rev != "" {
		s += ", revision " + rev[:min(len(rev), 12)]
		if modified == "true" {
			s += " (modified)"
		}
	}
	if at != "" {
		s += ", committed " + at
	}
	return s + ", built with " + goVersion
}
