package record

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"nsprof/capture"
	"nsprof/container"
	"nsprof/internal/unix"
	"nsprof/symbol"
	"nsprof/symcache"
	"nsprof/unwind"
)

// symbolizer names, at the end of a recording, every address the samples
// hit, and writes the names into the capture as Sysprof's __symbols__
// bundle, so reports work after the processes and their containers are
// gone, and on other machines.
//
// Files must be reached while their processes live: a short-lived process
// or a container stopped before the recording ends takes its mount
// namespace with it. So each mapped file is opened (and checked to be the
// mapped file, by build-id or inode) when its mapping is first seen, and
// kept open until the end; each process's root directory is pinned too,
// for finding debug files inside it. Symbol tables are read only at the
// end, and only for the files samples hit.
type symbolizer struct {
	procs map[int]*symProc
	// jitClosing, when set, is told of a process whose exec is about to
	// close its jitdumps (see recorder.retryJIT).
	jitClosing func(pid int)
	objs       map[objKey]*symObj
	// alias holds second keys of objects in objs: a file's build-id and
	// its device and inode (see sameFile).
	alias map[objKey]*symObj
	// seenStacks holds hashes of the stacks sampled already, each in
	// the slot its low bits pick (seenStackSlots of them; 0 is an empty
	// slot); nil before the first.
	seenStacks []uint64
	// idle holds the kernel addresses of stacks of no process (see
	// noteIdle).
	idle map[uint64]struct{}
	// open opens a process's file view; container.Open outside tests.
	open func(pid int) (*container.Process, error)
	// peer, when set, returns a live process in the mount, PID and user
	// namespaces of gone process pid (0 for none): its view opens the
	// files pid mapped (see openThroughPeer).
	peer func(pid int) int
	// opened counts files held open, bounded by maxOpen.
	opened  int
	maxOpen int
	// pinned are views a process left behind by exec that files opened
	// through them still search debug files in; closed by close.
	pinned []*container.Process
	// readVDSO reads the vdso a process maps at start..end, and
	// ownVDSO this process's (pid 0); unwind.ReadVDSOAt and
	// unwind.ReadVDSO outside tests.
	readVDSO func(pid int, start, end uint64) ([]byte, error)
	ownVDSO  func(pid int) ([]byte, error)
	// self is the object of this process's vdso, read on first use;
	// selfTried says it was.
	self      *symObj
	selfTried bool
	// shadowed counts addresses sampled in an image exec replaced that
	// a later image of the process maps too, left out of the bundle;
	// shadowedNamed those of them described by build-id and offset in
	// the lines file instead, which nsprof's reports name them by.
	shadowed, shadowedNamed int
	// vdsoFallbacks counts vdso mappings not read from their process
	// (gone before its mapping was looked at), taken to be this
	// process's by their size.
	vdsoFallbacks int
	// cache, when set, keeps objects' symbols and source frames across
	// recordings (see symObj.resolve).
	cache *symcache.Cache
	// cacheUses counts the objects resolved by their use of the cache.
	cacheUses [3]int
	// cacheUntrusted counts the objects not written to the cache: files
	// others than root and the recording user could write.
	cacheUntrusted int
	// fills are the files whose cache entries are left to fill (see
	// SymbolFill).
	fills []*fillFile
	// exits are the processes exited whose addresses are to be packed,
	// oldest first (packExited).
	exits []exitedProc
	// spill holds the exited processes written out (packExited).
	spill procSpill
	// carry says objects are carried into another capture (a split
	// recording): see releaseTables.
	carry bool
	// mapsGen counts the changes of any process's mappings (and of the
	// objects they map, whose files a mapping may open): what the
	// unwinder remembers of a process's mappings holds while it stays.
	mapsGen uint64
}

type symMap struct {
	start, end, off uint64
	obj             *symObj
	// id is the build-id (lowercase hex) the mapping's MAP frame carries,
	// or "": the key of its source lines in the capture (see bundle).
	id string
}

// span is a half-open address range.
type span struct{ start, end uint64 }

// vdsoPath is the name of the vdso mapping, which is no file: its image is
// read from the process's memory, for its symbols and its CFI.
const vdsoPath = "[vdso]"

// objKey identifies a file across processes: by build-id when known, else
// by device and inode, else by path within one process.
type objKey struct {
	buildID  string
	dev, ino uint64
	path     string
	pid      int
}

