package record

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"nsprof/capture"
	"nsprof/perf"
	"nsprof/proc"
)

// The tracepoints of Options.Blocking: every system call's entry (with
// the callchain of the calling thread) and its exit.
const (
	sysEnterTracepoint = "raw_syscalls:sys_enter"
	sysExitTracepoint  = "raw_syscalls:sys_exit"
)

// tracingRingPages returns the smallest ring per CPU with
// Options.Blocking or Options.OffCPU: every system call writes two
// records, one with a stack, and a system-wide recording fills 4 MB
// rings in bursts (its start, while it reads every process) at 50 k
// calls a second; every context switch writes a record with a stack and
// two SWITCH records, and two threads ping-ponging through a pipe filled
// 4 MB rings while the recorder waited for a CPU of a loaded 2-CPU VM
// (tens of thousands of records lost in most runs). Up to 16 MB a CPU,
// 256 MB in all; at least 4 MB.
func tracingRingPages() int {
	pages := 1024
	for pages < 4096 && 2*pages*os.Getpagesize()*runtime.NumCPU() <= 256<<20 {
		pages *= 2
	}
	return pages
}

// blocking turns system call entries and exits into the marks of the
// calls that took at least the threshold (Options.Blocking): a MARK
// frame (group capture.BlockingGroup, the call's name, its duration, the
// file descriptor's path) and a capture.StacksFile record with the thread's user
// stack at entry behind a marker frame naming the call (see
// capture.BlockingMarker). Entries are paired with the next exit of the
// same thread; only the entry's stack is kept until then.
type blocking struct {
	enter, exit *perf.Tracepoint
	threshold   int64
	fs          proc.FS
	self        int32
	threads     map[int32]*pendingCall
	markers     map[string]uint64
	// fdPaths are the paths of the descriptors read for earlier marks,
	// by process and descriptor, for when the process is gone by the
	// time its call is read from the ring; forgotten when the process
	// closes or replaces the descriptor, execs or exits.
	fdPaths map[int32]map[int32]string
	// calls counts the calls written; unpaired the entries and exits
	// that lost their other half (a full ring: their call is not
	// counted); before the exits of calls entered before the recording
	// began; open the calls still running when it stopped (written up to
	// the end); ended those of threads the process's exit_group ended
	// (written up to it); gone those of threads that ended inside a
	// call otherwise (killed: not written).
	calls, unpaired, before, open, ended, gone uint64
	blockedNs                                  int64
	// seen counts the entries and exits read.
	seen uint64
}

// pendingCall is a thread's system call entered and not exited yet, or
// (valid false) the time of its last exit.
type pendingCall struct {
	valid    bool
	nr       int64
	arg0     uint64
	time     int64
	pid      int32
	cpu      int16
	lastExit int64
	// path is what the call's descriptor named while the call was
	// still running (see tick); tried says it was looked for.
	path  string
	tried bool
	entry perf.Sample // the entry's record, RawData left out
	addrs []uint64
}

func newBlocking(threshold time.Duration, fs proc.FS) (*blocking, error) {
	b := &blocking{threshold: threshold.Nanoseconds(), fs: fs, self: int32(os.Getpid()),
		threads: make(map[int32]*pendingCall), markers: make(map[string]uint64),
		fdPaths: make(map[int32]map[int32]string)}
	var err error
	if b.enter, err = perf.LookupTracepoint(sysEnterTracepoint); err != nil {
		return nil, fmt.Errorf("--blocking: %w", err)
	}
	if b.exit, err = perf.LookupTracepoint(sysExitTracepoint); err != nil {
		return nil, fmt.Errorf("--blocking: %w", err)
	}
	for _, f := range []string{"id", "args"} {
		if _, ok := b.enter.Fields[f]; !ok {
			return nil, fmt.Errorf("--blocking: %s has no field %s", sysEnterTracepoint, f)
		}
	}
	if _, ok := b.exit.Fields["id"]; !ok {
		return nil, fmt.Errorf("--blocking: %s has no field id", sysExitTracepoint)
	}
	return b, nil
}

// setup adds the tracepoints to the perf options: the entries with
// stacks, the exits without.
func (b *blocking) setup(popts *perf.Options) {
	popts.UserStackTracepoints = append(popts.UserStackTracepoints, sysEnterTracepoint)
	popts.Tracepoints = append(popts.Tracepoints, sysExitTracepoint)
	if popts.RingPages == 0 {
		popts.RingPages = perf.DefaultRingPages
		if popts.UserStack > 0 {
			popts.RingPages = perf.DefaultStackRingPages
		}
	}
	popts.RingPages = max(popts.RingPages, tracingRingPages())
	leafTracepointStack(popts)
}

