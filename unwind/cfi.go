package unwind

import "fmt"

// cie is a Common Information Entry: what the FDEs that point at it share.
type cie struct {
	codeAlign uint64
	dataAlign int64
	raReg     uint64
	fdeEnc    byte
	lsdaEnc   byte
	hasAug    bool // augmentation data follows each FDE's range ('z')
	signal    bool // 'S': the FDEs describe signal trampolines
	initial   []byte
	init      state // the state after the initial instructions
	initErr   error
	inited    bool
}

// fde is a Frame Description Entry: the instructions for one range of code.
type fde struct {
	cie        *cie
	begin, end uint64
	insns      []byte
	off        int // of the FDE in its section
	ins        int // of insns in the section
}

// section is one call-frame section as loaded.
type section struct {
	name  string
	data  []byte
	vaddr uint64 // load address of data[0] (pc-relative base)
	eh    bool   // .eh_frame layout rather than .debug_frame
	text  uint64 // base of textrel pointers
	got   uint64 // base of datarel pointers
}

// parseFDEs returns every FDE of s, each with its CIE. Malformed entries
// end the walk with an error naming their offset; the FDEs read before
// them are returned.
func parseFDEs(s section) ([]fde, error) {
	cies := make(map[int]*cie)
	// Room for an FDE per 48 bytes: GCC's and LLVM's take 50-70 bytes
	// each (cc1: 45 k in 2.4 MB), and growing the list by append was
	// half of what loading a large table allocated.
	out := make([]fde, 0, len(s.data)/48+1)
	r := buf{b: s.data, vaddr: s.vaddr, data: s.got, text: s.text}
	for r.left() > 0 {
		start := r.off
		length := uint64(r.u32())
		is64 := false
		if length == 0xffffffff {
			length, is64 = r.u64(), true
		}
		if r.bad {
			return out, &FormatError{s.name, start, "truncated entry length"}
		}
		if length == 0 {
			if s.eh {
				break // the terminator
			}
			continue
		}
		if length > uint64(r.left()) {
			return out, &FormatError{s.name, start, fmt.Sprintf("entry length %d exceeds the %d bytes left", length, r.left())}
		}
		idOff := r.off
		body := buf{b: s.data[:r.off+int(length)], off: r.off, vaddr: s.vaddr, data: s.got, text: s.text}
		r.off += int(length)
		var id uint64
		if is64 {
			id = body.u64()
		} else {
			id = uint64(body.u32())
		}
		isCIE := id == 0
		if !s.eh {
			isCIE = id == 0xffffffff || (is64 && id == ^uint64(0))
		}
		if isCIE {
			c, err := parseCIE(&body, s.name, start)
			if err != nil {
				return out, err
			}
			cies[start] = c
			continue
		}
		cieOff := int(id)
		if s.eh {
			cieOff = idOff - int(id)
		}
		c := cies[cieOff]
		if c == nil {
			// A CIE may follow its FDEs in .debug_frame.
			var err error
			if c, err = cieAt(s, cieOff); err != nil {
				return out, &FormatError{s.name, start, fmt.Sprintf("FDE's CIE at %#x: %v", cieOff, err)}
			}
			cies[cieOff] = c
		}
		f, err := parseFDE(&body, c, s.name, start)
		if err != nil {
			return out, err
		}
		if f.end > f.begin {
			out = append(out, f)
		}
	}
	return out, nil
}

// cieAt parses the CIE starting at off.
func cieAt(s section, off int) (*cie, error) {
	if off < 0 || off >= len(s.data) {
		return nil, fmt.Errorf("outside the %d-byte section", len(s.data))
	}
	r := buf{b: s.data, off: off, vaddr: s.vaddr, data: s.got, text: s.text}
	length := uint64(r.u32())
	is64 := length == 0xffffffff
	if is64 {
		length = r.u64()
	}
	if r.bad || length > uint64(r.left()) || length == 0 {
		return nil, fmt.Errorf("bad length %d", length)
	}
	r.b = s.data[:r.off+int(length)]
	var id uint64
	if is64 {
		id = r.u64()
	} else {
		id = uint64(r.u32())
	}
	if (s.eh && id != 0) || (!s.eh && id != 0xffffffff && id != ^uint64(0)) {
		return nil, fmt.Errorf("not a CIE (id %#x)", id)
	}
	return parseCIE(&r, s.name, off)
}

// parseCIE reads a CIE body after its id.
func parseCIE(r *buf, name string, start int) (*cie, error) {
	c := &cie{fdeEnc: peAbsptr, lsdaEnc: peOmit}
	version := r.u8()
	if version != 1 && version != 3 && version != 4 {
		return nil, &FormatError{name, start, fmt.Sprintf("CIE version %d", version)}
	}
	aug := r.cstring()
	if version == 4 {
		addrSize, segSize := r.u8(), r.u8()
		if addrSize != 8 || segSize != 0 {
			return nil, &FormatError{name, start, fmt.Sprintf("CIE address size %d, segment size %d", addrSize, segSize)}
		}
	}
	c.codeAlign = r.uleb()
	c.dataAlign = r.sleb()
	if version == 1 {
		c.raReg = uint64(r.u8())
	} else {
		c.raReg = r.uleb()
	}
	if len(aug) > 0 && aug[0] == 'z' {
		c.hasAug = true
		n := r.uleb()
		data := r.bytes(n)
		if r.bad {
			return nil, &FormatError{name, start, "truncated CIE augmentation"}
		}
		a := buf{b: data, vaddr: r.vaddr + uint64(r.off-int(n)), data: r.data, text: r.text}
		for _, ch := range aug[1:] {
			switch ch {
			case 'R':
				c.fdeEnc = a.u8()
			case 'L':
				c.lsdaEnc = a.u8()
			case 'P':
				if _, ok := a.ptr(a.u8()); !ok {
					return nil, &FormatError{name, start, "bad personality encoding"}
				}
			case 'S':
				c.signal = true
			case 'B', 'G':
			default:
				// The length says where instructions start; other
				// letters' data can be skipped.
				a.off = len(a.b)
			}
		}
		if a.bad {
			return nil, &FormatError{name, start, fmt.Sprintf("truncated augmentation data for %q", aug)}
		}
	} else if len(aug) > 0 && string(aug) != "eh" {
		return nil, &FormatError{name, start, fmt.Sprintf("unknown augmentation %q", aug)}
	} else if string(aug) == "eh" {
		r.u64() // GCC 2.x exception table pointer
	}
	if r.bad {
		return nil, &FormatError{name, start, "truncated CIE"}
	}
	c.initial = r.b[r.off:]
	return c, nil
}

// parseFDE reads an FDE body after its CIE pointer.
func parseFDE(r *buf, c *cie, name string, start int) (fde, error) {
	f := fde{cie: c, off: start}
	begin, ok := r.ptr(c.fdeEnc)
	if !ok {
		return f, &FormatError{name, start, fmt.Sprintf("pointer encoding %#x", c.fdeEnc)}
	}
	// The range has the format of the encoding but is never relative.
	size, _ := r.ptr(c.fdeEnc & 0x0f)
	if c.hasAug {
		n := r.uleb()
		r.bytes(n)
	}
	if r.bad {
		return f, &FormatError{name, start, "truncated FDE"}
	}
	f.begin, f.end = begin, begin+size
	if f.end < f.begin {
		return f, &FormatError{name, start, fmt.Sprintf("FDE range %#x+%#x wraps", begin, size)}
	}
	f.insns, f.ins = r.b[r.off:], r.off
	return f, nil
}
