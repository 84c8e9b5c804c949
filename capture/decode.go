package capture

import (
	"bytes"
	"fmt"
	"strings"
)

// decodeFrame decodes one complete frame b (len(b) == frame length) found at
// file offset off. Every count read from b is checked against len(b).
func decodeFrame(o order, b []byte, off int64, allowUnknown bool) (Frame, error) {
	h := FrameHeader{
		CPU:  int16(o.u16(b[2:])),
		PID:  int32(o.u32(b[4:])),
		Time: int64(o.u64(b[8:])),
	}
	t := FrameType(b[16])
	bad := func(msg string, val any) error {
		return &FormatError{Off: off, Msg: fmt.Sprintf("%s frame: %s", t, msg), Val: val}
	}
	need := func(n int) error {
		if len(b) < n {
			return bad(fmt.Sprintf("length %d shorter than the %d bytes it needs", len(b), n), nil)
		}
		return nil
	}
	switch t {
	case TypeTimestamp:
		return &Timestamp{FrameHeader: h}, nil
	case TypeSample, TypeTrace:
		if err := need(sampleFixed); err != nil {
			return nil, err
		}
		word := o.u32(b[24:])
		n := int(o.bits(word, 0, 16))
		if sampleFixed+8*n > len(b) {
			return nil, bad("address count exceeds frame length", n)
		}
		addrs := readAddrs(o, b[sampleFixed:], n)
		tid := int32(o.u32(b[28:]))
		if t == TypeTrace {
			return &Trace{FrameHeader: h, TID: tid, Entering: o.bits(word, 16, 1) == 1, Addrs: addrs}, nil
		}
		return &Sample{FrameHeader: h, TID: tid, Addrs: addrs}, nil
	case TypeMap:
		if err := need(mapFixed); err != nil {
			return nil, err
		}
		m := &Map{FrameHeader: h, Start: o.u64(b[24:]), End: o.u64(b[32:]), Offset: o.u64(b[40:]), Inode: o.u64(b[48:])}
		rest := b[mapFixed:]
		i := bytes.IndexByte(rest, 0)
		if i < 0 {
			return nil, bad("file name not NUL-terminated", nil)
		}
		m.Filename = string(rest[:i])
		if i+1 < len(rest) && rest[i+1] == '@' {
			id := cstring(rest[i+2:])
			if id != "" && isHex(id) {
				// Lowercase, as the field is documented and as
				// debug-file paths and debuginfod spell it.
				m.BuildID = strings.ToLower(id)
			}
		}
		return m, nil
	case TypeProcess:
		return &Process{FrameHeader: h, Cmdline: fieldString(b[processFixed:])}, nil
	case TypeFork:
		if err := need(forkFixed); err != nil {
			return nil, err
		}
		return &Fork{FrameHeader: h, ChildPID: int32(o.u32(b[24:]))}, nil
	case TypeExit:
		return &Exit{FrameHeader: h}, nil
	case TypeJITMap:
		return decodeJITMap(o, b, h, bad)
	case TypeCounterDefine:
		if err := need(ctrdefFixed); err != nil {
			return nil, err
		}
		n := int(o.bits(o.u32(b[24:]), 0, 16))
		if ctrdefFixed+counterSize*n > len(b) {
			return nil, bad("counter count exceeds frame length", n)
		}
		f := &CounterDefine{FrameHeader: h}
		if n > 0 {
			f.Counters = make([]Counter, n)
		}
		for i := range f.Counters {
			cb := b[ctrdefFixed+counterSize*i:]
			word := o.u32(cb[116:])
			f.Counters[i] = Counter{
				Category:    fieldString(cb[0:counterCatLen]),
				Name:        fieldString(cb[32 : 32+counterNameLen]),
				Description: fieldString(cb[64 : 64+counterDescLen]),
				ID:          o.bits(word, 0, 24),
				Type:        CounterType(o.bits(word, 24, 8)),
				Value:       CounterValue(o.u64(cb[120:])),
			}
		}
		return f, nil
	case TypeCounterSet:
		if err := need(ctrsetFixed); err != nil {
			return nil, err
		}
		groups := int(o.bits(o.u32(b[24:]), 0, 16))
		if ctrsetFixed+ctrsetGroupSize*groups > len(b) {
			return nil, bad("value group count exceeds frame length", groups)
		}
		f := &CounterSet{FrameHeader: h}
		for g := 0; g < groups; g++ {
			gb := b[ctrsetFixed+ctrsetGroupSize*g:]
			for i := 0; i < 8; i++ {
				id := o.u32(gb[4*i:])
				if id == 0 {
					continue
				}
				f.Updates = append(f.Updates, CounterUpdate{ID: id, Value: CounterValue(o.u64(gb[32+8*i:]))})
			}
		}
		return f, nil
	case TypeMark:
		if err := need(markFixed); err != nil {
			return nil, err
		}
		return &Mark{
			FrameHeader: h,
			Duration:    int64(o.u64(b[24:])),
			Group:       fieldString(b[32 : 32+markGroupLen]),
			Name:        fieldString(b[56 : 56+markNameLen]),
			Message:     fieldString(b[markFixed:]),
		}, nil
	case TypeMetadata:
		if err := need(metadataFixed); err != nil {
			return nil, err
		}
		return &Metadata{FrameHeader: h, ID: fieldString(b[24 : 24+metadataIDLen]), Value: fieldString(b[metadataFixed:])}, nil
	case TypeLog:
		if err := need(logFixed); err != nil {
			return nil, err
		}
		return &Log{
			FrameHeader: h,
			Severity:    uint16(o.bits(o.u32(b[24:]), 0, 16)),
			Domain:      fieldString(b[32 : 32+logDomainLen]),
			Message:     fieldString(b[logFixed:]),
		}, nil
	case TypeFileChunk:
		if err := need(fileChunkFixed); err != nil {
			return nil, err
		}
		word := o.u32(b[24:])
		n := int(o.bits(word, 16, 16))
		if fileChunkFixed+n > len(b) {
			return nil, bad("data length exceeds frame length", n)
		}
		return &FileChunk{
			FrameHeader: h,
			IsLast:      o.bits(word, 0, 1) == 1,
			Path:        fieldString(b[28 : 28+fileChunkPathLen]),
			Data:        clone(b[fileChunkFixed : fileChunkFixed+n]),
		}, nil
	case TypeAllocation:
		if err := need(allocationFixed); err != nil {
			return nil, err
		}
		n := int(o.bits(o.u32(b[44:]), 0, 16))
		if allocationFixed+8*n > len(b) {
			return nil, bad("address count exceeds frame length", n)
		}
		return &Allocation{
			FrameHeader: h,
			Addr:        o.u64(b[24:]),
			Size:        int64(o.u64(b[32:])),
			TID:         int32(o.u32(b[40:])),
			Addrs:       readAddrs(o, b[allocationFixed:], n),
		}, nil
	case TypeOverlay:
		if err := need(overlayFixed); err != nil {
			return nil, err
		}
		srcLen, dstLen := int(o.u16(b[28:])), int(o.u16(b[30:]))
		if overlayFixed+srcLen+1+dstLen+1 > len(b) {
			return nil, bad("path lengths exceed frame length", fmt.Sprintf("%d+%d", srcLen, dstLen))
		}
		return &Overlay{
			FrameHeader: h,
			Layer:       b[24],
			Src:         cstring(b[overlayFixed : overlayFixed+srcLen]),
			Dst:         cstring(b[overlayFixed+srcLen+1 : overlayFixed+srcLen+1+dstLen]),
		}, nil
	case TypeDBusMessage:
		if err := need(dbusFixed); err != nil {
			return nil, err
		}
		word := o.u16(b[24:])
		n := int(o.u16(b[26:]))
		if dbusFixed+n > len(b) {
			return nil, bad("message length exceeds frame length", n)
		}
		return &DBusMessage{
			FrameHeader: h,
			BusType:     uint8(o.bits16(word, 0, 2)),
			Flags:       o.bits16(word, 2, 14),
			Message:     clone(b[dbusFixed : dbusFixed+n]),
		}, nil
	}
	if allowUnknown && t != 0 {
		return &Unknown{FrameHeader: h, RawType: t, Data: clone(b[FrameHeaderSize:])}, nil
	}
	return nil, &FormatError{Off: off, Msg: "unknown frame type", Val: uint8(t)}
}

