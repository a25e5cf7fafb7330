package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// corpusDir holds real robots.txt files, through the link testdata/shared
// (see testdata/README.md). It is absent outside the project's workspace;
// TestMain says so.
const corpusDir = "../../testdata/shared/corpus"

// emptyDisallow is a line that allows everything: "Disallow:" with no path.
var emptyDisallow = regexp.MustCompile(`(?i)^\s*disallow\s*:?\s*(#.*)?$`)

// TestLintCorpus lints every real robots.txt of the corpus as the command
// does: none is called a problem for an empty Disallow, the documented way to
// allow everything, and every file gets a verdict (exit 0 or 1, never 2).
func TestLintCorpus(t *testing.T) {
	if raceEnabled {
		t.Skip("no goroutines here: the corpus is linted without the race detector")
	}
	var files []string
	err := filepath.WalkDir(corpusDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Dir(path) != corpusDir {
			files = append(files, path)
		}
		return err
	})
	if os.IsNotExist(err) {
		t.Skipf("%s is absent", corpusDir)
	}
	if err != nil {
		t.Fatal(err)
	}
	codes := map[int]int{}
	allowAll := 0
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		code := run([]string{"lint", f}, nil, discard{}, discard{})
		codes[code]++
		if code != exitOK && code != exitFlagged {
			t.Errorf("lint %s = %d, want 0 or 1", f, code)
		}
		out := lintJSON{Size: int64(len(body))}
		lintBody(&out, body)
		for _, d := range out.Diagnostics {
			if emptyDisallow.MatchString(d.Text) {
				t.Errorf("%s:%d: %q is called a problem: %s", f, d.Line, d.Text, d.Message)
			}
		}
		for l := range strings.Lines(string(body)) {
			if emptyDisallow.MatchString(l) {
				allowAll++
				break
			}
		}
	}
	t.Logf("%d files, %d with an empty Disallow; lint exit status 0: %d, 1: %d", len(files), allowAll, codes[exitOK], codes[exitFlagged])
}

// discard is an io.Writer that keeps nothing.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