// symObj is one mapped file.
type symObj struct {
	path string // as the first process that mapped it saw it
	tag  string
	f    *os.File
	via  string
	err  error
	// root is the view of the process the file was opened through, in
	// whose root its debug files are searched first.
	root  *container.Process
	tries int
	// hostTried says the host path was tried, by build-id.
	hostTried bool
	// notELF says the file, deleted since it was mapped, is no ELF
	// object (a JIT's memfd): it was let go, and its mappings are
	// anonymous memory's.
	notELF bool
	// fileID is the build-id read from the file itself (hex), for a
	// mapping the kernel gave none; idRead says it was looked for.
	fileID string
	idRead bool

	loaded bool
	elf    *symbol.File
	syms   *symbol.Symbols
	// linesDropped says syms keeps only the symbol table (dropLines).
	linesDropped bool

	// key names the object in the unwinder's table cache; vdso says it
	// is the vdso, whose image (nil if it could not be read) stands for
	// the file.
	key   string
	vdso  bool
	image []byte

	// afterCall caches, by file offset, whether the code before the
	// outermost return addresses of stacks ends in a call (trimCallers).
	afterCall map[uint64]bool

	// fill is what resolve leaves to fill in its cache entry (see
	// SymbolFill), taken by resolveObjects.
	fill *fillFile
}

const maxOpenFiles = 4096

// viaHostBuildID says a file was found at its path on the host, with the
// build-id its mapping records.
const viaHostBuildID = "host-build-id"

// viaHostInode says a file was found at its path on the host, the device
// and inode its mapping records, and readable by anyone.
const viaHostInode = "host-inode"

// openHostByInode opens the host file at name if it is the file of
// device dev and inode ino (as a mapping records them) and anyone may
// read it (see [openHostReadable]): a process gone before its mapping was
// looked at, whose record had no build-id (the kernel gives none when the
// file's first page is not in memory), cannot be asked whose file it was.
func openHostByInode(name string, dev, ino uint64) *os.File {
	f, sys := openHostReadable(name)
	if f == nil {
		return nil
	}
	if uint64(sys.Dev) != dev || sys.Ino != ino {
		f.Close()
		return nil
	}
	return f
}

