package housekeeping

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the length past which a function must say why it is long
// (STYLE: typically 5-40 lines; one over 60 needs a reason).
const maxFuncLines = 60

// longReason is the phrase a long function's doc comment gives its reason
// with.
const longReason = "Long on purpose:"

// TestLongFunctionsSayWhy: every function of the module (tests included,
// generated files excepted) over maxFuncLines lines has a doc comment with
// a "Long on purpose:" reason.
func TestLongFunctionsSayWhy(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) { // generated code answers to its generator
			return nil
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			checked++
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n > maxFuncLines && (fn.Doc == nil || !strings.Contains(fn.Doc.Text(), longReason)) {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d: %s is %d lines: split it, or say why in its doc comment (%q)",
					rel, fset.Position(fn.Pos()).Line, fn.Name.Name, n, longReason+" ...")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d functions under %s: the walk missed the sources", checked, root)
	}
}

// moduleRoot returns the directory of the module's go.mod, above the
// test's working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
