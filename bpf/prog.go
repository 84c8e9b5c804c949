package bpf

import (
	"github.com/cilium/ebpf/asm"
)

// recordSize is the size of a switch-in record in the ring buffer: the
// thread id and process id (u32 each) and the time (u64, ns of
// CLOCK_MONOTONIC), in host byte order.
const recordSize = 16

// rbNoWakeup is BPF_RB_NO_WAKEUP: the reader drains the ring when it
// reads its perf rings, so no record needs to wake it.
const rbNoWakeup = 1

// switchInInsns returns the program of the sched_switch raw tracepoint
// (arguments: preempt, prev, next): it writes {next->pid, next->tgid,
// time} to the ring buffer rb when next is not the idle task and, when
// targets is not 0, when next's tgid is a key of that map; with
// skipSameProcess, not when prev is a thread of next's process that has
// its perf events still (it is not exiting), and with them the
// sched:sched_switch event whose sample tells this switch. A record
// that finds the ring full is counted in the per-CPU array drops.
func switchInInsns(off taskOffsets, rb, targets, drops int, skipSameProcess bool) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R9, asm.R1, 8, asm.DWord),  // prev
		asm.LoadMem(asm.R6, asm.R1, 16, asm.DWord), // next
		// fp-8: next->pid, fp-4: next->tgid
	}
	if off.tgid == off.pid+4 {
		insns = append(insns, readKernel(asm.R6, off.pid, -8, 8)...) // both at once
	} else {
		insns = append(insns, readKernel(asm.R6, off.pid, -8, 4)...)
		insns = append(insns, readKernel(asm.R6, off.tgid, -4, 4)...)
	}
	insns = append(insns,
		asm.LoadMem(asm.R7, asm.RFP, -8, asm.Word),
		asm.JEq.Imm(asm.R7, 0, "exit"), // the idle task
	)
	if skipSameProcess && off.perfCtx >= 0 {
		// Before the map: a thread of next's process leaving (prev
		// is the current task here) says it, followed or not.
		insns = append(insns,
			asm.FnGetCurrentPidTgid.Call(),
			asm.RSh.Imm(asm.R0, 32), // prev->tgid, never 0 for a task not idle
			asm.LoadMem(asm.R1, asm.RFP, -4, asm.Word),
			asm.JNE.Reg(asm.R0, asm.R1, "next"),
		)
		// fp-16: prev's perf context, which an exiting task has lost
		// before its last switch out: no perf event sees that
		// switch, the program does.
		insns = append(insns, readKernel(asm.R9, off.perfCtx, -16, 8)...)
		insns = append(insns,
			asm.LoadMem(asm.R1, asm.RFP, -16, asm.DWord),
			asm.JNE.Imm(asm.R1, 0, "exit"),
		)
	}
	return append(insns, switchInTail(rb, targets, drops, nil)...)
}

// switchInBTFInsns returns the program of switchInInsns for a BTF-typed
// raw tracepoint (tp_btf): its arguments are typed task pointers whose
// fields it loads directly, where switchInInsns calls
// bpf_probe_read_kernel and bpf_get_current_pid_tgid. Those calls were
// most of its run at each switch (about 25 of 55 ns with the kernel's
// BPF statistics on a 2-CPU VM, the statistics taking the other 30).
//
// With ks (Options.KernelStacks), the program first takes the kernel
// stack of prev when it is followed (kstackOutInsns), and a switch in of
// a thread whose switch out it took writes that stack with the record
// (kstackInInsns): skipSameProcess is then ignored.
func switchInBTFInsns(off taskOffsets, rb, targets, drops int, skipSameProcess bool, ks *kstackMaps) asm.Instructions {
	insns := asm.Instructions{
		asm.StoreMem(asm.RFP, -64, asm.R1, asm.DWord),
		asm.LoadMem(asm.R9, asm.R1, 8, asm.DWord), // prev
	}
	if ks != nil {
		insns = append(insns, kstackOutInsns(off, ks, targets)...)
		skipSameProcess = false
	}
	in := asm.LoadMem(asm.R1, asm.RFP, -64, asm.DWord)
	if ks != nil {
		in = in.WithSymbol("in")
	}
	insns = append(insns,
		in,
		asm.LoadMem(asm.R6, asm.R1, 16, asm.DWord), // next
		asm.LoadMem(asm.R7, asm.R6, off.pid, asm.Word),
		asm.JEq.Imm(asm.R7, 0, "exit"), // the idle task
		// fp-4: next->tgid, the key of targets and the record's.
		asm.LoadMem(asm.R1, asm.R6, off.tgid, asm.Word),
		asm.StoreMem(asm.RFP, -4, asm.R1, asm.Word),
	)
	if skipSameProcess && off.perfCtx >= 0 {
		// As in switchInInsns: prev of next's process, with its perf
		// context (not exiting), tells this switch in its sample.
		insns = append(insns,
			asm.LoadMem(asm.R2, asm.R9, off.tgid, asm.Word),
			asm.JNE.Reg(asm.R2, asm.R1, "next"),
			asm.LoadMem(asm.R2, asm.R9, off.perfCtx, asm.DWord),
			asm.JNE.Imm(asm.R2, 0, "exit"),
		)
	}
	return append(insns, switchInTail(rb, targets, drops, ks)...)
}

