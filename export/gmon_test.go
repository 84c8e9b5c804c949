package export

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
)

// gmonHist and gmonDecoded are a gmon.out read back as glibc's
// <sys/gmon_out.h> lays it out, independently of the writer.
type gmonHist struct {
	low, high   uint64
	size, rate  uint32
	dimen       string
	dimenAbbrev byte
	bins        []uint16
}

type gmonDecoded struct {
	version uint32
	spare   []byte
	hists   []gmonHist
	arcs    []gmonArc
}

func decodeGmon(t *testing.T, b []byte, addrSize int, bo binary.ByteOrder) gmonDecoded {
	t.Helper()
	if len(b) < 20 || string(b[:4]) != "gmon" {
		t.Fatalf("no gmon header: % x", b[:min(20, len(b))])
	}
	d := gmonDecoded{version: bo.Uint32(b[4:8]), spare: b[8:20]}
	off := 20
	need := func(n int) []byte {
		if off+n > len(b) {
			t.Fatalf("truncated at byte %d: want %d more of %d", off, n, len(b))
		}
		p := b[off : off+n]
		off += n
		return p
	}
	addr := func() uint64 {
		if addrSize == 4 {
			return uint64(bo.Uint32(need(4)))
		}
		return bo.Uint64(need(8))
	}
	for off < len(b) {
		switch tag := need(1)[0]; tag {
		case 0:
			h := gmonHist{low: addr(), high: addr(), size: bo.Uint32(need(4)), rate: bo.Uint32(need(4))}
			h.dimen = string(bytes.TrimRight(need(15), "\x00"))
			h.dimenAbbrev = need(1)[0]
			for range h.size {
				h.bins = append(h.bins, bo.Uint16(need(2)))
			}
			d.hists = append(d.hists, h)
		case 1:
			d.arcs = append(d.arcs, gmonArc{From: addr(), Self: addr(), Count: uint64(bo.Uint32(need(4)))})
		default:
			t.Fatalf("tag %d at byte %d", tag, off-1)
		}
	}
	return d
}

// TestGmonFileLayout writes gmon.out files and reads them back as glibc
// lays them out: the header, a histogram record (its range, bin count,
// rate, "seconds"/'s'), arc records; a bin over 65535 and an arc over
// 2^32-1 calls as several records gprof adds up; 4- and 8-byte
// addresses, both byte orders.
func TestGmonFileLayout(t *testing.T) {
	for _, tc := range []struct {
		addrSize int
		order    binary.AppendByteOrder
	}{{8, binary.LittleEndian}, {4, binary.BigEndian}} {
		t.Run(fmt.Sprintf("%d-%v", tc.addrSize, tc.order), func(t *testing.T) {
			g := &gmonFile{
				AddrSize: tc.addrSize, Order: tc.order,
				Low: 0x1000, BinBytes: 4, Bins: []uint64{0, 3, 70000, 65535, 1}, Rate: 999,
				Arcs: []gmonArc{{From: 0x1010, Self: 0x1004, Count: 1_000_000}, {From: 0x1008, Self: 0x100c, Count: 5_000_000_000}},
			}
			var buf bytes.Buffer
			if err := g.write(&buf); err != nil {
				t.Fatal(err)
			}
			b := buf.Bytes()
			hdr := append(tc.order.AppendUint32([]byte("gmon"), 1), make([]byte, 12)...)
			if !bytes.Equal(b[:20], hdr) {
				t.Errorf("header % x, want % x", b[:20], hdr)
			}
			d := decodeGmon(t, b, tc.addrSize, tc.order.(binary.ByteOrder))
			if d.version != 1 || !bytes.Equal(d.spare, make([]byte, 12)) {
				t.Errorf("version %d, spare % x", d.version, d.spare)
			}
			if len(d.hists) != 2 {
				t.Fatalf("%d histogram records, want 2 (a bin of 70000)", len(d.hists))
			}
			sum := make([]uint64, len(g.Bins))
			for _, h := range d.hists {
				if h.low != 0x1000 || h.high != 0x1014 || h.size != 5 || h.rate != 999 || h.dimen != "seconds" || h.dimenAbbrev != 's' {
					t.Errorf("histogram header %+v", h)
				}
				for i, n := range h.bins {
					sum[i] += uint64(n)
				}
			}
			if !slices.Equal(sum, g.Bins) {
				t.Errorf("bins add up to %v, want %v", sum, g.Bins)
			}
			calls := map[[2]uint64]uint64{}
			for _, a := range d.arcs {
				calls[[2]uint64{a.From, a.Self}] += a.Count
			}
			if len(d.arcs) != 3 || calls[[2]uint64{0x1010, 0x1004}] != 1_000_000 || calls[[2]uint64{0x1008, 0x100c}] != 5_000_000_000 {
				t.Errorf("arcs %+v", d.arcs)
			}
			wantLen := 20 + 2*(1+2*tc.addrSize+4+4+16+2*5) + 3*(1+2*tc.addrSize+4)
			if len(b) != wantLen {
				t.Errorf("%d bytes, want %d", len(b), wantLen)
			}
		})
	}
}

// TestGmonFileBad checks what write refuses.
func TestGmonFileBad(t *testing.T) {
	for name, g := range map[string]*gmonFile{
		"addr size": {AddrSize: 2, Order: binary.LittleEndian, BinBytes: 4, Bins: []uint64{1}},
		"no bins":   {AddrSize: 8, Order: binary.LittleEndian, BinBytes: 4},
		"odd bin":   {AddrSize: 8, Order: binary.LittleEndian, BinBytes: 3, Bins: []uint64{1}},
		"32-bit":    {AddrSize: 4, Order: binary.LittleEndian, Low: 0xffff_fff0, BinBytes: 4, Bins: make([]uint64, 8)},
	} {
		if err := g.write(new(bytes.Buffer)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
