package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"strconv"

	"nsprof/internal/procfmt"
	"nsprof/symbol"
	"nsprof/symcache"
)

// Reading /proc/kallsyms costs the kernel about 30 ms (it formats 120 k
// lines, 5 MB), perf pays it too, and it was the largest fixed cost of a
// recording once the embedded copy was cut to an excerpt. The text is
// kept in the symbol cache as a blob, keyed by what fixes it: the boot
// (/proc/sys/kernel/random/boot_id: another boot may lay the kernel out
// elsewhere), the kernel's build-id note and the modules loaded, with
// their sizes and addresses (/proc/modules). Code the kernel makes while
// it runs (BPF programs, ftrace and kprobe trampolines) changes none of
// those: the cached text names for sure only the kernel image's text and
// the modules' ranges, and an address elsewhere has /proc/kallsyms read
// again (kernelSymbols.cover), which the cache then keeps.

// kernelCache is where the symbol cache keeps this boot's kallsyms.
type kernelCache struct {
	cache   *symcache.Cache
	key     string
	modules []kernelRange
}

// kernelRange is the kernel addresses from lo up to hi.
type kernelRange struct{ lo, hi uint64 }

// kernelLayout is what a cached kallsyms names as /proc/kallsyms does:
// the kernel image's text and the modules loaded.
type kernelLayout struct{ ranges []kernelRange }

// holds reports whether the cached text names addr for sure.
func (l *kernelLayout) holds(addr uint64) bool {
	for _, r := range l.ranges {
		if addr >= r.lo && addr < r.hi {
			return true
		}
	}
	return false
}

// kernelCache returns where c keeps this boot's kallsyms; nil without a
// cache or when the boot, kernel or modules cannot be told.
func (r *recorder) kernelCache(c *symcache.Cache) *kernelCache {
	if c == nil {
		return nil
	}
	boot, err := os.ReadFile(r.opts.FS.Root + "/sys/kernel/random/boot_id")
	if boot = bytes.TrimSpace(boot); err != nil || len(boot) == 0 {
		return nil
	}
	notes, err := os.ReadFile(r.opts.SysRoot + "/kernel/notes")
	if err != nil {
		return nil
	}
	mods, err := os.ReadFile(r.opts.FS.Root + "/modules")
	if err != nil && !errors.Is(err, fs.ErrNotExist) { // a kernel without modules has none
		return nil
	}
	ranges, layout := parseModules(mods)
	return &kernelCache{cache: c, key: symcache.BlobKey("kallsyms", "indexed+text", string(boot), string(notes), layout), modules: ranges}
}

// get returns the cached text, its index and what it names for sure, the
// text mapped from the cache (see [symcache.Cache.MapBlob]: read whole,
// it was 6.8 MB of the 13.7 MB live at the end of a warm system-wide
// recording, which names a few hundred lines of it), or nil when none
// can be used. The blob holds the length of the index (4 bytes,
// little-endian), the kernel image's text range (two 8-byte addresses,
// 0 when the text does not say: finding them in the text touched 2 MB
// of it), the index ([symbol.Kallsyms.AppendIndex]: parsing the text
// again took 7 ms of a 1 s recording's 45), then the text. The mapping
// stays until close.
func (kc *kernelCache) get() *cachedKallsyms {
	m, err := kc.cache.MapBlob(kc.key)
	if err != nil || m == nil {
		return nil
	}
	b := m.Bytes()
	if len(b) < 20 {
		m.Close()
		return nil
	}
	n := uint64(binary.LittleEndian.Uint32(b))
	if n > uint64(len(b)-20) {
		m.Close()
		return nil
	}
	lo, hi := binary.LittleEndian.Uint64(b[4:]), binary.LittleEndian.Uint64(b[12:])
	index, text := b[20:20+n], b[20+n:]
	// The check of the index touches all of it and every name: the
	// pages are let go as it goes, so that they are not resident all at
	// once (6.8 MB for a moment raised a busy recording's peak RSS).
	k, err := symbol.KallsymsWithIndexDropping(text, index, kallsymsCheckDrop, func() { evictMapped(m) })
	if err != nil {
		m.Close()
		return nil
	}
	evictMapped(m)
	l := &kernelLayout{ranges: kc.modules}
	if lo != 0 && lo < hi {
		l.ranges = append(l.ranges, kernelRange{lo, hi})
	}
	return &cachedKallsyms{text: text, k: k, stable: l, mapped: m}
}

// kallsymsCheckDrop is how many symbols the check of a cached kallsyms
// index goes through between letting go of the pages it touched: some
// 53 kB of index and 180 kB of text of a distribution kernel's 122 k
// symbols.
const kallsymsCheckDrop = 4096

// cachedKallsyms is what kernelCache.get takes back from the cache.
type cachedKallsyms struct {
	text   []byte
	k      *symbol.Kallsyms
	stable *kernelLayout
	mapped *symcache.Mapped
}

// put keeps text and its index k in the cache.
func (kc *kernelCache) put(text []byte, k *symbol.Kallsyms) error {
	b := make([]byte, 20, 20+16*k.Len()+len(text))
	if lo, hi, ok := kernelText(text); ok {
		binary.LittleEndian.PutUint64(b[4:], lo)
		binary.LittleEndian.PutUint64(b[12:], hi)
	}
	b = k.AppendIndex(b)
	binary.LittleEndian.PutUint32(b, uint32(len(b)-20))
	return kc.cache.PutBlob(kc.key, append(b, text...))
}

// kernelText returns the kernel image's text, from _stext to _etext as a
// kallsyms text lists them.
func kernelText(text []byte) (lo, hi uint64, ok bool) {
	lo, lok := kallsymsAddr(text, "_stext")
	hi, hok := kallsymsAddr(text, "_etext")
	return lo, hi, lok && hok && lo < hi
}

// kallsymsAddr returns the address of the global text symbol name in a
// kallsyms text.
func kallsymsAddr(text []byte, name string) (uint64, bool) {
	// From "T ": searched from " T ", the space of every line made
	// bytes.Index slow (4 ms for _etext, 2 MB in).
	pat := []byte("T " + name + "\n")
	for off := 0; ; {
		i := bytes.Index(text[off:], pat)
		if i < 0 {
			return 0, false
		}
		i += off
		if i > 0 && text[i-1] == ' ' {
			start := bytes.LastIndexByte(text[:i-1], '\n') + 1
			return procfmt.ParseHex(text[start : i-1])
		}
		off = i + 1
	}
}

// parseModules returns the ranges of the modules /proc/modules lists
// ("NAME SIZE REFS DEPS STATE ADDR ...") and their names, sizes and
// addresses as one string, leaving out what changes while a module stays
// where it is (its users).
func parseModules(text []byte) ([]kernelRange, string) {
	var ranges []kernelRange
	var layout []byte
	for line := range bytes.Lines(text) {
		f := bytes.Fields(line)
		if len(f) < 6 {
			continue
		}
		size, err := strconv.ParseUint(string(f[1]), 10, 64)
		addr, ok := procfmt.ParseHex(bytes.TrimPrefix(f[5], []byte("0x")))
		if err != nil || !ok {
			continue
		}
		layout = append(layout, f[0]...)
		layout = append(layout, ' ')
		layout = append(layout, f[1]...)
		layout = append(layout, ' ')
		layout = append(layout, f[5]...)
		layout = append(layout, '\n')
		if addr+size > addr {
			ranges = append(ranges, kernelRange{addr, addr + size})
		}
	}
	return ranges, string(layout)
}
