package robots_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// coreModules are the only modules, besides the standard library and this module, that
// packages robots, pageterms, frontier and matcher may import. The root module also holds
// boltstore (bbolt); none of the core packages may reach it.
var coreModules = []string{
	"golang.org/x/net",
	"golang.org/x/sync",
	"golang.org/x/text", // through x/net/idna
	"github.com/dunglas/httpsfv",
}

// TestCoreDependencies checks with `go list -deps` that packages robots, pageterms, frontier
// and matcher import nothing outside the standard library, this module and coreModules.
func TestCoreDependencies(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the dependencies: %v", err)
	}
	const self = "github.com/f9014239/robots"
	cmd := exec.Command(goBin, "list", "-deps", "-json=ImportPath,Standard,Dir,GoFiles,Module",
		".", "./pageterms", "./frontier", "./matcher")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	type pkg struct {
		ImportPath string
		Standard   bool
		Dir        string
		GoFiles    []string
		Module     *struct{ Path string }
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	var own, outside int
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list's output: %v", err)
		}
		switch {
		case p.Standard:
			continue
		case p.Module != nil && p.Module.Path == self:
			own++
			// Go's test cache reruns this test when a file it stats changes: stat the
			// sources whose imports decide the result.
			for _, f := range p.GoFiles {
				if _, err := os.Stat(filepath.Join(p.Dir, f)); err != nil {
					t.Fatal(err)
				}
			}
			if p.ImportPath == self+"/boltstore" || strings.HasPrefix(p.ImportPath, self+"/cmd/") {
				t.Errorf("a core package imports %s", p.ImportPath)
			}
			continue
		}
		outside++
		ok := false
		for _, m := range coreModules {
			if p.Module != nil && p.Module.Path == m {
				ok = true
			}
		}
		if !ok {
			mod := "(no module)"
			if p.Module != nil {
				mod = p.Module.Path
			}
			t.Errorf("package robots, pageterms, frontier or matcher imports %s, of module %s, not among %v",
				p.ImportPath, mod, coreModules)
		}
	}
	if _, err := os.Stat("go.mod"); err != nil {
		t.Fatal(err)
	}
	if own < 4 || outside == 0 {
		t.Fatalf("go list listed %d packages of this module and %d outside: not the expected graph", own, outside)
	}
}