// switchInTail is the end of the switch-in programs, from the label
// "next", with R7 next's pid and fp-4 its tgid: the check of the map
// targets (when not 0), the record written to the ring buffer rb, or
// counted in drops when it is full, and the label "exit". With ks, the
// record carries the thread's kernel stack when its switch out took one
// (kstackInInsns).
func switchInTail(rb, targets, drops int, ks *kstackMaps) asm.Instructions {
	var insns asm.Instructions
	if targets != 0 {
		insns = append(insns,
			asm.LoadMapPtr(asm.R1, targets),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "exit"),
		)
	}
	plain := reserveRecord(rb, recordSize, "drop")
	if ks != nil {
		insns = append(insns, kstackInInsns(ks, rb)...)
		plain[0] = plain[0].WithSymbol("plain")
	}
	insns = append(insns, plain...)
	insns = append(insns,
		asm.StoreMem(asm.R0, 0, asm.R7, asm.Word),
		asm.LoadMem(asm.R1, asm.RFP, -4, asm.Word),
		asm.StoreMem(asm.R0, 4, asm.R1, asm.Word),
		asm.StoreMem(asm.R0, 8, asm.R8, asm.DWord),
	)
	insns = append(insns, submitRecord()...)
	// The ring is full: count the record lost.
	insns = append(insns, countDrop(drops, "drop")...)
	insns = append(insns,
		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	)
	insns[0] = insns[0].WithSymbol("next")
	return insns
}

// cloneRecordSize is the size of a clone record in the ring buffer: the
// creating thread's id and process id, the new task's id, its id in the
// creator's PID namespace (u32 each) and the time (u64), in host byte
// order. Switch-in records are recordSize: the size tells them apart.
const cloneRecordSize = 24

// forkInsns returns the program of the sched_process_fork raw tracepoint
// (arguments: parent, child). When targets is not 0 it is for the
// children of followed processes only: when the parent's tgid is a key
// of the map targets, it adds the child's tgid, so the children of a
// followed process are followed from their first switch in (a new
// thread has its parent's tgid: adding it again is harmless). With
// ids.ok it then writes a clone record (cloneRecordSize) to the ring
// buffer rb when the parent is in a PID namespace other than the
// initial one (where the id it knows the child by is the host's): the
// child's id at the parent's level, which clone returns in the parent.
// A record that finds the ring full is counted in drops.
func forkInsns(off taskOffsets, targets, rb, drops int) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R6, asm.R1, 0, asm.DWord), // parent
		asm.LoadMem(asm.R7, asm.R1, 8, asm.DWord), // child
	}
	if targets != 0 {
		insns = append(insns, readU32(asm.R6, off.tgid, -4)...)
		insns = append(insns,
			asm.LoadMapPtr(asm.R1, targets),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "exit"),
		)
		insns = append(insns, readU32(asm.R7, off.tgid, -8)...)
		insns = append(insns,
			asm.StoreImm(asm.RFP, -12, 1, asm.Word), // the value
			asm.LoadMapPtr(asm.R1, targets),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -8),
			asm.Mov.Reg(asm.R3, asm.RFP),
			asm.Add.Imm(asm.R3, -12),
			asm.Mov.Imm(asm.R4, 0), // BPF_ANY
			asm.FnMapUpdateElem.Call(),
		)
	}
	if off.ids.ok {
		insns = append(insns, cloneInsns(off, rb, drops)...)
	}
	return append(insns,
		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	)
}

