package record

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"nsprof/internal/unix"
	"nsprof/symbol"
	"nsprof/symcache"
)

// A recording caches the frames of the addresses it resolved; the frames
// of every other address of the files it read, which a later recording
// of them is likely to sample, are cached by a process of their own
// (FillSymbolCache) that the recording starts once its capture is
// written: the recording does not pay for it, and the next one finds
// the entries whole.

// FillCommand is the hidden nsprof command that fills symbol cache
// entries whole in the background: it parses FillFlags and calls
// FillSymbolCache.
const FillCommand = "fill-symbol-cache"

// maxFillFiles bounds the files one recording hands over for filling:
// those of the most sampled addresses go first.
const maxFillFiles = 32

// fillFile is a file whose cache entry is to be filled: its file and the
// file its source lines are read from, both open (by the recorder, with
// the traced process's credentials), never opened again by path.
type fillFile struct {
	key, path, source string
	elf, lines        *os.File
	// addrs counts the addresses the recording resolved in it.
	addrs int
}

// fillFile returns what the filler needs of o, a file with DWARF whose
// entry key is not whole; nil (logged) when it cannot be had. Only files
// whose symbols come from the file itself or from a debug file (found by
// build-id or debug link, or served by debuginfod) are handed over; the
// filler reads the debug file handed over and asks no server.
func (o *symObj) fillFile(key string, addrs int, logf func(string, ...any)) *fillFile {
	src := o.syms.Source()
	if o.f == nil || !fillable(src) {
		return nil
	}
	if o.syms.LinksOtherFiles() {
		// The filler opens no file but those handed over.
		logf("%s: not handed over to fill its symbol cache entry: its DWARF refers to other files (dwz's supplementary file, split DWARF's .dwo files)", o.path)
		return nil
	}
	lines, err := o.syms.OpenLines()
	if err != nil {
		logf("%s: not handed over to fill its symbol cache entry: %v", o.path, err)
		return nil
	}
	fd, err := unix.Dup(int(o.f.Fd()))
	if err != nil {
		lines.Close()
		logf("%s: not handed over to fill its symbol cache entry: %v", o.path, err)
		return nil
	}
	return &fillFile{key: key, path: o.path, source: src, elf: os.NewFile(uintptr(fd), o.path), lines: lines, addrs: addrs}
}

// fillable says whether the filler fills entries of symbols from source.
func fillable(source string) bool {
	return source == "symtab" || source == symbol.SourceDebuginfod ||
		strings.HasPrefix(source, "build-id:") || strings.HasPrefix(source, "debuglink:")
}

// SymbolFill is what a recording leaves to fill in its symbol cache:
// the entries of files with DWARF that are not whole yet, with the files
// open. Start hands them to a process of their own; Close lets them go.
type SymbolFill struct {
	dir      string
	maxBytes int64
	files    []*fillFile
	// budget is the filler's (FillOptions.Budget); zero for the default.
	budget time.Duration
}

// Files returns the number of files to fill.
func (f *SymbolFill) Files() int {
	if f == nil {
		return 0
	}
	return len(f.files)
}

// Close closes the files, if Start has not handed them over.
func (f *SymbolFill) Close() {
	if f == nil {
		return
	}
	for _, ff := range f.files {
		ff.elf.Close()
		ff.lines.Close()
	}
	f.files = nil
}

// fillSpec is how a file to fill is named on the filler's command line:
// the descriptors it inherits its file and lines file at.
type fillSpec struct {
	Key    string `json:"key"`
	Path   string `json:"path"`
	Source string `json:"source"`
	ELF    int    `json:"elf"`
	Lines  int    `json:"lines"`
}

// FillProgram returns the program that runs FillCommand, and its
// environment, for [SymbolFill.Start]; nil, the default, starts no
// filler, and [StartFill] lets the files go. Only a program that is
// nsprof itself sets it (cmd/nsprof does, in main, to
// [SelfFillProgram]): any other program embedding record, run again with
// FillCommand's arguments, would do something else entirely. A test
// binary runs its tests again, whose recordings start fillers of their
// own: the first CI run after the filler landed had nine copies of
// cmd/nsprof's tests running at once, and timed out.
var FillProgram func() (path string, env []string)

