package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
)

// DefaultRingBytes is the size of the ring buffer of switch-ins: 8 MiB,
// half a million records, seconds of a switch-heavy program's switches
// between two reads.
const DefaultRingBytes = 8 << 20

// errClosed is the error of the methods called after Close.
var errClosed = errors.New("bpf: switch-in reader closed")

// maxTargets bounds the processes followed at once.
const maxTargets = 1 << 16

// Options say which switch-ins SwitchIns reports.
type Options struct {
	// All reports the switch-ins of every task but the idle ones;
	// otherwise only those of the processes of TGIDs and their
	// descendants forked after Open.
	All   bool
	TGIDs []int
	// SkipSameProcess leaves out the switch-ins from a thread of the
	// same process that has perf events (a task handing its CPU to a
	// thread of its own process): a caller with a perf
	// sched:sched_switch event on each followed task has those in its
	// samples (next_pid, and the sample's time), and the program writes
	// nothing for them, which spares the record, its time and its
	// reading on the switches of a program whose threads hand work to
	// each other. A thread that exits has lost its perf events before
	// its last switch: that switch-in is written.
	// [SwitchIns.SkipsSameProcess] says whether the kernel's BTF let
	// the program do it.
	SkipSameProcess bool
	// RingBytes is the ring buffer's size, a power of two number of
	// pages; 0 for DefaultRingBytes.
	RingBytes int
	// Clones reports the tasks created by the followed processes (every
	// process's with All) in a PID namespace other than the initial
	// one, with the id their creator knows them by, which no perf
	// record carries (the return value of clone in the creator): a
	// caller need not enable the clone system calls' tracepoints,
	// which make every system call of every task on the machine take
	// the kernel's tracing path. [SwitchIns.Clones] says whether the
	// kernel's BTF let the program do it.
	Clones bool
	// KernelStacks has the sched_switch program take the kernel stack
	// of each followed thread leaving a CPU and write it with the
	// thread's next switch-in (SwitchIn.Kernel), for a caller whose
	// sched:sched_switch perf events take user stacks only: the
	// kernel's walk of the kernel stack is most of what a context
	// switch costs such a caller, and the program walks it once in
	// KernelStackReuse switch outs of a thread that leaves at one
	// place (see KernelStackReuse, and SwitchIn.KernelReused).
	// SkipSameProcess is then ignored: each switch-in carries its
	// stack. [SwitchIns.KernelStacks] says whether the kernel let the
	// program do it (a BTF-typed program is needed).
	KernelStacks bool
}

// Clone is a task created in a PID namespace other than the initial one.
type Clone struct {
	// Parent is the creating thread, PID its process, Child the new
	// task (host ids), NSID the new task's id in the creator's PID
	// namespace.
	Parent, PID, Child, NSID int32
	Time                     int64 // ns of CLOCK_MONOTONIC
}

// SwitchIn is one thread coming back onto a CPU.
type SwitchIn struct {
	TID, PID int32
	Time     int64 // ns of CLOCK_MONOTONIC
	// Kernel is the kernel stack of the thread's switch out before
	// this switch in, innermost first (Options.KernelStacks), nil when
	// the program took none; shared between records with the same
	// stack: not to be modified. KernelReused says the stack was
	// walked at an earlier switch out of the thread at the same place
	// and reused for this one.
	Kernel       []uint64
	KernelReused bool
}

// SwitchIns is the loaded and attached switch-in program and the reader
// of its records. Its methods are for one goroutine.
type SwitchIns struct {
	ring, targets, drops *ebpf.Map
	progs                []*ebpf.Program
	swin                 *ebpf.Program // the sched_switch program
	links                []link.Link
	rd                   *ringbuf.Reader
	rec                  ringbuf.Record
	closed               bool
	skipsSameProcess     bool
	// typed says the sched_switch program is BTF-typed (tp_btf);
	// typedErr is why not.
	typed    bool
	typedErr error
	// clones says the fork program writes Clone records.
	clones bool
	// ks are the maps of the kernel stacks (Options.KernelStacks),
	// nil without; ksErr says why not. kstacks are the stacks read,
	// by thread and place.
	ks      *kstackMaps
	ksErr   error
	kstacks map[kstackKey][]uint64
}

