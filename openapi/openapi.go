// Package openapi holds the OpenAPI 3.1 description of the billingd HTTP API
// (openapi.yaml), embedded so that the server can serve it at
// GET /openapi.json and tests can check the server against it.
//
// The document is written by hand, in YAML. go generate converts it to
// JSON at build time (json.gen.go, by internal/genjson), so the server
// carries no YAML parser; TestJSONIsTheYAML fails when json.gen.go is
// older than openapi.yaml. httpserver's tests keep the document true: every
// route the server registers must be in it and every path in it registered,
// and every request and answer of the httpserver test suites is validated
// against it. The Go client in package client is generated from it
// (go generate ./...).
package openapi

import _ "embed"

//go:generate go run ./internal/genjson

// YAML is the OpenAPI document as written in openapi.yaml.
//
//go:embed openapi.yaml
var YAML []byte

// JSON returns the OpenAPI document as compact JSON, converted from
// openapi.yaml at build time. The caller must not modify the returned
// slice. The error is always nil (the conversion ran at build time); it
// stays for the callers written when the conversion ran here.
func JSON() ([]byte, error) { return jsonDoc, nil }

// jsonDoc is document as bytes, made once.
var jsonDoc = []byte(document)
