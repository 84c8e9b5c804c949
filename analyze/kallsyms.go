package analyze

import (
	"errors"
	"sync"
	"sync/atomic"

	"nsprof/symbol"
)

// ErrRestrictedKallsyms says a kallsyms file lists only zero addresses, as
// /proc/kallsyms reads with kptr_restrict in effect: what
// [symbol.ErrRestrictedKernel] says of a capture's copy.
var ErrRestrictedKallsyms = errors.New("kallsyms addresses are all zero (recorded with kptr_restrict in effect)")

// KallsymsSymbolizer names kernel addresses from a /proc/kallsyms text
// with [symbol.Kallsyms], the index the recorder names kernel frames with
// at record end, so an address gets the same name from the capture's
// bundle and from its embedded kallsyms. Module symbols get the module as
// DSO ("[ext4]"), the others "[kernel]". It is safe for concurrent use.
type KallsymsSymbolizer struct {
	once sync.Once
	load func() ([]byte, error)
	idx  *symbol.Kallsyms
	err  error
	done atomic.Bool
}

// NewKallsymsSymbolizer indexes data, the contents of /proc/kallsyms. It
// fails with [ErrRestrictedKallsyms] when every address is zero, when data
// holds no text symbol, and on a malformed line.
func NewKallsymsSymbolizer(data []byte) (*KallsymsSymbolizer, error) {
	k := newLazyKallsyms(func() ([]byte, error) { return data, nil })
	k.init()
	return k, k.err
}

// newLazyKallsyms returns a symbolizer that reads and indexes its data on
// first use.
func newLazyKallsyms(load func() ([]byte, error)) *KallsymsSymbolizer {
	return &KallsymsSymbolizer{load: load}
}

func (k *KallsymsSymbolizer) init() {
	k.once.Do(func() {
		data, err := k.load()
		if err == nil {
			k.idx, err = symbol.NewKallsyms(data)
			if errors.Is(err, symbol.ErrRestrictedKernel) {
				err = ErrRestrictedKallsyms
			}
		}
		k.err = err
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

// Len returns the number of addresses named, aliases counted once.
func (k *KallsymsSymbolizer) Len() int {
	k.init()
	if k.idx == nil {
		return 0
	}
	return k.idx.Len()
}

// String returns "kallsyms".
func (k *KallsymsSymbolizer) String() string { return "kallsyms" }

// Symbolize implements [Symbolizer] for kernel addresses; pid is ignored.
func (k *KallsymsSymbolizer) Symbolize(pid int32, addr uint64, kernel bool) (Location, bool) {
	if !kernel {
		return Location{}, false
	}
	k.init()
	if k.idx == nil {
		return Location{}, false
	}
	s, ok := k.idx.Lookup(addr)
	if !ok {
		return Location{}, false
	}
	return kernelLocation(s.Name), true
}

// kernelLocation is the location of a kernel symbol named by
// [symbol.Kallsyms], "name" or "name [module]", as the recorder bundles
// it too: the function without the module, and the module ("[ext4]") or
// "[kernel]" as DSO.
func kernelLocation(name string) Location {
	fn, mod := symbol.SplitModule(name)
	dso := "[kernel]"
	if mod != "" {
		dso = "[" + mod + "]"
	}
	return Location{Function: fn, DSO: dso}
}
