package record

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A command is probed before its exec, when it maps nothing yet: the files
// a probe names are found as the dynamic linker will find them, from the
// program's DT_NEEDED entries, breadth first.

// maxNeeded bounds the objects looked at for one program.
const maxNeeded = 512

// ldConf is the dynamic linker's configuration, read by findLinked.
var ldConf = "/etc/ld.so.conf"

// linkedFiles returns the program at exe and the libraries it loads, the
// program first, as paths on the host; libPath is the command's
// LD_LIBRARY_PATH. A library not found is left out (the dynamic linker
// would fail the exec anyway).
func linkedFiles(exe, libPath string) ([]string, error) {
	dirs := ldConfDirs(ldConf, 0)
	dirs = append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
	var env []string
	for d := range strings.SplitSeq(libPath, ":") {
		if d != "" {
			env = append(env, d)
		}
	}
	files := []string{exe}
	seen := map[string]bool{filepath.Base(exe): true}
	for i := 0; i < len(files) && i < maxNeeded; i++ {
		needed, search, err := dynamicOf(files[i])
		if err != nil {
			if i == 0 {
				return nil, fmt.Errorf("program %s: %w", exe, err)
			}
			continue
		}
		for _, n := range needed {
			if seen[n] {
				continue
			}
			seen[n] = true
			if p := findLib(n, slices.Concat(search, env, dirs)); p != "" {
				files = append(files, p)
			}
		}
	}
	return files, nil
}

// dynamicOf returns the DT_NEEDED names of the object at p and its
// DT_RUNPATH (else DT_RPATH) directories, $ORIGIN expanded.
func dynamicOf(p string) (needed, search []string, err error) {
	f, err := elf.Open(p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if needed, err = f.DynString(elf.DT_NEEDED); err != nil {
		return nil, nil, err
	}
	rp, _ := f.DynString(elf.DT_RUNPATH)
	if len(rp) == 0 {
		rp, _ = f.DynString(elf.DT_RPATH)
	}
	origin := filepath.Dir(p)
	for _, r := range rp {
		for d := range strings.SplitSeq(r, ":") {
			d = strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", origin), "$ORIGIN", origin)
			if d != "" {
				search = append(search, d)
			}
		}
	}
	return needed, search, nil
}

// findLib returns the first dirs/name that is an ELF file, or "".
func findLib(name string, dirs []string) string {
	if strings.Contains(name, "/") {
		return name
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if f, err := elf.Open(p); err == nil {
			f.Close()
			return p
		}
	}
	return ""
}

// ldConfDirs returns the directories of ld.so.conf file conf and the
// files it includes, in order (depth bounds the includes).
func ldConfDirs(conf string, depth int) []string {
	f, err := os.Open(conf)
	if err != nil || depth > 8 {
		return nil
	}
	defer f.Close()
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		line = strings.TrimSpace(line)
		if inc, ok := strings.CutPrefix(line, "include"); ok && inc != "" && (inc[0] == ' ' || inc[0] == '\t') {
			pat := strings.TrimSpace(inc)
			if !filepath.IsAbs(pat) {
				pat = filepath.Join(filepath.Dir(conf), pat)
			}
			ms, _ := filepath.Glob(pat)
			for _, m := range ms {
				dirs = append(dirs, ldConfDirs(m, depth+1)...)
			}
			continue
		}
		if line != "" && filepath.IsAbs(line) {
			dirs = append(dirs, line)
		}
	}
	return dirs
}

// errNoLib says that no file matched a probe's library.
var errNoLib = errors.New("no such file mapped or linked")
