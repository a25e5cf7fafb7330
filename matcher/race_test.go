//go:build race

package matcher

// raceEnabled reports whether the race detector is on, which makes the
// randomised tests slow enough to be cut down.
const raceEnabled = true