// clone copies b, returning nil when it is empty: decoded frames use nil
// for every empty slice.
func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b)
}

func readAddrs(o order, b []byte, n int) []uint64 {
	if n == 0 {
		return nil
	}
	addrs := make([]uint64, n)
	for i := range addrs {
		addrs[i] = o.u64(b[8*i:])
	}
	return addrs
}

func decodeJITMap(o order, b []byte, h FrameHeader, bad func(string, any) error) (Frame, error) {
	if len(b) < jitmapFixed {
		return nil, bad("frame too short", len(b))
	}
	n := int(o.u32(b[24:]))
	// Each entry takes at least 9 bytes, which bounds the allocation.
	if n > (len(b)-jitmapFixed)/9 {
		return nil, bad("entry count exceeds frame length", n)
	}
	f := &JITMap{FrameHeader: h}
	if n > 0 {
		f.Entries = make([]JITEntry, 0, n)
	}
	p := jitmapFixed
	for i := 0; i < n; i++ {
		if p+8 >= len(b) {
			return nil, bad("entry past frame end", i)
		}
		addr := o.u64(b[p:])
		p += 8
		j := bytes.IndexByte(b[p:], 0)
		if j < 0 {
			return nil, bad("name not NUL-terminated", i)
		}
		f.Entries = append(f.Entries, JITEntry{Addr: addr, Name: string(b[p : p+j])})
		p += j + 1
	}
	return f, nil
}
