package record

import "nsprof/capture"

// stackFile gathers the stacks that are not CPU samples (off-CPU
// intervals, blocking calls) as records of capture.StacksFile, written
// a chunk of whole records at a time: Sysprof counts every SAMPLE frame
// as CPU time.
type stackFile struct {
	buf []byte // records not written yet
	n   uint64 // records written
}

// addStack adds one stack: what a SAMPLE frame at time t of thread tid
// would hold.
func (r *recorder) addStack(t int64, cpu int16, pid, tid int32, addrs []uint64) {
	if r.writeErr != nil {
		return
	}
	sf := &r.stackFile
	if len(addrs) > capture.MaxStackRecordAddrs {
		addrs = addrs[:capture.MaxStackRecordAddrs]
	}
	if len(sf.buf)+capture.StackRecordSize(len(addrs)) > capture.StacksFileChunkData {
		r.flushStacks(false)
	}
	sf.buf = capture.AppendStack(sf.buf, capture.StackRecord{Time: t, PID: pid, TID: tid, CPU: cpu, Addrs: addrs})
	sf.n++
}

// flushStacks writes the records held as a chunk of capture.StacksFile,
// the last one when last is set.
func (r *recorder) flushStacks(last bool) {
	sf := &r.stackFile
	if r.writeErr != nil || (len(sf.buf) == 0 && !last) {
		return
	}
	h := capture.FrameHeader{CPU: -1, PID: -1, Time: r.now()}
	if err := r.w.AddFileChunk(h, capture.StacksFile, sf.buf, last); err != nil {
		r.writeErr = err
	}
	sf.buf = sf.buf[:0]
}
