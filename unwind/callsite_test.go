package unwind

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/hex"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

func TestAfterCallForms(t *testing.T) {
	for _, tc := range []struct {
		code string // hex, ending at the return address
		want bool
	}{
		{"e8 00 00 00 00", true},                 // call rel32
		{"67 e8 10 20 30 40", true},              // addr32 call (linker-relaxed GOT call)
		{"ff d0", true},                          // call *%rax
		{"41 ff d3", true},                       // call *%r11
		{"ff 10", true},                          // call *(%rax)
		{"ff 14 24", true},                       // call *(%rsp)
		{"ff 50 08", true},                       // call *0x8(%rax)
		{"ff 54 24 08", true},                    // call *0x8(%rsp)
		{"ff 90 00 01 00 00", true},              // call *0x100(%rax)
		{"ff 15 00 10 00 00", true},              // call *0x1000(%rip)
		{"3e ff 15 00 10 00 00", true},           // notrack call *0x1000(%rip)
		{"ff 14 c5 00 10 00 00", true},           // call *0x1000(,%rax,8)
		{"ff 94 c3 00 01 00 00", true},           // call *0x100(%rbx,%rax,8)
		{"ff 1d 00 10 00 00", true},              // lcall *0x1000(%rip)
		{"c3", false},                            // ret
		{"0f 1f 40 00", false},                   // nopl 0x0(%rax)
		{"66 2e 0f 1f 84 00 00 00 00 00", false}, // nopw padding
		{"ff e0", false},                         // jmp *%rax
		{"ff 25 00 10 00 00", false},             // jmp *0x1000(%rip)
		{"ff d0 90", false},                      // call *%rax; nop
		{"ff 15 00 10 00", false},                // a RIP-relative call one byte short
		{"e8 00 00 00", false},                   // four bytes after E8
		{"", false},
	} {
		code, err := hex.DecodeString(strings.ReplaceAll(tc.code, " ", ""))
		if err != nil {
			t.Fatal(err)
		}
		if got := AfterCall(code); got != tc.want {
			t.Errorf("AfterCall(%s) = %v, want %v", tc.code, got, tc.want)
		}
		// Only the last MaxCallLen bytes count.
		long := append(bytes.Repeat([]byte{0xe8}, 9), code...)
		if len(code) >= MaxCallLen && AfterCall(long) != tc.want {
			t.Errorf("AfterCall(e8... %s) = %v, want %v", tc.code, !tc.want, tc.want)
		}
	}
}

// objdumpLine is one instruction of objdump -d -w: address, bytes, text.
var objdumpLine = regexp.MustCompile(`^\s*([0-9a-f]+):\t([0-9a-f ]+?)\s*\t(.*)$`)

// TestAfterCallObjdump checks AfterCall against objdump's disassembly of
// real code: the C library and a static program. Every call instruction
// must be recognised from the bytes before its end (a miss would drop a
// real caller from stacks), and at the start of most functions, where
// padding or a jump ends the code before, no call may be seen.
func TestAfterCallObjdump(t *testing.T) {
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		testutils.RequireCI(t, "objdump not found (apt-get install binutils): %v", err)
	}
	bins := []string{testutils.BuildFixture(t, "callchain", "-static", "-O2"), libcPath}
	for _, bin := range bins {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if f.Machine != elf.EM_X86_64 {
			t.Skipf("%s is %v, not x86-64", bin, f.Machine)
		}
		code := func(end uint64) []byte {
			for _, s := range f.Sections {
				if s.Type == elf.SHT_PROGBITS && s.Flags&elf.SHF_EXECINSTR != 0 && end > s.Addr && end <= s.Addr+s.Size {
					b := make([]byte, min(MaxCallLen, end-s.Addr))
					if _, err := s.ReadAt(b, int64(end-s.Addr)-int64(len(b))); err != nil {
						t.Fatal(err)
					}
					return b
				}
			}
			return nil
		}
		out, err := exec.Command(objdump, "-d", "-w", bin).Output()
		if err != nil {
			t.Fatalf("objdump -d %s: %v", bin, err)
		}
		calls, others, othersAsCall := 0, 0, 0
		callEnds := map[uint64]bool{}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			m := objdumpLine.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			addr, _ := strconv.ParseUint(m[1], 16, 64)
			end := addr + uint64(len(strings.Fields(m[2])))
			b := code(end)
			if b == nil {
				continue
			}
			mnemonic := strings.Fields(m[3] + " ?")[0]
			if mnemonic == "call" || strings.HasPrefix(m[3], "notrack call") || strings.HasPrefix(m[3], "bnd call") {
				calls++
				callEnds[end] = true
				if !AfterCall(b) {
					t.Errorf("%s: call at %#x (%s) not seen from the bytes % x before %#x", bin, addr, m[3], b, end)
				}
				continue
			}
			others++
			if AfterCall(b) {
				othersAsCall++
			}
		}
		if calls < 100 {
			t.Fatalf("%s: only %d calls in objdump's output", bin, calls)
		}
		// Function starts: where a bogus frame-pointer frame points.
		syms, err := f.Symbols()
		if err == elf.ErrNoSymbols {
			syms, err = f.DynamicSymbols() // the system libc is stripped
		}
		if err != nil {
			t.Fatal(err)
		}
		starts, startsAsCall := 0, 0
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) != elf.STT_FUNC || callEnds[s.Value] {
				continue
			}
			if b := code(s.Value); len(b) == MaxCallLen {
				starts++
				if AfterCall(b) {
					startsAsCall++
				}
			}
		}
		t.Logf("%s: %d calls; %d of %d other instruction ends and %d of %d function starts look like calls",
			bin, calls, othersAsCall, others, startsAsCall, starts)
		if starts < 20 || startsAsCall*20 > starts {
			t.Errorf("%s: %d of %d function starts look like return addresses", bin, startsAsCall, starts)
		}
	}
}

// FuzzAfterCall checks that AfterCall never panics and reads only the
// last MaxCallLen bytes.
func FuzzAfterCall(f *testing.F) {
	f.Add([]byte{0xe8, 0, 0, 0, 0})
	f.Add([]byte{0x3e, 0xff, 0x15, 0, 0x10, 0, 0})
	f.Add([]byte{0xff, 0x14, 0x24})
	f.Fuzz(func(t *testing.T, code []byte) {
		got := AfterCall(code)
		if len(code) > MaxCallLen && AfterCall(code[len(code)-MaxCallLen:]) != got {
			t.Fatalf("AfterCall(% x) depends on bytes before the last %d", code, MaxCallLen)
		}
	})
}
