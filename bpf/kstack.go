package bpf

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// KernelStackReuse is how many switch outs in a row of one thread may
// reuse the kernel stack walked at the first of them (Options.KernelStacks):
// the next one walks it again. A thread blocked over and over at one
// place costs one walk of its kernel stack in KernelStackReuse switches
// (about 1 µs each on a 2-CPU VM with the ORC unwinder: most of what an
// off-CPU profile costs a switch-heavy program, perf's included).
const KernelStackReuse = 16

// pfKthread is the task flag of a kernel thread (PF_KTHREAD).
const pfKthread = 0x00200000

// kstackFrames is the most kernel frames a switch out keeps: the
// kernel's default perf_event_max_stack.
const kstackFrames = 127

// A kernel-stack switch-in record (Options.KernelStacks) is the value of
// the map places as the switch in found it, kstackHeader bytes then
// the frames: the thread id and process id (u32 each), the time (u64),
// flags (u32, kstackReused), the frames' length in bytes (u32), the
// reuse count (u32), 4 bytes of padding and the place's hash (u64);
// never as short as the other records.
const (
	kstackHeader    = 40
	kstackValueSize = kstackHeader + 8*kstackFrames
	kstackFlags     = 16
	kstackLen       = 20
	kstackReuses    = 24
	kstackHash      = 32
	// kstackReused is the flag of a record whose kernel stack was
	// walked at an earlier switch out.
	kstackReused = 1
)

// The sizes of the maps of kernel stacks: places (a kernel stack per
// thread and place, least recently used evicted: 9 MB) and pending
// (each thread's place of its last switch out).
const (
	kstackPlaces  = 8192
	kstackThreads = 1 << 16
)

// regsOffsets are the byte offsets of struct pt_regs's members that make
// a switch out's place (x86-64 names); ok is false when the BTF does not
// give them all.
type regsOffsets struct {
	ip, sp, bp, syscall, arg0 int16
	ok                        bool
}

// pt_regs offsets looked up in the kernel's BTF.
func regsOffsetsOf(spec *btf.Spec) regsOffsets {
	var regs *btf.Struct
	if spec.TypeByName("pt_regs", &regs) != nil {
		return regsOffsets{}
	}
	var o regsOffsets
	var err error
	for _, m := range []struct {
		name string
		off  *int16
	}{{"ip", &o.ip}, {"sp", &o.sp}, {"bp", &o.bp}, {"orig_ax", &o.syscall}, {"di", &o.arg0}} {
		if *m.off, err = memberOffset(regs, m.name); err != nil {
			return regsOffsets{}
		}
	}
	o.ok = true
	return o
}

// kstackMaps are the maps of the kernel-stack program.
type kstackMaps struct {
	places, pending, zero *ebpf.Map
}

// newKstackMaps makes the maps of kstackOutInsns and kstackInInsns.
func newKstackMaps() (*kstackMaps, error) {
	var m kstackMaps
	var err error
	if m.places, err = ebpf.NewMap(&ebpf.MapSpec{Name: "nsprof_kplace", Type: ebpf.LRUHash, KeySize: 16, ValueSize: kstackValueSize, MaxEntries: kstackPlaces}); err != nil {
		return nil, fmt.Errorf("bpf: kernel stack map: %w", err)
	}
	if m.pending, err = ebpf.NewMap(&ebpf.MapSpec{Name: "nsprof_kpend", Type: ebpf.LRUHash, KeySize: 4, ValueSize: 8, MaxEntries: kstackThreads}); err != nil {
		m.close()
		return nil, fmt.Errorf("bpf: kernel stack map: %w", err)
	}
	if m.zero, err = ebpf.NewMap(&ebpf.MapSpec{Name: "nsprof_kzero", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: kstackValueSize, MaxEntries: 1}); err != nil {
		m.close()
		return nil, fmt.Errorf("bpf: kernel stack map: %w", err)
	}
	return &m, nil
}

func (m *kstackMaps) close() []error {
	var errs []error
	for _, mp := range []*ebpf.Map{m.places, m.pending, m.zero} {
		if mp != nil {
			errs = append(errs, mp.Close())
		}
	}
	return errs
}

// mix folds R1 into the hash in R8.
func mix() asm.Instructions {
	return asm.Instructions{
		asm.Mul.Imm(asm.R8, 0x01000193), // FNV's 32-bit prime
		asm.Xor.Reg(asm.R8, asm.R1),
		asm.Mov.Reg(asm.R1, asm.R8),
		asm.RSh.Imm(asm.R1, 29),
		asm.Xor.Reg(asm.R8, asm.R1),
	}
}