// cloneInsns writes the clone record of forkInsns, R6 the parent, R7 the
// child; it jumps to "exit" when there is none to write.
func cloneInsns(off taskOffsets, rb, drops int) asm.Instructions {
	ids := off.ids
	// fp-24: the parent's struct pid, fp-28: its level.
	insns := readKernel(asm.R6, ids.threadPID, -24, 8)
	insns = append(insns,
		asm.LoadMem(asm.R8, asm.RFP, -24, asm.DWord),
		asm.JEq.Imm(asm.R8, 0, "exit"),
	)
	insns = append(insns, readKernel(asm.R8, ids.level, -28, 4)...)
	insns = append(insns,
		asm.LoadMem(asm.R9, asm.RFP, -28, asm.Word),
		asm.JEq.Imm(asm.R9, 0, "exit"), // the initial namespace
	)
	// fp-32: the child's struct pid, then fp-36: its id at that level,
	// numbers[level].nr.
	insns = append(insns, readKernel(asm.R7, ids.threadPID, -32, 8)...)
	insns = append(insns,
		asm.LoadMem(asm.R8, asm.RFP, -32, asm.DWord),
		asm.JEq.Imm(asm.R8, 0, "exit"),
		asm.Mul.Imm(asm.R9, ids.upidSize),
		asm.Add.Reg(asm.R8, asm.R9),
	)
	insns = append(insns, readKernel(asm.R8, ids.numbers+ids.nr, -36, 4)...)
	// fp-40: the child's id, fp-44: the parent's (a thread), fp-48:
	// its tgid.
	insns = append(insns, readU32(asm.R7, off.pid, -40)...)
	insns = append(insns, readU32(asm.R6, off.pid, -44)...)
	insns = append(insns, readU32(asm.R6, off.tgid, -48)...)
	insns = append(insns, reserveRecord(rb, cloneRecordSize, "clonedrop")...)
	for i, slot := range []int16{-44, -48, -40, -36} {
		insns = append(insns,
			asm.LoadMem(asm.R1, asm.RFP, slot, asm.Word),
			asm.StoreMem(asm.R0, int16(4*i), asm.R1, asm.Word),
		)
	}
	insns = append(insns, asm.StoreMem(asm.R0, 16, asm.R8, asm.DWord))
	insns = append(insns, submitRecord()...)
	return append(insns, countDrop(drops, "clonedrop")...)
}

// reserveRecord takes the time into R8 and reserves a record of size
// bytes in the ring buffer rb, in R0; it goes to the label drop when the
// ring is full.
func reserveRecord(rb int, size int32, drop string) asm.Instructions {
	return asm.Instructions{
		asm.FnKtimeGetNs.Call(),
		asm.Mov.Reg(asm.R8, asm.R0),
		asm.LoadMapPtr(asm.R1, rb),
		asm.Mov.Imm(asm.R2, size),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, drop),
	}
}

// submitRecord submits the record reserveRecord reserved, in R0, without
// waking the reader (which drains the ring when it reads its perf rings),
// and goes to "exit".
func submitRecord() asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.Mov.Imm(asm.R2, rbNoWakeup),
		asm.FnRingbufSubmit.Call(),
		asm.Ja.Label("exit"),
	}
}

// countDrop adds one to the per-CPU counter of the array drops, from the
// label sym, then goes to "exit".
func countDrop(drops int, sym string) asm.Instructions {
	return asm.Instructions{
		asm.StoreImm(asm.RFP, -52, 0, asm.Word).WithSymbol(sym),
		asm.LoadMapPtr(asm.R1, drops),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -52),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "exit"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord), // per CPU: no race
		asm.Ja.Label("exit"),
	}
}

// exitInsns returns the program of the sched_process_exit raw tracepoint
// (arguments: task, group_dead): when the last thread of a process exits
// it deletes the process's tgid from targets.
func exitInsns(off taskOffsets, targets int) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R6, asm.R1, 0, asm.DWord), // task
		asm.LoadMem(asm.R7, asm.R1, 8, asm.DWord), // group_dead
		asm.And.Imm(asm.R7, 0xff),
		asm.JEq.Imm(asm.R7, 0, "exit"),
	}
	insns = append(insns, readU32(asm.R6, off.tgid, -4)...)
	insns = append(insns,
		asm.LoadMapPtr(asm.R1, targets),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapDeleteElem.Call(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	)
	return insns
}

// readKernel reads the size bytes (4 or 8) at task+off into the stack
// at fp+slot with bpf_probe_read_kernel (a slot it zeroes first, so a
// failed read leaves 0 there).
func readKernel(task asm.Register, off int16, slot int16, size int32) asm.Instructions {
	zero := asm.Instructions{asm.StoreImm(asm.RFP, slot, 0, asm.Word)}
	if size == 8 {
		zero = asm.Instructions{asm.Mov.Imm(asm.R1, 0), asm.StoreMem(asm.RFP, slot, asm.R1, asm.DWord)}
	}
	return append(zero,
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, int32(slot)),
		asm.Mov.Imm(asm.R2, size),
		asm.Mov.Reg(asm.R3, task),
		asm.Add.Imm(asm.R3, int32(off)),
		asm.FnProbeReadKernel.Call(),
	)
}

// readU32 reads the u32 at task+off into the stack at fp+slot (see
// readKernel).
func readU32(task asm.Register, off int16, slot int16) asm.Instructions {
	return readKernel(task, off, slot, 4)
}
