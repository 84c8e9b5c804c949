package analyze

import (
	"cmp"
	"path"
	"slices"
	"strings"
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
// address that held code of an earlier image is in the latest image's
// mapping, where the process spends its life (the recorder's bundle
// names each address of a process once too, from the later image when
// it was sampled there). A mapping read again over the same range of the
// same file (from /proc, then from the kernel's record) keeps the
// build-id one of them gave.
//
// replaced are the ranges, sorted, where a mapping replaced another of a
// different file or offset: a frame there may be of either image, and
// is named from its own process's bundle only (see
// [Profile.otherImage]). hist, set when a mapping of a file was
// replaced so, holds the mappings by time and the times of the replacing
// ones, from which the process's earlier images are told apart (see
// [Profile.splitImages]).
func resolveMaps(ms []Mapping) (out []Mapping, replaced []addrSpan, hist *mapHistory) {
	if len(ms) < 2 {
		return ms, nil, nil
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
		return ms, nil, nil
	}
	// The mappings in the order they were made: by time, in the order
	// they were read among equal times.
	byTime := read
	slices.SortStableFunc(byTime, func(x, y Mapping) int { return cmp.Compare(x.time, y.time) })
	var cur, next []Mapping
	var bounds []int64
	var fileSpans []addrSpan
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
			if o.Start == m.Start && o.End == m.End && o.Offset == m.Offset && o.File == m.File {
				if m.BuildID == "" {
					m.BuildID = o.BuildID
				}
			} else if o.File != m.File || o.Offset-o.Start != m.Offset-m.Start || o.BuildID != m.BuildID && o.BuildID != "" && m.BuildID != "" {
				span := addrSpan{max(o.Start, m.Start), min(o.End, m.End)}
				replaced = append(replaced, span)
				if o.IsFile() {
					// Code of a file: not anonymous memory that
					// JIT compilers map again and again, whose
					// names the bundle keeps by process.
					fileSpans = append(fileSpans, span)
					bounds = append(bounds, m.time)
				}
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
	if len(fileSpans) > 0 {
		slices.Sort(bounds)
		hist = &mapHistory{byTime: byTime, bounds: slices.Compact(bounds), spans: mergeSpans(fileSpans)}
	}
	return cur, mergeSpans(replaced), hist
}

// mapHistory is how a process's mappings changed (see [resolveMaps]):
// its MAP frames' mappings by time, the times at which one replaced a
// mapping of a file by another of a different file or offset, sorted,
// once each, and the ranges replaced so, sorted.
type mapHistory struct {
	byTime []Mapping
	bounds []int64
	spans  []addrSpan
}

// addrSpan is the range of addresses [lo, hi).
type addrSpan struct{ lo, hi uint64 }

// mergeSpans returns spans sorted, those that overlap or touch joined.
func mergeSpans(spans []addrSpan) []addrSpan {
	slices.SortFunc(spans, func(a, b addrSpan) int { return cmp.Compare(a.lo, b.lo) })
	out := spans[:0]
	for _, s := range spans {
		if n := len(out); n > 0 && s.lo <= out[n-1].hi {
			out[n-1].hi = max(out[n-1].hi, s.hi)
			continue
		}
		out = append(out, s)
	}
	return out
}

// inSpans reports whether addr is in one of sorted spans.
func inSpans(spans []addrSpan, addr uint64) bool {
	i, _ := slices.BinarySearchFunc(spans, addr, func(s addrSpan, a uint64) int {
		switch {
		case s.hi <= a:
			return -1
		case s.lo > a:
			return 1
		}
		return 0
	})
	return i < len(spans) && spans[i].lo <= addr && addr < spans[i].hi
}

// nameRootMappings names the mappings of a file perf gave as "/" (runc's
// init maps its own binary through a bind mount it detached, whose path
// is then its root): by the base name of another mapping of the same
// build-id (the first in order, when they differ), else "[build-id
// PREFIX]". Their frames' DSO was "/".
func (p *Profile) nameRootMappings() {
	var roots []*Mapping
	for _, pr := range p.procIndex {
		for i := range pr.Maps {
			if m := &pr.Maps[i]; m.BuildID != "" && m.File != "" && strings.Trim(m.File, "/") == "" {
				roots = append(roots, m)
			}
		}
	}
	if len(roots) == 0 {
		return
	}
	named := make(map[string]string) // build-id -> base name
	for _, pr := range p.procIndex {
		for i := range pr.Maps {
			m := &pr.Maps[i]
			if m.BuildID == "" || !m.IsFile() || strings.Trim(m.File, "/") == "" {
				continue
			}
			if old, ok := named[m.BuildID]; !ok || path.Base(m.File) < old {
				named[m.BuildID] = path.Base(m.File)
			}
		}
	}
	for _, m := range roots {
		if m.name = named[m.BuildID]; m.name == "" {
			m.name = "[build-id " + m.BuildID[:min(len(m.BuildID), 12)] + "]"
		}
	}
}
