package housekeeping

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// module is the module's import path.
const module = "github.com/billingd/billing"

// importRule is one rule of docs/ARCHITECTURE.md's "Who may import what":
// the non-test files of the packages it applies to may import only what
// allowed accepts.
type importRule struct {
	name    string
	applies func(dir string) bool // dir: the package's directory, relative to the module ("." for the root)
	allowed func(path string) bool
	why     string
}

// standard reports whether path is of the standard library (no dot in its
// first element).
func standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// ours reports whether path is the module's package under dir (or dir
// itself); dir "" is any of the module's packages.
func ours(path, dir string) bool {
	if dir == "" {
		return path == module || strings.HasPrefix(path, module+"/")
	}
	p := module + "/" + dir
	return path == p || strings.HasPrefix(path, p+"/")
}

// under reports whether the package directory dir is top or below it.
func under(dir, top string) bool {
	return dir == top || strings.HasPrefix(dir, top+"/")
}

var importRules = []importRule{
	{
		name:    "the root package holds the domain",
		applies: func(dir string) bool { return dir == "." },
		allowed: func(p string) bool {
			return standard(p) || p == "github.com/cockroachdb/apd/v3" || p == "github.com/google/uuid" || ours(p, "internal")
		},
		why: "package billing imports only the standard library, apd, uuid and the module's internal/ packages",
	},
	{
		name:    "internal mechanisms are leaves",
		applies: func(dir string) bool { return under(dir, "internal") },
		allowed: func(p string) bool { return !ours(p, "") || ours(p, "internal") },
		why:     "internal/ packages never import the root or an edge package: the root decides, they only do",
	},
	{
		name: "the edge never reaches storage",
		applies: func(dir string) bool {
			return under(dir, "httpserver") || under(dir, "console") || under(dir, "dispatch")
		},
		allowed: func(p string) bool { return !ours(p, "storage") },
		why:     "httpserver, console and dispatch work through the Service; which store runs below is billingd's choice",
	},
	{
		name:    "storage backends are dumb",
		applies: func(dir string) bool { return under(dir, "storage") },
		allowed: func(p string) bool {
			return !ours(p, "") || p == module || ours(p, "storage") || ours(p, "internal") || ours(p, "billingtest")
		},
		why: "a Store stores, indexes, scans and counts: it imports the port (the root), never an edge package",
	},
}

// TestImportRules: every non-test file keeps the import rules of
// docs/ARCHITECTURE.md ("Who may import what").
func TestImportRules(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	walkSources(t, moduleRoot(t), false, func(rel string, fset *token.FileSet, f *ast.File) {
		dir := filepath.ToSlash(filepath.Dir(rel))
		for _, r := range importRules {
			if !r.applies(dir) {
				continue
			}
			seen[r.name] = true
			for _, imp := range f.Imports {
				path, err := strconv.Unquote(imp.Path.Value)
				if err != nil {
					t.Fatal(err)
				}
				if !r.allowed(path) {
					t.Errorf("%s:%d imports %s: %s (%s)", rel, fset.Position(imp.Pos()).Line, path, r.why, r.name)
				}
			}
		}
	})
	for _, r := range importRules {
		if !seen[r.name] {
			t.Errorf("rule %q applied to no file: the walk missed the sources", r.name)
		}
	}
}
