package unwind

import "fmt"

// hdr is a parsed .eh_frame_hdr: where .eh_frame is, and the binary
// search table of FDE start addresses to FDE addresses.
type hdr struct {
	ehFrame uint64
	entries []hdrEntry
}

type hdrEntry struct {
	pc, fde uint64
}

// parseHdr parses an .eh_frame_hdr loaded at vaddr.
func parseHdr(data []byte, vaddr uint64) (hdr, error) {
	const name = ".eh_frame_hdr"
	var h hdr
	r := buf{b: data, vaddr: vaddr, data: vaddr}
	version, ptrEnc, countEnc, tableEnc := r.u8(), r.u8(), r.u8(), r.u8()
	if r.bad {
		return h, &FormatError{name, 0, "truncated header"}
	}
	if version != 1 {
		return h, &FormatError{name, 0, fmt.Sprintf("version %d", version)}
	}
	var ok bool
	if h.ehFrame, ok = r.ptr(ptrEnc); !ok || r.bad {
		return h, &FormatError{name, 4, fmt.Sprintf("eh_frame_ptr encoding %#x", ptrEnc)}
	}
	if countEnc == peOmit || tableEnc == peOmit {
		return h, nil
	}
	at := r.off
	count, ok := r.ptr(countEnc)
	if !ok || r.bad {
		return h, &FormatError{name, at, fmt.Sprintf("fde_count encoding %#x", countEnc)}
	}
	// Each entry takes at least two bytes.
	if count > uint64(r.left()/2) {
		return h, &FormatError{name, at, fmt.Sprintf("fde_count %d exceeds the %d bytes left", count, r.left())}
	}
	h.entries = make([]hdrEntry, 0, count)
	for range count {
		at := r.off
		pc, ok1 := r.ptr(tableEnc)
		f, ok2 := r.ptr(tableEnc)
		if !ok1 || !ok2 || r.bad {
			return h, &FormatError{name, at, fmt.Sprintf("truncated table entry (encoding %#x)", tableEnc)}
		}
		h.entries = append(h.entries, hdrEntry{pc, f})
	}
	return h, nil
}
