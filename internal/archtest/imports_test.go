package archtest

import (
	"bufio"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// rule forbids the packages From (each an import path, which covers the
// packages below it too) to import the packages Forbidden, directly or,
// with Transitive, through other packages of the module.
type rule struct {
	From       []string
	Except     []string
	Forbidden  []string
	Transitive bool
	// XTestAllowed exempts external test packages (package x_test),
	// which are linked into no program: a recorder test may load what
	// the recorder made with analyze to check both sides agree.
	XTestAllowed bool
	Why          string
}

// rules are nsprof's architecture (see the package doc). Paths are
// relative to the module; golang.org/x/sys/unix is kept as it is.
var rules = []rule{
	{
		From:       []string{"analyze", "export", "report", "web", "otlp"},
		Forbidden:  []string{"record", "perf", "bpf", "proc", "container"},
		Transitive: true,
		Why:        "analyze, export, report, web and otlp read captures only through capture",
	},
	{
		From:      []string{"analyze", "export", "report", "web", "otlp"},
		Forbidden: []string{"internal/unix"},
		Why:       "analyze, export, report, web and otlp make no system calls of their own (capture maps the file)",
	},
	{
		From:         []string{"record"},
		Forbidden:    []string{"analyze", "export", "report", "otlp"},
		Transitive:   true,
		XTestAllowed: true,
		Why:          "data flows one way: the recorder writes captures, the reports read them",
	},
	{
		From:      []string{""}, // the whole module
		Except:    []string{"internal/unix"},
		Forbidden: []string{"golang.org/x/sys/unix"},
		Why:       "internal/unix is the only package importing golang.org/x/sys/unix",
	},
}

// pkg is what the import declarations of one directory's Go files say.
type pkg struct {
	// imports maps each import path of the non-test files to the first
	// file (relative to the module root) importing it; testImports does
	// the same for the test files of the package itself, xtestImports
	// for those of its external test package (package x_test).
	imports, testImports, xtestImports map[string]string
}

// maps returns the import maps a rule looks at.
func (p *pkg) maps(r rule) []map[string]string {
	if r.XTestAllowed {
		return []map[string]string{p.imports, p.testImports}
	}
	return []map[string]string{p.imports, p.testImports, p.xtestImports}
}

// TestImportRules checks every package of the module against rules.
func TestImportRules(t *testing.T) {
	root, module, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := loadPackages(root, module)
	if err != nil {
		t.Fatal(err)
	}
	// The walk must have found the packages the rules are about, or
	// the test would pass on nothing.
	for _, p := range []string{"analyze", "export", "record", "capture", "internal/unix"} {
		if _, ok := pkgs[module+"/"+p]; !ok {
			t.Fatalf("package %s/%s not found under %s", module, p, root)
		}
	}
	if _, ok := pkgs[module+"/internal/unix"].imports["golang.org/x/sys/unix"]; !ok {
		t.Fatalf("%s/internal/unix does not import golang.org/x/sys/unix: the import declarations were not read", module)
	}
	for _, v := range check(pkgs, module, rules) {
		t.Error(v)
	}
}

// TestCheck runs check on a made-up module, so each kind of violation is
// seen to be reported.
func TestCheck(t *testing.T) {
	imp := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	pkgs := map[string]*pkg{
		"m/analyze": {imports: imp("m/capture", "analyze/a.go", "m/symbol", "analyze/s.go"), testImports: imp("m/perf", "analyze/a_test.go")},
		"m/symbol":  {imports: imp("m/proc", "symbol/p.go")},
		"m/capture": {imports: imp("m/internal/unix", "capture/c.go")},
		"m/export":  {imports: imp("m/internal/unix", "export/e.go"), xtestImports: imp("m/record", "export/x_test.go")},
		// record's external tests may check the reports read what it
		// wrote; its own tests may not reach the analysis side.
		"m/record":        {testImports: imp("m/helper", "record/r_test.go"), xtestImports: imp("m/analyze", "record/x_test.go")},
		"m/helper":        {imports: imp("m/export", "helper/h.go", "golang.org/x/sys/unix", "helper/h.go")},
		"m/internal/unix": {imports: imp("golang.org/x/sys/unix", "internal/unix/u.go")},
		"m/report/text":   {imports: imp("m/record", "report/text/t.go")},
	}
	got := check(pkgs, "m", rules)
	want := []string{
		"m/analyze imports m/perf (analyze/a_test.go)",
		"m/analyze reaches m/proc: analyze/s.go imports m/symbol, symbol/p.go imports m/proc",
		"m/export imports m/internal/unix (export/e.go)",
		"m/export imports m/record (export/x_test.go)",
		"m/helper imports golang.org/x/sys/unix (helper/h.go)",
		"m/record reaches m/export: record/r_test.go imports m/helper, helper/h.go imports m/export",
		"m/report/text imports m/record (report/text/t.go)",
	}
	if len(got) != len(want) {
		t.Fatalf("violations:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]+": ") {
			t.Errorf("violation %d: %q, want %q", i, got[i], want[i])
		}
	}
}

// check returns the violations of rules in pkgs, one line each naming the
// package, the forbidden import and the files on the way, sorted.
func check(pkgs map[string]*pkg, module string, rules []rule) []string {
	abs := func(p string) string {
		if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
			return p // golang.org/x/…
		}
		if p == "" {
			return module
		}
		return module + "/" + p
	}
	under := func(path string, prefixes []string) bool {
		for _, p := range prefixes {
			p = abs(p)
			if path == p || strings.HasPrefix(path, p+"/") {
				return true
			}
		}
		return false
	}
	var out []string
	for path, p := range pkgs {
		for _, r := range rules {
			if !under(path, r.From) || under(path, r.Except) {
				continue
			}
			forbidden := func(imp string) bool { return under(imp, r.Forbidden) }
			direct := map[string]bool{}
			for _, m := range p.maps(r) {
				for imp, file := range m {
					if forbidden(imp) && !direct[imp] {
						direct[imp] = true
						out = append(out, fmt.Sprintf("%s imports %s (%s): %s", path, imp, file, r.Why))
					}
				}
			}
			if !r.Transitive {
				continue
			}
			for imp, chain := range reach(pkgs, p.maps(r), forbidden) {
				if !direct[imp] {
					out = append(out, fmt.Sprintf("%s reaches %s: %s: %s", path, imp, strings.Join(chain, ", "), r.Why))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// reach returns the forbidden packages p imports through other packages of
// pkgs, each with the shortest chain of imports ("FILE imports PKG") that
// leads to it. Test files count for p only: other packages' tests are not
// linked into p.
func reach(pkgs map[string]*pkg, start []map[string]string, forbidden func(string) bool) map[string][]string {
	type step struct{ path, via string }
	parent := map[string]step{}
	var queue []string
	visit := func(imp, file, from string) {
		if _, seen := parent[imp]; seen {
			return
		}
		parent[imp] = step{from, file + " imports " + imp}
		queue = append(queue, imp)
	}
	for _, m := range start {
		for _, imp := range sortedKeys(m) {
			visit(imp, m[imp], "")
		}
	}
	found := map[string][]string{}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if forbidden(cur) {
			var chain []string
			for s := cur; s != ""; s = parent[s].path {
				chain = append(chain, parent[s].via)
			}
			slices.Reverse(chain)
			if len(chain) > 1 {
				found[cur] = chain
			}
			continue
		}
		if q := pkgs[cur]; q != nil {
			for _, imp := range sortedKeys(q.imports) {
				visit(imp, q.imports[imp], cur)
			}
		}
	}
	return found
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// moduleRoot returns the directory holding go.mod, above the working
// directory, and the module path it declares.
func moduleRoot() (dir, module string, err error) {
	dir, err = os.Getwd()
	if err != nil {
		return "", "", err
	}
	for {
		f, err := os.Open(filepath.Join(dir, "go.mod"))
		if err == nil {
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
					if uq, err := strconv.Unquote(strings.TrimSpace(m)); err == nil {
						m = uq
					}
					return dir, strings.TrimSpace(m), nil
				}
			}
			return "", "", fmt.Errorf("%s: no module line", f.Name())
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", "", err
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", "", errors.New("no go.mod above the working directory")
		}
		dir = up
	}
}

// loadPackages reads the import declarations of every Go file under root,
// as go build sees the tree: testdata and directories whose names start
// with "." or "_" are skipped. Files of every build tag count.
func loadPackages(root, module string) (map[string]*pkg, error) {
	pkgs := map[string]*pkg{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		ipath := module
		if dir := filepath.ToSlash(filepath.Dir(rel)); dir != "." {
			ipath += "/" + dir
		}
		p := pkgs[ipath]
		if p == nil {
			p = &pkg{imports: map[string]string{}, testImports: map[string]string{}, xtestImports: map[string]string{}}
			pkgs[ipath] = p
		}
		m := p.imports
		if strings.HasSuffix(name, "_test.go") {
			m = p.testImports
			if strings.HasSuffix(f.Name.Name, "_test") {
				m = p.xtestImports
			}
		}
		for _, is := range f.Imports {
			imp, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: import %s: %v", rel, is.Path.Value, err)
			}
			if _, ok := m[imp]; !ok {
				m[imp] = filepath.ToSlash(rel)
			}
		}
		return nil
	})
	return pkgs, err
}
