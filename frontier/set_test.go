package frontier

import (
	"math/rand/v2"
	"testing"
)

// TestSet checks set against a map, through growth, shrinking and removals
// that shift hashes back, with hashes chosen to collide.
func TestSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s set
	m := map[uint64]bool{}
	for i := range 20000 {
		// Few distinct hashes, many sharing their home slot.
		h := uint64(rng.IntN(2000)) << uint(rng.IntN(3)*20)
		if i > 10000 && rng.IntN(3) > 0 || rng.IntN(2) == 0 {
			s.remove(h)
			delete(m, max(h, 1))
			continue
		}
		if added := s.add(h); added == m[max(h, 1)] {
			t.Fatalf("add(%#x) = %v, but the map says it is there: %v", h, added, m[max(h, 1)])
		}
		m[max(h, 1)] = true
	}
	if s.n != len(m) {
		t.Fatalf("set holds %d, map %d", s.n, len(m))
	}
	for h := range m {
		if s.add(h) {
			t.Fatalf("%#x lost", h)
		}
	}
	for h := range m {
		s.remove(h)
	}
	if s.n != 0 || len(s.slots) > 16 {
		t.Errorf("emptied set holds %d in %d slots", s.n, len(s.slots))
	}
}