// Open loads the programs and attaches them: switch-ins are recorded from
// its return on. The error says what failed (BTF, permission, the
// verifier's log).
func Open(opts Options) (s *SwitchIns, err error) {
	off, err := kernelOffsets()
	if err != nil {
		return nil, err
	}
	size := opts.RingBytes
	if size == 0 {
		size = DefaultRingBytes
	}
	s = &SwitchIns{skipsSameProcess: opts.SkipSameProcess && off.perfCtx >= 0, kstacks: make(map[kstackKey][]uint64)}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.ring, err = ebpf.NewMap(&ebpf.MapSpec{Name: "nsprof_swin", Type: ebpf.RingBuf, MaxEntries: uint32(size)}); err != nil {
		return nil, fmt.Errorf("bpf: ring buffer map: %w", err)
	}
	if s.drops, err = ebpf.NewMap(&ebpf.MapSpec{Name: "nsprof_swdrop", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1}); err != nil {
		return nil, fmt.Errorf("bpf: drop counter map: %w", err)
	}
	targets := 0
	s.clones = opts.Clones && off.ids.ok
	if !s.clones {
		off.ids.ok = false
	}
	if !opts.All {
		if s.targets, err = ebpf.NewMap(&ebpf.MapSpec{Name: "nsprof_swtgid", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: maxTargets}); err != nil {
			return nil, fmt.Errorf("bpf: target map: %w", err)
		}
		for _, tgid := range opts.TGIDs {
			if err = s.Follow(tgid); err != nil {
				return nil, err
			}
		}
		targets = s.targets.FD()
		// The fork program first, so no child forked once switch-ins
		// are reported is missed.
		if err = s.attach("nsprof_fork", "sched_process_fork", forkInsns(off, targets, s.ring.FD(), s.drops.FD())); err != nil {
			return nil, err
		}
		if off.exitGroupDead {
			if err = s.attach("nsprof_exit", "sched_process_exit", exitInsns(off, targets)); err != nil {
				return nil, err
			}
		}
	}
	if opts.All && s.clones {
		if err = s.attach("nsprof_fork", "sched_process_fork", forkInsns(off, 0, s.ring.FD(), s.drops.FD())); err != nil {
			return nil, err
		}
	}
	// BTF-typed where the kernel can (Linux 5.5 and later): cheaper at
	// each switch of the machine; else through helper calls.
	if opts.KernelStacks {
		s.ksErr = s.attachKernelStacks(off, targets)
	}
	if s.ks != nil {
		s.typed = true
		s.skipsSameProcess = false
	} else if s.typedErr = s.attachTyped("nsprof_swin", "sched_switch", switchInBTFInsns(off, s.ring.FD(), targets, s.drops.FD(), opts.SkipSameProcess, nil)); s.typedErr == nil {
		s.typed = true
	} else if err = s.attach("nsprof_swin", "sched_switch", switchInInsns(off, s.ring.FD(), targets, s.drops.FD(), opts.SkipSameProcess)); err != nil {
		return nil, fmt.Errorf("%w (and as a BTF-typed program: %v)", err, s.typedErr)
	}
	s.swin = s.progs[len(s.progs)-1]
	if s.rd, err = ringbuf.NewReader(s.ring); err != nil {
		return nil, fmt.Errorf("bpf: ring buffer reader: %w", err)
	}
	// Reads never wait: a deadline in the past.
	s.rd.SetDeadline(time.Unix(0, 1))
	return s, nil
}

// attach loads insns as a raw tracepoint program and attaches it to tp.
func (s *SwitchIns) attach(name, tp string, insns asm.Instructions) error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: name, Type: ebpf.RawTracepoint, Instructions: insns, License: "GPL"})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return fmt.Errorf("bpf: program for %s refused by the verifier: %+v", tp, ve)
		}
		return fmt.Errorf("bpf: loading the program for %s: %w", tp, err)
	}
	s.progs = append(s.progs, prog)
	l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: tp, Program: prog})
	if err != nil {
		return fmt.Errorf("bpf: attaching to raw tracepoint %s: %w", tp, err)
	}
	s.links = append(s.links, l)
	return nil
}

// attachTyped loads insns as a BTF-typed raw tracepoint program (tp_btf)
// and attaches it to tp. On an error nothing is left loaded.
func (s *SwitchIns) attachTyped(name, tp string, insns asm.Instructions) error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: name, Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp, AttachTo: tp, Instructions: insns, License: "GPL"})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return fmt.Errorf("bpf: BTF-typed program for %s refused by the verifier: %+v", tp, ve)
		}
		return fmt.Errorf("bpf: loading the BTF-typed program for %s: %w", tp, err)
	}
	l, err := link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceRawTp})
	if err != nil {
		prog.Close()
		return fmt.Errorf("bpf: attaching to BTF-typed tracepoint %s: %w", tp, err)
	}
	s.progs = append(s.progs, prog)
	s.links = append(s.links, l)
	return nil
}

// attachKernelStacks loads and attaches the typed sched_switch program
// with kernel stacks (Options.KernelStacks); on an error nothing of it
// is left.
func (s *SwitchIns) attachKernelStacks(off taskOffsets, targets int) error {
	if !off.regs.ok || off.flags < 0 {
		return errors.New("bpf: the kernel's BTF gives no struct pt_regs offsets (ip, sp, bp, orig_ax, di) or task_struct.flags")
	}
	ks, err := newKstackMaps()
	if err != nil {
		return err
	}
	off.kstackSkip = kstackSkip
	insns := switchInBTFInsns(off, s.ring.FD(), targets, s.drops.FD(), false, ks)
	if err := s.attachTyped("nsprof_swin", "sched_switch", insns); err != nil {
		ks.close()
		return err
	}
	s.ks = ks
	return nil
}

