//go:build !unix

package bench

import "time"

// cpuNow reports that CPU time is not measured on this system.
func cpuNow() (time.Duration, bool) { return 0, false }
