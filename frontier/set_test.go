package frontier

import (
	"math/rand/v2"
	"strconv"
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
		if s.n > 0 && len(s.slots) > minSlots && (s.n*8 < len(s.slots)*3 || s.n*4 > len(s.slots)*3) {
			t.Fatalf("set of %d hashes in %d slots", s.n, len(s.slots))
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

// TestRing checks ring against a slice, through growth, shrinking and
// wrapping, and that it holds at most two slots a URL once past its least
// size.
func TestRing(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var r ring
	var m []string
	for i := range 60000 {
		// Fill up to a few thousand, drain, fill again.
		grow := (i/6000)%2 == 0
		switch op := rng.IntN(10); {
		case len(m) > 0 && (op < 3 || !grow && op < 8):
			if got := r.pop(); got != m[0] {
				t.Fatalf("pop = %q, want %q", got, m[0])
			}
			m = m[1:]
		case op == 9:
			s := strconv.Itoa(i)
			r.pushFront(s)
			m = append([]string{s}, m...)
		default:
			s := strconv.Itoa(i)
			r.push(s)
			m = append(m, s)
		}
		if r.n != len(m) || r.n > 0 && r.front() != m[0] {
			t.Fatalf("ring holds %d, the slice %d", r.n, len(m))
		}
		if len(r.buf) > 8 && len(r.buf) > 2*r.n {
			t.Fatalf("ring of %d URLs in %d slots", r.n, len(r.buf))
		}
	}
	for len(m) > 0 {
		if got := r.pop(); got != m[0] {
			t.Fatalf("pop = %q, want %q", got, m[0])
		}
		m = m[1:]
	}
	if r.buf != nil {
		t.Errorf("empty ring keeps %d slots", len(r.buf))
	}
}
