package analyze

import "nsprof/capture"

// loadMapped loads the capture file src mapped at data, then unmaps it:
// nothing of the profile refers to the mapping. A fault reading the
// mapping (the file was truncated meanwhile) becomes an error (see
// [capture.ReadMapped]).
func loadMapped(data []byte, unmap func() error, src *sourceFile, opts LoadOptions) (p *Profile, err error) {
	defer unmap()
	err = capture.ReadMapped(data, func() error {
		var lerr error
		p, lerr = loadBytes(data, src, opts) // p stays nil on a fault
		return lerr
	})
	return p, err
}
