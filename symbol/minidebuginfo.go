package symbol

import (
	"bytes"
	"debug/elf"
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
