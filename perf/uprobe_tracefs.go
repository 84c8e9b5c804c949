package perf

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// uprobeGroupPrefix starts the tracefs group of every probe set this
// package defines: nsprof_NS_PID_SEQ, NS the inode of the definer's PID
// namespace, PID its pid there, SEQ its count of sets.
const uprobeGroupPrefix = "nsprof_"

// uprobeSeq numbers the probe sets this process defines.
var uprobeSeq atomic.Uint64

// uprobeDefs are user probes defined in tracefs's uprobe_events, as
// `perf probe` defines them: the kernel resolves each probe's path when
// it is written, so an event of one of them (a tracepoint) is copied
// into the threads and processes its task creates (inherit) as any
// tracepoint is. A uprobe PMU event cannot be: the kernel reads its path
// again, through a pointer into the opener, in the task that forks.
type uprobeDefs struct {
	file  string   // tracefs's uprobe_events
	group string   // nsprof_NS_PID_SEQ
	names []string // names[i] is probe i's event in group
	ids   []uint64 // ids[i] is its tracepoint id, the perf config
}

// uprobeEventsFile returns the uprobe_events file of the first tracefs
// of TracefsDirs, or ErrNoUprobes.
func uprobeEventsFile() (string, error) {
	for _, dir := range TracefsDirs {
		f := filepath.Join(dir, "uprobe_events")
		if _, err := os.Stat(f); err == nil {
			return f, nil
		}
	}
	return "", ErrNoUprobes
}

// pidNamespace returns the inode of this process's PID namespace.
func pidNamespace() (uint64, error) {
	fi, err := os.Stat("/proc/self/ns/pid")
	if err != nil {
		return 0, fmt.Errorf("pid namespace: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, errors.New("pid namespace: /proc/self/ns/pid has no inode")
	}
	return st.Ino, nil
}

// defineUprobes writes a probe of tracefs for each of us (p for an entry,
// r for a return: "p:GROUP/pN PATH:0xOFF"), first removing the probes
// that a recorder of this PID namespace that no longer runs left behind
// (it crashed before removing them). The caller must remove them.
func defineUprobes(us []Uprobe) (_ *uprobeDefs, err error) {
	file, err := uprobeEventsFile()
	if err != nil {
		return nil, err
	}
	ns, err := pidNamespace()
	if err != nil {
		return nil, err
	}
	if err := removeStaleUprobes(file, ns); err != nil {
		return nil, err
	}
	d := &uprobeDefs{file: file, group: fmt.Sprintf("%s%d_%d_%d", uprobeGroupPrefix, ns, os.Getpid(), uprobeSeq.Add(1))}
	defer func() {
		if err != nil {
			d.remove()
		}
	}()
	for i, u := range us {
		kind := "p"
		if u.Return {
			kind = "r"
		}
		if strings.ContainsAny(u.Path, " \t\n") {
			return nil, fmt.Errorf("%v: tracefs cannot take a path with white space", u)
		}
		name := fmt.Sprintf("%s%d", kind, i)
		def := fmt.Sprintf("%s:%s/%s %s:%#x", kind, d.group, name, u.Path, u.Offset)
		if err := appendLine(file, def); err != nil {
			return nil, fmt.Errorf("define %v in %s: %w", u, file, err)
		}
		d.names = append(d.names, name)
		idf := filepath.Join(filepath.Dir(file), "events", d.group, name, "id")
		b, err := os.ReadFile(idf)
		if err != nil {
			return nil, fmt.Errorf("%v: %w", u, err)
		}
		id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%v: %s: %w", u, idf, err)
		}
		d.ids = append(d.ids, id)
	}
	return d, nil
}

// remove deletes the definitions; their events must be closed (else
// EBUSY). Later calls do nothing.
func (d *uprobeDefs) remove() error {
	var errs []error
	for _, name := range d.names {
		if err := appendLine(d.file, "-:"+d.group+"/"+name); err != nil {
			errs = append(errs, fmt.Errorf("remove user probe %s/%s from %s: %w", d.group, name, d.file, err))
		}
	}
	d.names = nil
	return errors.Join(errs...)
}

// removeStaleUprobes removes from file the probes of groups named for a
// process of PID namespace ns that no longer exists.
func removeStaleUprobes(file string, ns uint64) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("read %s: %w", file, err)
	}
	var errs []error
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// "p:GROUP/EVENT PATH:0xOFF"
		def, _, _ := strings.Cut(sc.Text(), " ")
		_, ev, ok := strings.Cut(def, ":")
		if !ok {
			continue
		}
		group, _, _ := strings.Cut(ev, "/")
		pid, ok := staleGroupPid(group, ns)
		if !ok {
			continue
		}
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); !errors.Is(err, os.ErrNotExist) {
			continue // alive, or unknown
		}
		// ENOENT: another recorder removed it first.
		if err := appendLine(file, "-:"+ev); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove stale user probe %s from %s: %w", ev, file, err))
		}
	}
	return errors.Join(errs...)
}

// staleGroupPid returns the pid of group's definer when group is one of
// this package's, defined in PID namespace ns.
func staleGroupPid(group string, ns uint64) (int, bool) {
	rest, ok := strings.CutPrefix(group, uprobeGroupPrefix)
	if !ok {
		return 0, false
	}
	f := strings.Split(rest, "_")
	if len(f) != 3 || f[0] != strconv.FormatUint(ns, 10) {
		return 0, false
	}
	pid, err := strconv.Atoi(f[1])
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// appendLine writes line to tracefs file in one write, as the kernel
// parses it.
func appendLine(file, line string) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(line + "\n"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