// kstackOutInsns is the switch-out part of the typed sched_switch program
// with Options.KernelStacks, R9 the previous task (the current one) and
// fp-64 the context; it ends at the label "in". For a task followed
// (targets 0: any but the idle task) it takes the place the task leaves
// at: a hash of its user registers (instruction pointer, stack and
// frame pointers, the system call and its first argument: no system
// call is -1), the word at its user stack pointer (a frameless system
// call wrapper's return address), whether it was preempted, and whether
// it left runnable (off.switchPrevState: the tracepoint says
// prev_state); a kernel thread has no user registers that say where it
// is, and a preempted task stopped wherever the kernel was: their kernel
// stacks are walked at every switch out. The map
// places holds a kernel stack per thread and place, with the place's
// hash (checked: an LRU map may recycle an entry another CPU holds); the
// kernel stack is walked (bpf_get_stack) into it when the place is new
// or its stack was reused KernelStackReuse-1 times, else reused.
// pending[tid] names the place for the switch in (kstackInInsns).
func kstackOutInsns(off taskOffsets, m *kstackMaps, targets int) asm.Instructions {
	r := off.regs
	insns := asm.Instructions{
		asm.LoadMem(asm.R1, asm.R9, off.pid, asm.Word),
		asm.JEq.Imm(asm.R1, 0, "in"), // the idle task
		asm.StoreMem(asm.RFP, -72, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.R9, off.tgid, asm.Word),
		asm.StoreMem(asm.RFP, -68, asm.R1, asm.Word),
	}
	if targets != 0 {
		insns = append(insns,
			asm.LoadMapPtr(asm.R1, targets),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -68),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "in"),
		)
	}
	insns = append(insns,
		// fp-112: a kernel thread, whose user registers say nothing of
		// where it is: its stack is walked at every switch out.
		asm.LoadMem(asm.R1, asm.R9, off.flags, asm.Word),
		asm.And.Imm(asm.R1, pfKthread),
		asm.StoreMem(asm.RFP, -112, asm.R1, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.FnTaskPtRegs.Call(),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.LoadMem(asm.R8, asm.R7, r.ip, asm.DWord),
		asm.LoadMem(asm.R1, asm.R7, r.sp, asm.DWord),
		asm.StoreMem(asm.RFP, -80, asm.R1, asm.DWord),
	)
	insns = append(insns, mix()...)
	for _, o := range []int16{r.bp, r.syscall, r.arg0} {
		insns = append(insns, asm.LoadMem(asm.R1, asm.R7, o, asm.DWord))
		insns = append(insns, mix()...)
	}
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.RFP, -64, asm.DWord),
		asm.LoadMem(asm.R1, asm.R2, 0, asm.DWord), // preempt
		asm.And.Imm(asm.R1, 0xff),
	)
	if off.switchPrevState {
		// A task leaving still runnable (prev_state TASK_RUNNING, 0)
		// did not block there: it was rescheduled at a preemption
		// point (on its way back to user space, at a cond_resched, in
		// sched_yield) with the same user registers as a sleep at that
		// place, and its stack, walked first, was lent to the sleeps
		// after it (pipefill's reader: 56 to 92 % of its time asleep
		// outside ksys_read; likely also why CI once saw a nanosleep
		// loop's every sleep without hrtimer_nanosleep). Runnable
		// switch outs are a place of their own (2 in the hash), their
		// stacks still reused: walked at each, pingpong had 38 % of
		// its stacks walked instead of 6 %.
		insns = append(insns,
			// prev_state, an unsigned int in the argument's 8 bytes:
			// loaded whole, as the verifier checks arguments, and
			// compared as 32 bits.
			asm.LoadMem(asm.R3, asm.R2, 24, asm.DWord),
			asm.JNE.Imm32(asm.R3, 0, "blocked"),
			asm.Or.Imm(asm.R1, 2),
			asm.Mov.Reg(asm.R1, asm.R1).WithSymbol("blocked"),
		)
	}
	insns = append(insns,
		// A preempted task stopped wherever the kernel was: walked at
		// every switch out too (fp-112).
		asm.LoadMem(asm.R3, asm.RFP, -112, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R1),
		asm.And.Imm(asm.R4, 1),
		asm.Or.Reg(asm.R3, asm.R4),
		asm.StoreMem(asm.RFP, -112, asm.R3, asm.Word),
	)
	insns = append(insns, mix()...)
	insns = append(insns,
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.RFP, -88, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, -88),
		asm.Mov.Imm(asm.R2, 8),
		asm.LoadMem(asm.R3, asm.RFP, -80, asm.DWord),
		asm.FnProbeReadUser.Call(),
		asm.LoadMem(asm.R1, asm.RFP, -88, asm.DWord),
	)
	insns = append(insns, mix()...)
	insns = append(insns,
		asm.Or.Imm(asm.R8, 1), // never 0: pending's "none"
		// fp-96: the key of places, {tid, 0, hash}.
		asm.LoadMem(asm.R1, asm.RFP, -72, asm.Word),
		asm.StoreMem(asm.RFP, -96, asm.R1, asm.Word),
		asm.StoreImm(asm.RFP, -92, 0, asm.Word),
		asm.StoreMem(asm.RFP, -88, asm.R8, asm.DWord),
		// pending[tid] = hash
		asm.LoadMapPtr(asm.R1, m.pending.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -72),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "newpend"),
		asm.StoreMem(asm.R0, 0, asm.R8, asm.DWord),
		asm.Ja.Label("place"),
		asm.StoreMem(asm.RFP, -104, asm.R8, asm.DWord).WithSymbol("newpend"),
		asm.LoadMapPtr(asm.R1, m.pending.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -72),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, -104),
		asm.Mov.Imm(asm.R4, 0), // BPF_ANY
		asm.FnMapUpdateElem.Call(),
		// The place's kernel stack.
		asm.LoadMapPtr(asm.R1, m.places.FD()).WithSymbol("place"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -96),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, "found"),
		// A new place: a zeroed value first.
		asm.StoreImm(asm.RFP, -108, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, m.zero.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -108),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "in"),
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.LoadMapPtr(asm.R1, m.places.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -96),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnMapUpdateElem.Call(),
		asm.LoadMapPtr(asm.R1, m.places.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -96),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "in"),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.Ja.Label("walk"),
		asm.Mov.Reg(asm.R7, asm.R0).WithSymbol("found"),
		asm.LoadMem(asm.R1, asm.RFP, -112, asm.Word),
		asm.JNE.Imm(asm.R1, 0, "walk"),
		asm.LoadMem(asm.R1, asm.R7, kstackHash, asm.DWord),
		asm.JNE.Reg(asm.R1, asm.R8, "walk"), // recycled
		asm.LoadMem(asm.R1, asm.R7, kstackLen, asm.Word),
		asm.JEq.Imm(asm.R1, 0, "walk"),
		asm.LoadMem(asm.R1, asm.R7, kstackReuses, asm.Word),
		asm.JGE.Imm(asm.R1, KernelStackReuse-1, "walk"),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R7, kstackReuses, asm.R1, asm.Word),
		asm.StoreImm(asm.R7, kstackFlags, kstackReused, asm.Word),
		asm.Ja.Label("in"),
		asm.StoreMem(asm.R7, kstackHash, asm.R8, asm.DWord).WithSymbol("walk"),
		asm.LoadMem(asm.R1, asm.RFP, -64, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, kstackHeader),
		asm.Mov.Imm(asm.R3, 8*kstackFrames),
		asm.Mov.Imm(asm.R4, int32(off.kstackSkip)),
		asm.FnGetStack.Call(),
		asm.JSGE.Imm(asm.R0, 0, "walked"),
		asm.Mov.Imm(asm.R0, 0),
		asm.StoreMem(asm.R7, kstackLen, asm.R0, asm.Word).WithSymbol("walked"),
		asm.StoreImm(asm.R7, kstackReuses, 0, asm.Word),
		asm.StoreImm(asm.R7, kstackFlags, 0, asm.Word),
	)
	return insns
}

