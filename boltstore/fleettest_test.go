package boltstore

import (
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/fleet/fleettest"
)

// TestConformance holds the Store to the contracts of fleet.Pacer and
// fleet.Store: on its own clock, reopened by Close and Open; and on a fake
// clock, for the MaxWait boundary and clock jumps.
func TestConformance(t *testing.T) {
	reopen := func(t *testing.T, opts ...Option) func(t *testing.T, p fleet.Pacer) fleet.Pacer {
		return func(t *testing.T, p fleet.Pacer) fleet.Pacer {
			s := p.(*Store)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return openTest(t, s.path, opts...)
		}
	}
	t.Run("Pacer", func(t *testing.T) {
		fleettest.TestPacer(t, fleettest.Pacers{
			New:    func(t *testing.T) fleet.Pacer { return openTest(t, tempPath(t)) },
			Reopen: reopen(t),
		})
	})
	t.Run("PacerFakeClock", func(t *testing.T) {
		c := newFakeClock()
		fleettest.TestPacer(t, fleettest.Pacers{
			New:    func(t *testing.T) fleet.Pacer { return openTest(t, tempPath(t), withClock(c.now)) },
			Reopen: reopen(t, withClock(c.now)),
			Clock:  c,
		})
	})
	t.Run("Store", func(t *testing.T) {
		fleettest.TestStore(t, fleettest.Stores{
			New: func(t *testing.T) fleet.Store { return openTest(t, tempPath(t)) },
			Reopen: func(t *testing.T, st fleet.Store) fleet.Store {
				s := st.(*Store)
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				return openTest(t, s.path)
			},
		})
	})
}

// Advance moves the fake clock by d, backwards if d is negative.
func (c *fakeClock) Advance(d time.Duration) { c.advance(d) }
