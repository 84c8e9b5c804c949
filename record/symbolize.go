package record

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"io"
	"maps"
	"os"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"nsprof/capture"
	"nsprof/container"
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
	objs  map[objKey]*symObj
	// seenStacks holds hashes of the stacks sampled already, at most
	// maxSeenStacks: then it starts again.
	seenStacks map[uint64]struct{}
	// open opens a process's file view; container.Open outside tests.
	open func(pid int) (*container.Process, error)
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
	// a later image of the process maps too, left out of the bundle.
	shadowed int
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
	// exits are the processes exited whose addresses are to be packed,
	// oldest first (packExited).
	exits []exitedProc
	// spill holds the exited processes written out (packExited).
	spill procSpill
	// mapsGen counts the changes of any process's mappings (and of the
	// objects they map, whose files a mapping may open): what the
	// unwinder remembers of a process's mappings holds while it stays.
	mapsGen uint64
}

// symProc is what the symbolizer knows of one process. Its embedded
// symGen is its current image.
type symProc struct {
	cp      *container.Process // nil until opened, or if it could not be
	tried   bool               // whether opening cp was attempted
	openErr error
	symGen
	// other are the executable mappings of no file: anonymous memory
	// (JIT code), deleted files, [vsyscall].
	other []span
	// kernel are the kernel addresses sampled; kernelPacked those
	// sampled before the process's exit was packed, sorted (8 bytes
	// an address, where the map took about three times that).
	kernel       map[uint64]struct{}
	kernelPacked []uint64
	nspid        int
	owns         bool // some object's debug search goes through cp
	// stale says cp was opened before the process's last exec.
	stale bool
	// mapsTried says the unwinder looked its mappings up itself.
	mapsTried bool
	// prev are the images exec replaced, oldest first, with the
	// addresses sampled in them: a child forked by a shell or by `go`
	// runs its parent's image until it execs, and those samples are
	// named from the files that were mapped then.
	prev []symGen
}

// symGen is one image of a process: its mappings and the user addresses
// sampled while it ran.
type symGen struct {
	maps []symMap
	// user are the user addresses sampled, each with the latest time
	// a stack first showing it was sampled (samples of one process come
	// from several CPUs' rings, so an exec may be read after samples of
	// the new image, or before samples of the old one), and whether its
	// source frames are bundled: those of where threads were, and of
	// the calls (return address - 1) that reports name callers from. A
	// return address itself is named (Sysprof looks it up as it is) but
	// needs no frames. One map, so that noting an address is one lookup.
	user map[uint64]userAddr
	// packed and flags hold the user addresses instead of user once the
	// process has exited (pack): sorted, with their line and call flags
	// (packLine, packCall) and without times, 9 bytes an address rather
	// than the map's 40 or so. Noting an address unpacks them.
	packed []uint64
	flags  []uint8
	// until is the time of the exec that replaced the image; 0 for the
	// current one.
	until int64
}

// userAddr is what is known of a sampled user address: when it was last
// first seen in a stack, whether its source frames are wanted, and
// whether it is a return address whose call (the address before it) is
// wanted with its frames too. The call is noted with its return address
// while recording, one map entry for both, and given its own entry by
// expand when the recording ends.
type userAddr struct {
	t    int64
	line bool
	call bool
}

// find returns the mapping of g holding address a; later mappings of a
// range replace earlier ones.
func (g *symGen) find(a uint64) *symMap {
	for i := len(g.maps) - 1; i >= 0; i-- {
		if m := &g.maps[i]; a >= m.start && a < m.end {
			return m
		}
	}
	return nil
}

// note adds user address a, seen at time t, with its source frames
// wanted when line is set, and its call's (a-1) when call is.
func (g *symGen) note(a uint64, t int64, line, call bool) {
	g.unpack()
	if g.user == nil {
		g.user = make(map[uint64]userAddr)
	}
	u, ok := g.user[a]
	if !ok || t > u.t || (line && !u.line) || (call && !u.call) {
		g.user[a] = userAddr{t: max(t, u.t), line: line || u.line, call: call || u.call}
	}
}

// Flags of a packed address.
const (
	packLine uint8 = 1 << iota
	packCall
)

