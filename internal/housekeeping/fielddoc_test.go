package housekeeping

import (
	"go/ast"
	"go/token"
	"testing"
)

// obviousFields are field names whose meaning the name and type say: the
// record's id, its creation and update times, and free texts for people.
// Every other exported field of an exported struct type says what it means
// (units, defaults, when empty, who sets it) in a comment.
var obviousFields = map[string]bool{
	"ID": true, "CreatedAt": true, "UpdatedAt": true,
	"Name": true, "Title": true, "Description": true, "Memo": true,
}

// TestExportedFieldsDocumented: every exported field of an exported struct
// type in the module's non-test, non-generated code has a doc or line
// comment, but for the obviousFields. A comment above several names on one
// line (Start, End time.Time) documents them all.
func TestExportedFieldsDocumented(t *testing.T) {
	t.Parallel()
	checked := 0
	walkSources(t, moduleRoot(t), false, func(rel string, fset *token.FileSet, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || !ts.Name.IsExported() {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, field := range st.Fields.List {
				for _, name := range field.Names {
					if !name.IsExported() {
						continue
					}
					checked++
					if field.Doc == nil && field.Comment == nil && !obviousFields[name.Name] {
						t.Errorf("%s:%d: %s.%s has no doc comment: say what it means (units, default, when empty)",
							rel, fset.Position(name.Pos()).Line, ts.Name.Name, name.Name)
					}
				}
			}
			return true
		})
	})
	if checked < 500 {
		t.Fatalf("checked only %d fields: the walk missed the sources", checked)
	}
}