// kstackInInsns writes the switch-in record of the thread R7 (tid), fp-4
// its tgid, with the kernel stack of the place its last switch out named
// in pending (kstackOutInsns), and goes to "exit", or to "drop" when the
// ring is full; with no place pending, or its entry gone or holding
// another place's stack (the map recycled it), it goes to "plain" (the
// short record).
func kstackInInsns(m *kstackMaps, rb int) asm.Instructions {
	return asm.Instructions{
		asm.StoreMem(asm.RFP, -72, asm.R7, asm.Word),
		asm.LoadMapPtr(asm.R1, m.pending.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -72),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "plain"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "plain"),
		asm.Mov.Imm(asm.R2, 0),
		asm.StoreMem(asm.R0, 0, asm.R2, asm.DWord), // taken
		asm.StoreMem(asm.RFP, -104, asm.R1, asm.DWord),
		asm.StoreMem(asm.RFP, -96, asm.R7, asm.Word),
		asm.StoreImm(asm.RFP, -92, 0, asm.Word),
		asm.StoreMem(asm.RFP, -88, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, m.places.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -96),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "plain"), // evicted
		asm.Mov.Reg(asm.R6, asm.R0),
		asm.LoadMem(asm.R1, asm.R6, kstackHash, asm.DWord),
		asm.LoadMem(asm.R2, asm.RFP, -104, asm.DWord),
		asm.JNE.Reg(asm.R1, asm.R2, "plain"),
		asm.StoreMem(asm.R6, 0, asm.R7, asm.Word),
		asm.LoadMem(asm.R1, asm.RFP, -4, asm.Word),
		asm.StoreMem(asm.R6, 4, asm.R1, asm.Word),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(asm.R6, 8, asm.R0, asm.DWord),
		asm.LoadMem(asm.R3, asm.R6, kstackLen, asm.Word),
		asm.JLE.Imm(asm.R3, 8*kstackFrames, "sized"),
		asm.Mov.Imm(asm.R3, 0),
		asm.Add.Imm(asm.R3, kstackHeader).WithSymbol("sized"),
		asm.LoadMapPtr(asm.R1, rb),
		asm.Mov.Reg(asm.R2, asm.R6),
		asm.Mov.Imm(asm.R4, rbNoWakeup),
		asm.FnRingbufOutput.Call(),
		asm.JEq.Imm(asm.R0, 0, "exit"),
		asm.Ja.Label("drop"),
	}
}