// pack moves the user addresses from the map into the sorted slices.
func (g *symGen) pack() {
	if len(g.user) == 0 {
		g.user = nil
		return
	}
	n := len(g.packed)
	for a := range g.user {
		g.packed = append(g.packed, a)
	}
	slices.Sort(g.packed[n:])
	g.flags = slices.Grow(g.flags, len(g.user))
	for _, a := range g.packed[n:] {
		u := g.user[a]
		var f uint8
		if u.line {
			f |= packLine
		}
		if u.call {
			f |= packCall
		}
		g.flags = append(g.flags, f)
	}
	g.user = nil
	if n > 0 {
		g.sortPacked()
	}
}

// sortPacked sorts the packed addresses, merging the flags of repeats.
func (g *symGen) sortPacked() {
	idx := make([]int, len(g.packed))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(g.packed[a], g.packed[b]) })
	addrs := make([]uint64, 0, len(idx))
	flags := make([]uint8, 0, len(idx))
	for _, i := range idx {
		if k := len(addrs) - 1; k >= 0 && addrs[k] == g.packed[i] {
			flags[k] |= g.flags[i]
			continue
		}
		addrs, flags = append(addrs, g.packed[i]), append(flags, g.flags[i])
	}
	g.packed, g.flags = addrs, flags
}

// unpack moves packed addresses back into the map, as noted at time 0
// (before anything a later exec can follow: the process had exited).
func (g *symGen) unpack() {
	if g.packed == nil {
		return
	}
	if g.user == nil {
		g.user = make(map[uint64]userAddr, len(g.packed))
	}
	for i, a := range g.packed {
		u := g.user[a]
		u.line = u.line || g.flags[i]&packLine != 0
		u.call = u.call || g.flags[i]&packCall != 0
		g.user[a] = u
	}
	g.packed, g.flags = nil, nil
}

// expand gives the calls noted with their return addresses entries of
// their own, with their frames wanted.
func (g *symGen) expand() {
	var calls []uint64
	for a, u := range g.user {
		if u.call {
			calls = append(calls, a)
		}
	}
	for _, a := range calls {
		u := g.user[a]
		u.call = false
		g.user[a] = u
		g.note(a-1, u.t, true, false)
	}
}

// genAt returns the image p ran at time t.
func (p *symProc) genAt(t int64) *symGen {
	for i := range p.prev {
		if t < p.prev[i].until {
			return &p.prev[i]
		}
	}
	return &p.symGen
}

// shadowed says whether one of gens maps address a.
func shadowed(gens []symGen, a uint64) bool {
	for i := range gens {
		if gens[i].find(a) != nil {
			return true
		}
	}
	return false
}

// expand gives the calls noted in each of p's images entries of their own
// (symGen.expand), and packs their addresses.
func (p *symProc) expand() {
	for _, g := range p.gensRef() {
		g.unpack()
		g.expand()
		g.pack()
	}
}

// pack packs the addresses of each of p's images (symGen.pack).
func (p *symProc) pack() {
	for _, g := range p.gensRef() {
		g.pack()
	}
	if len(p.kernel) > 0 {
		p.kernelPacked = p.kernelAddrs()
	}
	p.kernel = nil
}

// kernelAddrs returns the kernel addresses p sampled, sorted, once each.
func (p *symProc) kernelAddrs() []uint64 {
	if len(p.kernel) == 0 {
		return p.kernelPacked
	}
	out := append(slices.Clip(p.kernelPacked), sortedKeys(p.kernel)...)
	slices.Sort(out)
	return slices.Compact(out)
}

// gensRef returns pointers to p's images, the replaced ones first.
func (p *symProc) gensRef() []*symGen {
	out := make([]*symGen, 0, len(p.prev)+1)
	for i := range p.prev {
		out = append(out, &p.prev[i])
	}
	return append(out, &p.symGen)
}

// gens returns p's images, the replaced ones first and the current one
// last.
func (p *symProc) gens() []symGen {
	return append(p.prev[:len(p.prev):len(p.prev)], p.symGen)
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
}

const maxOpenFiles = 4096

// viaHostBuildID says a file was found at its path on the host, with the
// build-id its mapping records.
const viaHostBuildID = "host-build-id"

