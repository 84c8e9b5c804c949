package unwind

import "fmt"

// FormatError reports malformed call frame information.
type FormatError struct {
	// Section is the section the data came from, such as ".eh_frame".
	Section string
	// Off is the byte offset of the bad data in the section.
	Off int
	// Msg describes the problem.
	Msg string
}

// Error names the section and offset.
func (e *FormatError) Error() string {
	return fmt.Sprintf("%s at offset %#x: %s", e.Section, e.Off, e.Msg)
}
