package matcher

import (
	"os"
	"testing"
)

// longTest skips t unless ROBOTS_LONG_TESTS is set: the memory sweeps
// parse many copies of files of MaxSize bytes, seconds each on two cores,
// and a quick `go test ./...` does not need them to show that matching
// works. CI runs them.
func longTest(t *testing.T) {
	t.Helper()
	if os.Getenv("ROBOTS_LONG_TESTS") == "" {
		t.Skip("long test: set ROBOTS_LONG_TESTS=1 (.ci/run does)")
	}
}
