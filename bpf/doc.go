// Package bpf reports the context switches that bring a thread back onto
// a CPU (its switch-ins), from a BPF program on the sched_switch raw
// tracepoint, for the off-CPU profile of nsprof record.
//
// The off-CPU profile pairs each switch out of a thread (a perf sample of
// the sched:sched_switch tracepoint, with its stack) with the thread's
// next switch in. perf can give the switch-ins only as SWITCH records
// (perf_event_attr.context_switch), which the kernel writes at every
// switch out and in of every followed task: a record each way, most of
// the off-CPU cost of a switch-heavy program. The program here writes one
// small record per switch in of a followed task and nothing else, and with
// Options.SkipSameProcess none for a switch from a thread of the same
// process, which that thread's sched_switch sample tells (next_pid):
// SwitchIns loads it, attaches it and reads its records.
//
// The program is written with cilium/ebpf's asm package (no compiler is
// needed) and reads the next task's pid and tgid at the offsets that the
// running kernel's BTF gives for struct task_struct (and, to skip, the
// previous task's tgid and perf event context): BTF-typed (tp_btf), with
// plain loads of those fields, where the kernel can attach it so; else as
// a raw tracepoint program that reads them with bpf_probe_read_kernel.
// Its times come from bpf_ktime_get_ns, CLOCK_MONOTONIC, the clock of
// nsprof's perf events.
//
// With Options.KernelStacks the sched_switch program also takes the
// kernel stack of each followed thread leaving a CPU (bpf_get_stack), for
// a caller whose perf events take the user stacks only, and writes it
// with the thread's next switch-in. The kernel's walk of a kernel stack
// (about 1 µs on a 2-CPU VM, ORC) is most of what a switch-heavy program
// pays for an off-CPU profile, so the program walks it once in
// KernelStackReuse switch outs of a thread at one place: a hash of the
// thread's user registers (instruction, stack and frame pointers,
// system call and first argument), the word at its user stack pointer,
// whether it was preempted, and whether it left runnable (rescheduled,
// not blocked). A kernel thread's stack, and a preempted thread's
// (stopped wherever the kernel was), are walked at every switch out.
// The records say which stacks were reused (SwitchIn.KernelReused).
//
// A program on sched_process_fork follows the children of the followed
// processes and, with Options.Clones, writes a Clone record for each task
// created in a PID namespace other than the initial one, with the id its
// creator knows it by: nsprof then needs no clone system call
// tracepoints to map namespaced thread ids to host ids.
//
// When loading fails (no BTF, not permitted, the verifier refuses),
// Open returns an error and the caller keeps the perf path.
package bpf
