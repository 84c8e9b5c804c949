package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"
)

// readRaw reads b with NewBytesReader and NextRaw, decoding SAMPLE,
// ALLOCATION and FILE_CHUNK frames with DecodeSample, DecodeAllocation
// and DecodeFileChunk into reused values (copied out for comparison) and
// the rest with Decode.
func readRaw(b []byte, opts ReaderOptions) (FileHeader, []Frame, error) {
	r, err := NewBytesReader(b, opts)
	if err != nil {
		return FileHeader{}, nil, err
	}
	var (
		out []Frame
		s   Sample
		a   Allocation
		c   FileChunk
	)
	for {
		f, err := r.NextRaw()
		if err == io.EOF {
			return r.Header(), out, nil
		}
		if err != nil {
			return r.Header(), out, err
		}
		switch f.Type {
		case TypeSample:
			n, ok := f.SampleLen()
			if err := f.DecodeSample(&s); err != nil {
				if ok {
					return r.Header(), out, fmt.Errorf("SampleLen says %d addresses of a sample that does not decode: %w", n, err)
				}
				return r.Header(), out, err
			}
			if !ok || n != len(s.Addrs) {
				return r.Header(), out, fmt.Errorf("SampleLen = %d, %v; DecodeSample decoded %d addresses", n, ok, len(s.Addrs))
			}
			cp := s
			cp.Addrs = bytes2addrs(s.Addrs)
			out = append(out, &cp)
		case TypeAllocation:
			size, n, ok := f.AllocationLen()
			if err := f.DecodeAllocation(&a); err != nil {
				if ok {
					return r.Header(), out, fmt.Errorf("AllocationLen says %d addresses of an allocation that does not decode: %w", n, err)
				}
				return r.Header(), out, err
			}
			if !ok || n != len(a.Addrs) || size != a.Size {
				return r.Header(), out, fmt.Errorf("AllocationLen = %d, %d, %v; DecodeAllocation decoded size %d, %d addresses", size, n, ok, a.Size, len(a.Addrs))
			}
			cp := a
			cp.Addrs = bytes2addrs(a.Addrs)
			out = append(out, &cp)
		case TypeFileChunk:
			if err := f.DecodeFileChunk(&c); err != nil {
				return r.Header(), out, err
			}
			cp := c
			cp.Data = clone(c.Data)
			out = append(out, &cp)
		default:
			fr, err := f.Decode()
			if err != nil {
				return r.Header(), out, err
			}
			if fr.Head().Time != f.Head().Time || fr.Head().PID != f.Head().PID || fr.Head().CPU != f.Head().CPU {
				return r.Header(), out, errors.New("Head differs from the decoded header")
			}
			out = append(out, fr)
		}
	}
}

func bytes2addrs(a []uint64) []uint64 {
	if a == nil {
		return nil
	}
	return append([]uint64(nil), a...)
}

// TestBytesReaderMatchesReader checks that reading in place with NextRaw
// and the Decode methods gives what Next over an io.Reader gives, frames
// and errors, for both byte orders and every truncation.
func TestBytesReaderMatchesReader(t *testing.T) {
	for _, bo := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		full := writeAll(t, WriterOptions{ByteOrder: bo, NewFrameTypes: true, StartTime: 1}, allFrames())
		for cut := 0; cut <= len(full); cut++ {
			b := full[:cut]
			wh, want, werr := readAll(t, b)
			gh, got, gerr := readRaw(b, ReaderOptions{})
			if !reflect.DeepEqual(wh, gh) {
				t.Fatalf("%v cut %d: header %+v, want %+v", bo, cut, gh, wh)
			}
			if !equalFrames(got, want) {
				t.Fatalf("%v cut %d: %d frames differ from the %d of Next", bo, cut, len(got), len(want))
			}
			if !reflect.DeepEqual(werr, gerr) {
				t.Fatalf("%v cut %d: error %v, want %v", bo, cut, gerr, werr)
			}
		}
	}
}

