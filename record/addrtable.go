package record

import "math/rand/v2"

// addrTable holds the user addresses noted in one image of a process,
// each with what is known of it (a userAddr), for symGen.note, which
// every user frame of every sample calls.
//
// It is a table of open addressing rather than a Go map because noting
// an address already there, what nearly every note does (an image of the
// compile loop's compiler sees some 10 k notes for 1500 addresses), is
// one probe and an update in place, where the map took a lookup and an
// assignment: BenchmarkNote 26-31 ns a note against 59-68 with the map,
// BenchmarkPack 235-253 us against 366-432. The hash multiplies by an
// odd number drawn for each table, so that a process cannot choose
// addresses that crowd one run of slots (its stacks are its own to
// write).
type addrTable struct {
	slots []addrSlot
	n     int
	mul   uint64
	shift uint8
}

// addrSlot is one address of an addrTable and what was noted of it; used
// tells an empty slot apart, address 0 included. The userAddr fields are
// spelled out rather than embedded: 24 bytes a slot, where a userAddr
// (16 with its padding) and used would take 32.
type addrSlot struct {
	a    uint64
	t    int64
	line bool
	call bool
	used bool
}

// noted returns what was noted of s's address.
func (s *addrSlot) noted() userAddr { return userAddr{t: s.t, line: s.line, call: s.call} }

// newAddrTable returns a table with room for hint addresses before it
// grows.
func newAddrTable(hint int) *addrTable {
	size, shift := 16, uint8(60)
	for size*3/4 < hint && size < 1<<40 {
		size, shift = size*2, shift-1
	}
	return &addrTable{slots: make([]addrSlot, size), mul: rand.Uint64() | 1, shift: shift}
}

// Len returns the number of addresses in t; 0 for a nil table.
func (t *addrTable) Len() int {
	if t == nil {
		return 0
	}
	return t.n
}

// slot returns the slot holding a, or the empty one where a goes.
func (t *addrTable) slot(a uint64) *addrSlot {
	mask := uint64(len(t.slots) - 1)
	for i := (a * t.mul) >> t.shift; ; i = (i + 1) & mask {
		if s := &t.slots[i]; !s.used || s.a == a {
			return s
		}
	}
}

// note adds address a as seen at time at, keeping the latest time and
// each flag set by any note of it.
func (t *addrTable) note(a uint64, at int64, line, call bool) {
	s := t.slot(a)
	if s.used {
		s.t = max(s.t, at)
		s.line = s.line || line
		s.call = s.call || call
		return
	}
	*s = addrSlot{a: a, t: at, line: line, call: call, used: true}
	if t.n++; t.n > len(t.slots)*3/4 {
		t.grow()
	}
}

// grow doubles the slots.
func (t *addrTable) grow() {
	old := t.slots
	t.slots, t.shift = make([]addrSlot, 2*len(old)), t.shift-1
	for i := range old {
		if s := &old[i]; s.used {
			*t.slot(s.a) = *s
		}
	}
}

// get returns what was noted of a, false when it was not.
func (t *addrTable) get(a uint64) (userAddr, bool) {
	if t == nil {
		return userAddr{}, false
	}
	s := t.slot(a)
	return s.noted(), s.used
}

// all yields the addresses of t with what was noted of them, in no
// order.
func (t *addrTable) all(yield func(uint64, userAddr) bool) {
	if t == nil {
		return
	}
	for i := range t.slots {
		if s := &t.slots[i]; s.used && !yield(s.a, s.noted()) {
			return
		}
	}
}