// openHostByBuildID opens the host file at name if its build-id is id.
func openHostByBuildID(name string, id []byte) *os.File {
	f, err := os.Open(name)
	if err != nil {
		return nil
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
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
func isFilePath(name string) bool {
	return strings.HasPrefix(name, "/") && !strings.HasPrefix(name, "//") && !strings.HasSuffix(name, " (deleted)")
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
	k := objKey{path: m.Path, pid: pid}
	switch {
	case len(m.BuildID) > 0:
		k = objKey{buildID: string(m.BuildID)}
	case m.Inode != 0:
		k = objKey{dev: m.Dev, ino: m.Inode}
	}
	o := s.objs[k]
	if o == nil {
		o = &symObj{path: m.Path, tag: path.Base(m.Path), key: fmt.Sprintf("%x/%d/%d/%s/%d", k.buildID, k.dev, k.ino, k.path, k.pid)}
		s.objs[k] = o
	}
	// A file that could not be opened through one process may be
	// reachable through another that maps it.
	if o.f == nil && o.tries < 3 && s.opened < s.maxOpen && s.reach(pid, p) != nil {
		o.tries++
		f, via, err := p.cp.OpenMapped(m)
		if err == nil {
			o.f, o.via, o.err, o.root = f, via, nil, p.cp
			p.owns = true
			s.opened++
		} else if o.err == nil {
			o.err = err
		}
	}
	if o.f == nil && !o.hostTried && len(m.BuildID) > 0 && s.opened < s.maxOpen {
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
	if len(m.BuildID) > 0 {
		p.maps = append(p.maps, symMap{start: m.Start, end: m.End, off: m.Offset, obj: o, id: hex.EncodeToString(m.BuildID)})
		return ""
	}
	id := o.buildID()
	p.maps = append(p.maps, symMap{start: m.Start, end: m.End, off: m.Offset, obj: o, id: id})
	return id
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
// report again.
func (s *symbolizer) forked(ppid, pid int) {
	pp := s.lookup(ppid)
	if pp == nil {
		return
	}
	p := s.proc(pid)
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
	s.mapsGen++
	// The old image's addresses are named from its own mappings at the
	// end (their files stay open): those sampled before the exec.
	p.unpack()
	old := symGen{maps: p.maps, until: at}
	for a, u := range p.user {
		if u.t < at {
			old.note(a, u.t, u.line, u.call)
			delete(p.user, a)
		}
	}
	if len(old.user) > 0 || len(old.maps) > 0 {
		// Kept even without samples yet: those of the old image may
		// still be read from other CPUs' rings.
		p.prev = append(p.prev, old)
		p.maps = nil
	}
	p.maps, p.other = p.maps[:0], p.other[:0]
	if p.cp != nil {
		p.stale = true
	} else {
		p.tried, p.openErr = false, nil
	}
}

// exited releases what a process held unless debug-file search needs its
// pinned root at the end.
func (s *symbolizer) exited(pid int) {
	p := s.lookup(pid)
	if p == nil {
		return
	}
	s.exits = append(s.exits, exitedProc{pid: pid, at: time.Now()})
	// A later process reusing the pid is someone else.
	p.tried, p.stale = true, false
	if p.cp != nil && !p.owns {
		p.cp.Close()
		p.cp = nil
	}
}

// exitedProc is a process whose exit was read at a time.
type exitedProc struct {
	pid int
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
		if p := s.procs[pid]; p != nil {
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
	if pid <= 0 {
		return
	}
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
	if _, ok := s.seenStacks[h]; ok {
		return
	}
	if s.seenStacks == nil || len(s.seenStacks) >= maxSeenStacks {
		s.seenStacks = make(map[uint64]struct{})
	}
	s.seenStacks[h] = struct{}{}
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

// maxSeenStacks bounds the stacks symbolizer.sampled remembers. A stack
// forgotten is noted again when next sampled, at no more than the cost of
// a new one; a million (some 30 MB) missed the processor's caches on
// every lookup, when the stacks that repeat (a busy loop's, off-CPU
// waits) are a few thousand.
const maxSeenStacks = 1 << 16

// stackSeed hashes stacks for symbolizer.sampled.
var stackSeed = maphash.MakeSeed()

// kernelTable names kernel addresses.
type kernelTable interface {
	Lookup(addr uint64) (symbol.Symbol, bool)
}

// progress reports symbolization progress; done of total objects.
type progress func(done, total int, name string)

// bundle resolves every sampled address and gives the __symbols__
// records to emit, in order of process ID, and returns the source lines
// and inline frames of the user addresses whose files have DWARF: by file
// offset, once for every process, where the mapping's MAP frame names its
// file by build-id, else by process and address. kallsyms opens the
// kernel symbol list; it is read only when samples hit the kernel. nsPID
// gives a process's pid in its own PID namespace, for JIT maps. Failures
// are notes, never fatal: an address without a name is left out, as
// Sysprof leaves it.
func (s *symbolizer) bundle(emit func(capture.Symbol), kallsyms func() (kernelTable, error), nsPID func(pid int) int, prog progress, logf func(string, ...any)) (lines []capture.AddrLines) {
	pids := append(make([]int, 0, len(s.procs)+len(s.spill.at)), s.spill.pids()...)
	for pid := range s.procs {
		pids = append(pids, pid)
	}
	// In the order of the records' 32-bit pids (a pid of 2^32-1, read
	// as an int, is the records' -1), as capture.SymbolsBuilder takes
	// them best.
	slices.SortFunc(pids, func(a, b int) int { return cmp.Compare(int32(a), int32(b)) })
	// A process written out is read back for each pass, and dropped
	// after it: the passes hold one at a time.
	procOf := func(pid int) *symProc {
		if p := s.procs[pid]; p != nil {
			return p
		}
		if p := s.spill.get(pid); p != nil {
			return p
		}
		return &symProc{}
	}

	// The objects samples hit, and the file offsets in each whose
	// frames are wanted: loaded first, so that each reads the DWARF of
	// just those addresses.
	hit := make(map[*symObj][]uint64)
	var objs []*symObj
	for _, pid := range pids {
		p := procOf(pid)
		p.expand()
		for _, g := range p.gens() {
			for i, a := range g.packed {
				if m := g.find(a); m != nil {
					if _, ok := hit[m.obj]; !ok {
						objs = append(objs, m.obj)
						hit[m.obj] = nil
					}
					if g.flags[i]&packLine != 0 {
						hit[m.obj] = append(hit[m.obj], a-m.start+m.off)
					}
				}
			}
		}
	}
	frames := s.resolveObjects(objs, hit, prog, logf)

	type fileOffset struct {
		id  string
		off uint64
	}
	byFile := make(map[fileOffset]bool)
	var fileLines []capture.AddrLines
	var kern kernelTable
	kernTried := false
	for _, pid := range pids {
		p := procOf(pid)
		seen := make(map[uint64]bool)
		add := func(begin, end uint64, name, tag string) {
			if !seen[begin] {
				seen[begin] = true
				emit(capture.Symbol{PID: int32(pid), Begin: begin, End: end, Name: name, Tag: tag})
			}
		}
		var jit *symbol.Table
		jitTried := false
		gens := p.gens()
		for gi, g := range gens {
			for ai, a := range g.packed {
				m := g.find(a)
				if gi < len(gens)-1 {
					if m == nil {
						continue // JIT code is looked up in the current image only
					}
					if shadowed(gens[gi+1:], a) {
						// A later image maps the address too: the
						// bundle, keyed by pid and address, can name
						// only one, the later.
						s.shadowed++
						continue
					}
				}
				if m == nil {
					if !jitTried {
						jitTried = true
						jit = s.jitMap(p, pid, nsPID)
					}
					if jit != nil {
						if sym, ok := jit.Lookup(a); ok {
							add(sym.Addr, sym.Addr+max(sym.Size, 1)-1, symbol.Demangle(sym.Name), "JIT")
						}
					}
					continue
				}
				o := m.obj
				if o.syms == nil {
					continue
				}
				va, ok := o.elf.Vaddr(a - m.start + m.off)
				if !ok {
					continue
				}
				sym, ok := o.syms.Lookup(va)
				if !ok {
					continue
				}
				begin := a - (va - sym.Addr)
				add(begin, begin+max(sym.Size, 1)-1, symbol.Demangle(sym.Name), o.tag)
				if g.flags[ai]&packLine == 0 {
					continue
				}
				if fr := frames[o][va]; len(fr) > 0 {
					if m.id == "" {
						lines = append(lines, capture.AddrLines{PID: int32(pid), Addr: a, Frames: fr})
					} else if k := (fileOffset{m.id, a - m.start + m.off}); !byFile[k] {
						// Described once for every process mapping
						// the file, which its MAP frames name by
						// build-id.
						byFile[k] = true
						fileLines = append(fileLines, capture.AddrLines{Object: m.id, Addr: k.off, Frames: fr})
					}
				}
			}
		}
		kaddrs := p.kernelAddrs()
		if len(kaddrs) > 0 && !kernTried {
			kernTried = true
			var err error
			if kern, err = kallsyms(); err != nil {
				logf("kernel frames not named: %v", err)
			}
		}
		if kern != nil {
			for _, a := range kaddrs {
				if sym, ok := kern.Lookup(a); ok {
					add(sym.Addr, sym.Addr+max(sym.Size, 1)-1, sym.Name, "Kernel")
				}
			}
		}
	}
	if n := s.spill.readFailed; n > 0 {
		logf("%d exited processes' sampled addresses could not be read back from the spill file: their frames are unnamed", n)
	}
	slices.SortFunc(fileLines, func(x, y capture.AddrLines) int {
		return cmp.Or(strings.Compare(x.Object, y.Object), cmp.Compare(x.Addr, y.Addr))
	})
	return append(lines, fileLines...)
}

// resolveObjects loads the objects samples hit and gives the source
// frames of their addresses (hit holds each object's file offsets), by
// link-time address. Objects are independent and most of the wait at
// record end is theirs (symbol tables, inflating DWARF, debuginfod), so
// they are done side by side, one per CPU. The frames are shared by
// every record of an address.
func (s *symbolizer) resolveObjects(objs []*symObj, hit map[*symObj][]uint64, prog progress, logf func(string, ...any)) map[*symObj]map[uint64][]capture.SourceFrame {
	var mu sync.Mutex // for logf, prog and out
	locked := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logf(format, args...)
	}
	out := make(map[*symObj]map[uint64][]capture.SourceFrame, len(objs))
	done := 0
	work := make(chan *symObj)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(objs)) {
		wg.Go(func() {
			for o := range work {
				fr, use := o.resolve(hit[o], s.cache, locked)
				o.dropLines()
				mu.Lock()
				out[o] = fr
				if use&cacheUntrusted != 0 {
					s.cacheUntrusted++
					use &^= cacheUntrusted
				}
				s.cacheUses[use]++
				done++
				if prog != nil {
					prog(done, len(objs), o.path)
				}
				mu.Unlock()
			}
		})
	}
	for _, o := range objs {
		work <- o
	}
	close(work)
	wg.Wait()
	return out
}

// find returns the mapping of p holding address a; later mappings of a
// range replace earlier ones.
func (p *symProc) find(a uint64) *symMap {
	g := symGen{maps: p.maps}
	return g.find(a)
}

// loader returns a symbol loader searching debug files inside the root of
// the process o was opened through first, then on the host.
func (o *symObj) loader() symbol.Loader {
	var roots []symbol.Opener
	if o.root == nil {
		return symbol.Loader{Roots: []symbol.Opener{symbol.HostOpener}}
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

// jitMap reads the perf map a JIT wrote for process pid, as
// /tmp/perf-<pid>.map with the pid the process knows itself by, inside
// its own root.
func (s *symbolizer) jitMap(p *symProc, pid int, nsPID func(int) int) *symbol.Table {
	// A host process whose files were all known was never opened
	// (tracker.describe): open it now if it lives.
	if s.reach(pid, p) == nil {
		return nil
	}
	n := nsPID(pid)
	if n <= 0 {
		n = pid
	}
	// As perf does, only a map of the process's user or root's is read.
	f, _, err := p.cp.OpenOwnedFile("/tmp/perf-" + strconv.Itoa(n) + ".map")
	if err != nil {
		return nil
	}
	defer f.Close()
	t, err := symbol.ParsePerfMap(f)
	if err != nil || t.Len() == 0 {
		return nil
	}
	return t
}

// close releases every file and pinned root.
func (s *symbolizer) close() {
	s.spill.close()
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
		fmt.Fprintf(&b, "; %d addresses sampled before an exec left unnamed (the new image maps them too)", s.shadowed)
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
