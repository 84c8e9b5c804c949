package bpf

import (
	"fmt"

	"github.com/cilium/ebpf/btf"
)

// taskOffsets are the byte offsets of struct task_struct's members that
// the programs read, from the running kernel's BTF.
type taskOffsets struct {
	pid, tgid int16
	// exitGroupDead says the sched_process_exit tracepoint has the
	// group_dead argument (Linux 6.16 and later), which the exit
	// program needs.
	exitGroupDead bool
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
	return o, nil
}

// memberOffset returns the byte offset of s's member name, looking into
// anonymous structs and unions too.
func memberOffset(s *btf.Struct, name string) (int16, error) {
	off, ok := findMember(s, name, 0)
	if !ok {
		return 0, fmt.Errorf("kernel BTF: struct task_struct has no member %s", name)
	}
	if off%8 != 0 || off/8 > 1<<15-1 {
		return 0, fmt.Errorf("kernel BTF: task_struct.%s at bit %d: not a byte offset a program can use", name, off)
	}
	return int16(off / 8), nil
}

func findMember(s btf.Type, name string, base btf.Bits) (btf.Bits, bool) {
	var members []btf.Member
	switch s := s.(type) {
	case *btf.Struct:
		members = s.Members
	case *btf.Union:
		members = s.Members
	}
	for _, m := range members {
		if m.Name == name {
			return base + m.Offset, true
		}
		if m.Name != "" {
			continue
		}
		if off, ok := findMember(btf.UnderlyingType(m.Type), name, base+m.Offset); ok {
			return off, true
		}
	}
	return 0, false
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
