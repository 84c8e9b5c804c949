package capture

import (
	"errors"
	"fmt"
	"os"
)

// ErrClosed is returned by a Writer or Reader used after Close.
var ErrClosed = os.ErrClosed

// ErrFrameTooLarge is wrapped by Writer errors for frames that would exceed
// [MaxFrameLen] bytes.
var ErrFrameTooLarge = errors.New("frame exceeds 65528 bytes")

// ErrNewFrameType is wrapped by Writer errors for a DBUS_MESSAGE frame
// written without [WriterOptions.NewFrameTypes]: Sysprof 3.46 would stop
// reading at it.
var ErrNewFrameType = errors.New("frame type not readable by Sysprof 3.46; set WriterOptions.NewFrameTypes")

// ErrNoTraceFD is returned by [NewWriterFromEnv] when SYSPROF_TRACE_FD is not
// set: the program is not being profiled.
var ErrNoTraceFD = errors.New("SYSPROF_TRACE_FD is not set")

// FormatError reports malformed capture data at a byte offset of the file.
type FormatError struct {
	// Off is the byte offset of the frame (or header field) at fault.
	Off int64
	// Msg says what is wrong.
	Msg string
	// Val is the offending value, if any.
	Val any
}

func (e *FormatError) Error() string {
	if e.Val != nil {
		return fmt.Sprintf("capture: %s (%v) at offset %d (%#x)", e.Msg, e.Val, e.Off, e.Off)
	}
	return fmt.Sprintf("capture: %s at offset %d (%#x)", e.Msg, e.Off, e.Off)
}
