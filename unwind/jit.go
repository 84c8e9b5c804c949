package unwind

import (
	"errors"
	"fmt"
)

// JITCode is code a JIT made in anonymous memory, at [Start, End), and
// the .eh_frame bytes (CIEs and FDEs) it wrote for it, as a jitdump's
// unwinding record holds them.
type JITCode struct {
	Start, End uint64
	EHFrame    []byte
}

// JITTable interprets the call frame information of codes into a table of
// absolute addresses (a Module of Bias 0). The JIT encodes each FDE's
// address relative to where perf inject places the bytes in the ELF file
// it makes (after the code, at an alignment of its choosing), which this
// need not know: a code's FDEs are moved together so that the first
// begins at its Start, and cut at its End. Where codes overlap, the later
// one wins (a JIT reuses the memory of code it freed). A code whose bytes
// are not call frame information is left out, and the first such error
// is returned with the table; nil when no code gave a row.
func JITTable(codes []JITCode) (*Table, error) {
	var fdes []fde
	var errs []error
	for i := len(codes) - 1; i >= 0; i-- { // the later first: it wins
		c := &codes[i]
		if c.End <= c.Start {
			continue
		}
		got, err := parseFDEs(section{name: "jitdump .eh_frame", data: c.EHFrame, eh: true})
		if err != nil && len(errs) == 0 {
			errs = append(errs, fmt.Errorf("JIT code at %#x: %w", c.Start, err))
		}
		if len(got) == 0 {
			continue
		}
		shift := c.Start - got[0].begin
		for _, f := range got {
			f.begin, f.end = f.begin+shift, min(f.end+shift, c.End)
			if f.begin >= c.Start && f.begin < f.end {
				fdes = append(fdes, f)
			}
		}
	}
	if len(fdes) == 0 {
		return nil, errors.Join(errs...)
	}
	t := &Table{}
	if err := t.build(fdes); err != nil && len(errs) == 0 {
		errs = append(errs, err)
	}
	if len(t.rows) == 0 {
		return nil, errors.Join(errs...)
	}
	return t, errors.Join(errs...)
}

// Covers reports whether t's call frame information describes the code at
// a (a link-time address).
func (t *Table) Covers(a uint64) bool {
	_, ok := t.lookup(a)
	return ok
}
