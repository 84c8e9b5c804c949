// Package outfile creates the files nsprof writes its results to (captures,
// dumps, exports, profiles) without following a symbolic link at the path
// or writing through a link into a file other than the one named.
//
// Without [Options.Replace], an existing path of any kind is refused: the
// file is created with O_CREAT|O_EXCL, which also refuses a dangling
// symbolic link. With Replace, an existing regular file is never opened:
// the output is written to a new file in the same directory (created with
// O_EXCL) that [File.Close] swaps with the path (renameat2
// RENAME_EXCHANGE) and then removes under its temporary name, or renames
// over the path where the file system cannot swap names. Either way only
// directory entries change, so a hard link planted at the path keeps its
// other names' contents, and the file that replaces it belongs to the
// caller with the caller's mode. The swap matters on ext4, which makes
// rename(2) over an existing file write back the new file's dirty pages
// before returning (auto_da_alloc): seconds for a large capture. An existing symbolic link, directory, device,
// FIFO or socket at the path is refused even with Replace, but for the
// null device (/dev/null, character device 1:3, whatever its name), which
// is written to as it is, with or without Replace, to time or check a
// command without keeping its output, as perf users do.
//
// This is what a root nsprof needs in a shared, sticky directory such as
// /tmp, where another user may have planted a link named like the output:
// opening that name with O_TRUNC would truncate the link's target.
package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"nsprof/internal/unix"
)

// Options configures [Create]. The zero value refuses an existing path and
// creates the file with mode 0644 (before the umask).
type Options struct {
	// Replace allows an existing regular file at the path to be
	// replaced, by renaming the new file over it on [File.Close].
	Replace bool
	// Perm is the mode of a new file, before the umask. Default 0644.
	Perm fs.FileMode
}

// File is an output being written. Write to the embedded *os.File (its
// Name may be a temporary name in the path's directory); [File.Close]
// puts it at its path, [File.Discard] removes it.
type File struct {
	*os.File
	path string
	// tmp is the temporary name the output is written at until Close
	// renames it to path; "" when the output was created at path.
	tmp string
	// created identifies the file Create made, so that Discard removes
	// that file and no other one put at the same name meanwhile.
	created os.FileInfo
	// sink says the output is the null device: written to as it is,
	// never replaced or removed.
	sink bool
	done bool
}

// Create creates the output file at path as described in the package
// documentation. An error for an existing path wraps [fs.ErrExist].
func Create(path string, opts Options) (*File, error) {
	perm := opts.Perm
	if perm == 0 {
		perm = 0o644
	}
	if st, err := os.Lstat(path); err == nil && unix.IsNullDevice(st) {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &File{File: f, path: path, sink: true}, nil
	}
	if opts.Replace {
		st, err := os.Lstat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Nothing to replace: create it in place, below.
		case err != nil:
			return nil, err
		case st.Mode()&fs.ModeSymlink != 0:
			return nil, fmt.Errorf("%s is a symbolic link: not following it (name its target, or remove the link)", path)
		case !st.Mode().IsRegular():
			return nil, fmt.Errorf("%s is %s, not a regular file: not replacing it", path, kind(st.Mode()))
		default:
			return createTemp(path, perm)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return nil, err
	}
	return newFile(f, path, "")
}

// kind names the type of a file that is not regular.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// createTemp creates the file that will replace path: a new name in the
// same directory, so that the rename stays on one file system.
func createTemp(path string, perm fs.FileMode) (*File, error) {
	dir, base := filepath.Split(path)
	for range 100 {
		tmp := filepath.Join(dir, "."+base+".nsprof-"+strconv.FormatUint(rand.Uint64()&0xffffffff, 16))
		f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("replacing %s: %w", path, err)
		}
		return newFile(f, path, tmp)
	}
	return nil, fmt.Errorf("replacing %s: no free temporary name in %s", path, dir)
}

func newFile(f *os.File, path, tmp string) (*File, error) {
	st, err := f.Stat()
	if err != nil {
		name := f.Name()
		f.Close()
		os.Remove(name)
		return nil, err
	}
	return &File{File: f, path: path, tmp: tmp, created: st}, nil
}

// Path returns the path the output is for.
func (f *File) Path() string { return f.path }

// Close closes the file and, when it replaces an existing one, puts it at
// the path: it swaps the two names, then removes the old file under the
// temporary name, or renames over the path where names cannot be swapped.
// If that fails, the new file is removed and the old one stays. Close
// after Close or Discard does nothing.
func (f *File) Close() error {
	if f.done {
		return nil
	}
	f.done = true
	err := f.File.Close()
	if f.tmp == "" {
		return err
	}
	if err == nil {
		err = unix.ExchangePaths(f.tmp, f.path)
		if err == nil {
			// f.tmp now names what was at the path: a regular file,
			// unless something else was put there since Create.
			if st, lerr := os.Lstat(f.tmp); lerr != nil || !st.Mode().IsRegular() {
				if err = unix.ExchangePaths(f.tmp, f.path); err == nil {
					err = fmt.Errorf("%s is no longer a regular file: not replacing it", f.path)
				}
			} else if rerr := os.Remove(f.tmp); rerr != nil {
				return fmt.Errorf("replaced %s, but the previous file stays at %s: %w", f.path, f.tmp, rerr)
			} else {
				return nil
			}
		} else if errors.Is(err, unix.ErrNoExchange) || errors.Is(err, fs.ErrNotExist) {
			// No swap on this file system, or nothing left to replace.
			if err = os.Rename(f.tmp, f.path); err == nil {
				return nil
			}
		}
	}
	f.remove(f.tmp)
	return fmt.Errorf("replacing %s: %w", f.path, err)
}

// Discard closes the file and removes it: the output is not wanted (the
// command failed before writing anything worth keeping). A file that was
// to be replaced stays as it was. Only the file Create made is removed,
// never another one put at the same name since. Discard after Close or
// Discard does nothing, so it can be deferred.
func (f *File) Discard() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	if f.sink {
		return
	}
	if f.tmp != "" {
		f.remove(f.tmp)
	} else {
		f.remove(f.path)
	}
}

// remove removes name if it is still the file Create made.
func (f *File) remove(name string) {
	if st, err := os.Lstat(name); err == nil && os.SameFile(st, f.created) {
		os.Remove(name)
	}
}
