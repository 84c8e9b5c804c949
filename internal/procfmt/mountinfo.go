package procfmt

import (
	"io"
	"strconv"
	"strings"
)

// MountOption is one comma-separated mount option, split at its first '='.
type MountOption struct {
	Key   string
	Value string // "" for flags such as "rw"
}

// MountOptions is a list of mount options in the order the kernel wrote
// them. Keys and values have their octal escapes (\054 for ',', \040 for
// ' ') decoded. For overlayfs, the lowerdir value lists layers separated by
// ':'; a ':' inside a layer path becomes indistinguishable from a separator
// once decoded.
type MountOptions []MountOption

// Get returns the value of the first option named key.
func (o MountOptions) Get(key string) (value string, ok bool) {
	for _, opt := range o {
		if opt.Key == key {
			return opt.Value, true
		}
	}
	return "", false
}

// Has reports whether an option named key is present.
func (o MountOptions) Has(key string) bool {
	_, ok := o.Get(key)
	return ok
}

// Mount is one line of /proc/PID/mountinfo.
type Mount struct {
	ID       int // unique mount ID
	ParentID int // ID of the parent mount; itself for the root of the tree
	Dev      Dev // st_dev of files on this mount
	// Root is the directory of the file system that is mounted at
	// MountPoint; for bind mounts and containers it names the host-side
	// source directory.
	Root string
	// MountPoint is relative to the reading process's root.
	MountPoint string
	Options    MountOptions // per-mount options such as rw, nosuid, relatime
	// Optional holds the optional fields such as "shared:1" or "master:2".
	Optional     []string
	FSType       string       // for example "ext4", "overlay", "fuse.fuse-overlayfs"
	Source       string       // file system specific; "none" if absent
	SuperOptions MountOptions // per-superblock options, e.g. overlay upperdir=
}

// ParseMountInfo parses the /proc/PID/mountinfo format. On error it returns
// nil and a *[SyntaxError] naming the line.
func ParseMountInfo(r io.Reader) ([]Mount, error) {
	lr := NewLineReader(r, "mountinfo")
	var mounts []Mount
	for lr.Next() {
		line := lr.Text()
		if line == "" {
			continue
		}
		m, msg := parseMount(line)
		if msg != "" {
			return nil, lr.Errorf(line, "%s", msg)
		}
		mounts = append(mounts, m)
	}
	if err := lr.Err(); err != nil {
		return nil, err
	}
	return mounts, nil
}

func parseMount(line string) (Mount, string) {
	var m Mount
	f := strings.Split(line, " ")
	sep := -1
	for i := 6; i < len(f); i++ {
		if f[i] == "-" {
			sep = i
			break
		}
	}
	// Fields after the separator beyond the third are reserved for future
	// kernels and ignored.
	if sep < 0 || len(f) < sep+4 {
		return m, "missing fields"
	}
	var err error
	if m.ID, err = strconv.Atoi(f[0]); err != nil || m.ID < 0 {
		return Mount{}, "bad mount ID"
	}
	if m.ParentID, err = strconv.Atoi(f[1]); err != nil || m.ParentID < 0 {
		return Mount{}, "bad parent ID"
	}
	var ok bool
	if m.Dev, ok = ParseDev(f[2], 10); !ok {
		return Mount{}, "bad device"
	}
	if f[3] == "" || f[4] == "" || f[sep+1] == "" {
		return Mount{}, "empty field"
	}
	m.Root = unescapeOctal(f[3])
	m.MountPoint = unescapeOctal(f[4])
	m.Options = parseMountOptions(f[5])
	if sep > 6 {
		m.Optional = f[6:sep:sep]
	}
	m.FSType = unescapeOctal(f[sep+1])
	m.Source = unescapeOctal(f[sep+2])
	m.SuperOptions = parseMountOptions(f[sep+3])
	return m, ""
}

// parseMountOptions splits a comma-separated option list. Commas and '='
// inside keys and values are escaped by the kernel, so the split is exact.
func parseMountOptions(s string) MountOptions {
	if s == "" {
		return nil
	}
	opts := make(MountOptions, 0, strings.Count(s, ",")+1)
	for o := range strings.SplitSeq(s, ",") {
		k, v, _ := strings.Cut(o, "=")
		opts = append(opts, MountOption{Key: unescapeOctal(k), Value: unescapeOctal(v)})
	}
	return opts
}

// unescapeOctal decodes the kernel's \ooo escapes. A backslash that does
// not start a valid escape is kept.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		// \ooo with a first digit above 3 would not fit in a byte.
		if s[i] == '\\' && i+3 < len(s) && s[i+1] >= '0' && s[i+1] <= '3' &&
			isOctal(s[i+2]) && isOctal(s[i+3]) {
			b = append(b, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 3
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// MountEntry is one line of /proc/PID/mounts (the fstab format).
type MountEntry struct {
	Source     string
	MountPoint string
	FSType     string
	// Options merges per-mount and per-superblock options.
	Options MountOptions
	Freq    int // dump frequency; always 0 in /proc/PID/mounts
	PassNo  int // fsck pass; always 0 in /proc/PID/mounts
}

// ParseMounts parses the /proc/PID/mounts (fstab) format. The last two
// fields are optional. On error it returns nil and a *[SyntaxError].
func ParseMounts(r io.Reader) ([]MountEntry, error) {
	lr := NewLineReader(r, "mounts")
	var entries []MountEntry
	for lr.Next() {
		line := lr.Text()
		if line == "" {
			continue
		}
		f := strings.Split(line, " ")
		if len(f) < 4 || len(f) > 6 {
			return nil, lr.Errorf(line, "want 4 to 6 fields, have %d", len(f))
		}
		if f[0] == "" || f[1] == "" || f[2] == "" {
			return nil, lr.Errorf(line, "empty field")
		}
		e := MountEntry{
			Source:     unescapeOctal(f[0]),
			MountPoint: unescapeOctal(f[1]),
			FSType:     unescapeOctal(f[2]),
			Options:    parseMountOptions(f[3]),
		}
		var err error
		if len(f) > 4 {
			if e.Freq, err = strconv.Atoi(f[4]); err != nil || e.Freq < 0 {
				return nil, lr.Errorf(line, "bad dump frequency")
			}
		}
		if len(f) > 5 {
			if e.PassNo, err = strconv.Atoi(f[5]); err != nil || e.PassNo < 0 {
				return nil, lr.Errorf(line, "bad pass number")
			}
		}
		entries = append(entries, e)
	}
	if err := lr.Err(); err != nil {
		return nil, err
	}
	return entries, nil
}
