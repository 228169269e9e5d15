// Package openapi holds the OpenAPI 3.1 description of the billingd HTTP API
// (openapi.yaml), embedded so that the server can serve it at
// GET /openapi.json and tests can check the server against it.
//
// The document is written by hand. httpserver's tests keep it true: every
// route the server registers must be in it and every path in it registered,
// and every request and answer of the httpserver test suites is validated
// against it. The Go client in package client is generated from it
// (go generate ./...).
package openapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"sync"

	"github.com/goccy/go-yaml"
)

// YAML is the OpenAPI document as written in openapi.yaml.
//
//go:embed openapi.yaml
var YAML []byte

var jsonDoc = sync.OnceValues(func() ([]byte, error) {
	b, err := yaml.YAMLToJSON(YAML)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
})

// JSON returns the OpenAPI document converted to JSON, computed once. The
// caller must not modify the returned slice.
func JSON() ([]byte, error) { return jsonDoc() }
