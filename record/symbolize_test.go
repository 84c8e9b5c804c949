package record

import (
	"errors"
	"os"
	"testing"

	"nsprof/container"
	"nsprof/symbol"
)

// A process gone before its mapping is looked at: its file is taken from
// the host path only when the build-id matches.
func TestSymbolizerHostByBuildID(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := symbol.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	id := f.BuildID()
	f.Close()
	if len(id) == 0 {
		t.Skip("test binary has no build-id")
	}
	gone := func(int) (*container.Process, error) { return nil, errors.New("no such process") }
	for _, tc := range []struct {
		name string
		id   []byte
		want bool
	}{
		{"same build-id", id, true},
		{"other build-id", append([]byte{id[0] ^ 0xff}, id[1:]...), false},
		{"no build-id", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSymbolizer()
			s.open = gone
			defer s.close()
			s.mapped(42, container.Mapping{Path: self, Start: 0x1000, End: 0x2000, Inode: 7, BuildID: tc.id})
			p := s.procs[42]
			if len(p.maps) != 1 {
				t.Fatalf("%d mappings", len(p.maps))
			}
			o := p.maps[0].obj
			if got := o.f != nil; got != tc.want {
				t.Fatalf("opened = %v (via %q), want %v", got, o.via, tc.want)
			}
			if tc.want && o.via != viaHostBuildID {
				t.Errorf("via %q, want %q", o.via, viaHostBuildID)
			}
		})
	}
}
