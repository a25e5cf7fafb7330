package redisstore

import (
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/fleet/fleettest"
)

// TestConformance holds the Store to the contracts of fleet.Pacer and
// fleet.Store, on the Redis (or Redis Cluster) of the tests: a second Store
// with its own client is another process of the fleet, and a Store closed
// and made again on a new client is one restarted.
func TestConformance(t *testing.T) {
	addr := redisAddr(t)
	// fresh returns a Store with a client of its own under prefix.
	fresh := func(t *testing.T, prefix string) *Store {
		s := newStore(t, newClient(t, addr))
		s.Prefix = prefix
		// The suite tests the rules, not the timeouts: a loaded machine,
		// or a Cluster's client reconnecting after a call whose context
		// ended, may take longer than DefaultTimeout.
		s.Timeout = 5 * time.Second
		return s
	}
	again := func(t *testing.T, p *Store) *Store { return fresh(t, p.Prefix) }
	reopen := func(t *testing.T, p *Store) *Store {
		p.Close()
		return again(t, p)
	}
	t.Run("Pacer", func(t *testing.T) {
		fleettest.TestPacer(t, fleettest.Pacers{
			New:    func(t *testing.T) fleet.Pacer { return fresh(t, testPrefix(t, addr)) },
			Shared: func(t *testing.T, p fleet.Pacer) fleet.Pacer { return again(t, p.(*Store)) },
			Reopen: func(t *testing.T, p fleet.Pacer) fleet.Pacer { return reopen(t, p.(*Store)) },
		})
	})
	t.Run("Store", func(t *testing.T) {
		fleettest.TestStore(t, fleettest.Stores{
			New:    func(t *testing.T) fleet.Store { return fresh(t, testPrefix(t, addr)) },
			Reopen: func(t *testing.T, s fleet.Store) fleet.Store { return reopen(t, s.(*Store)) },
			// A live holder's lock is extended (see TryLock); its own
			// tests let one run out after its holder stopped.
			LocksExtend: true,
		})
	})
}
