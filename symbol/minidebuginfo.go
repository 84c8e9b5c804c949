package symbol

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/ulikunitz/xz"
)

// MiniDebugInfo bounds: the compressed section, and the decompressed ELF,
// which may be at most maxMiniDebugRatio times the compressed size. Fedora's
// are well under 1 MiB compressed and compress about 4:1.
const (
	maxMiniDebugCompressed = 64 << 20
	maxMiniDebugRatio      = 64
	maxMiniDebugSize       = 256 << 20
)

// miniDebugInfo reads the function symbols of the .symtab of the
// MiniDebugInfo: an xz-compressed ELF in the .gnu_debugdata section that
// holds the symbols .dynsym lacks (Fedora, RHEL, CentOS).
func (f *File) miniDebugInfo() ([]entry, error) {
	s := f.elf.Section(".gnu_debugdata")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil, ErrNoSymbols
	}
	data, err := f.sectionData(s, maxMiniDebugCompressed)
	if err != nil {
		return nil, err
	}
	inner, err := decompressMiniDebugInfo(data)
	if err != nil {
		return nil, &FormatError{Off: int64(s.Offset), Msg: fmt.Sprintf("section .gnu_debugdata: %v", err)}
	}
	mf, err := NewFile(bytes.NewReader(inner))
	if err != nil {
		return nil, &FormatError{Off: int64(s.Offset), Msg: fmt.Sprintf("section .gnu_debugdata: %v", err)}
	}
	return mf.symtab(elf.SHT_SYMTAB)
}

// decompressMiniDebugInfo decompresses xz data, refusing output beyond the
// bounds.
func decompressMiniDebugInfo(data []byte) ([]byte, error) {
	if err := checkXZ(data); err != nil {
		return nil, err
	}
	zr, err := xz.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("xz: %w", err)
	}
	limit := min(int64(len(data))*maxMiniDebugRatio, maxMiniDebugSize)
	out, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, fmt.Errorf("xz: %w", err)
	}
	if int64(len(out)) > limit {
		return nil, fmt.Errorf("decompresses to more than %d bytes", limit)
	}
	return out, nil
}

// maxXZDict bounds the LZMA2 dictionary an xz stream may ask for: the
// decoder allocates it whole, and a forged header can ask for 4 GiB. xz -9
// uses 64 MiB.
const maxXZDict = 64 << 20

// checkXZ walks the blocks of a single xz stream through its index and
// refuses one whose LZMA2 dictionary exceeds maxXZDict, before the decoder
// allocates it.
func checkXZ(data []byte) error {
	const hdr, footer = 12, 12
	if len(data) < hdr+footer || !bytes.HasPrefix(data, []byte("\xfd7zXZ\x00")) || !bytes.HasSuffix(data, []byte("YZ")) {
		return errors.New("xz: not a single xz stream")
	}
	backward := (uint64(binary.LittleEndian.Uint32(data[len(data)-8:])) + 1) * 4
	indexStart := uint64(len(data) - footer)
	if backward > indexStart-hdr {
		return fmt.Errorf("xz: index size %d beyond the stream", backward)
	}
	indexStart -= backward
	idx := data[indexStart : len(data)-footer]
	if len(idx) == 0 || idx[0] != 0 {
		return errors.New("xz: bad index indicator")
	}
	idx = idx[1:]
	n, idx, ok := uvarint(idx)
	if !ok || n > uint64(len(data)) {
		return errors.New("xz: bad index record count")
	}
	off := uint64(hdr)
	for i := uint64(0); i < n; i++ {
		var unpadded uint64
		if unpadded, idx, ok = uvarint(idx); !ok {
			return errors.New("xz: bad index record")
		}
		if _, idx, ok = uvarint(idx); !ok {
			return errors.New("xz: bad index record")
		}
		if off >= indexStart {
			return errors.New("xz: block beyond the index")
		}
		if err := checkXZBlockHeader(data[off:indexStart]); err != nil {
			return fmt.Errorf("xz: block at byte %d: %w", off, err)
		}
		size := (unpadded + 3) &^ 3
		if size == 0 || size > indexStart-off {
			return errors.New("xz: block size beyond the stream")
		}
		off += size
	}
	if off != indexStart {
		return errors.New("xz: blocks do not reach the index")
	}
	return nil
}

// checkXZBlockHeader checks the filter flags of a block header.
func checkXZBlockHeader(b []byte) error {
	if len(b) < 1 || b[0] == 0 {
		return errors.New("bad block header")
	}
	size := (int(b[0]) + 1) * 4
	if size > len(b) {
		return errors.New("block header beyond the stream")
	}
	h := b[1 : size-4] // without the size byte and the CRC32
	if len(h) < 1 {
		return errors.New("short block header")
	}
	flags := h[0]
	h = h[1:]
	var ok bool
	for _, present := range []bool{flags&0x40 != 0, flags&0x80 != 0} {
		if present {
			if _, h, ok = uvarint(h); !ok {
				return errors.New("bad block sizes")
			}
		}
	}
	for range int(flags&3) + 1 {
		var id, psize uint64
		if id, h, ok = uvarint(h); !ok {
			return errors.New("bad filter id")
		}
		if psize, h, ok = uvarint(h); !ok || psize > uint64(len(h)) {
			return errors.New("bad filter properties")
		}
		if id == 0x21 { // LZMA2
			if psize != 1 {
				return errors.New("bad LZMA2 properties")
			}
			if d := xzDictSize(h[0]); d > maxXZDict {
				return fmt.Errorf("LZMA2 dictionary of %d bytes is larger than %d", d, maxXZDict)
			}
		}
		h = h[psize:]
	}
	return nil
}

// xzDictSize decodes the LZMA2 dictionary size property.
func xzDictSize(b byte) uint64 {
	if b >= 40 {
		return 1<<32 - 1
	}
	return uint64(2|b&1) << (b/2 + 11)
}

// uvarint decodes an xz variable-length integer (at most 9 bytes).
func uvarint(b []byte) (uint64, []byte, bool) {
	v, n := binary.Uvarint(b)
	if n <= 0 || n > 9 {
		return 0, b, false
	}
	return v, b[n:], true
}
