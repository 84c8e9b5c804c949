package record

import (
	"encoding/binary"
	"io"
	"testing"

	"nsprof/capture"
)

// FuzzCollectorRing drains a ring whose positions and contents a hostile
// command controls: no panic, nothing read beyond the ring, and frames
// copied only while they are well-formed.
func FuzzCollectorRing(f *testing.F) {
	mark := make([]byte, 0, 128)
	// A MARK frame (96 bytes) as the collector writes it.
	mark = binary.NativeEndian.AppendUint16(mark, 96)
	mark = binary.NativeEndian.AppendUint16(mark, 0)
	mark = binary.NativeEndian.AppendUint32(mark, 42)
	mark = binary.NativeEndian.AppendUint64(mark, 1000)
	mark = append(mark, byte(capture.TypeMark), 0, 0, 0, 0, 0, 0, 0)
	mark = binary.NativeEndian.AppendUint64(mark, 5)
	mark = append(mark, make([]byte, 96-len(mark))...)
	f.Add(uint32(0), uint32(96), mark)
	f.Add(uint32(4000), uint32(96), mark) // wraps
	f.Add(uint32(0), uint32(4095), []byte{0xff, 0xff})
	f.Fuzz(func(t *testing.T, head, tail uint32, data []byte) {
		const size = 4096
		mem := make([]byte, 4096+size)
		binary.NativeEndian.PutUint32(mem[0:], head)
		binary.NativeEndian.PutUint32(mem[4:], tail)
		body := mem[4096:]
		for i := range data {
			body[(int(head)+i)%size] = data[i]
		}
		w, err := capture.NewWriter(io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		r := &recorder{w: w, opts: &Options{Log: io.Discard}}
		c := &controlFD{closed: true}
		g := &collectorRing{mem: mem, body: body, size: size}
		c.rings, c.live = []*collectorRing{g}, []*collectorRing{g}
		c.copyAll()
		c.poll(r)
		var written uint64
		for typ := capture.FrameType(1); typ < 32; typ++ {
			written += w.Count(typ)
		}
		if c.frames != written {
			t.Fatalf("%d frames copied, %d written", c.frames, written)
		}
	})
}

// A mark written into a ring by a collector is copied into the capture,
// also when it wraps around the end of the ring.
func TestCollectorRingCopiesFrames(t *testing.T) {
	for _, head := range []uint32{0, 4096 - 40} {
		mem := make([]byte, 4096+4096)
		body := mem[4096:]
		w, _ := capture.NewWriter(io.Discard)
		r := &recorder{w: w, opts: &Options{Log: io.Discard}}
		c := &controlFD{closed: true}
		g := &collectorRing{mem: mem, body: body, size: 4096}
		c.rings, c.live = []*collectorRing{g}, []*collectorRing{g}
		// EXIT is the header alone.
		fr := make([]byte, 24)
		binary.NativeEndian.PutUint16(fr[0:], 24)
		binary.NativeEndian.PutUint32(fr[4:], 7)
		fr[16] = byte(capture.TypeExit)
		pos := head
		for i := 0; i < 3; i++ {
			for j, b := range fr {
				body[(int(pos)+j)%4096] = b
			}
			pos = (pos + 24) % 4096
		}
		binary.NativeEndian.PutUint32(mem[0:], head)
		binary.NativeEndian.PutUint32(mem[4:], pos)
		c.copyAll()
		c.poll(r)
		if c.frames != 3 || w.Count(capture.TypeExit) != 3 {
			t.Errorf("head %d: %d frames copied, %d EXIT written; want 3", head, c.frames, w.Count(capture.TypeExit))
		}
		if got := binary.NativeEndian.Uint32(mem[0:]); got != pos {
			t.Errorf("head %d: ring head %d after draining, want the tail %d", head, got, pos)
		}
	}
}

// A ring the copier finds with less room than its thread's frames need is
// counted as full, with the frames the thread would have written from the
// last one in the ring until the copier came (here as many as the ring
// holds: it took as long to fill as it then stayed full); a ring with
// room to spare is not.
func TestCollectorRingFullCounted(t *testing.T) {
	const size = 4096
	for _, fill := range []int{size / 96, size / 96 / 2} {
		mem := make([]byte, 4096+size)
		body := mem[4096:]
		w, _ := capture.NewWriter(io.Discard)
		r := &recorder{w: w, opts: &Options{Log: io.Discard}}
		c := &controlFD{closed: true}
		now := capture.Now()
		g := &collectorRing{mem: mem, body: body, size: size, emptied: now - 2e6}
		c.rings, c.live = []*collectorRing{g}, []*collectorRing{g}
		for i := range fill {
			fr := body[i*96 : (i+1)*96]
			binary.NativeEndian.PutUint16(fr[0:], 96)
			binary.NativeEndian.PutUint64(fr[8:], uint64(now-2e6+int64(i+1)*1e6/int64(fill)))
			fr[16] = byte(capture.TypeMark)
		}
		binary.NativeEndian.PutUint32(mem[4:], uint32(fill*96))
		c.copyAll()
		c.poll(r)
		full := fill == size/96
		t.Logf("%d frames: %+v", fill, c.loss)
		if got := w.Count(capture.TypeMark); got != uint64(fill) {
			t.Errorf("%d marks written, want %d", got, fill)
		}
		if (c.loss.Full == 1) != full || c.loss.Full > 1 {
			t.Errorf("%d bytes free: counted full %d times, want full %v", size-fill*96, c.loss.Full, full)
		}
		// Full from its last frame (1 ms before now) until the copier
		// came: at least 1 ms, more on a loaded machine, at the rate of
		// fill frames a millisecond.
		elapsed := capture.Now() - now
		want := float64(c.loss.Blocked) * float64(fill) / 1e6
		if full && (float64(c.loss.Estimate) < want/2 || float64(c.loss.Estimate) > want*2 || c.loss.Blocked < 5e5 || c.loss.Blocked > elapsed+2e6) {
			t.Errorf("ring full for 1 ms and the %d ns the test took, after 1 ms of %d frames: estimated %d frames lost in %d ns", elapsed, fill, c.loss.Estimate, c.loss.Blocked)
		}
	}
}
