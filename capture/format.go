package capture

import (
	"fmt"
	"strings"
)

// Layout constants of the capture format.
const (
	// Magic is the first 4 bytes of every capture, stored little-endian
	// (5E 97 CA FD) whatever the frames' byte order.
	Magic uint32 = 0xFDCA975E
	// Version is the only format version Sysprof has ever written.
	Version = 1
	// HeaderSize is the size of the file header.
	HeaderSize = 256
	// FrameHeaderSize is the size of the header every frame starts with.
	FrameHeaderSize = 24
	// Align is the alignment of every frame's length.
	Align = 8
	// MaxFrameLen is the largest frame: the length field is a u16 and
	// lengths are multiples of 8.
	MaxFrameLen = 65528
	// JITMapMark is set in the top bits of addresses that name JIT code
	// through JITMAP frames (0xE000000000000000, as on 64-bit Sysprof).
	JITMapMark uint64 = 0xE000000000000000
	// frameIndexMagic in padding2 marks a Sysprof 51 frame-index TIMESTAMP.
	frameIndexMagic uint32 = 0x53504958
)

// Fixed sizes of each frame type before its variable part.
const (
	sampleFixed     = 32
	mapFixed        = 56
	processFixed    = 24
	forkFixed       = 28
	jitmapFixed     = 28
	ctrdefFixed     = 32
	counterSize     = 128
	ctrsetFixed     = 32
	ctrsetGroupSize = 96
	markFixed       = 96
	metadataFixed   = 64
	logFixed        = 64
	fileChunkFixed  = 284
	allocationFixed = 48
	overlayFixed    = 32
	traceFixed      = 32
	dbusFixed       = 28

	markGroupLen     = 24
	markNameLen      = 40
	metadataIDLen    = 40
	logDomainLen     = 32
	fileChunkPathLen = 256
	counterCatLen    = 32
	counterNameLen   = 32
	counterDescLen   = 52
	captureTimeLen   = 64
)

// Limits that follow from MaxFrameLen. Writers return an error wrapping
// [ErrFrameTooLarge] beyond them.
const (
	// MaxSampleAddrs is the most addresses a SAMPLE or TRACE frame holds:
	// (65528-32)/8. The u16 address count could say 65535, but no frame
	// can carry that many.
	MaxSampleAddrs = (MaxFrameLen - sampleFixed) / 8
	// MaxAllocationAddrs is the most addresses an ALLOCATION frame holds.
	MaxAllocationAddrs = (MaxFrameLen - allocationFixed) / 8
	// MaxCountersPerFrame is the most counters one CTRDEF frame defines.
	MaxCountersPerFrame = (MaxFrameLen - ctrdefFixed) / counterSize
	// MaxCounterValuesPerFrame is the most values one CTRSET frame sets.
	MaxCounterValuesPerFrame = (MaxFrameLen - ctrsetFixed) / ctrsetGroupSize * 8
	// MaxFileChunkData is the most data bytes in one FILE_CHUNK frame.
	MaxFileChunkData = MaxFrameLen - fileChunkFixed
	// MaxCounterID is the largest counter id (24 bits).
	MaxCounterID = 1<<24 - 1
)

// FrameType is the type byte of a frame.
type FrameType uint8

// Frame types. Types 16 and 17 appeared in Sysprof 45.
const (
	TypeTimestamp     FrameType = 1
	TypeSample        FrameType = 2
	TypeMap           FrameType = 3
	TypeProcess       FrameType = 4
	TypeFork          FrameType = 5
	TypeExit          FrameType = 6
	TypeJITMap        FrameType = 7
	TypeCounterDefine FrameType = 8
	TypeCounterSet    FrameType = 9
	TypeMark          FrameType = 10
	TypeMetadata      FrameType = 11
	TypeLog           FrameType = 12
	TypeFileChunk     FrameType = 13
	TypeAllocation    FrameType = 14
	TypeOverlay       FrameType = 15
	TypeTrace         FrameType = 16
	TypeDBusMessage   FrameType = 17

	// maxLegacyType is the last type Sysprof 3.46 readers accept.
	maxLegacyType = TypeOverlay
	maxKnownType  = TypeDBusMessage
)

