package analyze

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
)

// ErrRestrictedKallsyms says a kallsyms file lists only zero addresses, as
// /proc/kallsyms reads with kptr_restrict in effect.
var ErrRestrictedKallsyms = errors.New("kallsyms addresses are all zero (recorded with kptr_restrict in effect)")

// maxKernelFunc bounds how far past a kernel symbol's start an address is
// still taken to belong to it when no later symbol follows closer.
const maxKernelFunc = 1 << 20

// KallsymsSymbolizer names kernel addresses from a /proc/kallsyms text:
// the text symbol (type t or T) with the greatest start at or below the
// address. Module symbols get the module as DSO ("[ext4]"), the others
// "[kernel]". It is safe for concurrent use.
type KallsymsSymbolizer struct {
	once sync.Once
	load func() ([]byte, error)
	data []byte
	syms []ksym // sorted by addr
	err  error
	done atomic.Bool
}

// ksym is one text symbol: its address and where its line's name starts
// in data, so names become strings only when asked for.
type ksym struct {
	addr uint64
	off  uint32
}

// NewKallsymsSymbolizer parses data, the contents of /proc/kallsyms. It
// fails with [ErrRestrictedKallsyms] when every address is zero, and when
// data holds no text symbol.
func NewKallsymsSymbolizer(data []byte) (*KallsymsSymbolizer, error) {
	k := newLazyKallsyms(func() ([]byte, error) { return data, nil })
	k.init()
	return k, k.err
}

// newLazyKallsyms returns a symbolizer that reads and parses its data on
// first use.
func newLazyKallsyms(load func() ([]byte, error)) *KallsymsSymbolizer {
	return &KallsymsSymbolizer{load: load}
}

func (k *KallsymsSymbolizer) init() {
	k.once.Do(func() {
		data, err := k.load()
		if err != nil {
			k.err = err
			k.done.Store(true)
			return
		}
		k.data = data
		k.syms, k.err = parseKallsyms(data)
	})
	k.done.Store(true)
}

// Err returns why the symbolizer names nothing: the file could not be
// read or parsed. It is nil until the symbolizer was first used.
func (k *KallsymsSymbolizer) Err() error {
	if !k.done.Load() {
		return nil
	}
	return k.err
}

// Len returns the number of text symbols.
func (k *KallsymsSymbolizer) Len() int {
	k.init()
	return len(k.syms)
}

// String returns "kallsyms".
func (k *KallsymsSymbolizer) String() string { return "kallsyms" }

// Symbolize implements [Symbolizer] for kernel addresses; pid is ignored.
func (k *KallsymsSymbolizer) Symbolize(pid int32, addr uint64, kernel bool) (Location, bool) {
	if !kernel {
		return Location{}, false
	}
	k.init()
	i, ok := slices.BinarySearchFunc(k.syms, addr, func(s ksym, a uint64) int {
		switch {
		case s.addr < a:
			return -1
		case s.addr > a:
			return 1
		}
		return 0
	})
	if !ok {
		i-- // the greatest start below addr
	}
	for i > 0 && k.syms[i-1].addr == k.syms[i].addr {
		i-- // the first of aliases at one address, in file order
	}
	if i < 0 || addr-k.syms[i].addr >= maxKernelFunc {
		return Location{}, false
	}
	name, mod := kallsymsName(k.data[k.syms[i].off:])
	dso := "[kernel]"
	if mod != "" {
		dso = "[" + mod + "]"
	}
	return Location{Function: name, DSO: dso}, true
}

// parseKallsyms returns the text symbols of data sorted by address. Lines
// are "ADDR TYPE NAME" with an optional "\t[MODULE]"; malformed lines are
// skipped.
func parseKallsyms(data []byte) ([]ksym, error) {
	// One line per symbol at most: sized once, the table is not copied
	// over and over as it grows (11 MB allocated for 2 MB kept).
	syms := make([]ksym, 0, bytes.Count(data, []byte{'\n'})+1)
	zero := 0
	for off := 0; off < len(data); {
		line := data[off:]
		next := len(data)
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line, next = line[:i], off+i+1
		}
		// "ffffffff81000000 T _stext"
		if sp := bytes.IndexByte(line, ' '); sp > 0 && sp+3 < len(line) && line[sp+2] == ' ' {
			if t := line[sp+1]; t == 't' || t == 'T' {
				a, err := strconv.ParseUint(string(line[:sp]), 16, 64)
				if err == nil && off+sp+3 <= 1<<32-1 {
					if a == 0 {
						zero++
					} else {
						syms = append(syms, ksym{addr: a, off: uint32(off + sp + 3)})
					}
				}
			}
		}
		off = next
	}
	if len(syms) == 0 {
		if zero > 0 {
			return nil, ErrRestrictedKallsyms
		}
		return nil, errors.New("kallsyms: no text symbols")
	}
	slices.SortStableFunc(syms, func(x, y ksym) int {
		switch {
		case x.addr < y.addr:
			return -1
		case x.addr > y.addr:
			return 1
		}
		return 0
	})
	return syms, nil
}

// kallsymsName splits the rest of a kallsyms line after the type into the
// name and the module, if any.
func kallsymsName(b []byte) (name, mod string) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	if i := bytes.IndexAny(b, "\t "); i >= 0 {
		m := bytes.TrimSpace(b[i:])
		b = b[:i]
		if len(m) > 2 && m[0] == '[' && m[len(m)-1] == ']' {
			mod = string(m[1 : len(m)-1])
		}
	}
	return string(b), mod
}
