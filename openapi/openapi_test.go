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
	if !json.Valid(jsonDoc) {
		t.Fatal("the document is not valid JSON")
	}
	converted, err := yaml.YAMLToJSON(YAML)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, converted); err != nil {
		t.Fatal(err)
	}
	if got, _ := JSON(); !bytes.Equal(got, want.Bytes()) {
		t.Fatal("json.gen.go is not openapi.yaml as JSON: run go generate ./openapi")
	}
}
