package record

import (
	"fmt"
	"path"
	"strings"
)

// ProbeSpec names functions to place user probes on: LIB:FUNCTION, as
// `--span` takes it.
type ProbeSpec struct {
	// Lib is the file the functions are in: a path (with a '/'), or a
	// file name matched against the files the process maps (or, for a
	// command not started yet, the libraries it needs): "libglib-2.0"
	// and "glib-2.0" match libglib-2.0.so.0, "prog" a program named so.
	Lib string
	// Func is a function's name, or a path.Match pattern of names.
	Func string
}

// String formats the spec as it is parsed: LIB:FUNCTION.
func (s ProbeSpec) String() string { return s.Lib + ":" + s.Func }

// ParseProbeSpec parses LIB:FUNCTION. The function is after the last ':'
// (paths may hold colons, symbol names of C do not).
func ParseProbeSpec(s string) (ProbeSpec, error) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 || i == len(s)-1 {
		return ProbeSpec{}, fmt.Errorf("probe %q: want LIB:FUNCTION, such as libglib-2.0:g_main_context_dispatch", s)
	}
	p := ProbeSpec{Lib: s[:i], Func: s[i+1:]}
	if _, err := path.Match(p.Func, ""); err != nil {
		return ProbeSpec{}, fmt.Errorf("probe %q: function pattern %q: %w", s, p.Func, err)
	}
	if strings.ContainsAny(p.Lib, "\x00\n") {
		return ProbeSpec{}, fmt.Errorf("probe %q: library name has a NUL or newline", s)
	}
	return p, nil
}

// matchesFunc reports whether the function name is one the spec names.
func (s ProbeSpec) matchesFunc(name string) bool {
	ok, _ := path.Match(s.Func, name)
	return ok
}

// matchesFile reports whether the file at p (a path as the process sees
// it, or a library's DT_NEEDED name) is the spec's Lib: the same path for
// a Lib with a '/', else a base name that is Lib, or starts with Lib (or
// "lib"+Lib) followed by ".so".
func (s ProbeSpec) matchesFile(p string) bool {
	if strings.Contains(s.Lib, "/") {
		return path.Clean(p) == path.Clean(s.Lib)
	}
	base := path.Base(p)
	return base == s.Lib || strings.HasPrefix(base, s.Lib+".so") || strings.HasPrefix(base, "lib"+s.Lib+".so")
}
