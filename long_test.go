package robots

import (
	"os"
	"testing"
)

// longTest skips t unless ROBOTS_LONG_TESTS is set: a million origins and
// the memory sweeps take most of a minute on two cores, and a quick
// `go test ./...` does not need them to show that the package works. CI
// runs them.
func longTest(t *testing.T) {
	t.Helper()
	if os.Getenv("ROBOTS_LONG_TESTS") == "" {
		t.Skip("long test: set ROBOTS_LONG_TESTS=1 (.ci/run does)")
	}
}
