package record

import (
	"slices"
	"testing"

	"nsprof/capture"
)

// TestWithKernel: a switch out's stack gets the kernel stack its switch
// in carries between its two free slots and its user part; a hit with no
// user part (a kernel thread's: the sampled IP alone, under the kernel
// context) keeps none of its own kernel addresses, which the program's
// stack holds, and a reused stack is counted.
func TestWithKernel(t *testing.T) {
	const k1, k2, ip, u1 = 0xffffffff81000010, 0xffffffff81000020, 0xffffffff81000030, 0x401000
	o := &offCPU{}
	r := &recorder{}
	for _, c := range []struct {
		addrs, want []uint64
	}{
		{[]uint64{0, 0, capture.ContextUser, u1}, []uint64{0, 0, capture.ContextKernel, k1, k2, capture.ContextUser, u1}},
		{[]uint64{0, 0, capture.ContextKernel, ip}, []uint64{0, 0, capture.ContextKernel, k1, k2}},
		{[]uint64{0, 0}, []uint64{0, 0, capture.ContextKernel, k1, k2}},
	} {
		got := o.withKernel(r, switchEvent{out: true, addrs: c.addrs}, switchEvent{kernel: []uint64{k1, k2}, kernelReused: true})
		if !slices.Equal(got, c.want) {
			t.Errorf("withKernel(%x) = %x, want %x", c.addrs, got, c.want)
		}
	}
	if o.kernelReused != 3 {
		t.Errorf("%d reused kernel stacks counted, want 3", o.kernelReused)
	}
}
