package frontier

// set is a set of 64-bit hashes, by open addressing with linear probing:
// 8 bytes a slot, a third to three quarters of them used, so 11 to 22 bytes
// a hash. (A map[uint64]struct{} takes 16 bytes a slot and 17 to 38 bytes a
// hash.) 0 marks an empty slot, so the hash 0 is kept as 1.
type set struct {
	slots []uint64 // a power of two of them, or none
	n     int
}

// slot returns where h is, or where it would go.
func (s *set) slot(h uint64) int {
	mask := len(s.slots) - 1
	i := int(h>>32^h) & mask
	for s.slots[i] != 0 && s.slots[i] != h {
		i = (i + 1) & mask
	}
	return i
}

// add adds h and reports whether it was not in s.
func (s *set) add(h uint64) bool {
	h = max(h, 1)
	if (s.n+1)*4 > len(s.slots)*3 {
		s.resize(max(16, 2*len(s.slots)))
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
	mask := len(s.slots) - 1
	for j := (i + 1) & mask; s.slots[j] != 0; j = (j + 1) & mask {
		home := int(s.slots[j]>>32^s.slots[j]) & mask
		// s.slots[j] may move to i if i lies cyclically in [home, j).
		if (j-home)&mask >= (j-i)&mask {
			s.slots[i] = s.slots[j]
			i = j
		}
	}
	s.slots[i] = 0
	s.n--
	if len(s.slots) > 16 && s.n*8 < len(s.slots) {
		s.resize(len(s.slots) / 2)
	}
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
