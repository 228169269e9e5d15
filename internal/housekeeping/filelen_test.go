package housekeeping

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"testing"
)

// maxRootFileLines is the length no file of the root package grows past:
// a concern that outgrows its file is split into files named for its parts
// (docs/ARCHITECTURE.md, "Where new code goes"). New features add files,
// not length.
const maxRootFileLines = 900

// TestRootFilesUnder900Lines: every non-test file of package billing has
// at most maxRootFileLines lines.
func TestRootFilesUnder900Lines(t *testing.T) {
	t.Parallel()
	checked := 0
	walkSources(t, moduleRoot(t), false, func(rel string, fset *token.FileSet, f *ast.File) {
		if filepath.Dir(rel) != "." {
			return
		}
		checked++
		if n := fset.File(f.Pos()).LineCount(); n > maxRootFileLines {
			t.Errorf("%s has %d lines, over %d: split it into files named for its parts", rel, n, maxRootFileLines)
		}
	})
	if checked < 20 {
		t.Fatalf("checked only %d root files: the walk missed the sources", checked)
	}
}
