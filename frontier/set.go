package frontier

// set is a set of 64-bit hashes, by open addressing with linear probing:
// 8 bytes a slot. It grows to twice its hashes when more than three
// quarters of its slots are used, and shrinks to twice its hashes when
// fewer than three eighths are: it holds 8/(3/4) to 8/(3/8), that is 10.7 to
// 21.3 bytes a hash, at every size, and each resize is paid for by the n/4
// additions or removals since the one before. (A map[uint64]struct{} takes
// 16 bytes a slot and 17 to 38 bytes a hash, and never shrinks.) 0 marks an
// empty slot, so the hash 0 is kept as 1.
type set struct {
	slots []uint64 // any number of them (not a power of two), or none
	n     int
}

// minSlots is the fewest slots a set that holds a hash has.
const minSlots = 16

// home returns the slot where h belongs: h scaled to the number of slots.
func (s *set) home(h uint64) int {
	return int(uint64(uint32(h>>32^h)) * uint64(len(s.slots)) >> 32)
}

// slot returns where h is, or where it would go.
func (s *set) slot(h uint64) int {
	i := s.home(h)
	for s.slots[i] != 0 && s.slots[i] != h {
		if i++; i == len(s.slots) {
			i = 0
		}
	}
	return i
}

// add adds h and reports whether it was not in s.
func (s *set) add(h uint64) bool {
	h = max(h, 1)
	if (s.n+1)*4 > len(s.slots)*3 {
		s.resize(max(minSlots, 2*(s.n+1)))
	}
	i := s.slot(h)
	if s.slots[i] == h {
		return false
	}
	s.slots[i] = h
	s.n++
	return true
}

// remove removes h, if it is in s.
func (s *set) remove(h uint64) {
	h = max(h, 1)
	if s.n == 0 {
		return
	}
	i := s.slot(h)
	if s.slots[i] != h {
		return
	}
	// Shift back the hashes after i that would no longer be found past
	// the hole (Knuth's algorithm R), so that no tombstone is needed.
	l := len(s.slots)
	dist := func(from, to int) int { // cyclic
		d := to - from
		if d < 0 {
			d += l
		}
		return d
	}
	for j := next(i, l); s.slots[j] != 0; j = next(j, l) {
		// s.slots[j] may move to i if i lies cyclically in [home, j).
		if dist(s.home(s.slots[j]), j) >= dist(i, j) {
			s.slots[i] = s.slots[j]
			i = j
		}
	}
	s.slots[i] = 0
	s.n--
	switch {
	case s.n == 0:
		s.slots = nil
	case len(s.slots) > minSlots && s.n*8 < len(s.slots)*3:
		s.resize(max(minSlots, 2*s.n))
	}
}

func next(i, l int) int {
	if i++; i == l {
		return 0
	}
	return i
}

func (s *set) resize(size int) {
	old := s.slots
	s.slots = make([]uint64, size)
	for _, h := range old {
		if h != 0 {
			s.slots[s.slot(h)] = h
		}
	}
}
