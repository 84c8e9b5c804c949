package container

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"nsprof/internal/unix"
)

// opaqueXattrs mark an overlay directory that hides the lower layers'
// entries: the kernel's trusted. and user. (userxattr) forms and
// fuse-overlayfs's unprivileged form.
var opaqueXattrs = []string{"trusted.overlay.opaque", "user.overlay.opaque", "user.fuseoverlayfs.opaque"}

// openInLayers opens name (an absolute path inside the container) in the
// first of dirs (top layer first) that has it, as overlayfs would merge
// them: a whiteout (".wh.<name>" file or 0/0 character device) hides the
// entry in all lower layers, and an opaque directory (".wh..wh..opq" file
// or overlay opaque xattr) hides the lower layers' contents below it. Each
// layer is opened as a root with RESOLVE_IN_ROOT, so symbolic links inside a
// layer cannot leave it.
func openInLayers(dirs []string, name string) (*os.File, error) {
	if len(dirs) == 0 {
		return nil, errors.New("no layer directories")
	}
	var comps []string
	for _, c := range strings.Split(path.Clean("/"+name), "/") {
		if c != "" {
			comps = append(comps, c)
		}
	}
	if len(comps) == 0 {
		return nil, fmt.Errorf("%s: not a file path", name)
	}
	rel := "/" + strings.Join(comps, "/")
	var notes []string
	for _, d := range dirs {
		f, stop, err := openInLayer(d, comps)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			notes = append(notes, err.Error())
		}
		if stop != "" {
			return nil, &os.PathError{Op: "open", Path: rel, Err: fmt.Errorf("%s in layer %s: %w", stop, d, fs.ErrNotExist)}
		}
	}
	msg := fmt.Sprintf("not in any of %d layers", len(dirs))
	if len(notes) > 0 {
		msg += " (" + strings.Join(notes, "; ") + ")"
	}
	return nil, &os.PathError{Op: "open", Path: rel, Err: errors.New(msg)}
}

// openInLayer looks for comps in one layer directory. stop is non-empty
// when the layer hides the path from the layers below.
func openInLayer(dir string, comps []string) (f *os.File, stop string, err error) {
	d, err := unix.OpenPathDir(dir)
	if err != nil {
		return nil, "", err
	}
	defer d.Close()
	const resolve = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS
	opaque := false
	for i := range comps {
		prefix := "/" + strings.Join(comps[:i+1], "/")
		parent := "/" + strings.Join(comps[:i], "/")
		pf, err := unix.Openat2(d, prefix, unix.O_PATH|unix.O_NOFOLLOW, resolve, path.Join(dir, prefix))
		if err != nil {
			if wh, werr := unix.Openat2(d, path.Join(parent, ".wh."+comps[i]), unix.O_PATH|unix.O_NOFOLLOW, resolve, ""); werr == nil {
				wh.Close()
				return nil, "whiteout .wh." + comps[i], fs.ErrNotExist
			}
			if opaque {
				return nil, "opaque directory", fs.ErrNotExist
			}
			return nil, "", err
		}
		st, serr := unix.Fstat(pf)
		pf.Close()
		if serr != nil {
			return nil, "", serr
		}
		if st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0 {
			return nil, "whiteout device " + prefix, fs.ErrNotExist
		}
		if i < len(comps)-1 && st.Mode&unix.S_IFMT == unix.S_IFDIR && isOpaque(d, prefix, path.Join(dir, prefix)) {
			opaque = true
		}
	}
	rel := "/" + strings.Join(comps, "/")
	f, err = openSafe(d, rel, resolve, path.Join(dir, rel))
	if err != nil {
		return nil, "", err
	}
	return f, "", nil
}

// isOpaque reports whether the directory rel of layer d is an opaque
// overlay directory.
func isOpaque(d *os.File, rel, display string) bool {
	const resolve = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS
	if f, err := unix.Openat2(d, path.Join(rel, ".wh..wh..opq"), unix.O_PATH|unix.O_NOFOLLOW, resolve, ""); err == nil {
		f.Close()
		return true
	}
	df, err := unix.Openat2(d, rel, unix.O_RDONLY|unix.O_DIRECTORY, resolve, display)
	if err != nil {
		return false
	}
	defer df.Close()
	for _, x := range opaqueXattrs {
		if v, err := unix.Fgetxattr(df, x); err == nil && string(v) == "y" {
			return true
		}
	}
	return false
}
