package record

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"nsprof/capture"
)

// trimCallers drops, from the outer end of the user stack only, addresses
// that no call precedes in their file, that no executable mapping holds,
// and impossible ones, and stops at the first address that may be a
// return address or that it cannot check. trimReturns does the same for
// allocation stacks, but keeps addresses in no known mapping.
func TestTrimCallers(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("call instructions are checked on x86-64 only")
	}
	// A file mapped at 0x400000 from offset 0: a call ends at offset
	// 0x105, padding ends at 0x200 and 0x300, a jump at 0x10, and 0x381
	// is 1 byte into a function starting with a NOP, as Go's
	// runtime.goexit+1 is.
	code := make([]byte, 0x400)
	copy(code[0x100:], []byte{0xe8, 1, 2, 3, 4})
	copy(code[0x1f9:], bytes.Repeat([]byte{0x90}, 7))
	copy(code[0x2f9:], bytes.Repeat([]byte{0xcc}, 7))
	copy(code[0xe:], []byte{0xeb, 0xfe})
	copy(code[0x37a:], []byte{0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0x90})
	f := codeFile(t, code)
	s := newSymbolizer()
	o := &symObj{path: f.Name(), f: f}
	p := s.proc(42)
	p.maps = append(p.maps, symMap{start: 0x400000, end: 0x400400, obj: o})
	p.other = append(p.other, span{0x7f0000000000, 0x7f0000010000}) // anonymous: JIT code
	s.proc(43)                                                      // no mappings known
	const (
		call    = 0x400105
		pad     = 0x400200
		trap    = 0x400300
		jump    = 0x400010
		goexit  = 0x400381
		canary  = 0xbe552274c0854800
		anon    = 0x7f0000001000 // JIT code, say
		data    = 0x7ffd3dce68a0 // a stack pointer: in no executable mapping
		vsys    = 0xffffffffff600400
		kernel  = 0xffffffff81000010
		kmarker = capture.ContextKernel
		umarker = capture.ContextUser
	)
	for _, tc := range []struct {
		name       string
		pid        int
		addrs, out []uint64
	}{
		{"bogus outermost", 42, []uint64{umarker, pad, call, pad}, []uint64{umarker, pad, call}},
		{"several, and a canary", 42, []uint64{kmarker, kernel, umarker, call, call, trap, canary, pad}, []uint64{kmarker, kernel, umarker, call, call}},
		{"jump", 42, []uint64{umarker, call, jump}, []uint64{umarker, call}},
		{"made-up return address, unaligned", 42, []uint64{umarker, call, goexit}, []uint64{umarker, call, goexit}},
		{"the file's first byte", 42, []uint64{umarker, call, 0x400000}, []uint64{umarker, call, 0x400000}},
		{"the sampled address stays", 42, []uint64{umarker, pad, pad}, []uint64{umarker, pad}},
		{"stops at what it cannot check", 42, []uint64{umarker, call, pad, anon, pad}, []uint64{umarker, call, pad, anon}},
		{"data, no code", 42, []uint64{umarker, call, call, data, data + 3, 0x110100000001}, []uint64{umarker, call, call}},
		{"small values", 43, []uint64{umarker, call, 0x400, 0xfe00}, []uint64{umarker, call}},
		{"the vsyscall page stays", 42, []uint64{umarker, call, vsys}, []uint64{umarker, call, vsys}},
		{"no mappings known: canary only", 43, []uint64{umarker, call, data, canary}, []uint64{umarker, call, data}},
		// -128 read off a user stack is PERF_CONTEXT_KERNEL's value: what
		// follows would be taken for kernel frames. A walk reads no
		// context marker after the user one.
		{"a context marker's value on the user stack", 43, []uint64{umarker, call, kmarker, data, data + 0x18}, []uint64{umarker, call}},
		{"after a kernel part", 42, []uint64{kmarker, kernel, umarker, call, kmarker, call}, []uint64{kmarker, kernel, umarker, call}},
		{"a real caller inside", 42, []uint64{umarker, call, pad, call}, []uint64{umarker, call, pad, call}},
		{"unknown process: canary only", 7, []uint64{umarker, call, pad, canary}, []uint64{umarker, call, pad}},
		{"kernel only", 42, []uint64{kmarker, kernel, pad}, []uint64{kmarker, kernel, pad}},
		{"no marker", 42, []uint64{call, pad}, []uint64{call, pad}},
	} {
		got := s.trimCallers(tc.pid, append([]uint64(nil), tc.addrs...))
		if !reflect.DeepEqual(got, tc.out) {
			t.Errorf("%s: trimCallers(%#x) = %#x, want %#x", tc.name, tc.addrs, got, tc.out)
		}
	}
	for _, tc := range []struct {
		name       string
		pid        int
		addrs, out []uint64
	}{
		{"function pointer and small values", 42, []uint64{call, call, pad, 0xfe00}, []uint64{call, call}},
		{"data may be in a mapping made since", 42, []uint64{call, data, canary}, []uint64{call, data}},
		{"keeps one", 42, []uint64{pad, pad}, []uint64{pad}},
	} {
		got := s.trimReturns(tc.pid, append([]uint64(nil), tc.addrs...))
		if !reflect.DeepEqual(got, tc.out) {
			t.Errorf("%s: trimReturns(%#x) = %#x, want %#x", tc.name, tc.addrs, got, tc.out)
		}
	}
	if len(o.afterCall) == 0 {
		t.Error("no call check cached")
	}
}

// BenchmarkTrimCallers is the per-sample cost for a 20-deep user stack
// whose outermost address is a real return address, in a process of 40
// file mappings: what every sample pays.
func BenchmarkTrimCallers(b *testing.B) {
	code := make([]byte, 0x1000)
	copy(code[0x100:], []byte{0xe8, 1, 2, 3, 4})
	f := codeFile(b, code)
	s := newSymbolizer()
	p := s.proc(42)
	for i := range uint64(40) {
		p.maps = append(p.maps, symMap{start: 0x400000 + i<<20, end: 0x401000 + i<<20, obj: &symObj{path: f.Name(), f: f}})
	}
	addrs := []uint64{capture.ContextUser}
	for range 20 {
		addrs = append(addrs, 0x400105) // in the first mapping: the longest search
	}
	for b.Loop() {
		if len(s.trimCallers(42, addrs)) != len(addrs) {
			b.Fatal("trimmed a real caller")
		}
	}
}

// codeFile returns code written to a file and opened, closed at the end
// of the test.
func codeFile(tb testing.TB, code []byte) *os.File {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "code")
	if err := os.WriteFile(path, code, 0o644); err != nil {
		tb.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
}
