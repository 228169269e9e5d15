// Package billingdtest serves the tests that run the real billingd binary as
// a child process (cmd/billingd's, internal/crashtest's): it builds the
// binary and gives children an environment free of the developer's
// BILLINGD_ settings, so that nothing but a test's own flags and variables
// configures them.
package billingdtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build builds cmd/billingd into dir and returns the binary's path.
func Build(dir string) (string, error) {
	path := filepath.Join(dir, "billingd")
	out, err := exec.Command("go", "build", "-o", path, "github.com/billingd/billing/cmd/billingd").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return path, nil
}

// CleanEnv returns the test process's environment without BILLINGD_
// variables.
func CleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BILLINGD_") {
			env = append(env, kv)
		}
	}
	return env
}
