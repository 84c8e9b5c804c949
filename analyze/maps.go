package analyze

import (
	"cmp"
	"slices"
)

// resolveMaps returns the mappings of one process, ms in the order their
// MAP frames were read, as the kernel would have left them: sorted by
// start, none overlapping, a later mapping (by frame time, then frame
// order) replacing what it covers of earlier ones, as mmap over a mapped
// range and exec do. A recorder writes a child's inherited mappings at its
// fork and its new image's at its exec: a forked go command that execs a
// compiler held both at 0x400000, and the process's frames could not be
// told apart by code (see [Profile.sameCode]), so that each compiler's
// frames were named anew (347 k of a 60 s capture's 709 k frames).
//
// A frame is one address of one process over the whole capture: an
// address that held code of an earlier image is named as the latest
// image's, where the process spends its life (the recorder's bundle
// names each address of a process once too). A mapping read again over
// the same range of the same file (from /proc, then from the kernel's
// record) keeps the build-id one of them gave.
func resolveMaps(ms []Mapping) []Mapping {
	if len(ms) < 2 {
		return ms
	}
	read := slices.Clone(ms)
	slices.SortStableFunc(ms, func(x, y Mapping) int { return cmp.Compare(x.Start, y.Start) })
	overlap := false
	end := uint64(0)
	for i := range ms {
		if ms[i].Start < end {
			overlap = true
			break
		}
		end = max(end, ms[i].End)
	}
	if !overlap {
		return ms
	}
	// The mappings in the order they were made: by time, in the order
	// they were read among equal times.
	byTime := read
	slices.SortStableFunc(byTime, func(x, y Mapping) int { return cmp.Compare(x.time, y.time) })
	var cur, next []Mapping
	for _, m := range byTime {
		if m.End <= m.Start {
			continue
		}
		next = next[:0]
		for _, o := range cur {
			if o.End <= m.Start || o.Start >= m.End {
				next = append(next, o)
				continue
			}
			if o.Start == m.Start && o.End == m.End && o.Offset == m.Offset && o.File == m.File && m.BuildID == "" {
				m.BuildID = o.BuildID
			}
			if o.Start < m.Start {
				left := o
				left.End = m.Start
				next = append(next, left)
			}
			if o.End > m.End {
				right := o
				right.Offset += m.End - o.Start
				right.Start = m.End
				next = append(next, right)
			}
		}
		cur, next = append(next, m), cur
	}
	slices.SortFunc(cur, func(x, y Mapping) int { return cmp.Compare(x.Start, y.Start) })
	return cur
}
