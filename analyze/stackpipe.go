package analyze

import (
	"bytes"
	"runtime"
	"slices"
)

// stackPipe interns the stacks of the samples on a goroutine of its own
// while the goroutine reading the capture decodes its frames: interning
// was two-thirds of the reading of a large capture, and the other CPU
// idle once the bundle was decoded. The stacks are interned in the order
// the samples were read, by the same [builder.stack], so they get the
// same ids as without the pipe.
//
// While the pipe runs, the builder's stack tables belong to its
// goroutine: the reader only queues stacks ([stackPipe.push]) and appends
// samples with [pendingStack] in place of their ids; [builder.stopPipe]
// waits for the goroutine and gives the samples their ids.
type stackPipe struct {
	cur  *stackBatch
	work chan *stackBatch
	free chan *stackBatch
	done chan struct{}
	// ids are the ids of the stacks queued, in order; the goroutine's
	// until done is closed.
	ids []StackID
	// b is the builder whose tables the goroutine interns into; key and
	// last are the reader's: the key of the stack being queued and that
	// of the one queued before (valid when hasLast).
	b         *builder
	key, last []byte
	hasLast   bool
}

// pendingStack is the stack of a sample whose stack is queued.
const pendingStack StackID = -3

// stackBatch is a run of queued stacks.
type stackBatch struct {
	addrs []uint64
	items []stackItem
}

// stackItem is one stack of a batch: its process, whether its addresses
// are all return addresses, its addresses' end in the batch's addrs, and
// its key's hash, or same when its key is that of the stack before it
// (see [builder.internStack]).
type stackItem struct {
	h    stackKey
	pid  int32
	end  int32
	ret  bool
	same bool
}

// Batches of this many stacks; pipeBatches of them at most queued or
// being interned.
const (
	pipeBatch   = 1024
	pipeBatches = 4
)

// minPipeSamples is the fewest samples for which a capture's stacks are
// interned on a goroutine of their own: for fewer, starting it would
// cost more than it saves.
var minPipeSamples = 1 << 15

// startPipe starts interning the stacks of b on a goroutine of its own,
// when a capture of n samples is worth it and there is a CPU for it.
func (b *builder) startPipe(n int) {
	if n < minPipeSamples || runtime.GOMAXPROCS(0) < 2 {
		return
	}
	sp := &stackPipe{
		work: make(chan *stackBatch, pipeBatches),
		free: make(chan *stackBatch, pipeBatches+1),
		done: make(chan struct{}),
		ids:  make([]StackID, 0, n),
		b:    b,
		// The stacks interned so far by the reader: the first queued
		// may be the last of those.
		last:    slices.Clone(b.lastKey),
		hasLast: b.lastStack >= 0,
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
				sp.ids = append(sp.ids, b.internStack(it.same, it.h, it.pid, bt.addrs[start:it.end], it.ret))
				start = it.end
			}
			bt.addrs, bt.items = bt.addrs[:0], bt.items[:0]
			sp.free <- bt
		}
	}()
	b.pipe = sp
}

// push queues the stack of pid's addrs, as [builder.stack] takes them.
// The reader makes and hashes the stack's key: a seventh of the
// interning, on the goroutine that waits for the interning once the
// bundle is decoded.
func (sp *stackPipe) push(pid int32, addrs []uint64, ret bool) {
	bt := sp.cur
	bt.addrs = append(bt.addrs, addrs...)
	it := stackItem{pid: pid, ret: ret, end: int32(len(bt.addrs))}
	sp.key = appendStackKey(sp.key[:0], pid, addrs, ret)
	if it.same = sp.hasLast && bytes.Equal(sp.key, sp.last); !it.same {
		it.h = sp.b.hashKey(sp.key)
		sp.key, sp.last = sp.last, sp.key
	}
	sp.hasLast = true
	bt.items = append(bt.items, it)
	if len(bt.items) == pipeBatch {
		sp.work <- bt
		sp.cur = <-sp.free
	}
}

// stop interns what is queued and waits for the goroutine; the builder's
// stack tables are the caller's again. It returns the ids of the stacks
// queued, in order.
func (sp *stackPipe) stop() []StackID {
	if len(sp.cur.items) > 0 {
		sp.work <- sp.cur
	}
	sp.cur = nil
	close(sp.work)
	<-sp.done
	return sp.ids
}

// stopPipe stops b's pipe, if it runs, and gives the samples appended
// with [pendingStack] their stacks' ids.
func (b *builder) stopPipe() {
	if b.pipe == nil {
		return
	}
	ids := b.pipe.stop()
	// The key of the stack the goroutine interned last, for the stacks
	// interned after it.
	b.lastKey = append(b.lastKey[:0], b.pipe.last...)
	b.pipe = nil
	k := 0
	for _, c := range append(b.chunks[:len(b.chunks):len(b.chunks)], b.chunk) {
		for i := range c {
			if c[i].Stack == pendingStack {
				c[i].Stack = ids[k]
				k++
			}
		}
	}
}
