package record

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"nsprof/container"
	"nsprof/internal/unix"
	"nsprof/perf"
	"nsprof/proc"
	"nsprof/symbol"
)

// probeSet places user probes on the functions a recording names: it
// finds each spec's file in each recorded process (the very file the
// process maps, opened the container-aware way) or, for a command not
// started yet, among the libraries it links, and the functions' file
// offsets in it. It knows nothing of what the probes are for: spans
// (spans.go) pair its entries and returns into marks.
type probeSet struct {
	specs []ProbeSpec
	// mainThread[i] probes specs[i] on main threads only.
	mainThread []bool
	// stack[i] records the call site (the return address at the stack
	// pointer) with each entry of specs[i].
	stack []bool
	// returns[i] also probes the returns of specs[i]'s functions.
	returns []bool
	sites   []probeSite
	seen    map[siteKey]bool
	// probes are what uprobes returned: the site and kind of each.
	probes []probeRef
}

// probeRef is one probe of uprobes: the entry or a return of a site.
type probeRef struct {
	site int
	ret  bool
}

// addSpec adds a spec to find, probed on main threads only or on every
// thread, with the call site at entry or not, at its returns too or not.
func (ps *probeSet) addSpec(s ProbeSpec, mainThread, stack, returns bool) {
	ps.specs = append(ps.specs, s)
	ps.mainThread = append(ps.mainThread, mainThread)
	ps.stack = append(ps.stack, stack)
	ps.returns = append(ps.returns, returns)
}

// probeSite is one function of one file, probed at its entry and, as its
// spec says, its returns.
type probeSite struct {
	spec   int    // index in probeSet.specs
	name   string // the function's name
	path   string // the file as the process sees it, for messages
	offset uint64
	file   *os.File // held open until the events are (see uprobes)
}

// siteKey identifies a site across processes mapping the same file.
type siteKey struct {
	dev, ino, offset uint64
	spec             int
}

// add adds the spec's functions in the open file f (the file at path p,
// as the process sees it); it takes f, closing it when no function
// matches. It reports how many functions matched.
func (ps *probeSet) add(spec int, f *os.File, p string) (int, error) {
	id, err := unix.Fstat(f)
	if err != nil {
		f.Close()
		return 0, err
	}
	ef, err := symbol.NewFile(f)
	if err != nil {
		f.Close()
		return 0, fmt.Errorf("%s: %w", p, err)
	}
	syms, err := ef.Funcs(ps.specs[spec].matchesFunc)
	if err != nil {
		f.Close()
		return 0, fmt.Errorf("%s: %w", p, err)
	}
	n := 0
	for _, s := range syms {
		off, ok := ef.FileOffset(s.Addr)
		if !ok {
			continue
		}
		n++
		k := siteKey{id.Dev, id.Ino, off, spec}
		if ps.seen[k] {
			continue
		}
		if ps.seen == nil {
			ps.seen = make(map[siteKey]bool)
		}
		ps.seen[k] = true
		ps.sites = append(ps.sites, probeSite{spec: spec, name: s.Name, path: p, offset: off, file: f})
	}
	if !ps.holds(f) {
		f.Close()
	}
	return n, nil
}

// holds reports whether a site keeps f open.
func (ps *probeSet) holds(f *os.File) bool {
	for _, s := range ps.sites {
		if s.file == f {
			return true
		}
	}
	return false
}

