package record

import (
	"math/rand/v2"
	"testing"
)

// TestAddrTable notes addresses as a map would keep them: the latest time
// and every flag of each, address 0 and addresses that differ only in
// their high bits included, through the table's growth from empty and
// from a size hint.
func TestAddrTable(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, hint := range []int{0, 5, 3000} {
		tab := newAddrTable(hint)
		want := map[uint64]userAddr{}
		for i := range 20000 {
			var a uint64
			switch r.IntN(4) {
			case 0:
				a = uint64(r.IntN(3000)) << 48 // only the high bits differ
			case 1:
				a = uint64(r.IntN(8)) // 0 included
			default:
				a = 0x400000 + r.Uint64N(1<<14)
			}
			at, line, call := r.Int64N(1<<40), r.IntN(2) == 0, r.IntN(3) == 0
			tab.note(a, at, line, call)
			u, ok := want[a]
			if !ok {
				u.t = at
			}
			want[a] = userAddr{t: max(u.t, at), line: u.line || line, call: u.call || call}
			if i%997 == 0 {
				if got, ok := tab.get(a); !ok || got != want[a] {
					t.Fatalf("hint %d, note %d: %#x holds %+v (%v), want %+v", hint, i, a, got, ok, want[a])
				}
			}
		}
		if tab.Len() != len(want) {
			t.Fatalf("hint %d: %d addresses, want %d", hint, tab.Len(), len(want))
		}
		seen := 0
		for a, u := range tab.all {
			seen++
			if u != want[a] {
				t.Errorf("hint %d: %#x holds %+v, want %+v", hint, a, u, want[a])
			}
		}
		if seen != len(want) {
			t.Errorf("hint %d: all yields %d addresses, want %d", hint, seen, len(want))
		}
		if _, ok := tab.get(1 << 63); ok {
			t.Errorf("hint %d: an address never noted is found", hint)
		}
	}
	var none *addrTable
	if _, ok := none.get(0); ok || none.Len() != 0 {
		t.Error("a nil table holds an address")
	}
}
