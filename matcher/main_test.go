package matcher

import (
	"fmt"
	"os"
	"testing"
)

// TestMain says once, visibly, when the shared conformance cases and corpus
// are absent, so that their skipped tests are not mistaken for passes.
func TestMain(m *testing.M) {
	for _, dir := range []string{conformanceDir, corpusDir, usageDir} {
		if _, err := os.Stat(dir); err != nil {
			fmt.Fprintf(os.Stderr, "matcher: %s is absent: the tests that read it are skipped\n", dir)
		}
	}
	os.Exit(m.Run())
}
