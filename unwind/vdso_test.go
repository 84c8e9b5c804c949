package unwind

import (
	"bytes"
	"os"
	"testing"

	"nsprof/proc"
)

// TestReadVDSOAtMappedVDSO checks that ReadVDSO finds the vdso where
// proc's maps parser, the one the recorder reads mappings with, lists it.
func TestReadVDSOAtMappedVDSO(t *testing.T) {
	maps, err := proc.ReadMaps(proc.Self)
	if err != nil {
		t.Fatal(err)
	}
	var vdso *proc.Mapping
	for i := range maps {
		if maps[i].Path == "[vdso]" {
			vdso = &maps[i]
		}
	}
	if vdso == nil {
		t.Fatal("/proc/self/maps lists no [vdso]")
	}
	got, err := ReadVDSO(0)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ReadVDSOAt(os.Getpid(), vdso.Start, vdso.End)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || len(got) == 0 {
		t.Errorf("ReadVDSO(0): %d bytes, the image at %#x-%#x: %d bytes", len(got), vdso.Start, vdso.End, len(want))
	}
}
