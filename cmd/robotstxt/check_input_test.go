package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckRelativePath: a URL path without a leading "/" is an error that
// says why, never a verdict, for a file as for a site.
func TestCheckRelativePath(t *testing.T) {
	s := newSite(t, robotsHandler(200, "User-agent: *\nDisallow: /\n"))
	for _, src := range []string{"testdata/allow-all.txt", writeFile(t, []byte("User-agent: *\nDisallow: /\n")), s.URL + "/"} {
		for _, target := range []string{"relative/path", "example.com/x"} {
			code, stdout, stderr := runCmd(t, "", "check", src, target)
			if code != exitUsage || stdout != "" || !strings.Contains(stderr, `does not start with "/"`) {
				t.Errorf("check %s %s = %d, stdout %q, stderr %q; want %d, no verdict and why", src, target, code, stdout, stderr, exitUsage)
			}
		}
		// Standard input too: the bad line is reported, the others decided.
		code, stdout, stderr := runCmd(t, "relative\n/ok\n", "check", src)
		if code != exitUsage || len(lines(stdout)) != 1 || !strings.Contains(stderr, "relative: ") {
			t.Errorf("check %s with relative on stdin = %d\n%s\nstderr %q", src, code, stdout, stderr)
		}
	}
	if s.count("/relative/path") != 0 || len(s.paths()) != 1 {
		t.Errorf("requests: %v", s.paths())
	}
}

// TestCheckSourceKind: a robots.txt source that is neither a file, "-", nor
// an http or https URL is named as such, with what was expected.
func TestCheckSourceKind(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"example.com", `no file "example.com"; for the site, give its URL: https://example.com/`},
		{"ftp://example.com/robots.txt", `"ftp://example.com/robots.txt": ftp URLs are not supported; robots.txt is fetched only over http and https`},
		{"testdata/no-such-file.txt", `no file "testdata/no-such-file.txt"`},
	} {
		for _, cmd := range []string{"check", "lint"} {
			args := []string{cmd, c.src}
			if cmd == "check" {
				args = append(args, "/x")
			}
			code, stdout, stderr := runCmd(t, "", args...)
			if code != exitUsage || stdout != "" || !strings.Contains(stderr, c.want) ||
				!strings.Contains(stderr, `the robots.txt source is a robots.txt file, "-" for standard input, or an http or https URL`) ||
				strings.Contains(stderr, "no such file or directory") {
				t.Errorf("%s %s = %d, stdout %q\nstderr %q\nwant %d and %q", cmd, c.src, code, stdout, stderr, exitUsage, c.want)
			}
		}
	}
	// A file named like a host is a file.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "example.com"), []byte("User-agent: *\nDisallow: /x\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if code, stdout, stderr := runCmd(t, "", "check", "example.com", "/x"); code != exitFlagged || !strings.HasPrefix(stdout, "disallowed") {
		t.Errorf("check of a file named example.com = %d, %q, %q", code, stdout, stderr)
	}
}

// TestCheckNotRobotsTxt: check says, as lint does, when its file is an HTML
// page or binary data, and still gives the verdicts crawlers would.
func TestCheckNotRobotsTxt(t *testing.T) {
	for _, c := range []struct {
		body []byte
		want string
	}{
		{[]byte("<!DOCTYPE html>\n<html><body>Not found</body></html>\n"), "this is an HTML page, not a robots.txt: crawlers will read no rules"},
		{[]byte("\x00\x01\x02PNG\x00\x00\n\x00"), "this is binary data, not a robots.txt: crawlers will read no rules"},
	} {
		f := writeFile(t, c.body)
		code, stdout, stderr := runCmd(t, "", "check", f, "/x")
		if code != exitOK || !strings.HasPrefix(stdout, "allowed") || !strings.Contains(stderr, "warning: "+f+": "+c.want) {
			t.Errorf("check of %q = %d, %q\nstderr %q\nwant a warning %q", c.body, code, stdout, stderr, c.want)
		}
		code, stdout, stderr = runCmd(t, string(c.body), "check", "-", "/x")
		if code != exitOK || !strings.Contains(stderr, "warning: standard input: "+c.want) {
			t.Errorf("check - of %q = %d, %q\nstderr %q", c.body, code, stdout, stderr)
		}
		s := newSite(t, robotsHandler(200, string(c.body)))
		code, _, stderr = runCmd(t, "", "check", s.URL+"/", "/x", "/y")
		if code != exitOK || strings.Count(stderr, c.want) != 1 || !strings.Contains(stderr, s.URL+"/robots.txt: "+c.want) {
			t.Errorf("check SITE serving %q = %d\nstderr %q\nwant one warning %q", c.body, code, stderr, c.want)
		}
	}
	// A robots.txt is not warned about.
	if _, _, stderr := runCmd(t, "", "check", "testdata/basic.txt", "/x"); stderr != "" {
		t.Errorf("check of a robots.txt: stderr %q", stderr)
	}
}
