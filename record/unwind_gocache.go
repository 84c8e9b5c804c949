package record

import (
	"fmt"
	"os"

	"nsprof/internal/unix"
	"nsprof/symbol"
	"nsprof/symcache"
	"nsprof/unwind"
)

// A Go binary's unwind table (the function entries and pcsp tables of its
// pclntab, see [unwind.Table.AppendGo]) is kept in the symbol cache as a
// blob, keyed by the binary's build-id: over a loop of Go toolchain
// commands every recording loaded the compiler's, go's and vet's tables
// from their pclntabs again, some 7 % of a warm recording's CPU. Only a
// table read from a file that only root or the recording user can write
// is kept, as for symbols (symObj.untrusted): a file forging the
// build-id of another would have its table unwind that other's stacks.
// A table taken back is checked whole (unwind.DecodeGo) after the cache
// checked the blob's owner and checksum; one that does not check is
// loaded from the file, and kept again.

// goTableBlobVersion names the encoding in the blob's key.
const goTableBlobVersion = "1"

// goTables keeps Go binaries' unwind tables in the symbol cache.
type goTables struct {
	dir      string
	maxBytes int64
	// cache is opened on first use; tried says it was.
	cache *symcache.Cache
	tried bool
	// hits counts the tables taken from the cache.
	hits int
}

// open returns the cache, opened on first use; nil when it cannot be.
func (g *goTables) open() *symcache.Cache {
	if g == nil || g.dir == "" {
		return nil
	}
	if !g.tried {
		g.tried = true
		if c, err := symcache.Open(g.dir, symcache.Options{MaxBytes: g.maxBytes}); err == nil {
			g.cache = c
		}
	}
	return g.cache
}

// close closes the cache; a later use opens it again.
func (g *goTables) close() {
	if g == nil {
		return
	}
	if g.cache != nil {
		g.cache.Close()
	}
	g.cache, g.tried = nil, false
}

// summary says how many tables the cache gave, for the unwinders' log
// lines: "" for none.
func (g *goTables) summary() string {
	if g == nil || g.hits == 0 {
		return ""
	}
	return fmt.Sprintf("%d of them Go binaries' from the symbol cache, ", g.hits)
}

// goTableKey returns the blob key of the table of Go binary f, "" when f is not
// a Go binary or has no build-id.
func goTableKey(f *os.File) string {
	ef, err := symbol.NewFile(f)
	if err != nil {
		return ""
	}
	goID := ef.GoBuildID()
	if len(goID) == 0 {
		return ""
	}
	k := symcache.Key(ef.BuildID(), goID)
	if k == "" {
		return ""
	}
	return symcache.BlobKey("unwind-go", goTableBlobVersion, k)
}

// load returns the unwind table of o's file: a Go binary's from the
// cache when it holds it, else read by read and kept in the cache when
// it is a Go binary's table alone.
func (g *goTables) load(o *symObj, read func() (*unwind.Table, error)) (*unwind.Table, error) {
	c := g.open()
	if c == nil {
		return read()
	}
	key := goTableKey(o.f)
	if key == "" {
		return read()
	}
	if b, err := c.GetBlob(key); err == nil && b != nil {
		if t, err := unwind.DecodeGo(b); err == nil {
			g.hits++
			return t, nil
		}
	}
	t, err := read()
	if err != nil || t == nil || fileUntrusted(o.f) != "" {
		return t, err
	}
	if b, ok := t.AppendGo(nil); ok {
		c.PutBlob(key, b) // a table not kept is read again next time
	}
	return t, err
}

// fileUntrusted says why what is read from f is not to be cached, ""
// when it may be: f must be a regular file only root or the recording
// user can write.
func fileUntrusted(f *os.File) string {
	st, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	owner, ok := unix.StatOwner(st)
	switch {
	case !ok || !st.Mode().IsRegular():
		return "not a regular file"
	case owner != 0 && owner != uint32(os.Geteuid()):
		return fmt.Sprintf("owned by uid %d", owner)
	case st.Mode().Perm()&0o022 != 0:
		return fmt.Sprintf("writable by group or others (mode %v)", st.Mode().Perm())
	}
	return ""
}
