package report

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports checks that report renders what analyze loaded and
// reaches neither the recorder nor the kernel: it imports none of
// record, perf, proc, container and internal/unix.
func TestImports(t *testing.T) {
	forbidden := []string{"nsprof/record", "nsprof/perf", "nsprof/proc", "nsprof/container", "nsprof/internal/unix", "golang.org/x/sys/unix"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbidden {
				if path == bad || strings.HasPrefix(path, bad+"/") {
					t.Errorf("%s imports %s", name, path)
				}
			}
		}
	}
}