// SelfFillProgram is FillProgram for nsprof: the running executable,
// with the environment less the variables that make nsprof profile
// itself (the filler would write over the recording's profile).
func SelfFillProgram() (string, []string) {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NSPROF_CPUPROFILE=") && !strings.HasPrefix(kv, "NSPROF_MEMPROFILE=") {
			env = append(env, kv)
		}
	}
	return "/proc/self/exe", env
}

// Start starts the filler: nsprof's FillCommand, in a session of its
// own, its standard streams on /dev/null (it logs to the cache's fill
// log), handed the files' descriptors; it is not waited for. It returns
// the filler's pid. The files are closed either way.
func (f *SymbolFill) Start() (int, error) {
	defer f.Close()
	if f.Files() == 0 {
		return 0, errors.New("no files to fill")
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return 0, err
	}
	defer null.Close()
	if FillProgram == nil {
		return 0, errors.New("no program to fill the cache with (record.FillProgram)")
	}
	prog, env := FillProgram()
	args := []string{"nsprof", FillCommand, "--dir", f.dir, "--max-bytes", strconv.FormatInt(f.maxBytes, 10)}
	if f.budget > 0 {
		args = append(args, "--budget", f.budget.String())
	}
	var extra []*os.File
	for _, ff := range f.files {
		spec := fillSpec{Key: ff.key, Path: ff.path, Source: ff.source, ELF: 3 + len(extra), Lines: 4 + len(extra)}
		b, _ := json.Marshal(spec)
		args = append(args, "--file", string(b))
		extra = append(extra, ff.elf, ff.lines)
	}
	cmd := &exec.Cmd{
		Path: prog, Args: args, Env: env, Dir: "/",
		Stdin: null, Stdout: null, Stderr: null,
		ExtraFiles:  extra,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("symbol cache filler: %w", err)
	}
	pid := cmd.Process.Pid
	cmd.Process.Release()
	return pid, nil
}

// addFill keeps f (if not nil) among the files to fill: the
// maxFillFiles of the most addresses, the others closed.
func (s *symbolizer) addFill(f *fillFile) {
	if f == nil {
		return
	}
	if len(s.fills) < maxFillFiles {
		s.fills = append(s.fills, f)
		return
	}
	i := 0
	for j, g := range s.fills {
		if g.addrs < s.fills[i].addrs {
			i = j
		}
	}
	if s.fills[i].addrs >= f.addrs {
		(&SymbolFill{files: []*fillFile{f}}).Close()
		return
	}
	(&SymbolFill{files: s.fills[i : i+1]}).Close()
	s.fills[i] = f
}

// takeFill returns what the symbolizer's recording left to fill in cache
// c, of the most sampled files first, nil when nothing.
func (s *symbolizer) takeFill(c *symcache.Cache, maxBytes int64) *SymbolFill {
	files := s.fills
	s.fills = nil
	if len(files) == 0 {
		return nil
	}
	slices.SortStableFunc(files, func(a, b *fillFile) int { return cmp.Compare(b.addrs, a.addrs) })
	// The filler runs in /: a directory given relative is made absolute.
	dir, err := filepath.Abs(c.Dir())
	if err != nil {
		(&SymbolFill{files: files}).Close()
		return nil
	}
	return &SymbolFill{dir: dir, maxBytes: maxBytes, files: files}
}

// joinFill returns the files of a and b to fill (in one cache).
func joinFill(a, b *SymbolFill) *SymbolFill {
	if a == nil {
		return b
	}
	if b != nil {
		a.files = append(a.files, b.files...)
	}
	return a
}

// fillStarted, when set (by tests), is told the pid of each filler
// StartFill starts.
var fillStarted func(pid int)

// StartFill starts f (see SymbolFill.Start), when it has files, and
// says so with logf, or why it could not.
func StartFill(f *SymbolFill, logf func(string, ...any)) {
	if f.Files() == 0 || FillProgram == nil {
		f.Close()
		return
	}
	n := f.Files()
	pid, err := f.Start()
	if err != nil {
		logf("symbol cache: entries of %d files not filled: %v", n, err)
		return
	}
	if fillStarted != nil {
		fillStarted(pid)
	}
	logf("symbol cache: filling the entries of %d files whole in the background (pid %d, at idle priority; log in %s)", n, pid, filepath.Join(f.dir, symcache.FillLogName))
}
