package symbol

import (
	"bufio"
	"debug/elf"
	"io"
	"slices"

	"github.com/klauspost/compress/zlib"
)

// Sections compressed with zlib (SHF_COMPRESSED, ELFCOMPRESS_ZLIB: what
// Debian's debug files and `objcopy --compress-debug-sections` make) are
// inflated here through klauspost/compress, not through debug/elf's
// Section.Open: that reads the file 4 KiB at a time with compress/zlib,
// and inflating libc's 5.8 MB .debug_info took a quarter longer that way.
// Other compressions (zstd) and the old .zdebug_ sections are left to
// debug/elf.

// compressedHeader returns the size of the compression header that starts
// a SHF_COMPRESSED section of f (Elf32_Chdr or Elf64_Chdr).
func (f *File) compressedHeader() int64 {
	if f.elf.Class == elf.ELFCLASS32 {
		return 12
	}
	return 24
}

// openSection returns a reader of the contents of s, inflated when the
// section is compressed; it yields at most s.Size bytes, the size the
// compression header claims (which checkBounds has held to what the
// compressed bytes can justify).
func (f *File) openSection(s *elf.Section) (io.Reader, error) {
	if s.Type == elf.SHT_NOBITS || s.Flags&elf.SHF_COMPRESSED == 0 || s.Flags&elf.SHF_ALLOC != 0 {
		return s.Open(), nil
	}
	hdr := f.compressedHeader()
	if s.FileSize < uint64(hdr) || s.Offset > uint64(f.size) || s.FileSize > uint64(f.size)-s.Offset {
		return s.Open(), nil // debug/elf reports what is wrong
	}
	var typ [4]byte
	if _, err := f.r.ReadAt(typ[:], int64(s.Offset)); err != nil {
		return nil, err
	}
	if elf.CompressionType(f.elf.ByteOrder.Uint32(typ[:])) != elf.COMPRESS_ZLIB {
		return s.Open(), nil
	}
	raw := io.NewSectionReader(f.r, int64(s.Offset)+hdr, int64(s.FileSize)-hdr)
	zr, err := zlib.NewReader(bufio.NewReaderSize(raw, 64<<10))
	if err != nil {
		return nil, err
	}
	return io.LimitReader(zr, int64(s.Size)), nil
}

// sectionBytes returns the contents of s, inflated when compressed; with
// an error, what could be read before it. The caller has bounded s.Size;
// past preallocBytes the buffer grows with what the stream gives, as
// debug/elf's Data does, so a header that claims more than the stream
// holds costs no more than the stream.
func (f *File) sectionBytes(s *elf.Section) ([]byte, error) {
	if s.Type == elf.SHT_NOBITS || s.Flags&elf.SHF_COMPRESSED == 0 {
		return s.Data()
	}
	r, err := f.openSection(s)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, min(s.Size, preallocBytes))
	for uint64(len(b)) < s.Size {
		if len(b) == cap(b) {
			b = slices.Grow(b, int(min(s.Size-uint64(len(b)), uint64(cap(b)))))
		}
		n, err := r.Read(b[len(b):min(uint64(cap(b)), s.Size)])
		b = b[:len(b)+n]
		if err == io.EOF && uint64(len(b)) < s.Size {
			return b, io.ErrUnexpectedEOF
		}
		if err != nil && err != io.EOF {
			return b, err
		}
	}
	return b, nil
}

// preallocBytes is how much of a compressed section's claimed size
// sectionBytes allocates before inflating.
const preallocBytes = 32 << 20
