package openapi

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/goccy/go-yaml"
)

// TestJSONIsTheYAML: the JSON served is openapi.yaml converted now, byte
// for byte: json.gen.go is regenerated (go generate ./openapi) whenever
// openapi.yaml changes.
func TestJSONIsTheYAML(t *testing.T) {
	t.Parallel()
	j, err := yaml.YAMLToJSON(YAML)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, j); err != nil {
		t.Fatal(err)
	}
	got, err := JSON()
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("json.gen.go is not openapi.yaml as JSON (%v): run go generate ./openapi", err)
	}
	if !json.Valid(got) {
		t.Fatal("the document is not valid JSON")
	}
}
