package testutils

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOneCIReader keeps [InCI] the module's only reader of the CI
// environment variable: a hand-written copy (os.Getenv("CI") == "true")
// reads CI=1 differently, and a test that skips by its own rule hides a
// broken CI image. Every other test goes through [RequireCI] or
// [LookPathOrSkip].
func TestOneCIReader(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(root, "internal", "testutils", "testutils.go")
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 || !readsEnv(call.Fun) {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if v, _ := strconv.Unquote(lit.Value); v == "CI" && path != self {
				t.Errorf("%s reads CI itself: use testutils.InCI, RequireCI or LookPathOrSkip", fset.Position(call.Pos()))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("parsed %d Go files under %s: not the module root?", files, root)
	}
}

// readsEnv reports whether fun is os.Getenv, os.LookupEnv or
// syscall.Getenv.
func readsEnv(fun ast.Expr) bool {
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok {
		return false
	}
	switch pkg.Name + "." + sel.Sel.Name {
	case "os.Getenv", "os.LookupEnv", "syscall.Getenv":
		return true
	}
	return false
}