// resolvePID finds every spec in the files process pid maps. Each spec
// must name at least one function there.
func (ps *probeSet) resolvePID(fs proc.FS, pid int) error {
	maps, err := fs.ReadMaps(pid)
	if err != nil {
		return fmt.Errorf("probes: %w", err)
	}
	cp, err := container.Open(pid)
	if err != nil {
		return fmt.Errorf("probes: %w", err)
	}
	defer cp.Close()
	for i, spec := range ps.specs {
		found, files := 0, map[string]bool{}
		var errs []error
		for _, m := range maps {
			if m.Perms&proc.PermExec == 0 || m.IsPseudo() || m.IsAnonymous() || files[m.Path] || !spec.matchesFile(m.Path) {
				continue
			}
			files[m.Path] = true
			f, via, err := cp.OpenMapped(container.MappingFromProc(m))
			if err == nil && via != container.ViaMapFiles && via != container.ViaRoot && via != container.ViaTaskRoot {
				// A host-side copy is another inode: a probe there
				// would never hit.
				f.Close()
				err = fmt.Errorf("pid %d: %s is reachable only as a host-side copy (%s), which the process does not run", pid, m.Path, via)
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			n, err := ps.add(i, f, m.Path)
			if err != nil {
				errs = append(errs, err)
			}
			found += n
		}
		if found == 0 {
			return noFuncError(spec, fmt.Sprintf("pid %d", pid), files, errs)
		}
	}
	return nil
}

// resolveExec finds every spec in the program argv[0] names and the
// libraries it links (see linkedFiles), with env's LD_LIBRARY_PATH, or in
// the file a spec names by path, for a command about to exec (it runs
// with nsprof's credentials, which open the files): the command is
// probed, and the processes it starts inherit the probes, across their
// execs too, wherever they run the same files; a program that runs other
// copies of them (in a container it starts) is not probed.
func (ps *probeSet) resolveExec(argv, env []string) error {
	exe, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("probes: command %q: %w", argv[0], err)
	}
	libPath := os.Getenv("LD_LIBRARY_PATH")
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "LD_LIBRARY_PATH="); ok {
			libPath = v
		}
	}
	files, err := linkedFiles(exe, libPath)
	if err != nil {
		return fmt.Errorf("probes of a command need an ELF program (not a script): %w", err)
	}
	for i, spec := range ps.specs {
		found, names := 0, map[string]bool{}
		var errs []error
		cands := files
		if strings.Contains(spec.Lib, "/") && !slices.ContainsFunc(files, spec.matchesFile) {
			// A path the program does not link, such as a library it
			// loads with dlopen: the probe waits on its inode.
			cands = append([]string{spec.Lib}, files...)
		}
		for j, p := range cands {
			if !spec.matchesFile(p) && !(j == 0 && len(cands) == len(files) && spec.matchesFile(argv[0])) {
				continue
			}
			names[p] = true
			f, err := os.Open(p)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			n, err := ps.add(i, f, p)
			if err != nil {
				errs = append(errs, err)
			}
			found += n
		}
		if found == 0 {
			return noFuncError(spec, "command "+argv[0], names, errs)
		}
	}
	return nil
}

// noFuncError says that spec named no function in what (a process or
// command) and why: no file matched, or the files had no such function.
func noFuncError(spec ProbeSpec, what string, files map[string]bool, errs []error) error {
	if len(files) == 0 {
		return fmt.Errorf("probe %s: %s: %w matching %q", spec, what, errNoLib, spec.Lib)
	}
	var names []string
	for f := range files {
		names = append(names, f)
	}
	err := fmt.Errorf("probe %s: %s: no function %q in %s", spec, what, spec.Func, strings.Join(names, ", "))
	if len(errs) > 0 {
		err = fmt.Errorf("%w: %w", err, errors.Join(errs...))
	}
	return err
}

// uprobes returns the perf probes of the sites: the entry of each, then
// its returns when its spec asks. Their paths name the held files
// (/proc/self/fd/N): the kernel probes the inode read, in whatever mount
// namespace it is. They are valid until close.
func (ps *probeSet) uprobes() []perf.Uprobe {
	var us []perf.Uprobe
	ps.probes = ps.probes[:0]
	for i, s := range ps.sites {
		p := fmt.Sprintf("/proc/self/fd/%d", s.file.Fd())
		u := perf.Uprobe{Path: p, Offset: s.offset, MainThread: ps.mainThread[s.spec]}
		u.CallSite = ps.stack[s.spec]
		us = append(us, u)
		ps.probes = append(ps.probes, probeRef{site: i})
		if ps.returns[s.spec] {
			us = append(us, perf.Uprobe{Path: p, Offset: s.offset, Return: true, MainThread: ps.mainThread[s.spec]})
			ps.probes = append(ps.probes, probeRef{site: i, ret: true})
		}
	}
	return us
}

// site returns the index in sites of probe i of uprobes and whether it is
// a return.
func (ps *probeSet) site(i int) (int, bool) {
	r := ps.probes[i]
	return r.site, r.ret
}

// close closes the files held for the kernel; the probes, once open, do
// not need them.
func (ps *probeSet) close() {
	for i := range ps.sites {
		if f := ps.sites[i].file; f != nil {
			f.Close()
		}
	}
}