// kstackSkip is how many frames of the kernel stack bpf_get_stack gives
// the program skips: its own and bpf_trace_run4's. The stack then begins
// where perf's sched:sched_switch stacks do: at __traceiter_sched_switch
// when more than one probe is on the tracepoint (perf's events too, as
// when nsprof records), else at __schedule.
const kstackSkip = 2

// kstacksHeld bounds the kernel stacks SwitchIns keeps by thread and
// place; past it they are forgotten and decoded anew.
const kstacksHeld = 1 << 14

// kstackKey identifies a thread's place, the key of SwitchIns.kstacks.
type kstackKey struct {
	tid  int32
	hash uint64
}

// kstackRecord decodes a switch-in record with a kernel stack. The
// stack is the one decoded before for the thread's place when the
// frames are the same (a reused stack always is): records share it.
func (s *SwitchIns) kstackRecord(raw []byte) SwitchIn {
	in := SwitchIn{
		TID:          int32(binary.NativeEndian.Uint32(raw)),
		PID:          int32(binary.NativeEndian.Uint32(raw[4:])),
		Time:         int64(binary.NativeEndian.Uint64(raw[8:])),
		KernelReused: binary.NativeEndian.Uint32(raw[kstackFlags:])&kstackReused != 0,
	}
	key := kstackKey{in.TID, binary.NativeEndian.Uint64(raw[kstackHash:])}
	n := int(binary.NativeEndian.Uint32(raw[kstackLen:]))
	frames := raw[kstackHeader:]
	if n > len(frames) {
		n = len(frames)
	}
	frames = frames[:n&^7]
	if st, ok := s.kstacks[key]; ok && sameFrames(st, frames) {
		in.Kernel = st
		return in
	}
	if len(s.kstacks) >= kstacksHeld {
		clear(s.kstacks)
	}
	st := make([]uint64, len(frames)/8)
	for i := range st {
		st[i] = binary.NativeEndian.Uint64(frames[8*i:])
	}
	s.kstacks[key] = st
	in.Kernel = st
	return in
}

// sameFrames says whether raw encodes the frames st.
func sameFrames(st []uint64, raw []byte) bool {
	if len(raw) != 8*len(st) {
		return false
	}
	for i, a := range st {
		if binary.NativeEndian.Uint64(raw[8*i:]) != a {
			return false
		}
	}
	return true
}

// PendingKernel returns the kernel stack of the last switch out of thread
// tid when the thread has not come back onto a CPU since (its switch-in
// record, which would carry the stack, is not written yet): for a thread
// still off the CPU when a recording ends or is cut. ok is false when the
// program has none (Options.KernelStacks off, the thread's place evicted,
// or the thread back on a CPU).
func (s *SwitchIns) PendingKernel(tid int32) (stack []uint64, reused, ok bool) {
	if s.closed || s.ks == nil {
		return nil, false, false
	}
	var hash uint64
	if err := s.ks.pending.Lookup(uint32(tid), &hash); err != nil || hash == 0 {
		return nil, false, false
	}
	key := make([]byte, 16)
	binary.NativeEndian.PutUint32(key, uint32(tid))
	binary.NativeEndian.PutUint64(key[8:], hash)
	val := make([]byte, kstackValueSize)
	if err := s.ks.places.Lookup(key, &val); err != nil || binary.NativeEndian.Uint64(val[kstackHash:]) != hash {
		return nil, false, false
	}
	binary.NativeEndian.PutUint32(val, uint32(tid))
	in := s.kstackRecord(val)
	return in.Kernel, in.KernelReused, true
}
