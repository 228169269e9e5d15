package httpserver

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// The other direction of checkContract: a field the server requires must
// be required in the document, so that a client generated from it never
// leaves out what the server then refuses.

// requiredMessage matches the server's "is required" refusals of one field
// (a condition after them, "is required for METRIC credit", is not a
// requirement the document's schema can state, and is not matched).
var requiredMessage = regexp.MustCompile(`^(\S+) is required( \(.*\)| and must not be blank)?$`)

// conditionallyRequired are the body fields the server requires only with
// some value of another field (a usage metric for usage-based pricing
// types, a seat metric for SEAT_BASED): a schema cannot say so, and the
// document describes the condition in words.
var conditionallyRequired = map[string]bool{"structure.usageMetricId": true, "structure.seatMetricId": true}

// checkRequiredAgree fails when an answer of op refuses a body field as
// required that the document's request body leaves optional.
func (e *env) checkRequiredAgree(op *openapi3.Operation, method, target string, res response) {
	e.tb.Helper()
	if res.status != http.StatusBadRequest || op == nil || op.RequestBody == nil || op.RequestBody.Value == nil {
		return
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		return
	}
	var body errorBody
	if json.Unmarshal(res.body, &body) != nil {
		return
	}
	for _, we := range body.Errors {
		m := requiredMessage.FindStringSubmatch(we.Message)
		if we.Code != "validation_failed" || m == nil || we.Field == "" || conditionallyRequired[we.Field] {
			continue
		}
		parent, name := schemaParent(mt.Schema.Value, we.Field)
		if parent == nil || name != lastSegment(m[1]) {
			continue
		}
		if !slices.Contains(parent.Required, name) {
			e.tb.Errorf("contract: %s %s answers %q on %s, but openapi.yaml does not require it", method, target, we.Message, we.Field)
		}
	}
}

// lastSegment is the last member name of a JSON path (a.b[2].c → c).
func lastSegment(path string) string {
	path = path[strings.LastIndex(path, ".")+1:]
	if i := strings.Index(path, "["); i >= 0 {
		path = path[:i]
	}
	return path
}

// schemaParent walks a JSON path (customerBillingAddress.postcode,
// events[3].eventType) down schema and returns the object schema holding
// its last member and that member's name; nil when the path leaves the
// schema.
func schemaParent(schema *openapi3.Schema, path string) (*openapi3.Schema, string) {
	parts := strings.Split(path, ".")
	for i, part := range parts {
		name, index := part, ""
		if j := strings.Index(part, "["); j >= 0 {
			name, index = part[:j], part[j:]
		}
		schema = objectOf(schema)
		if schema == nil {
			return nil, ""
		}
		if i == len(parts)-1 && index == "" {
			return schema, name
		}
		p := schema.Properties[name]
		if p == nil || p.Value == nil {
			return nil, ""
		}
		schema = p.Value
		for range strings.Count(index, "[") {
			schema = objectOf(schema)
			if schema == nil || schema.Items == nil {
				return nil, ""
			}
			schema = schema.Items.Value
		}
	}
	return nil, ""
}

// objectOf returns schema, or the one non-null alternative of a nullable
// anyOf/oneOf.
func objectOf(schema *openapi3.Schema) *openapi3.Schema {
	if schema == nil {
		return nil
	}
	for _, alts := range []openapi3.SchemaRefs{schema.AnyOf, schema.OneOf} {
		for _, a := range alts {
			if a.Value != nil && !a.Value.Type.Is("null") {
				return a.Value
			}
		}
	}
	return schema
}

// TestOpenAPIDocumentsRequiredFields: a request without each field the
// server requires is refused naming it, and the document requires it too
// (checkRequiredAgree runs on every answer of env.do; these requests make
// sure the fields the issue found optional in the document are visited).
func TestOpenAPIDocumentsRequiredFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	cust := e.customer("Required Ltd")
	inv := "/invoices/" + e.invoice(cust, "")["id"].(string)
	cn := e.creditNote(cust, "")["id"].(string)
	for _, c := range []struct{ path, body, field string }{
		{inv + "/line-items", `{"title":"x","quantity":"1","rate":"1","taxRate":"0"}`, "externalIds"},
		{"/credit-notes/" + cn + "/line-items", `{"title":"x","quantity":"1","rate":"1","taxRate":"0","externalIds":[]}`, "creditNoteId"},
		{"/seat-events", `{"customerAlias":"a","seatType":"seat","total":1}`, "eventTimestamp"},
		{"/customers", `{"legalName":"x","address":{"line1":"1 Road","town":"Leeds","country":"GB"}}`, "address.postcode"},
	} {
		wantError(t, e.post(c.path, c.body), http.StatusBadRequest, "validation_failed", c.field)
	}
}

// TestOpenAPIDocumentsErrorAnswers checks that every operation with
// credentials documents its 4xx answers (not only default), so generated
// clients get typed errors: 400, 401 and 429 everywhere, 404 with a path
// id, 409 on every change, 413 and 415 with a body, 422 with an
// Idempotency-Key; and that checkRequiredAgree catches a drift.
func TestOpenAPIDocumentsErrorAnswers(t *testing.T) {
	t.Parallel()
	c := mustContract(t)
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.Security != nil && len(*op.Security) == 0 {
				if path != "/metrics" && op.Responses.Status(http.StatusRequestHeaderFieldsTooLarge) == nil {
					t.Errorf("%s %s: no 431", method, path)
				}
				continue
			}
			want := []int{400, 401, 429}
			if strings.Contains(path, "{") {
				want = append(want, 404)
			}
			if method != http.MethodGet {
				want = append(want, 409)
			}
			if op.RequestBody != nil {
				want = append(want, 413, 415)
			}
			for _, code := range want {
				if op.Responses.Status(code) == nil {
					t.Errorf("%s %s: openapi.yaml does not document %d", method, path, code)
				}
			}
		}
	}
	// The check of required fields fails on a drift.
	var rec recorderTB
	probe := &env{tb: &rec}
	op := c.doc.Paths.Find("/customers").Post
	res := response{status: 400, body: []byte(`{"errors":[{"code":"validation_failed","message":"email is required","field":"contacts[0].email"}]}`)}
	probe.checkRequiredAgree(op, "POST", "/customers", res)
	res.body = []byte(`{"errors":[{"code":"validation_failed","message":"nickname is required","field":"nickname"}]}`)
	if probe.checkRequiredAgree(op, "POST", "/customers", res); !rec.failed {
		t.Error("a field the server requires and the document leaves optional passed the check")
	}
}
