package upf

// indexes hands out the indexes of one kernel array, 1..max-1 (0 is "none"
// in the rule references). A freed index goes to the back of a queue that is
// only drawn from once the array has been filled once: an index a packet in
// flight may still be reading is not handed out again soon.
type indexes struct {
	max  uint32
	next uint32
	free []uint32
	used uint32
}

func newIndexes(max uint32) *indexes { return &indexes{max: max, next: 1} }

func (a *indexes) get() (uint32, bool) {
	if a.next < a.max {
		a.next++
		a.used++
		return a.next - 1, true
	}
	if len(a.free) == 0 {
		return 0, false
	}
	i := a.free[0]
	a.free = a.free[1:]
	a.used++
	return i, true
}

func (a *indexes) put(i uint32) {
	if i == 0 {
		return
	}
	a.free = append(a.free, i)
	a.used--
}

// adopt rebuilds the allocator from the indexes in use found in the kernel
// after a restart.
func (a *indexes) adopt(inUse map[uint32]bool) {
	a.next, a.free, a.used = 1, nil, 0
	for i := range inUse {
		if i >= a.next {
			a.next = i + 1
		}
	}
	for i := uint32(1); i < a.next; i++ {
		if inUse[i] {
			a.used++
		} else {
			a.free = append(a.free, i)
		}
	}
}
