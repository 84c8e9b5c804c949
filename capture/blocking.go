package capture

import "strings"

// Blocking system calls (nsprof record --blocking) are stored so that
// Sysprof shows them without counting them as CPU time: each call that
// took longer than the threshold is a MARK frame of group
// [BlockingGroup] named after the system call, at the time the thread
// entered it, with its duration and a message naming the file
// descriptor's path where the call has one; and a record of the embedded
// file [StacksFile] of the same process and time holds the thread's user
// stack at entry behind a leaf frame naming the call (a JIT address,
// [BlockingMarker]: "[syscall: read]"). Sysprof shows the marks; nsprof
// weighs the stack by the mark's duration. Captures of earlier nsprof
// versions hold the stacks as SAMPLE frames; nsprof reads those the same
// way.

// BlockingGroup is the group of the marks of blocking system calls.
const BlockingGroup = "syscall"

// Metadata of a recording with blocking calls: MetaBlocking is the
// threshold in nanoseconds; the other keys count the calls written and
// what could not be (see the recorder's summary).
const (
	MetaBlocking         = "nsprof.blocking"
	MetaBlockingCalls    = "nsprof.blocking.calls"
	MetaBlockingUnpaired = "nsprof.blocking.unpaired"
	MetaBlockingOpen     = "nsprof.blocking.open"
)

// blockingMarkerPrefix starts the name of every blocking call's marker
// frame.
const blockingMarkerPrefix = "[syscall: "

// BlockingMarker returns the name of the leaf frame of the samples of
// blocking calls of system call name.
func BlockingMarker(name string) string { return blockingMarkerPrefix + name + "]" }

// BlockingMarkerCall returns the system call a [BlockingMarker] names,
// and whether name is one.
func BlockingMarkerCall(name string) (string, bool) {
	s, ok := strings.CutPrefix(name, blockingMarkerPrefix)
	if !ok || !strings.HasSuffix(s, "]") {
		return "", false
	}
	return s[:len(s)-1], true
}