var typeNames = [...]string{
	TypeTimestamp:     "TIMESTAMP",
	TypeSample:        "SAMPLE",
	TypeMap:           "MAP",
	TypeProcess:       "PROCESS",
	TypeFork:          "FORK",
	TypeExit:          "EXIT",
	TypeJITMap:        "JITMAP",
	TypeCounterDefine: "CTRDEF",
	TypeCounterSet:    "CTRSET",
	TypeMark:          "MARK",
	TypeMetadata:      "METADATA",
	TypeLog:           "LOG",
	TypeFileChunk:     "FILE_CHUNK",
	TypeAllocation:    "ALLOCATION",
	TypeOverlay:       "OVERLAY",
	TypeTrace:         "TRACE",
	TypeDBusMessage:   "DBUS_MESSAGE",
}

// String returns Sysprof's name for the type, such as "SAMPLE" or "CTRDEF".
func (t FrameType) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return fmt.Sprintf("TYPE%d", uint8(t))
}

// Known reports whether t is one of the types 1–17.
func (t FrameType) Known() bool { return t >= TypeTimestamp && t <= maxKnownType }

// ParseFrameType accepts a type name as printed by [FrameType.String]
// (case-insensitive, "-" for "_", "FILE" for FILE_CHUNK, "DBUS" for
// DBUS_MESSAGE) or a decimal type number.
func ParseFrameType(s string) (FrameType, error) {
	u := strings.ReplaceAll(strings.ToUpper(strings.TrimSpace(s)), "-", "_")
	switch u {
	case "FILE":
		return TypeFileChunk, nil
	case "DBUS":
		return TypeDBusMessage, nil
	case "COUNTER_DEFINE":
		return TypeCounterDefine, nil
	case "COUNTER_SET":
		return TypeCounterSet, nil
	}
	for t, n := range typeNames {
		if n != "" && n == u {
			return FrameType(t), nil
		}
	}
	var n uint8
	if _, err := fmt.Sscanf(u, "%d", &n); err == nil && fmt.Sprint(n) == u && n != 0 {
		return FrameType(n), nil
	}
	return 0, fmt.Errorf("unknown frame type %q", s)
}

// Callchain context markers, the perf_event constants Sysprof stores in
// SAMPLE addresses to say which context the following addresses belong to.
const (
	ContextHV          uint64 = 0xffffffffffffffe0 // -32
	ContextKernel      uint64 = 0xffffffffffffff80 // -128
	ContextUser        uint64 = 0xfffffffffffffe00 // -512
	ContextGuest       uint64 = 0xfffffffffffff800 // -2048
	ContextGuestKernel uint64 = 0xfffffffffffff780 // -2176
	ContextGuestUser   uint64 = 0xfffffffffffff600 // -2560
	contextMax         uint64 = 0xfffffffffffff001 // -4095, PERF_CONTEXT_MAX
)

// IsContext reports whether addr is a callchain context marker rather than
// a code address.
func IsContext(addr uint64) bool { return addr >= contextMax }

// IsJIT reports whether addr names JIT code defined by a JITMAP frame.
func IsJIT(addr uint64) bool { return addr&JITMapMark == JITMapMark && !IsContext(addr) }

// maxUserAddr bounds the user address space of every machine nsprof
// records: x86-64 with 5-level paging ends at 1<<56, arm64 at 1<<52.
const maxUserAddr = 1 << 56

// ImpossibleReturn reports whether addr, a return address in the user part
// of a callchain, cannot be one: it is above every user address space and
// below the JIT addresses (and x86-64's vsyscall page, above them). A
// frame-pointer walk that leaves the stack's frames reads such values, a
// stack protector's canary most often (random, low byte zero).
func ImpossibleReturn(addr uint64) bool { return addr >= maxUserAddr && addr < JITMapMark }

// CounterType says how a counter's 8-byte values are interpreted.
type CounterType uint8

// Counter value types.
const (
	CounterInt64  CounterType = 0
	CounterDouble CounterType = 1
)

// String returns "int64" or "double".
func (t CounterType) String() string {
	switch t {
	case CounterInt64:
		return "int64"
	case CounterDouble:
		return "double"
	}
	return fmt.Sprintf("countertype%d", uint8(t))
}

// DBus bus types of a DBUS_MESSAGE frame.
const (
	BusSystem  = 0
	BusSession = 1
	BusA11y    = 2
	BusOther   = 3
)

// DBusFlagMessageTooLarge says the message was too large and is not stored.
const DBusFlagMessageTooLarge = 1