// handle takes a sample of the perf rings and reports whether it was a
// system call's entry or exit.
func (b *blocking) handle(r *recorder, rec *perf.Record) bool {
	s := &rec.Sample
	b.seen++
	switch {
	case b.enter.Matches(s.RawData):
		if int32(s.PID) != b.self {
			b.entered(r, rec)
		}
	case b.exit.Matches(s.RawData):
		if int32(s.PID) != b.self {
			nr, _ := b.exit.Int(s.RawData, "id")
			b.exited(r, int32(s.PID), int32(s.TID), nr, int64(s.Time))
		}
	default:
		b.seen--
		return false
	}
	return true
}

// entered keeps the entry of a call until its exit, with the user part
// of the thread's stack.
func (b *blocking) entered(r *recorder, rec *perf.Record) {
	s := &rec.Sample
	tid, t := int32(s.TID), int64(s.Time)
	nr, _ := b.enter.Int(s.RawData, "id")
	var arg0 uint64
	if f := b.enter.Fields["args"]; f.Offset+8 <= len(s.RawData) {
		arg0 = binary.NativeEndian.Uint64(s.RawData[f.Offset:])
	}
	th := b.threads[tid]
	if th == nil {
		th = &pendingCall{}
		b.threads[tid] = th
	}
	if t < th.lastExit {
		b.unpaired++ // read after a later exit of the thread
		return
	}
	if th.valid {
		b.unpaired++ // the previous call's exit was lost
	}
	th.valid = false
	if paths := b.fdPaths[int32(s.PID)]; paths != nil {
		switch syscallName(nr) {
		case "close", "dup2", "dup3":
			fd := 0
			if syscallName(nr) != "close" {
				fd = 1
			}
			if f := b.enter.Fields["args"]; f.Offset+8*(fd+1) <= len(s.RawData) {
				delete(paths, int32(binary.NativeEndian.Uint64(s.RawData[f.Offset+8*fd:])))
			}
		case "close_range", "execve", "execveat", "exit_group":
			delete(b.fdPaths, int32(s.PID))
		}
	}
	switch syscallName(nr) {
	case "exit": // never returns: the thread ends
		delete(b.threads, tid)
		return
	case "exit_group": // the process ends, and its threads inside calls
		for other, oth := range b.threads {
			if oth.pid != int32(s.PID) {
				continue
			}
			if oth.valid && other != tid && t-oth.time >= b.threshold {
				b.write(r, oth, other, t-oth.time, "(ended by the process's exit)")
				b.ended++
			}
			delete(b.threads, other)
		}
		return
	}
	// Kept as it came (the callchain, and the user registers and stack
	// copy when the options unwind or complete stacks), unwound only if
	// the call turns out slow: most calls are not.
	c := &th.entry
	c.IP, c.PID, c.TID, c.Time, c.CPU, c.RegsABI, c.StackSize = s.IP, s.PID, s.TID, s.Time, s.CPU, s.RegsABI, s.StackSize
	c.Callchain = append(c.Callchain[:0], s.Callchain...)
	c.Regs = append(c.Regs[:0], s.Regs...)
	c.Stack = append(c.Stack[:0], s.Stack...)
	th.valid, th.nr, th.arg0, th.time = true, nr, arg0, t
	th.path, th.tried = "", false
	th.pid, th.cpu = int32(s.PID), int16(s.CPU)
}

// exited pairs a call's exit with the thread's entry and writes the call
// when it took at least the threshold.
func (b *blocking) exited(r *recorder, pid, tid int32, nr, t int64) {
	th := b.threads[tid]
	switch {
	case th == nil:
		b.before++ // entered before the recording: its start is unknown
		b.threads[tid] = &pendingCall{pid: pid, lastExit: t}
		return
	case !th.valid || (th.nr != nr && nr != -1) || t < th.time:
		// (rt_sigreturn's exit says -1: it restores the registers
		// that held the number.)
		b.unpaired++ // its entry was lost
	default:
		if t-th.time >= b.threshold {
			b.write(r, th, tid, t-th.time, "")
		}
	}
	th.valid = false
	th.lastExit = max(th.lastExit, t)
}

// tick, called about every 100 ms while recording, looks up the
// descriptors of the calls running for longer than the threshold, while
// their processes are still there: a call the process's exit ends is
// read from the ring after the process is gone.
func (b *blocking) tick(now int64) {
	for _, th := range b.threads {
		if th.valid && !th.tried && now-th.time >= b.threshold && fdCalls[syscallName(th.nr)] && int32(th.arg0) >= 0 {
			th.tried = true
			th.path, _ = b.fs.ReadFDLink(int(th.pid), int(int32(th.arg0)))
		}
	}
}

// fdPath returns what the descriptor of call th names: as found while
// the call was running, or now, or for an earlier call of the process
// on the same descriptor; "" when none of them is known.
func (b *blocking) fdPath(th *pendingCall) string {
	if th.path != "" {
		return th.path
	}
	fd := int32(th.arg0)
	paths := b.fdPaths[th.pid]
	if p, err := b.fs.ReadFDLink(int(th.pid), int(fd)); err == nil {
		if paths == nil {
			paths = make(map[int32]string)
			b.fdPaths[th.pid] = paths
		}
		paths[fd] = p
		return p
	}
	return paths[fd]
}