// openHostReadable opens the host file at name if it is a regular file
// anyone may read, with its status. A gone process's file is read as
// root, not with the process's credentials: a file only some may read
// (an executable without read permission, which exec maps all the same)
// is not read for others. The open does not wait on a FIFO put at the
// path (see [symbol.OpenRegular]).
func openHostReadable(name string) (*os.File, *syscall.Stat_t) {
	f, err := symbol.OpenRegular(name)
	if err != nil {
		return nil, nil
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || st.Mode().Perm()&0o004 == 0 {
		f.Close()
		return nil, nil
	}
	return f, sys
}

// openHostByBuildID opens the host file at name if its build-id is id
// and anyone may read it (see [openHostReadable]).
func openHostByBuildID(name string, id []byte) *os.File {
	f, _ := openHostReadable(name)
	if f == nil {
		return nil
	}
	e, err := symbol.NewFile(f)
	if err != nil || !bytes.Equal(e.BuildID(), id) {
		f.Close()
		return nil
	}
	return f
}

func newSymbolizer() *symbolizer {
	return &symbolizer{
		procs:    make(map[int]*symProc),
		objs:     make(map[objKey]*symObj),
		open:     container.Open,
		maxOpen:  maxOpenFiles,
		readVDSO: unwind.ReadVDSOAt,
		ownVDSO:  unwind.ReadVDSO,
	}
}

// lookup returns what is known of pid, nil if nothing; a process written
// out is read back.
func (s *symbolizer) lookup(pid int) *symProc {
	p := s.procs[pid]
	if p == nil && s.spill.has(pid) {
		if p = s.spill.take(pid); p != nil {
			s.procs[pid] = p
		}
	}
	return p
}

// proc returns what is known of pid, without opening it.
func (s *symbolizer) proc(pid int) *symProc {
	p := s.lookup(pid)
	if p == nil {
		p = &symProc{}
		s.procs[pid] = p
	}
	return p
}

// reach returns pid's file view, opening it on first use; nil if the
// process could not be opened.
func (s *symbolizer) reach(pid int, p *symProc) *container.Process {
	if p.stale {
		// Opened before an exec: open it again for the new image. If
		// that fails (the exec is still settling), keep the old view:
		// map_files reaches the new mappings through it all the same.
		p.stale = false
		if cp, err := s.open(pid); err == nil {
			switch {
			case p.cp == nil:
			case p.owns:
				s.pinned = append(s.pinned, p.cp) // files opened through it
			default:
				p.cp.Close()
			}
			p.cp, p.owns = cp, false
		}
	}
	if !p.tried {
		p.tried = true
		p.cp, p.openErr = s.open(pid)
	}
	return p.cp
}

// isFilePath reports whether a mapping name is a file that can be opened,
// rather than anonymous memory or a pseudo-path such as [vdso] or //anon.
// A file deleted since it was mapped (" (deleted)": a binary upgraded
// under a running process, runc's copy of itself in a sealed memfd) is
// one: its process's map_files reaches it while the process runs, and
// the routes by path take no other file in its place (they check the
// inode or build-id).
func isFilePath(name string) bool {
	return strings.HasPrefix(name, "/") && !strings.HasPrefix(name, "//")
}

// deletedSuffix marks the name of a file deleted since it was mapped, as
// the kernel gives it.
const deletedSuffix = " (deleted)"

// isELF reports whether f, when open, starts as an ELF file does.
func isELF(f *os.File) bool {
	var magic [4]byte
	if f == nil {
		return false
	}
	n, _ := f.ReadAt(magic[:], 0)
	return n == len(magic) && string(magic[:]) == "\x7fELF"
}

// mapped notes an executable mapping of pid and opens its file if no
// process mapped it before. It returns the build-id of the file as its
// MAP frame should carry it (lowercase hex) when m has none from the
// kernel, or "": see [symObj.buildID].
func (s *symbolizer) mapped(pid int, m container.Mapping) string {
	s.mapsGen++
	if m.Path == vdsoPath {
		p := s.proc(pid)
		p.maps = append(p.maps, symMap{start: m.Start, end: m.End, off: m.Offset, obj: s.vdso(pid, m.Start, m.End)})
		return ""
	}
	p := s.proc(pid)
	if !isFilePath(m.Path) {
		p.other = append(p.other, span{m.Start, m.End})
		return ""
	}
	if symbol.IsJITDumpPath(m.Path) {
		// Not code: a JIT's description of the code it makes.
		s.jitDumpMapped(pid, p, m)
		p.other = append(p.other, span{m.Start, m.End})
		return ""
	}
	k := objKey{path: m.Path, pid: pid}
	switch {
	case len(m.BuildID) > 0:
		k = objKey{buildID: string(m.BuildID)}
	case m.Inode != 0:
		k = objKey{dev: m.Dev, ino: m.Inode}
	}
	o := s.objs[k]
	if o == nil {
		o = s.alias[k]
	}
	fresh := o == nil
	if fresh {
		o = &symObj{path: m.Path, tag: path.Base(m.Path), key: fmt.Sprintf("%x/%d/%d/%s/%d", k.buildID, k.dev, k.ino, k.path, k.pid)}
		s.objs[k] = o
	}
	deleted := strings.HasSuffix(m.Path, deletedSuffix)
	// A file that could not be opened through one process may be
	// reachable through another that maps it.
	if o.f == nil && !o.notELF && o.tries < 3 && s.opened < s.maxOpen && s.reach(pid, p) != nil {
		o.tries++
		open := p.cp.OpenMapped
		if deleted {
			// Its process's map_files alone reaches it. Every
			// route tried, in vain, for a mapping of runc's memfd
			// of a container's process took 0.2-0.4 ms of the
			// tracker's time, map_files alone 8 us.
			open = p.cp.OpenMapFile
		}
		f, via, err := open(m)
		if err == nil {
			o.f, o.via, o.err, o.root = f, via, nil, p.cp
			p.owns = true
			s.opened++
		} else if o.err == nil {
			o.err = err
		}
	}
	if o.f == nil && !deleted && p.tried && p.cp == nil && o.tries < 3 && s.opened < s.maxOpen {
		s.openThroughPeer(pid, o, m)
	}
	if o.f == nil && !deleted && !o.hostTried && len(m.BuildID) > 0 && s.opened < s.maxOpen {
		// The process is gone (or hides its files) before its mapping was
		// looked at, as short-lived processes are in system-wide
		// recordings. A host file at the same path is taken only with the
		// same build-id: a decoy or another version is refused.
		o.hostTried = true
		if f := openHostByBuildID(m.Path, m.BuildID); f != nil {
			o.f, o.via, o.err = f, viaHostBuildID, nil
			s.opened++
		}
	}
	if o.f == nil && !deleted && !o.hostTried && len(m.BuildID) == 0 && m.Inode != 0 && m.Dev != 0 && s.opened < s.maxOpen {
		// The same, by the file's device and inode.
		o.hostTried = true
		if f := openHostByInode(m.Path, m.Dev, m.Inode); f != nil {
			o.f, o.via, o.err = f, viaHostInode, nil
			s.opened++
		}
	}
	if deleted {
		if o.f != nil && !isELF(o.f) {
			o.f.Close()
			o.f, o.notELF = nil, true
			s.opened--
		}
		if o.f == nil {
			// Code a JIT wrote to memory it named rather than a
			// file's (.NET's "doublemapper" memfd), or a file no
			// longer reached: its perf map or jitdump names it, as
			// anonymous memory.
			p.other = append(p.other, span{m.Start, m.End})
			return ""
		}
	}
	if len(m.BuildID) > 0 {
		p.maps = append(p.maps, symMap{start: m.Start, end: m.End, off: m.Offset, obj: o, id: hex.EncodeToString(m.BuildID)})
		return ""
	}
	id := o.buildID()
	if k.ino != 0 && id != "" {
		o = s.sameFile(k, o, id, fresh)
	}
	p.maps = append(p.maps, symMap{start: m.Start, end: m.End, off: m.Offset, obj: o, id: id})
	return id
}

// viaPeer prefixes how a file of a gone process was reached through a
// live one in its namespaces (see openThroughPeer).
const viaPeer = "peer "

// openThroughPeer opens o's file, mapped by m in process pid, gone before
// its view was opened (a command that ran for milliseconds in a
// container, whose file is nowhere on the host), through the view of a
// live process in its namespaces (its parent, its container's shell):
// inside that process's root, or its container's layers, with its
// credentials. Only a file with m's build-id, or inode, is taken: a
// mapping that has neither could be another file at the same path.
func (s *symbolizer) openThroughPeer(pid int, o *symObj, m container.Mapping) {
	if s.peer == nil || len(m.BuildID) == 0 && m.Inode == 0 {
		return
	}
	q := s.peer(pid)
	if q <= 0 || q == pid {
		return
	}
	qp := s.proc(q)
	if s.reach(q, qp) == nil {
		return
	}
	o.tries++
	f, via, err := qp.cp.OpenMapped(m)
	if err != nil {
		if o.err == nil {
			o.err = err
		}
		return
	}
	o.f, o.via, o.err, o.root = f, viaPeer+via, nil, qp.cp
	qp.owns = true
	s.opened++
}

// sameFile returns the object of the file of build-id id (hex) that o,
// keyed by device and inode (k), was found to be. A system-wide recording
// maps the processes it finds at its start from /proc (device and inode)
// and those started since from the kernel's records (build-id): libc and
// ld.so were two objects, read and resolved twice. An object made for k
// just now (fresh: no mapping refers to it yet) gives way to one the
// build-id names already, which takes over its file when it has none and
// which k then names; otherwise the build-id names o too. The second key
// of an object is in alias, so that each object is in objs once.
func (s *symbolizer) sameFile(k objKey, o *symObj, id string, fresh bool) *symObj {
	raw, err := hex.DecodeString(id)
	if err != nil {
		return o
	}
	kb := objKey{buildID: string(raw)}
	tw := s.objs[kb]
	if tw == nil {
		tw = s.alias[kb]
	}
	switch {
	case tw == nil:
		s.setAlias(kb, o)
		return o
	case tw == o || !fresh:
		return o
	}
	if tw.f == nil && o.f != nil {
		tw.f, tw.via, tw.err, tw.root = o.f, o.via, nil, o.root
	} else if o.f != nil {
		o.f.Close()
		s.opened--
	}
	o.f = nil
	delete(s.objs, k)
	s.setAlias(k, tw)
	return tw
}

// setAlias makes k a second key of o (see [symbolizer.sameFile]).
func (s *symbolizer) setAlias(k objKey, o *symObj) {
	if s.alias == nil {
		s.alias = make(map[objKey]*symObj)
	}
	s.alias[k] = o
}

// buildID returns the build-id of the object's opened file, read once, in
// lowercase hex: its GNU build-id note wherever the file has it (the
// kernel reads only notes in PT_NOTE segments, and Go's linker leaves
// that one outside), else the Go toolchain's build-id note; "" without
// a file or either note.
func (o *symObj) buildID() string {
	if o.idRead || o.f == nil {
		return o.fileID
	}
	o.idRead = true
	f, err := symbol.NewFile(o.f)
	if err != nil {
		return ""
	}
	id := f.BuildID()
	if id == nil {
		id = f.GoBuildID()
	}
	o.fileID = hex.EncodeToString(id)
	return o.fileID
}

// vdso returns the object of the vdso process pid maps at start..end. It
// is read from the process's memory, as perf reads it: the vdso is in no
// file, and differs by ABI (a 32-bit process maps another) and by kernel.
// One identical to this process's shares its object; others are told
// apart by build-id. When the process is gone already, a vdso of the size
// of this process's is taken to be the same: every process of one ABI maps
// the same image.
func (s *symbolizer) vdso(pid int, start, end uint64) *symObj {
	self := s.selfVDSO()
	img, err := s.readVDSO(pid, start, end)
	if err != nil {
		if self != nil && uint64(len(self.image)) == end-start {
			s.vdsoFallbacks++
			return self
		}
		k := objKey{path: vdsoPath, pid: -1}
		o := s.objs[k]
		if o == nil {
			o = &symObj{path: vdsoPath, tag: vdsoPath, key: vdsoPath + "?", vdso: true, err: err}
			s.objs[k] = o
		}
		return o
	}
	if self != nil && bytes.Equal(img, self.image) {
		return self
	}
	id := ""
	if f, err := symbol.NewFile(bytes.NewReader(img)); err == nil {
		id = string(f.BuildID())
	}
	if id == "" {
		id = string(img) // no build-id: the image itself tells it apart
	}
	k := objKey{path: vdsoPath, buildID: id}
	o := s.objs[k]
	if o == nil {
		o = &symObj{path: vdsoPath, tag: vdsoPath, key: fmt.Sprintf("%s/%x", vdsoPath, sha256.Sum256(img)), vdso: true, image: img}
		s.objs[k] = o
	}
	return o
}

// selfVDSO returns the object of this process's vdso, nil if it cannot be
// read.
func (s *symbolizer) selfVDSO() *symObj {
	if !s.selfTried {
		s.selfTried = true
		if img, err := s.ownVDSO(0); err == nil {
			s.self = &symObj{path: vdsoPath, tag: vdsoPath, key: vdsoPath, vdso: true, image: img}
			s.objs[objKey{path: vdsoPath}] = s.self
		}
	}
	return s.self
}

// reader returns what o's contents are read from: its open file, or the
// vdso's image; nil when neither is there.
func (o *symObj) reader() io.ReaderAt {
	switch {
	case o.f != nil:
		return o.f
	case o.image != nil:
		return bytes.NewReader(o.image)
	}
	return nil
}

// forked gives a new process its parent's mappings, which perf does not
// report again. at is the time of its FORK record, 0 when unknown.
func (s *symbolizer) forked(ppid, pid int, at int64) {
	pp := s.lookup(ppid)
	if pp == nil {
		return
	}
	p := s.proc(pid)
	if p.exitAt != 0 && at > p.exitAt {
		s.reborn(pid, p, at)
	}
	s.mapsGen++
	// Mappings the child made itself may have been read first, from
	// another CPU's ring: they are later than the fork, so they follow
	// (and, where they overlap, replace) the parent's.
	p.maps = append(slices.Clip(pp.maps), p.maps...)
	p.other = append(slices.Clip(pp.other), p.other...)
}

// execed forgets pid's mappings: exec replaced its image at time at,
// keeping those that addresses sampled before then need. It also marks
// the view of the process's files stale, to be opened again for the new
// image's mappings: a process may have changed its root before exec, as
// `unshare --root`, bubblewrap and container runtimes do, and a view
// opened while it still ran the launcher on the host would look for the
// new image's debug files on the host. The old view is kept in case the
// new one cannot be opened (the process already gone): files are checked
// against their mappings' build-id or inode whichever view finds them.
func (s *symbolizer) execed(pid int, at int64) {
	p := s.lookup(pid)
	if p == nil {
		return
	}
	if len(p.jit) > 0 && s.jitClosing != nil {
		s.jitClosing(pid)
	}
	s.mapsGen++
	// The old image's addresses are named from its own mappings at the
	// end (their files stay open): those sampled before the exec.
	p.unpack()
	old := symGen{maps: p.maps, until: at}
	if p.user != nil {
		kept := newAddrTable(0)
		for a, u := range p.user.all {
			if u.t < at {
				old.note(a, u.t, u.line, u.call)
			} else {
				kept.note(a, u.t, u.line, u.call)
			}
		}
		p.user = kept
	}
	if old.user.Len() > 0 || len(old.maps) > 0 {
		// Kept even without samples yet: those of the old image may
		// still be read from other CPUs' rings.
		p.prev = append(p.prev, old)
		p.maps = nil
	}
	p.maps, p.other = p.maps[:0], p.other[:0]
	s.closeJIT(p) // the old image's JIT code is not named (see bundle)
	if p.cp != nil {
		p.stale = true
	} else {
		p.tried, p.openErr = false, nil
	}
}

// reborn starts the life of a new process given the pid of p, which
// exited, by a FORK at time at: as after an exec, the addresses the old
// one sampled stay in an image of their own (until that FORK: a
// process's EXIT record is its leader's, and its other threads may have
// run on), named from its mappings, and the new one's files are opened
// through it. Mappings noted since the exit (the new process's, read
// before its FORK from another CPU's ring) are the new one's.
func (s *symbolizer) reborn(pid int, p *symProc, at int64) {
	n := min(p.exitMaps, len(p.maps))
	since := slices.Clone(p.maps[n:])
	p.maps = p.maps[:n:n]
	s.execed(pid, at)
	p.maps = append(p.maps, since...)
	p.exitAt, p.exitMaps = 0, 0
}

// exited releases what a process held unless debug-file search needs its
// pinned root at the end. at is the time of its EXIT record.
func (s *symbolizer) exited(pid int, at int64) {
	p := s.lookup(pid)
	if p == nil {
		return
	}
	at = max(at, 1) // 0 is not exited
	p.exitAt, p.exitMaps = at, len(p.maps)
	s.exits = append(s.exits, exitedProc{pid: pid, at: time.Now(), rec: at})
	// A later process reusing the pid is someone else.
	p.tried, p.stale = true, false
	if p.cp != nil && !p.owns {
		p.cp.Close()
		p.cp = nil
	}
}

// exitedProc is a process whose exit was read at a time, its EXIT
// record's time rec: a process with the same pid and another exit time
// is a later one (see tracker.reborn).
type exitedProc struct {
	pid int
	rec int64
	at  time.Time
}

// packGrace is how long after its exit was read a process's addresses
// are packed: samples of its last moments may still be read from other
// CPUs' rings (one would unpack them again).
const packGrace = time.Second

// packExited packs the sampled addresses of the processes that exited
// packGrace before now or earlier, and writes them out (procSpill), so
// that what a recording holds in memory for processes come and gone is a
// few dozen bytes each; a process that cannot be written out keeps its
// mappings and 9 bytes an address it sampled, not maps built for noting.
func (s *symbolizer) packExited(now time.Time) {
	n := 0
	for n < len(s.exits) && now.Sub(s.exits[n].at) >= packGrace {
		pid := s.exits[n].pid
		if p := s.procs[pid]; p != nil && p.exitAt == s.exits[n].rec {
			p.pack()
			if spillable(p) {
				// The calls get entries of their own now, as the
				// bundle would give them (symProc.expand).
				p.expand()
				if s.spill.put(pid, p) {
					delete(s.procs, pid)
				}
			}
		}
		n++
	}
	s.exits = append(s.exits[:0], s.exits[n:]...)
}

// sampled notes the addresses of one callchain, which holds perf context
// markers saying whether what follows is kernel or user code. The user
// addresses after the first are return addresses, or all of them when
// returns is set (allocation stacks). t is the sample's time, which says
// which image of the process the user addresses are in.
func (s *symbolizer) sampled(pid int, addrs []uint64, returns bool, t int64) {
	// A stack seen before adds nothing: one lookup instead of three map
	// updates per address (off-CPU stacks repeat by the hundred thousand).
	if len(addrs) == 0 {
		return
	}
	h := maphash.Bytes(stackSeed, unsafe.Slice((*byte)(unsafe.Pointer(&addrs[0])), 8*len(addrs)))
	h ^= uint64(pid) * 0x9e3779b97f4a7c15
	if returns {
		h = ^h
	}
	if h == 0 {
		h = 1 // 0 is an empty slot
	}
	if s.seenStacks == nil {
		s.seenStacks = make([]uint64, seenStackSlots)
	}
	slot := &s.seenStacks[h&(seenStackSlots-1)]
	if *slot == h {
		return
	}
	*slot = h
	if pid <= 0 {
		s.noteIdle(addrs)
		return
	}
	p := s.proc(pid)
	g := p.genAt(t)
	kernel, first := false, !returns
	for _, a := range addrs {
		if capture.IsContext(a) {
			kernel, first = a == capture.ContextKernel, !returns
			continue
		}
		switch {
		case kernel:
			if p.kernel == nil {
				p.kernel = make(map[uint64]struct{})
			}
			p.kernel[a] = struct{}{}
		case first:
			g.note(a, t, true, false)
		default:
			// A return address: reports name it from the call's
			// last byte (analyze.Frame.Caller).
			g.note(a, t, false, a > 0)
		}
		first = false
	}
}

// noteIdle notes the kernel addresses of a stack of no process (the idle
// task's, pid 0): the bundle names none, as it is keyed by process, but
// the capture's kallsyms must (see [recorder.embedKallsyms]).
func (s *symbolizer) noteIdle(addrs []uint64) {
	kernel := false
	for _, a := range addrs {
		if capture.IsContext(a) {
			kernel = a == capture.ContextKernel
			continue
		}
		if kernel {
			if s.idle == nil {
				s.idle = make(map[uint64]struct{})
			}
			s.idle[a] = struct{}{}
		}
	}
}

// idleKernelAddrs returns the kernel addresses noteIdle noted since the
// last call, and forgets them.
func (s *symbolizer) idleKernelAddrs() []uint64 {
	out := sortedKeys(s.idle)
	s.idle = nil
	return out
}

// seenStackSlots is the number of stacks symbolizer.sampled remembers
// (8 bytes each), a new stack taking the place of the one whose hash
// picked the same slot. A stack forgotten is noted again when next
// sampled, at no more than the cost of a new one; a million (some 30 MB
// as a map) missed the processor's caches on every lookup, when the
// stacks that repeat (a busy loop's, off-CPU waits) are a few thousand.
// They were a map of up to 1<<16, made anew when full: over a compile
// loop, whose stacks rarely repeat, its lookups were 4% of the
// recorder's CPU, and each new map grew and rehashed its way back to its
// bound. A slot is one load and no allocation.
const seenStackSlots = 1 << 16

// stackSeed hashes stacks for symbolizer.sampled.
var stackSeed = maphash.MakeSeed()

// find returns the mapping of p holding address a; later mappings of a
// range replace earlier ones.
func (p *symProc) find(a uint64) *symMap {
	g := symGen{maps: p.maps}
	return g.find(a)
}

// loader returns a symbol loader searching debug files inside the root of
// the process o was opened through first, then on the host. o's own
// file, read again for its source lines, is o.f: a file deleted since it
// was mapped is at no path, and the path may name another file by now.
func (o *symObj) loader() symbol.Loader {
	var roots []symbol.Opener
	if o.f != nil {
		roots = append(roots, fileOpener(o.path, o.f))
	}
	if o.root == nil {
		return symbol.Loader{Roots: append(roots, symbol.HostOpener)}
	}
	// The names searched come from the file, which the process's user
	// may have written: every search runs with the process's
	// credentials, on the host too.
	cp := o.root
	roots = append(roots, func(name string) (*os.File, error) {
		f, _, err := cp.OpenFile(name)
		return f, err
	})
	if dirs := cp.FlatpakDebugDirs(); dirs != nil {
		roots = append(roots, cp.AsProcess(mountedAt(dirs)))
	}
	roots = append(roots, cp.AsProcess(symbol.HostOpener))
	return symbol.Loader{Roots: roots}
}

// fileOpener opens only name: as a new descriptor of f, read from its
// start.
func fileOpener(name string, f *os.File) symbol.Opener {
	return func(p string) (*os.File, error) {
		if p != name {
			return nil, &os.PathError{Op: "open", Path: p, Err: os.ErrNotExist}
		}
		fd, err := unix.Dup(int(f.Fd()))
		if err != nil {
			return nil, &os.PathError{Op: "dup", Path: p, Err: err}
		}
		g := os.NewFile(uintptr(fd), p)
		// Descriptors of one file share its offset: a debug link's
		// CRC is read from the start.
		if _, err := g.Seek(0, io.SeekStart); err != nil {
			g.Close()
			return nil, err
		}
		return g, nil
	}
}

// mountedAt returns an Opener over host directories standing for the
// directories they would be mounted at (such as Flatpak debug extensions
// not mounted in a sandbox run without --devel). Paths elsewhere fail.
func mountedAt(dirs map[string]string) symbol.Opener {
	return func(name string) (*os.File, error) {
		name = path.Clean("/" + name)
		for mount, dir := range dirs {
			if rest, ok := strings.CutPrefix(name, mount+"/"); ok {
				return symbol.RootOpener(dir)(rest)
			}
		}
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	}
}

// jitMap reads what a JIT wrote of the code it made in process pid: the
// perf map /tmp/perf-<pid>.map, with the pid the process knows itself
// by, inside its own root, and the jitdumps it mapped (see
// [symbolizer.jitDumpMapped]).
func (s *symbolizer) jitMap(p *symProc, pid int, nsPID func(int) int) *symbol.Table {
	var t *symbol.Table
	// A host process whose files were all known was never opened
	// (tracker.describe): open it now if it lives.
	if s.reach(pid, p) != nil {
		n := nsPID(pid)
		if n <= 0 {
			n = pid
		}
		// As perf does, only a map of the process's user or root's is
		// read.
		if f, _, err := p.cp.OpenOwnedFile("/tmp/perf-" + strconv.Itoa(n) + ".map"); err == nil {
			t, _ = symbol.ParsePerfMap(f)
			f.Close()
		}
	}
	// A jitdump's names win where both name an address: they are the
	// code's as loaded, moves included. What a damaged dump held
	// before its damage is kept, as a perf map's valid lines are.
	for _, d := range p.jit {
		if st, err := d.f.Stat(); err == nil {
			dt, _ := symbol.ParseJITDump(d.f, st.Size())
			t = symbol.Merge(dt, t)
		}
	}
	if t.Len() == 0 {
		return nil
	}
	return t
}

// jitDump is a jitdump a process mapped, open.
type jitDump struct {
	f        *os.File
	dev, ino uint64
}

// maxJITDumps bounds the jitdumps kept open for one image of a process.
const maxJITDumps = 4

// jitDumpMapped opens the jitdump of mapping m, which process pid mapped
// for its profiler to find (perf inject --jit finds it so): it is read
// when the recording ends, once the JIT has written what it made, even if
// the process has gone by then. Only a file of the process's user or
// root's is kept, as for a perf map. A file mapped again is opened once.
func (s *symbolizer) jitDumpMapped(pid int, p *symProc, m container.Mapping) {
	for _, d := range p.jit {
		if m.Inode != 0 && d.ino == m.Inode && d.dev == m.Dev {
			return
		}
	}
	if len(p.jit) >= maxJITDumps || s.opened >= s.maxOpen || s.reach(pid, p) == nil {
		return
	}
	f, _, err := p.cp.OpenOwnedMapped(m)
	if err != nil {
		return
	}
	s.opened++
	p.jit = append(p.jit, jitDump{f: f, dev: m.Dev, ino: m.Inode})
}

// closeJIT closes the jitdumps of p's current image, which count among
// the files held open.
func (s *symbolizer) closeJIT(p *symProc) {
	for _, d := range p.jit {
		d.f.Close()
		s.opened--
	}
	p.jit, p.jitUnwind = nil, jitUnwind{}
}

// close releases every file and pinned root.
func (s *symbolizer) close() {
	s.spill.close()
	(&SymbolFill{files: s.fills}).Close()
	s.fills = nil
	for _, o := range s.objs {
		if o.f != nil {
			o.f.Close()
			o.f = nil
		}
		if o.elf != nil {
			o.elf.Close()
		}
	}
	for _, p := range s.procs {
		s.closeJIT(p)
		if p.cp != nil {
			p.cp.Close()
			p.cp = nil
		}
	}
	for _, cp := range s.pinned {
		cp.Close()
	}
	s.pinned = nil
}

// summary says how many files were reached and how.
func (s *symbolizer) summary() string {
	via := make(map[string]int)
	failed := 0
	for _, o := range s.objs {
		if o.f != nil {
			via[o.via]++
		} else if o.image != nil {
			via["memory ([vdso])"]++
		} else if o.err != nil {
			failed++
		}
	}
	keys := make([]string, 0, len(via))
	for k := range via {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d via %s", via[k], k)
	}
	if failed > 0 {
		fmt.Fprintf(&b, "; %d unreachable", failed)
	}
	if s.shadowed > 0 {
		fmt.Fprintf(&b, "; %d addresses sampled before an exec that the new image maps too, left out of the bundle (Sysprof would name them from the new image): %d of them named by build-id for nsprof's reports", s.shadowed, s.shadowedNamed)
	}
	if s.vdsoFallbacks > 0 {
		fmt.Fprintf(&b, "; %d [vdso] mappings of processes gone taken to be nsprof's own", s.vdsoFallbacks)
	}
	if s.cache != nil {
		st := s.cache.Stats()
		fmt.Fprintf(&b, "; symbol cache %s: %d objects wholly from it, %d partly (their files read for new addresses), %d not in it; %d entries written",
			s.cache.Dir(), s.cacheUses[cacheAll], s.cacheUses[cachePart], st.Misses, st.Written)
		if st.Corrupt > 0 {
			fmt.Fprintf(&b, ", %d unusable entries ignored", st.Corrupt)
		}
		if st.Failed > 0 {
			fmt.Fprintf(&b, ", %d not written", st.Failed)
		}
		if s.cacheUntrusted > 0 {
			fmt.Fprintf(&b, ", %d files not cached (others could write them, or their debug files)", s.cacheUntrusted)
		}
	}
	return b.String()
}

func sortedKeys[V any](m map[uint64]V) []uint64 {
	return slices.Sorted(maps.Keys(m))
}
