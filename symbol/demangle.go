package symbol

import (
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// maxDemangleInput bounds the names Demangle tries; longer ones (there are
// C++ template names of tens of KiB) are returned as they are, since
// demangling them costs much and reads badly.
const maxDemangleInput = 16 << 10

// Demangle returns the human-readable form of a C++ (_Z…) or Rust (legacy
// _ZN…17h<hash>E with the hash dropped, and v0 _R…) symbol name, with the
// parameter types of C++ functions. The PLT entry NAME@plt of such a name
// demangles to NAME's form followed by @plt. Other names, and names it
// cannot demangle, are returned unchanged. It never panics.
func Demangle(name string) (out string) {
	if len(name) < 3 || len(name) > maxDemangleInput || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R') {
		return name
	}
	if base, ok := strings.CutSuffix(name, "@plt"); ok {
		return Demangle(base) + "@plt" // a PLT entry, as perf names it
	}
	defer func() {
		if recover() != nil {
			out = name
		}
	}()
	// A suffix that GCC adds to clones (".constprop.0", ".isra.0",
	// ".cold") is kept by demangle as " [clone .cold]".
	s, err := demangle.ToString(name)
	if err != nil {
		return name
	}
	if isRustLegacy(name) {
		s = dropRustHash(s)
	}
	return s
}

// isRustLegacy reports whether name is a legacy Rust name: _ZN…17h<16 hex>E.
func isRustLegacy(name string) bool {
	if i := strings.LastIndex(name, "E."); i > 0 {
		name = name[:i+1]
	}
	return strings.HasPrefix(name, "_ZN") && len(name) > 23 && strings.HasSuffix(name, "E") && name[len(name)-20:len(name)-17] == "17h"
}

// dropRustHash removes a trailing "::h0123456789abcdef" from a demangled
// legacy Rust name.
func dropRustHash(s string) string {
	i := strings.LastIndex(s, "::h")
	if i < 0 || len(s)-i-3 != 16 {
		return s
	}
	for _, c := range s[i+3:] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return s
		}
	}
	return s[:i]
}
