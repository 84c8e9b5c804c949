package record

import (
	"io"
	"os"
	"strconv"
	"time"

	"nsprof/internal/unix"
	"nsprof/proc"
)

// mountTables reads the /proc/PID/mountinfo the capture keeps of each
// process described (Sysprof's symbolizer resolves a process's paths with
// it), once per mount namespace and root while the namespace's mounts do
// not change. The kernel writes the table out at each read, a line per
// mount with its paths: about 50 µs each for the 20 mounts of a 2-CPU
// VM, 3.5 % of the recorder's CPU over a loop of Go compiles (430
// processes in 10 s), and more on a host of hundreds of container
// mounts. The table read is kept with the file open: a poll of it says
// when a mount or unmount changed the namespace since (POLLPRI, as for
// /proc/PID/mounts), and the table is then read again. A table not used
// for mountTableIdle is let go: its open file holds the mount namespace,
// which would otherwise outlive the container it was made for.
type mountTables struct {
	fs     proc.FS
	tables map[mountKey]*mountTable
	// reads counts the tables read from /proc (for tests).
	reads int
}

// mountKey is what makes two processes' mountinfo the same: their mount
// namespace and their root, by its path as /proc/PID/root shows it and
// its device and inode (a process's mountinfo lists the mounts under its
// root, their mount points relative to it).
type mountKey struct {
	ns        uint64
	root, dev string
	rootInode uint64
}

// mountTable is one table read, and the file it was read from, polled for
// changes.
type mountTable struct {
	f    *os.File
	data []byte
	used time.Time
}

// mountTableIdle is how long a table is kept unused.
const mountTableIdle = 10 * time.Second

// maxMountTables bounds the tables kept (each holds its mount namespace
// while open): past it, they are all let go.
const maxMountTables = 64

// read returns the mountinfo of pid, whose namespace and root are key; a
// key with no namespace or root is read and not kept.
func (m *mountTables) read(pid int, key mountKey) ([]byte, error) {
	keep := key.ns != 0 && key.rootInode != 0
	if t := m.tables[key]; keep && t != nil {
		if changed, err := unix.PollPriority(int(t.f.Fd())); err == nil && !changed {
			t.used = time.Now()
			return t.data, nil
		}
		t.f.Close()
		delete(m.tables, key)
	}
	f, err := unix.OpenUnpolled(m.fs.Root + "/" + strconv.Itoa(pid) + "/mountinfo")
	if err != nil {
		return nil, err
	}
	m.reads++
	data, err := io.ReadAll(f)
	if err != nil || !keep {
		f.Close()
		return data, err
	}
	if len(m.tables) >= maxMountTables {
		m.close()
	}
	if m.tables == nil {
		m.tables = make(map[mountKey]*mountTable)
	}
	m.tables[key] = &mountTable{f: f, data: data, used: time.Now()}
	return data, nil
}

// expire lets go of the tables not used for mountTableIdle before now.
func (m *mountTables) expire(now time.Time) {
	for k, t := range m.tables {
		if now.Sub(t.used) >= mountTableIdle {
			t.f.Close()
			delete(m.tables, k)
		}
	}
}

// close lets every table go.
func (m *mountTables) close() {
	for _, t := range m.tables {
		t.f.Close()
	}
	clear(m.tables)
}
