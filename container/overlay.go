package container

import (
	"path"
	"strings"

	"nsprof/proc"
)

// overlayDirs are the layers of an overlay mount, top first: Upper (may be
// empty for a read-only overlay) then Lower in overlay order.
type overlayDirs struct {
	Lower  []string
	Upper  string
	Work   string
	Merged string // the mount point, from fuse-overlayfs's command line
}

// layers returns the directories to search, top first.
func (o overlayDirs) layers() []string {
	var out []string
	if o.Upper != "" {
		out = append(out, o.Upper)
	}
	return append(out, o.Lower...)
}

// splitLowerdir splits an overlay lowerdir value at unescaped colons. "::"
// separates data-only layers; empty elements are dropped.
func splitLowerdir(s string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case s[i] == ':':
			if cur.Len() > 0 {
				out = append(out, cur.String())
			}
			cur.Reset()
		default:
			cur.WriteByte(s[i])
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// overlayFromMount returns the layer directories of a kernel overlay mount
// from its super options (lowerdir=, lowerdir+=, upperdir=, workdir=).
func overlayFromMount(m proc.Mount) (overlayDirs, bool) {
	if m.FSType != "overlay" {
		return overlayDirs{}, false
	}
	var o overlayDirs
	for _, opt := range m.SuperOptions {
		switch opt.Key {
		case "lowerdir":
			o.Lower = append(o.Lower, splitLowerdir(opt.Value)...)
		case "lowerdir+":
			if opt.Value != "" {
				o.Lower = append(o.Lower, opt.Value)
			}
		case "upperdir":
			o.Upper = opt.Value
		case "workdir":
			o.Work = opt.Value
		}
	}
	return o, len(o.Lower) > 0 || o.Upper != ""
}

// parseFuseOverlayfsCmdline parses the argv of a fuse-overlayfs process:
// "fuse-overlayfs [-f] -o lowerdir=A:B,upperdir=U,workdir=W,... MERGED".
// ok is false when argv is not fuse-overlayfs or names no layers.
func parseFuseOverlayfsCmdline(argv []string) (o overlayDirs, ok bool) {
	if len(argv) == 0 || path.Base(argv[0]) != "fuse-overlayfs" {
		return overlayDirs{}, false
	}
	var opts []string
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "-o":
			if i+1 < len(argv) {
				i++
				opts = append(opts, argv[i])
			}
		case strings.HasPrefix(a, "-o"):
			opts = append(opts, a[2:])
		case strings.HasPrefix(a, "-"):
		default:
			o.Merged = a
		}
	}
	for _, s := range opts {
		for _, kv := range splitOptions(s) {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "lowerdir":
				o.Lower = append(o.Lower, splitLowerdir(v)...)
			case "upperdir":
				o.Upper = unescapeOption(v)
			case "workdir":
				o.Work = unescapeOption(v)
			}
		}
	}
	if len(o.Lower) == 0 && o.Upper == "" {
		return overlayDirs{}, false
	}
	return o, true
}

// splitOptions splits a mount option string at commas not escaped with a
// backslash; the backslashes stay for splitLowerdir.
func splitOptions(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case ',':
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// unescapeOption removes the backslashes that escape commas and colons.
func unescapeOption(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Layers returns the host directories the process's root file system is
// layered from, top first: a podman container's storage layers (their
// diff directories, from containers.json and layers.json), else the
// upperdir and lowerdirs of a kernel overlay or fuse-overlayfs mounted at
// its "/". It returns nil when the root is no overlay (host, Flatpak,
// plain bind mounts). These are what Sysprof records as OVERLAY frames.
func (p *Process) Layers() []string {
	if p.snap.podmanID() != "" {
		if st, err := p.snap.podmanStorage(); err == nil && len(st.Dirs) > 0 {
			return append([]string(nil), st.Dirs...)
		}
	}
	mnt, _, ok := coveringMount(p.snap.mounts, "/")
	if !ok || mnt.MountPoint != "/" {
		return nil
	}
	var o overlayDirs
	switch mnt.FSType {
	case "overlay":
		o, ok = overlayFromMount(mnt)
	case "fuse.fuse-overlayfs":
		o, ok = p.snap.fuseOverlay[mnt.Dev]
	}
	if !ok {
		return nil
	}
	return o.layers()
}
