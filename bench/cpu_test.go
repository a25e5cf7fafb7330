package bench

import (
	"testing"
	"time"
)

// A cpuClock measures the CPU time a benchmark's loop uses, as a second
// figure beside the wall-clock ns/op that go test reports. On a machine busy
// with other work the wall clock also counts the time the benchmark waits
// for a CPU, and that wait changes from one sub-benchmark to the next; the
// CPU time the process uses (its own goroutine plus the garbage collector's
// work) changes much less, so ratios of cpu-ns/op stay meaningful there.
type cpuClock struct {
	start time.Duration
	ok    bool
}

// startCPU starts a cpuClock; call it just before the b.Loop loop.
func startCPU() cpuClock {
	t, ok := cpuNow()
	return cpuClock{t, ok}
}

// report reports the CPU time per iteration as "cpu-ns/op"; call it just
// after the b.Loop loop, when b.N holds the number of iterations.
func (c cpuClock) report(b *testing.B) {
	t, ok := cpuNow()
	if !c.ok || !ok || b.N == 0 {
		return
	}
	b.ReportMetric(float64(t-c.start)/float64(b.N), "cpu-ns/op")
}
