package export

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
)

// The gmon.out format glibc writes and GNU gprof reads (glibc's
// <sys/gmon_out.h>): a 20-byte header (the cookie "gmon", a 4-byte
// version, 12 spare bytes), then records, each a one-byte tag and its
// body. Numbers are in the byte order of the profiled file's machine,
// addresses the size of its pointers.
const (
	gmonMagic   = "gmon"
	gmonVersion = 1
	// gmonTagHist is GMON_TAG_TIME_HIST: low_pc, high_pc, hist_size (the
	// number of bins, 4 bytes), prof_rate (4 bytes), dimen (15 bytes),
	// dimen_abbrev (1 byte), then hist_size 16-bit bins.
	gmonTagHist = 0
	// gmonTagArc is GMON_TAG_CG_ARC: from_pc, self_pc, count (4 bytes).
	gmonTagArc = 1
	// gmonHeaderSize is sizeof(struct gmon_hdr).
	gmonHeaderSize = 20
	// gmonBinMax and gmonCountMax are the most a bin and an arc record
	// hold. gprof adds up the bins of histogram records of the same range
	// and the counts of records of the same arc, so larger values are
	// written as several records.
	gmonBinMax   = math.MaxUint16
	gmonCountMax = math.MaxUint32
)

// gmonDimen is the histogram's unit: gprof prints bins/prof_rate
// seconds.
var gmonDimen = [16]byte{'s', 'e', 'c', 'o', 'n', 'd', 's', 15: 's'}

// gmonArc is the calls from the call site From to the function at Self,
// both link-time addresses.
type gmonArc struct {
	From, Self uint64
	Count      uint64
}

// gmonFile is the content of one gmon.out.
type gmonFile struct {
	// AddrSize (4 or 8) and Order are those of the profiled file.
	AddrSize int
	Order    binary.AppendByteOrder
	// Low is the address of Bins[0]; each bin counts BinBytes bytes of
	// code, so the histogram covers [Low, Low+len(Bins)*BinBytes).
	Low      uint64
	BinBytes uint64
	Bins     []uint64
	// Rate is prof_rate: samples per second.
	Rate uint32
	// Arcs are written in this order.
	Arcs []gmonArc
}

// High returns the end of the histogram's range.
func (g *gmonFile) High() uint64 { return g.Low + uint64(len(g.Bins))*g.BinBytes }

// histRecords returns the number of histogram records g needs: one, or
// more when a bin holds more than a 16-bit bin can.
func (g *gmonFile) histRecords() int {
	most := uint64(0)
	if len(g.Bins) > 0 {
		most = slices.Max(g.Bins)
	}
	return max(1, int((most+gmonBinMax-1)/gmonBinMax))
}

// write writes g in the gmon.out format.
func (g *gmonFile) write(w io.Writer) error {
	if g.AddrSize != 4 && g.AddrSize != 8 {
		return fmt.Errorf("gmon.out: %d-byte addresses (want 4 or 8)", g.AddrSize)
	}
	if len(g.Bins) == 0 || len(g.Bins) > math.MaxUint32 || g.BinBytes == 0 || g.BinBytes%2 != 0 {
		return fmt.Errorf("gmon.out: %d bins of %d bytes", len(g.Bins), g.BinBytes)
	}
	if g.AddrSize == 4 && g.High() > math.MaxUint32 {
		return fmt.Errorf("gmon.out: histogram end %#x does not fit 4-byte addresses", g.High())
	}
	buf := make([]byte, gmonHeaderSize, 64*1024)
	copy(buf, gmonMagic)
	g.Order.AppendUint32(buf[:4], gmonVersion)
	flush := func(force bool) error {
		if len(buf) < cap(buf)-64 && !force {
			return nil
		}
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	addr := func(a uint64) {
		if g.AddrSize == 4 {
			buf = g.Order.AppendUint32(buf, uint32(a))
		} else {
			buf = g.Order.AppendUint64(buf, a)
		}
	}
	// Bins over 65535 are carried by more records of the same range:
	// record r holds what remains of each bin after r records, at most
	// 65535.
	for r := range uint64(g.histRecords()) {
		buf = append(buf, gmonTagHist)
		addr(g.Low)
		addr(g.High())
		buf = g.Order.AppendUint32(buf, uint32(len(g.Bins)))
		buf = g.Order.AppendUint32(buf, g.Rate)
		buf = append(buf, gmonDimen[:]...)
		for _, n := range g.Bins {
			left := uint64(0)
			if n > r*gmonBinMax {
				left = min(n-r*gmonBinMax, gmonBinMax)
			}
			buf = g.Order.AppendUint16(buf, uint16(left))
			if err := flush(false); err != nil {
				return err
			}
		}
	}
	for _, a := range g.Arcs {
		for n := a.Count; n > 0; {
			c := min(n, gmonCountMax)
			n -= c
			buf = append(buf, gmonTagArc)
			addr(a.From)
			addr(a.Self)
			buf = g.Order.AppendUint32(buf, uint32(c))
			if err := flush(false); err != nil {
				return err
			}
		}
	}
	return flush(true)
}
