package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"nsprof/internal/outfile"
)

// createOutput creates the output file of a command, refusing an existing
// path unless force (-f) is set; see package outfile for how an existing
// file is replaced without following a link planted at its name.
func createOutput(path string, force bool, perm fs.FileMode) (*outfile.File, error) {
	f, err := outfile.Create(path, outfile.Options{Replace: force, Perm: perm})
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%s: file exists (use -f to overwrite)", path)
	}
	return f, err
}

// regularSize returns the size of the regular file at path, or 0 when it
// is not one (a pipe, standard input) or cannot be read.
func regularSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return 0
	}
	return st.Size()
}