// fdCalls are the system calls whose first argument is a file
// descriptor, named in their marks' messages.
var fdCalls = map[string]bool{
	"read": true, "write": true, "pread64": true, "pwrite64": true, "readv": true, "writev": true,
	"preadv": true, "pwritev": true, "preadv2": true, "pwritev2": true, "fsync": true, "fdatasync": true,
	"syncfs": true, "sync_file_range": true, "fallocate": true, "ftruncate": true, "ioctl": true,
	"fcntl": true, "flock": true, "getdents64": true, "lseek": true, "sendfile": true, "splice": true,
	"tee": true, "copy_file_range": true, "recvfrom": true, "sendto": true, "recvmsg": true,
	"sendmsg": true, "recvmmsg": true, "sendmmsg": true, "accept": true, "accept4": true,
	"connect": true, "epoll_wait": true, "epoll_pwait": true, "epoll_pwait2": true,
	"io_uring_enter": true, "fstat": true, "newfstatat": true, "readahead": true, "fadvise64": true,
	"close": true, "shutdown": true, "io_getevents": true,
}

// write writes one blocking call: its stack and its MARK frame.
func (b *blocking) write(r *recorder, th *pendingCall, tid int32, d int64, note string) {
	if r.writeErr != nil {
		return
	}
	name := syscallName(th.nr)
	a, ok := b.markers[name]
	if !ok {
		var err error
		if a, err = r.w.AddJITMap(capture.BlockingMarker(name)); err != nil {
			r.writeErr = err
			return
		}
		b.markers[name] = a
	}
	rec := perf.Record{Type: perf.RecordSample, Sample: th.entry}
	unwound := r.unwound(&rec)
	// The user part, under the marker frame.
	addrs := append(th.addrs[:0], capture.ContextUser, a)
	for i, a := range unwound {
		if a == capture.ContextUser {
			for _, a := range unwound[i+1:] {
				if a != 0 {
					addrs = append(addrs, a)
				}
			}
			break
		}
	}
	th.addrs = addrs
	addrs = r.checkedStack(int(th.pid), addrs, th.time)
	r.tr.sampled(int(th.pid), th.time)
	r.addStack(th.time, th.cpu, th.pid, tid, addrs)
	msg := ""
	if fdCalls[name] && int32(th.arg0) >= 0 {
		fd := int(int32(th.arg0))
		msg = "fd " + strconv.Itoa(fd)
		if p := b.fdPath(th); p != "" && !r.tr.private(int(th.pid)) {
			msg += ": " + p // another user's paths stay out, as their command lines
		}
	}
	if note != "" {
		msg += " " + note
	}
	if err := r.w.AddMark(th.time, th.pid, d, capture.BlockingGroup, name, msg); err != nil {
		r.writeErr = err
		return
	}
	b.calls++
	b.blockedNs += d
}

// finish writes the calls still running when the recording stopped, up
// to its end, and the counts as metadata, and logs them.
func (b *blocking) finish(r *recorder) {
	end := r.now()
	for tid, th := range b.threads {
		if !th.valid || end-th.time < b.threshold {
			continue
		}
		if !b.fs.TaskExists(int(th.pid), int(tid)) {
			b.gone++ // ended inside the call (killed): its end is unknown
			continue
		}
		b.write(r, th, tid, end-th.time, "(still in the call when the recording stopped)")
		b.open++
	}
	if r.writeErr != nil {
		return
	}
	md := [][2]string{
		{capture.MetaBlockingCalls, strconv.FormatUint(b.calls, 10)},
		{capture.MetaBlockingUnpaired, strconv.FormatUint(b.unpaired+b.gone, 10)},
		{capture.MetaBlockingOpen, strconv.FormatUint(b.open, 10)},
	}
	if err := writeMetadata(r.w, md); err != nil {
		r.writeErr = err
	}
	r.notef("blocking calls: %d system call entries and exits read; %d calls of at least %v, %.3fs in all; %d still running at the end (counted up to it); %d ended by their process's exit (counted up to it); %d entered before the recording (not counted)",
		b.seen, b.calls, time.Duration(b.threshold), float64(b.blockedNs)/1e9, b.open, b.ended, b.before)
	if n := b.unpaired + b.gone; n > 0 {
		r.logf("blocking calls: %d system call entries or exits lost their other half (a full ring, or a thread killed inside a call): those calls are not counted", n)
	}
}

// syscallName returns the name of system call nr of this machine, or
// "syscall_NR" for one the table does not know.
func syscallName(nr int64) string {
	if runtime.GOARCH == "amd64" && nr >= 0 && nr < int64(len(syscallNamesX86_64)) && syscallNamesX86_64[nr] != "" {
		return syscallNamesX86_64[nr]
	}
	return "syscall_" + strconv.FormatInt(nr, 10)
}
