package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestLibraryExampleServesARequest builds and runs the README's library
// program and makes the request it prints: it must succeed and list the
// metric the program created. The README must show the program verbatim.
func TestLibraryExampleServesARequest(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```go\n"+string(src)+"```") {
		t.Error("README.md does not show examples/library/main.go verbatim")
	}

	bin := filepath.Join(t.TempDir(), "library")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "billing.db"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	m := waitForCurl(t, stdout, &stderr)
	req, _ := http.NewRequest("GET", m[2], nil)
	req.Header.Set("Authorization", m[1])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"name":"API calls"`) {
		t.Errorf("the printed request answered %d %s", resp.StatusCode, body)
	}
	if stderr.Len() != 0 {
		t.Errorf("the library printed on stderr (no logger was given):\n%s", stderr.String())
	}
}

// waitForCurl reads the program's stdout until its curl line and returns
// the line's Authorization value and URL; gin debug lines fail the test.
func waitForCurl(t *testing.T, stdout io.Reader, stderr *strings.Builder) []string {
	t.Helper()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	curl := regexp.MustCompile(`^curl -H 'Authorization: (Basic \S+)' (http://\S+)$`)
	var m []string
	for m == nil {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the program ended without printing its curl line; stderr:\n%s", stderr.String())
			}
			if strings.Contains(l, "[GIN") {
				t.Errorf("the library printed gin's debug lines: %s", l)
			}
			m = curl.FindStringSubmatch(l)
		case <-time.After(30 * time.Second):
			t.Fatal("no curl line within 30s")
		}
	}
	return m
}
