package capture

import (
	"fmt"
	"strconv"
)

// Dumper formats frames as one line of text each, as `nsprof dump` prints
// them: relative time in seconds, CPU, PID, type, then the frame's fields.
// Strings are quoted, so a line never contains a raw newline. Counter
// values are printed by their type, learnt from CTRDEF frames seen before.
// The zero value prints absolute times.
type Dumper struct {
	// Start is subtracted from frame times; use the header's StartTime.
	Start int64
	types map[uint32]CounterType
}

// Append appends the line for f, without a newline, to b.
func (d *Dumper) Append(b []byte, f Frame) []byte {
	h := f.Head()
	b = appendTime(b, h.Time-d.Start)
	b = fmt.Appendf(b, " cpu=%d pid=%d %s", h.CPU, h.PID, f.Type())
	switch f := f.(type) {
	case *Sample:
		b = fmt.Appendf(b, " tid=%d", f.TID)
		b = appendAddrs(b, f.Addrs)
	case *Trace:
		b = fmt.Appendf(b, " tid=%d entering=%t", f.TID, f.Entering)
		b = appendAddrs(b, f.Addrs)
	case *Map:
		b = fmt.Appendf(b, " %#x-%#x off=%#x inode=%d file=%q", f.Start, f.End, f.Offset, f.Inode, f.Filename)
		if f.BuildID != "" {
			b = fmt.Appendf(b, " build-id=%s", f.BuildID)
		}
	case *Process:
		b = fmt.Appendf(b, " cmdline=%q", f.Cmdline)
	case *Fork:
		b = fmt.Appendf(b, " child=%d", f.ChildPID)
	case *JITMap:
		b = fmt.Appendf(b, " n=%d", len(f.Entries))
		for _, e := range f.Entries {
			b = fmt.Appendf(b, " %#x=%q", e.Addr, e.Name)
		}
	case *CounterDefine:
		if d.types == nil {
			d.types = make(map[uint32]CounterType)
		}
		b = fmt.Appendf(b, " n=%d", len(f.Counters))
		for _, c := range f.Counters {
			d.types[c.ID] = c.Type
			b = fmt.Appendf(b, " [id=%d %s %q/%q %q value=", c.ID, c.Type, c.Category, c.Name, c.Description)
			b = appendValue(b, c.Type, c.Value)
			b = append(b, ']')
		}
	case *CounterSet:
		b = fmt.Appendf(b, " n=%d", len(f.Updates))
		for _, u := range f.Updates {
			b = fmt.Appendf(b, " %d=", u.ID)
			b = appendValue(b, d.types[u.ID], u.Value)
		}
	case *Mark:
		b = append(b, " duration="...)
		b = appendTime(b, f.Duration)
		b = fmt.Appendf(b, " group=%q name=%q message=%q", f.Group, f.Name, f.Message)
	case *Metadata:
		b = fmt.Appendf(b, " id=%q value=%q", f.ID, f.Value)
	case *Log:
		b = fmt.Appendf(b, " severity=%d domain=%q message=%q", f.Severity, f.Domain, f.Message)
	case *FileChunk:
		b = fmt.Appendf(b, " path=%q len=%d last=%t", f.Path, len(f.Data), f.IsLast)
	case *Allocation:
		if f.Size == 0 && len(f.Addrs) == 0 {
			b = fmt.Appendf(b, " tid=%d free=%#x", f.TID, f.Addr)
		} else {
			b = fmt.Appendf(b, " tid=%d addr=%#x size=%d", f.TID, f.Addr, f.Size)
		}
		b = appendAddrs(b, f.Addrs)
	case *Overlay:
		b = fmt.Appendf(b, " layer=%d src=%q dst=%q", f.Layer, f.Src, f.Dst)
	case *DBusMessage:
		b = fmt.Appendf(b, " bus=%d flags=%#x len=%d", f.BusType, f.Flags, len(f.Message))
	case *Unknown:
		b = fmt.Appendf(b, " len=%d", len(f.Data))
	}
	return b
}

func appendTime(b []byte, ns int64) []byte {
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
	} else {
		b = append(b, '+')
	}
	b = strconv.AppendInt(b, ns/1e9, 10)
	b = append(b, '.')
	frac := strconv.AppendInt(nil, ns%1e9, 10)
	for i := len(frac); i < 9; i++ {
		b = append(b, '0')
	}
	return append(b, frac...)
}

func appendValue(b []byte, t CounterType, v CounterValue) []byte {
	if t == CounterDouble {
		return strconv.AppendFloat(b, v.Double(), 'g', -1, 64)
	}
	return strconv.AppendInt(b, v.Int64(), 10)
}

// contextNames are the names printed for callchain context markers.
var contextNames = map[uint64]string{
	ContextHV:          "[hv]",
	ContextKernel:      "[kernel]",
	ContextUser:        "[user]",
	ContextGuest:       "[guest]",
	ContextGuestKernel: "[guest-kernel]",
	ContextGuestUser:   "[guest-user]",
}

func appendAddrs(b []byte, addrs []uint64) []byte {
	b = fmt.Appendf(b, " n=%d", len(addrs))
	for i, a := range addrs {
		if i == 0 {
			b = append(b, " addrs="...)
		} else {
			b = append(b, ',')
		}
		if n, ok := contextNames[a]; ok {
			b = append(b, n...)
			continue
		}
		b = append(b, "0x"...)
		b = strconv.AppendUint(b, a, 16)
	}
	return b
}
