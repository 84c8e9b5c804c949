package record

import (
	"maps"
	"os"
	"slices"
	"strconv"

	"nsprof/capture"
	"nsprof/container"
)

// This file carries a split recording's knowledge of processes from one
// capture to the next (see [Split]): the processes alive are described
// again in the new capture, and those gone are forgotten, so that memory
// stays bounded over months of recording with processes coming and going.

// live reports whether the tracker still follows process pid.
func (t *tracker) live(pid int) bool {
	_, ok := t.procs[pid]
	return ok
}

// nextCapture forgets the processes that exited before the next capture
// begins. A process gone from /proc though no EXIT record said so is
// forgotten one cut later: it may have exited after the ending capture's
// end, while the cut was made (bundling its symbols takes a while), and
// then its last records are the next capture's, which must describe it
// and name its stacks; its EXIT record may also have been lost, and it
// is then described in one capture too many.
func (t *tracker) nextCapture() {
	for pid, ps := range t.procs {
		if !ps.described {
			continue // pending: described at the next tick
		}
		if !ps.hasExited() && !ps.goneAtCut {
			if _, err := os.Stat(t.fs.Root + "/" + strconv.Itoa(pid)); err == nil {
				continue
			}
			ps.goneAtCut = true
			continue
		}
		t.forget(pid)
	}
	// What forgotten processes left for records read late is not asked
	// of the next capture, which does not describe them: an agent
	// recording for days would hold it for every process in a PID
	// namespace that ever ran.
	t.gone = nil
	// Children kept waiting for a parent that was never described
	// (see flushPending) go with them.
	for pid := range t.parentOf {
		if _, ok := t.procs[pid]; !ok {
			delete(t.parentOf, pid)
		}
	}
	t.pm.prune(t.live)
}

// describeLive describes the processes followed in the capture t.w now
// writes, at time now: their process-table lines, PROCESS frames,
// mountinfo, container files, mappings and the namespace ids of their
// threads, as the capture they were first described in has them.
func (t *tracker) describeLive(now int64) {
	for _, pid := range slices.Sorted(maps.Keys(t.procs)) {
		ps := t.procs[pid]
		if !ps.described {
			continue
		}
		info := ps.info
		info.Time = now
		if c := info.Container; c != nil && c.Kind != container.KindHost && t.identify != nil {
			// Writes the container's layers and files again.
			if again := t.identify(pid, now); again != nil {
				info.Container = again
			}
		}
		if t.err == nil {
			t.err = t.w.AddProcessInfo(info)
		}
		h := capture.FrameHeader{CPU: -1, PID: int32(pid), Time: now}
		t.write(&capture.Process{FrameHeader: h, Cmdline: ps.name})
		if mi, err := t.mounts.read(pid, ps.mounts); err == nil && t.err == nil {
			t.err = t.w.AddFileBytes(h, "/proc/"+strconv.Itoa(pid)+"/mountinfo", mi)
		}
		for _, m := range ps.maps {
			m.FrameHeader = h
			t.write(&m)
		}
		t.threads(pid, ps, now)
	}
}

// prune forgets the processes live says are gone, and the ids of PID
// namespaces no process followed is in any more, but for the command's
// tree's (see [pidMap.forget]).
func (m *pidMap) prune(live func(pid int) bool) {
	for pid := range m.nsOf {
		if !live(pid) {
			m.forget(pid)
		}
	}
	for pid := range m.parent {
		if !live(pid) {
			m.forget(pid)
		}
	}
	inUse := maps.Clone(m.treeNS)
	if inUse == nil {
		inUse = map[uint64]bool{}
	}
	for _, ns := range m.nsOf {
		inUse[ns] = true
	}
	for ns := range m.inner {
		if !inUse[ns] {
			delete(m.inner, ns)
		}
	}
}

// nextCapture forgets the addresses sampled for the capture that ended,
// and the processes live says are gone with the files only they mapped.
// With unload, it also drops the symbol tables and debug information read
// for the files still mapped that the ending capture did not sample (their
// files stay open): a capture that samples one again reads them again,
// from the symbol cache when it has them, so that what the recorder holds
// is bounded by the files one capture samples, not by every file sampled
// since the recording began, and the files sampled capture after capture
// are read once.
func (s *symbolizer) nextCapture(live func(pid int) bool, unload bool) {
	s.seenStacks = nil
	s.shadowed, s.shadowedNamed = 0, 0
	s.spill.reset() // exited processes, named in the capture that ended
	s.mapsGen++     // files are closed below
	used := map[*symObj]bool{}
	hot := map[*symObj]bool{}
	for pid, p := range s.procs {
		if !live(pid) {
			continue
		}
		for _, g := range p.gens() {
			for a := range g.user.all {
				if m := g.find(a); m != nil {
					hot[m.obj] = true
				}
			}
		}
		p.user, p.packed, p.flags, p.kernel, p.kernelPacked, p.prev = nil, nil, nil, nil, nil, nil
		for _, m := range p.maps {
			used[m.obj] = true
		}
	}
	if s.self != nil {
		used[s.self] = true
	}
	roots := map[*container.Process]bool{}
	for k, o := range s.objs {
		if used[o] {
			if o.root != nil {
				roots[o.root] = true
			}
			if unload && o.loaded && !hot[o] {
				o.elf.Close()
				o.loaded, o.elf, o.syms, o.afterCall = false, nil, nil, nil
			}
			continue
		}
		if o.f != nil {
			o.f.Close()
			s.opened--
		}
		if o.elf != nil {
			o.elf.Close()
		}
		delete(s.objs, k)
	}
	for k, o := range s.alias {
		if !used[o] {
			delete(s.alias, k)
		}
	}
	for pid, p := range s.procs {
		if live(pid) {
			continue
		}
		s.closeJIT(p) // read by the bundle of the capture that ended
		if p.cp != nil && !roots[p.cp] {
			p.cp.Close()
		} else if p.cp != nil {
			s.pinned = append(s.pinned, p.cp) // its files' debug search
		}
		delete(s.procs, pid)
	}
	pinned := s.pinned[:0]
	seen := map[*container.Process]bool{}
	for _, cp := range s.pinned {
		switch {
		case seen[cp]:
		case roots[cp]:
			seen[cp] = true
			pinned = append(pinned, cp)
		default:
			seen[cp] = true
			if !isProcView(s, cp) {
				cp.Close()
			}
		}
	}
	clear(s.pinned[len(pinned):])
	s.pinned = pinned
}

// isProcView reports whether cp is the current view of a process still
// followed (closed with it, not as a pinned view).
func isProcView(s *symbolizer, cp *container.Process) bool {
	for _, p := range s.procs {
		if p.cp == cp {
			return true
		}
	}
	return false
}
