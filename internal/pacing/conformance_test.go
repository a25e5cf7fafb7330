package pacing_test

import (
	"testing"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/fleet/fleettest"
	"github.com/f9014239/robots/internal/pacing"
)

// TestMemoryConformance holds the Memory Pacer to the contract of
// fleet.Pacer; two Transports share one Memory by sharing the value.
func TestMemoryConformance(t *testing.T) {
	fleettest.TestPacer(t, fleettest.Pacers{
		New:    func(t *testing.T) fleet.Pacer { return new(pacing.Memory) },
		Shared: func(t *testing.T, p fleet.Pacer) fleet.Pacer { return p },
	})
}
