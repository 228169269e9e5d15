package housekeeping

import (
	"go/ast"
	"go/token"
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
	checked := 0
	walkSources(t, root, true, func(rel string, fset *token.FileSet, f *ast.File) {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			checked++
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n > maxFuncLines && (fn.Doc == nil || !strings.Contains(fn.Doc.Text(), longReason)) {
				t.Errorf("%s:%d: %s is %d lines: split it, or say why in its doc comment (%q)",
					rel, fset.Position(fn.Pos()).Line, fn.Name.Name, n, longReason+" ...")
			}
		}
	})
	if checked < 100 {
		t.Fatalf("checked only %d functions under %s: the walk missed the sources", checked, root)
	}
}
