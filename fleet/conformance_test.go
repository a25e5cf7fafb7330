package fleet_test

import (
	"testing"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/fleet/fleettest"
)

func TestMemoryStoreConformance(t *testing.T) {
	fleettest.TestStore(t, fleettest.Stores{
		New: func(t *testing.T) fleet.Store { return new(fleet.MemoryStore) },
	})
}
