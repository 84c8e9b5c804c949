package analyze

import "runtime"

// stackPipe adds the frames of new stacks on a goroutine of its own while
// the goroutine reading the capture decodes its frames and finds each
// sample's stack: interning was two-thirds of the reading of a large
// capture, and the other CPU idle once the bundle was decoded. The reader
// keeps the table of stacks and numbers the new ones (see
// [builder.stack]), so samples get their ids as they are read; the pipe
// adds their frames by the same [builder.newStack], in the order they
// were numbered, so the stacks and frames get the same ids as without the
// pipe. Before, the pipe interned every sample's stack: the reader then
// waited for it.
//
// While the pipe runs, the builder's frame and stack-frame tables belong
// to its goroutine; [builder.stopPipe] waits for it.
type stackPipe struct {
	cur  *stackBatch
	work chan *stackBatch
	free chan *stackBatch
	done chan struct{}
}

// stackBatch is a run of queued stacks.
type stackBatch struct {
	addrs []uint64
	items []stackItem
}

// stackItem is one stack of a batch: its process, whether its addresses
// are all return addresses, and its addresses' end in the batch's addrs.
type stackItem struct {
	pid int32
	ret bool
	end int32
}

// Batches of this many stacks; pipeBatches of them at most queued or
// being added.
const (
	pipeBatch   = 1024
	pipeBatches = 4
)

// minPipeSamples is the fewest samples for which the frames of a
// capture's stacks are added on a goroutine of their own: for fewer,
// starting it would cost more than it saves.
var minPipeSamples = 1 << 15

// startPipe starts adding the frames of b's new stacks on a goroutine of
// its own, when a capture of n samples is worth it and there is a CPU for
// it.
func (b *builder) startPipe(n int) {
	if n < minPipeSamples || runtime.GOMAXPROCS(0) < 2 {
		return
	}
	sp := &stackPipe{
		work: make(chan *stackBatch, pipeBatches),
		free: make(chan *stackBatch, pipeBatches+1),
		done: make(chan struct{}),
	}
	for range pipeBatches + 1 {
		sp.free <- &stackBatch{items: make([]stackItem, 0, pipeBatch)}
	}
	sp.cur = <-sp.free
	go func() {
		defer close(sp.done)
		for bt := range sp.work {
			start := int32(0)
			for _, it := range bt.items {
				b.newStack(it.pid, bt.addrs[start:it.end], it.ret)
				start = it.end
			}
			bt.addrs, bt.items = bt.addrs[:0], bt.items[:0]
			sp.free <- bt
		}
	}()
	b.pipe = sp
}

// push queues a new stack of pid's addrs, as [builder.newStack] takes it.
func (sp *stackPipe) push(pid int32, addrs []uint64, ret bool) {
	bt := sp.cur
	bt.addrs = append(bt.addrs, addrs...)
	bt.items = append(bt.items, stackItem{pid: pid, ret: ret, end: int32(len(bt.addrs))})
	if len(bt.items) == pipeBatch {
		sp.work <- bt
		sp.cur = <-sp.free
	}
}

// stopPipe adds the stacks queued to b's pipe, if it runs, and waits for
// its goroutine: the builder's tables are the caller's again.
func (b *builder) stopPipe() {
	sp := b.pipe
	if sp == nil {
		return
	}
	b.pipe = nil
	if len(sp.cur.items) > 0 {
		sp.work <- sp.cur
	}
	sp.cur = nil
	close(sp.work)
	<-sp.done
}