// KernelStacks says whether the switch-ins carry kernel stacks
// (Options.KernelStacks), and if not, why.
func (s *SwitchIns) KernelStacks() (bool, error) { return s.ks != nil, s.ksErr }

// Clones says whether the program reports Clone records
// (Options.Clones).
func (s *SwitchIns) Clones() bool { return s.clones }

// Typed says whether the sched_switch program is BTF-typed (tp_btf,
// direct loads of the tasks' fields) rather than a raw tracepoint
// program reading them through helper calls.
func (s *SwitchIns) Typed() bool { return s.typed }

// SkipsSameProcess says whether the program leaves out the switch-ins
// from threads of the same process (Options.SkipSameProcess).
func (s *SwitchIns) SkipsSameProcess() bool { return s.skipsSameProcess }

// Follow adds the process tgid to those whose switch-ins are reported
// (not with Options.All).
func (s *SwitchIns) Follow(tgid int) error {
	if s.targets == nil {
		return nil
	}
	if err := s.targets.Put(uint32(tgid), uint32(1)); err != nil {
		return fmt.Errorf("bpf: following process %d: %w", tgid, err)
	}
	return nil
}

// Followed says whether the process tgid is followed (with Options.All,
// every one is).
func (s *SwitchIns) Followed(tgid int) bool {
	if s.targets == nil {
		return true
	}
	var v uint32
	return s.targets.Lookup(uint32(tgid), &v) == nil
}

// Forget removes the process tgid from those followed.
func (s *SwitchIns) Forget(tgid int) {
	if s.targets != nil {
		s.targets.Delete(uint32(tgid))
	}
}

// Pending returns how many bytes of records wait to be read.
func (s *SwitchIns) Pending() int {
	if s.closed || s.rd == nil {
		return 0
	}
	return s.rd.AvailableBytes()
}

// Read calls fn with each switch-in recorded and not read yet, in the
// order they were written, and clone with each Clone record (when not
// nil), and returns how many switch-ins it read. It never waits.
func (s *SwitchIns) Read(fn func(SwitchIn), clone func(Clone)) (int, error) {
	if s.closed {
		return 0, errClosed
	}
	n := 0
	for s.rd.AvailableBytes() > 0 {
		err := s.rd.ReadInto(&s.rec)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("bpf: reading switch-ins: %w", err)
		}
		raw := s.rec.RawSample
		if len(raw) == cloneRecordSize {
			if clone != nil {
				clone(Clone{
					Parent: int32(binary.NativeEndian.Uint32(raw)),
					PID:    int32(binary.NativeEndian.Uint32(raw[4:])),
					Child:  int32(binary.NativeEndian.Uint32(raw[8:])),
					NSID:   int32(binary.NativeEndian.Uint32(raw[12:])),
					Time:   int64(binary.NativeEndian.Uint64(raw[16:])),
				})
			}
			continue
		}
		if len(raw) >= kstackHeader {
			fn(s.kstackRecord(raw))
			n++
			continue
		}
		if len(raw) < recordSize {
			continue
		}
		fn(SwitchIn{
			TID:  int32(binary.NativeEndian.Uint32(raw)),
			PID:  int32(binary.NativeEndian.Uint32(raw[4:])),
			Time: int64(binary.NativeEndian.Uint64(raw[8:])),
		})
		n++
	}
	return n, nil
}

// Lost returns how many records (switch-ins, clones) were lost: found
// the ring buffer full, or not seen because the kernel did not run the
// sched_switch program (its recursion misses: it was running on the CPU
// already).
func (s *SwitchIns) Lost() (uint64, error) {
	if s.closed {
		return 0, errClosed
	}
	var per []uint64
	if err := s.drops.Lookup(uint32(0), &per); err != nil {
		return 0, fmt.Errorf("bpf: reading the drop count: %w", err)
	}
	var n uint64
	for _, v := range per {
		n += v
	}
	st, err := s.swin.Stats()
	if err != nil {
		return 0, fmt.Errorf("bpf: reading the program's stats: %w", err)
	}
	return n + st.RecursionMisses, nil
}

// Close detaches the programs and frees what Open made. Calling it again
// does nothing.
func (s *SwitchIns) Close() error {
	if s == nil || s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, l := range s.links {
		errs = append(errs, l.Close())
	}
	if s.rd != nil {
		errs = append(errs, s.rd.Close())
	}
	for _, p := range s.progs {
		errs = append(errs, p.Close())
	}
	for _, m := range []*ebpf.Map{s.ring, s.targets, s.drops} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	if s.ks != nil {
		errs = append(errs, s.ks.close()...)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bpf: closing switch-in reader: %w", err)
	}
	return nil
}
