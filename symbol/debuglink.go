package symbol

import (
	"bytes"
	"hash/crc32"
	"io"
	"path"
	"strings"
)

// maxDebugLinkSize bounds the .gnu_debuglink section: a file name, padding
// and a CRC.
const maxDebugLinkSize = 4096

// DebugLink returns the contents of the .gnu_debuglink section: the base
// name of the separate debug file and the CRC32 of that file's contents.
// ok is false when there is no such section or it is malformed, or the name
// is not a plain file name (it holds a '/', or is "." or "..").
func (f *File) DebugLink() (name string, crc uint32, ok bool) {
	data, err := f.section(".gnu_debuglink", maxDebugLinkSize)
	if err != nil || data == nil {
		return "", 0, false
	}
	i := bytes.IndexByte(data, 0)
	if i <= 0 {
		return "", 0, false
	}
	name = string(data[:i])
	off := align4(uint64(i) + 1)
	if off+4 > uint64(len(data)) || strings.Contains(name, "/") || name == "." || name == ".." {
		return "", 0, false
	}
	return name, f.elf.ByteOrder.Uint32(data[off:]), true
}

// DebugLinkCRC computes the checksum .gnu_debuglink records for a debug
// file: the CRC-32 (IEEE) of all its bytes.
func DebugLinkCRC(r io.Reader) (uint32, error) {
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, r); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}

// debugLinkPaths returns the places GDB looks for the debug file name of
// the object at objPath: next to it, in its .debug directory, and under
// each debug directory at the object's directory.
func debugLinkPaths(objPath, name string, debugDirs []string) []string {
	dir := path.Dir(objPath)
	ps := []string{
		path.Join(dir, name),
		path.Join(dir, ".debug", name),
	}
	for _, d := range debugDirs {
		ps = append(ps, path.Join(d, dir, name))
	}
	return ps
}
