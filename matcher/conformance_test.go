package matcher

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// conformanceDir holds the shared conformance cases, through the link
// testdata/shared (see testdata/README.md). It is absent outside the
// project's workspace.
const conformanceDir = "../testdata/shared/conformance"

// conformanceCase is one line of a conformance file.
type conformanceCase struct {
	Test      string `json:"test"`
	Robots    string `json:"robots"`
	RobotsB64 string `json:"robots_b64"`
	Agent     string `json:"agent"`
	URL       string `json:"url"`
	Expected  bool   `json:"expected"`
	Note      string `json:"note"`
}

func TestConformance(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(conformanceDir, "*.jsonl"))
	if len(files) == 0 {
		t.Skipf("no conformance cases: %s/*.jsonl not found", conformanceDir)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 16<<20)
			n := 0
			for line := 1; sc.Scan(); line++ {
				var c conformanceCase
				if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
					t.Fatalf("%s:%d: %v", file, line, err)
				}
				body := []byte(c.Robots)
				if c.RobotsB64 != "" {
					if body, err = base64.StdEncoding.DecodeString(c.RobotsB64); err != nil {
						t.Fatalf("%s:%d: robots_b64: %v", file, line, err)
					}
				}
				if got := Parse(body).Allowed(c.Agent, c.URL); got != c.Expected {
					robots := string(body)
					if len(robots) > 300 {
						robots = robots[:300] + "..."
					}
					t.Errorf("%s:%d %s: Allowed(%q, %q) = %v want %v\nrobots.txt:\n%s\nnote: %s",
						filepath.Base(file), line, c.Test, c.Agent, c.URL, got, c.Expected, robots, c.Note)
				}
				n++
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Fatalf("%s holds no cases", file)
			}
		})
	}
}