// TestDecodeAllocationReuses checks that DecodeAllocation allocates
// nothing once its Addrs has grown, also over a free and the allocation
// after it, and that a free after an allocation has no addresses left of
// it.
func TestDecodeAllocationReuses(t *testing.T) {
	full := writeAll(t, WriterOptions{}, []Frame{
		&Allocation{FrameHeader: FrameHeader{PID: 1, Time: 2}, TID: 3, Addr: 0x5000, Size: 100, Addrs: []uint64{1, 2, 3}},
		&Allocation{FrameHeader: FrameHeader{PID: 1, Time: 4}, TID: 3, Addr: 0x5000},
	})
	r, err := NewBytesReader(full, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	af, err := r.NextRaw()
	if err != nil {
		t.Fatal(err)
	}
	var a Allocation
	if err := af.DecodeAllocation(&a); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { af.DecodeAllocation(&a) }); n != 0 {
		t.Errorf("DecodeAllocation: %v allocations, want 0", n)
	}
	want := Allocation{FrameHeader: FrameHeader{PID: 1, Time: 2}, TID: 3, Addr: 0x5000, Size: 100, Addrs: []uint64{1, 2, 3}}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("allocation %+v, want %+v", a, want)
	}
	var s Sample
	if err := af.DecodeSample(&s); err == nil {
		t.Error("DecodeSample of an ALLOCATION: no error")
	}
	ff, err := r.NextRaw()
	if err != nil {
		t.Fatal(err)
	}
	if err := ff.DecodeAllocation(&a); err != nil {
		t.Fatal(err)
	}
	if len(a.Addrs) != 0 || a.Size != 0 || a.Time != 4 {
		t.Errorf("free %+v", a)
	}
	if n := testing.AllocsPerRun(100, func() { ff.DecodeAllocation(&a); af.DecodeAllocation(&a) }); n != 0 {
		t.Errorf("DecodeAllocation of a free, then an allocation: %v allocations, want 0", n)
	}
}

// TestDecodeSampleReuses checks that DecodeSample allocates nothing once
// its Addrs has grown, and that DecodeFileChunk's data is a view.
func TestDecodeSampleReuses(t *testing.T) {
	full := writeAll(t, WriterOptions{}, []Frame{
		&Sample{FrameHeader: FrameHeader{PID: 1, Time: 2}, TID: 1, Addrs: []uint64{1, 2, 3}},
		&FileChunk{FrameHeader: FrameHeader{PID: -1, Time: 3}, IsLast: true, Path: "/f", Data: []byte("data")},
	})
	r, err := NewBytesReader(full, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sf, err := r.NextRaw()
	if err != nil {
		t.Fatal(err)
	}
	var s Sample
	if err := sf.DecodeSample(&s); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { sf.DecodeSample(&s) }); n != 0 {
		t.Errorf("DecodeSample: %v allocations, want 0", n)
	}
	if !reflect.DeepEqual(s.Addrs, []uint64{1, 2, 3}) || s.TID != 1 || s.Time != 2 {
		t.Errorf("sample %+v", s)
	}
	var c FileChunk
	if err := sf.DecodeFileChunk(&c); err == nil {
		t.Error("DecodeFileChunk of a SAMPLE: no error")
	}
	cf, err := r.NextRaw()
	if err != nil {
		t.Fatal(err)
	}
	if err := cf.DecodeFileChunk(&c); err != nil {
		t.Fatal(err)
	}
	if string(c.Data) != "data" || c.Path != "/f" || !c.IsLast {
		t.Errorf("chunk %+v", c)
	}
	if &c.Data[0] != &cf.Bytes[fileChunkFixed] {
		t.Error("DecodeFileChunk copied the data")
	}
	if err := cf.DecodeSample(&s); err == nil {
		t.Error("DecodeSample of a FILE_CHUNK: no error")
	}
}

// FuzzBytesReader checks on arbitrary bytes that the in-place reader
// returns the frames and the error the streaming one does, at the same
// offsets. Seeds are those of FuzzReader.
func FuzzBytesReader(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		opts := ReaderOptions{AllowUnknown: len(b)%2 == 0}
		var want []Frame
		var werr error
		r, err := NewReaderWithOptions(bytes.NewReader(b), opts)
		if err != nil {
			if _, rerr := NewBytesReader(b, opts); !reflect.DeepEqual(rerr, err) {
				t.Fatalf("header error %v, want %v", rerr, err)
			}
			return
		}
		for {
			fr, err := r.Next()
			if err != nil {
				if err != io.EOF {
					werr = err
				}
				break
			}
			want = append(want, fr)
		}
		_, got, gerr := readRaw(b, opts)
		if !equalFrames(got, want) || !reflect.DeepEqual(werr, gerr) {
			t.Fatalf("got %d frames, error %v; want %d, %v", len(got), gerr, len(want), werr)
		}
	})
}
