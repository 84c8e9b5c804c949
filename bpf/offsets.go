package bpf

import (
	"fmt"

	"github.com/cilium/ebpf/btf"
)

// taskOffsets are the byte offsets of struct task_struct's members that
// the programs read, from the running kernel's BTF.
type taskOffsets struct {
	pid, tgid int16
	// perfCtx is the offset of the task's perf event context of
	// software events, tracepoints among them (perf_event_ctxp, an
	// array by kind before Linux 6.2), which perf_event_exit_task
	// clears when the task exits; -1 when the BTF does not say.
	perfCtx int16
	// exitGroupDead says the sched_process_exit tracepoint has the
	// group_dead argument (Linux 6.16 and later), which the exit
	// program needs.
	exitGroupDead bool
	// switchPrevState says the sched_switch tracepoint has the
	// prev_state argument (Linux 5.18 and later), which tells the
	// kernel-stack program a task left runnable.
	switchPrevState bool
	// ids are the offsets the fork program reads a new task's id in
	// its creator's PID namespace with; ids.ok is false when the BTF
	// does not give them all.
	ids pidOffsets
	// regs are the offsets of struct pt_regs that the kernel-stack
	// program hashes (Options.KernelStacks); kstackSkip is how many
	// frames of the kernel stack it skips (those of the BPF program's
	// own call chain).
	regs       regsOffsets
	kstackSkip int
	// flags is the offset of task_struct.flags (PF_KTHREAD), -1 when
	// the BTF does not say.
	flags int16
}

// pidOffsets locate a task's id at a level of its PID namespaces:
// task_struct.thread_pid, a struct pid whose level is its deepest
// level, and its numbers[level+1], struct upid of size upidSize whose
// member nr is the id.
type pidOffsets struct {
	threadPID, level, numbers, nr int16
	upidSize                      int32
	ok                            bool
}

// kernelOffsets looks the offsets up in the kernel's BTF.
func kernelOffsets() (taskOffsets, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return taskOffsets{}, fmt.Errorf("kernel BTF: %w", err)
	}
	var task *btf.Struct
	if err := spec.TypeByName("task_struct", &task); err != nil {
		return taskOffsets{}, fmt.Errorf("kernel BTF: struct task_struct: %w", err)
	}
	var o taskOffsets
	if o.pid, err = memberOffset(task, "pid"); err != nil {
		return taskOffsets{}, err
	}
	if o.tgid, err = memberOffset(task, "tgid"); err != nil {
		return taskOffsets{}, err
	}
	o.exitGroupDead = tracepointArgs(spec, "sched_process_exit") == 2
	o.switchPrevState = tracepointArgs(spec, "sched_switch") >= 4
	o.perfCtx = perfContextOffset(task)
	o.ids = idOffsets(spec, task)
	o.regs = regsOffsetsOf(spec)
	if o.flags, err = memberOffset(task, "flags"); err != nil {
		o.flags = -1
	}
	return o, nil
}

// idOffsets looks up the pidOffsets in the kernel's BTF.
func idOffsets(spec *btf.Spec, task *btf.Struct) pidOffsets {
	var pid, upid *btf.Struct
	if spec.TypeByName("pid", &pid) != nil || spec.TypeByName("upid", &upid) != nil {
		return pidOffsets{}
	}
	var o pidOffsets
	var err error
	for _, m := range []struct {
		s    *btf.Struct
		name string
		off  *int16
	}{{task, "thread_pid", &o.threadPID}, {pid, "level", &o.level}, {pid, "numbers", &o.numbers}, {upid, "nr", &o.nr}} {
		if *m.off, err = memberOffset(m.s, m.name); err != nil {
			return pidOffsets{}
		}
	}
	o.upidSize = int32(upid.Size)
	o.ok = o.upidSize > 0 && o.upidSize < 1<<10
	return o
}

// perfContextOffset returns the offset in task of the pointer to its
// perf event context of software events: perf_event_ctxp, or its
// element perf_sw_context (1) where it is an array; -1 if there is none.
func perfContextOffset(task *btf.Struct) int16 {
	off, typ, ok := findMember(task, "perf_event_ctxp", 0)
	if !ok || off%8 != 0 {
		return -1
	}
	switch t := btf.UnderlyingType(typ).(type) {
	case *btf.Pointer:
	case *btf.Array:
		const swContext = 1
		if t.Nelems <= swContext {
			return -1
		}
		off += swContext * 64
	default:
		return -1
	}
	if off/8 > 1<<15-1 {
		return -1
	}
	return int16(off / 8)
}

// memberOffset returns the byte offset of s's member name, looking into
// anonymous structs and unions too.
func memberOffset(s *btf.Struct, name string) (int16, error) {
	off, _, ok := findMember(s, name, 0)
	if !ok {
		return 0, fmt.Errorf("kernel BTF: struct task_struct has no member %s", name)
	}
	if off%8 != 0 || off/8 > 1<<15-1 {
		return 0, fmt.Errorf("kernel BTF: task_struct.%s at bit %d: not a byte offset a program can use", name, off)
	}
	return int16(off / 8), nil
}

// findMember returns the bit offset of s's member name from base, and
// its type.
func findMember(s btf.Type, name string, base btf.Bits) (btf.Bits, btf.Type, bool) {
	var members []btf.Member
	switch s := s.(type) {
	case *btf.Struct:
		members = s.Members
	case *btf.Union:
		members = s.Members
	}
	for _, m := range members {
		if m.Name == name {
			return base + m.Offset, m.Type, true
		}
		if m.Name != "" {
			continue
		}
		if off, typ, ok := findMember(btf.UnderlyingType(m.Type), name, base+m.Offset); ok {
			return off, typ, true
		}
	}
	return 0, nil, false
}

// tracepointArgs returns how many arguments the raw tracepoint tp passes
// its programs (its btf_trace_ typedef's parameters less the context),
// or -1 when the BTF does not say.
func tracepointArgs(spec *btf.Spec, tp string) int {
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_"+tp, &td); err != nil {
		return -1
	}
	ptr, ok := td.Type.(*btf.Pointer)
	if !ok {
		return -1
	}
	fn, ok := ptr.Target.(*btf.FuncProto)
	if !ok || len(fn.Params) == 0 {
		return -1
	}
	return len(fn.Params) - 1
}
