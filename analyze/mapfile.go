package analyze

import (
	"fmt"
	"os"
	"runtime/debug"
	"unsafe"

	"nsprof/internal/unix"
)

// mapFile maps the regular file f read-only, so a capture is decoded from
// the page cache without being copied. It returns nil, nil when f cannot
// be mapped (not a regular file, empty, or no mmap here); the caller then
// reads it. It also returns what f is, for reading it again later.
func mapFile(f *os.File) ([]byte, os.FileInfo, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() || st.Size() <= 0 || st.Size() != int64(int(st.Size())) {
		return nil, st, nil
	}
	data, err := unix.Mmap(int(f.Fd()), int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, st, nil
	}
	return data, st, nil
}

// loadMapped loads the capture file src mapped at data, which it unmaps
// before it returns: nothing of the profile refers to the mapping. A fault
// reading the mapping (the file was truncated meanwhile) becomes an error.
func loadMapped(data []byte, src *sourceFile, opts LoadOptions) (p *Profile, err error) {
	defer unix.Munmap(data)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			// Only a fault inside the mapping; any other panic, a
			// nil dereference included, is a bug to report as such.
			f, ok := r.(interface{ Addr() uintptr })
			base := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
			if !ok || f.Addr() < base || f.Addr()-base >= uintptr(len(data)) {
				panic(r)
			}
			p, err = nil, fmt.Errorf("read capture: the file shrank while being read (%v)", r)
		}
	}()
	return loadBytes(data, src, opts)
}
