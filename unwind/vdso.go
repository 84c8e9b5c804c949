package unwind

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"

	"nsprof/proc"
)

// ReadVDSO returns the image of the vdso mapped into process pid (0: this
// process), read from its memory: the vdso exists in no file. Every
// process of one ABI (x86-64, x32, i386) on one kernel maps the same
// image.
func ReadVDSO(pid int) ([]byte, error) {
	dir := "/proc/self"
	if pid > 0 {
		dir = "/proc/" + strconv.Itoa(pid)
	} else {
		pid = proc.Self
	}
	maps, err := proc.ReadMaps(pid)
	if err != nil {
		return nil, err
	}
	for _, m := range maps {
		if m.Path == "[vdso]" {
			return readVDSO(dir, m.Start, m.End)
		}
	}
	return nil, errors.New(dir + ": no vdso mapped")
}

// ReadVDSOAt returns the image of the vdso that process pid maps at
// start..end (exclusive), as an MMAP record of "[vdso]" gives it, read
// through /proc/PID/mem. It fails if the process is gone, or if what is
// there is not an ELF image (the process exec'd since).
func ReadVDSOAt(pid int, start, end uint64) ([]byte, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("read vdso: bad pid %d", pid)
	}
	return readVDSO("/proc/"+strconv.Itoa(pid), start, end)
}

// maxVDSOSize bounds a vdso image; today's are 8 KiB.
const maxVDSOSize = 1 << 20

// readVDSO reads the vdso at start..end of the process whose /proc
// directory is dir.
func readVDSO(dir string, start, end uint64) ([]byte, error) {
	if end <= start || end-start > maxVDSOSize {
		return nil, fmt.Errorf("%s: vdso at %#x-%#x: bad size", dir, start, end)
	}
	mem, err := os.Open(dir + "/mem")
	if err != nil {
		return nil, err
	}
	defer mem.Close()
	img := make([]byte, end-start)
	if _, err := mem.ReadAt(img, int64(start)); err != nil {
		return nil, fmt.Errorf("%s/mem at %#x: %w", dir, start, err)
	}
	if !bytes.HasPrefix(img, []byte("\x7fELF")) {
		return nil, fmt.Errorf("%s/mem at %#x: no ELF image", dir, start)
	}
	return img, nil
}
