package capture

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"unsafe"

	"nsprof/internal/unix"
)

// ErrFileShrank is wrapped by the error of [ReadMapped] when the mapped
// file was truncated while it was read, as a recording overwriting it
// would do.
var ErrFileShrank = errors.New("the file shrank while being read")

// MapFile maps the regular file f read-only and shared, so a capture can be
// decoded from the page cache without being copied (see
// [NewBytesReader]). It returns the mapping, a function that unmaps it,
// and what f is (for reading it again later). data is nil, with no error,
// when f cannot be mapped (not a regular file, empty, too large for this
// system, or no mmap here); the caller then reads f instead. Read data
// only inside [ReadMapped], and call unmap once nothing refers to data.
func MapFile(f *os.File) (data []byte, unmap func() error, info os.FileInfo, err error) {
	st, err := f.Stat()
	if err != nil {
		return nil, nil, nil, err
	}
	if !st.Mode().IsRegular() || st.Size() <= 0 || st.Size() != int64(int(st.Size())) {
		return nil, nil, st, nil
	}
	data, err = unix.Mmap(int(f.Fd()), int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, st, nil
	}
	return data, func() error { return unix.Munmap(data) }, st, nil
}

// DropMapped lets the pages of data[from:to], where data is a mapping from
// [MapFile], leave the process's resident set: a reader done with them
// (the frames it decoded copied what they keep) does not hold the whole
// file in memory. Reading them again reads them again from the page
// cache. Only whole pages inside the range are dropped.
func DropMapped(data []byte, from, to int64) {
	page := int64(os.Getpagesize())
	base := int64(uintptr(unsafe.Pointer(unsafe.SliceData(data))))
	start := (base + from + page - 1) &^ (page - 1)
	end := (base + to) &^ (page - 1)
	if from < 0 || to > int64(len(data)) || end <= start {
		return
	}
	unix.DropPages(data[start-base : end-base])
}

// ReadMapped calls read, which reads data (a mapping from [MapFile]), on
// the calling goroutine, and turns a fault reading inside data into an
// error wrapping [ErrFileShrank] instead of a crash. read must not read
// data from other goroutines: the guard is the calling goroutine's, and
// another goroutine that reads data calls ReadMapped itself. A panic
// that is not a fault inside data (a nil dereference included) is passed
// on as it is.
func ReadMapped(data []byte, read func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(interface{ Addr() uintptr })
			base := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
			if !ok || f.Addr() < base || f.Addr()-base >= uintptr(len(data)) {
				panic(r)
			}
			err = fmt.Errorf("read capture: %w (%v)", ErrFileShrank, r)
		}
	}()
	return read()
}
