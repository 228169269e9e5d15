package httpserver

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/dispatch"
	"github.com/billingd/billing/webhook"
)

// newNotifyEnv is an env on bbolt whose Service allows private webhook
// targets (the receivers of these tests listen on loopback).
func newNotifyEnv(t *testing.T) *env {
	t.Helper()
	return newEnv(t, nil, billingtest.WithBolt(), billingtest.WithConfig(billing.Config{WebhookAllowPrivate: true}))
}

// policyWire is the wire shape of a NotificationPolicy, members kept.
type policyWire map[string]any

func (e *env) createPolicy(body string) policyWire {
	e.tb.Helper()
	r := e.post("/notifications/policies", body)
	wantStatus(e.tb, r, http.StatusCreated)
	return decode[policyWire](e.tb, r)
}

func recipientsOf(p policyWire) []string {
	var out []string
	for _, r := range p["recipients"].([]any) {
		out = append(out, r.(string))
	}
	return out
}

func TestNotificationPolicyCreateAndGet(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t)
	hook := e.createPolicy(`{"name":"ops","channel":"WEBHOOK","recipients":["https://example.com/hooks"]}`)
	for _, k := range []string{"id", "createdAt", "serviceAccountId", "name", "recipients", "channel", "webhookSecret"} {
		if _, ok := hook[k]; !ok {
			t.Errorf("policy lacks %s: %v", k, hook)
		}
	}
	if _, ok := hook["notificationTypes"]; ok || len(hook) != 7 {
		t.Errorf("an all-types policy must not list notificationTypes: %v", hook)
	}
	if s, _ := hook["webhookSecret"].(string); !strings.HasPrefix(s, "whsec_") || len(s) != len("whsec_")+44 {
		t.Errorf("generated secret %q, want whsec_ + base64 of 32 bytes", s)
	}
	if hook["serviceAccountId"] != e.account || hook["createdAt"] != "2024-07-30T12:00:00Z" {
		t.Errorf("policy %v", hook)
	}
	mail := e.createPolicy(`{"name":"finance","channel":"EMAIL","recipients":["cfo@example.com"],"notificationTypes":["INVOICE_ISSUED","CREDIT_NOTE_ISSUED"]}`)
	if _, ok := mail["webhookSecret"]; ok {
		t.Errorf("an EMAIL policy has a webhookSecret: %v", mail)
	}
	if fmt.Sprint(mail["notificationTypes"]) != "[INVOICE_ISSUED CREDIT_NOTE_ISSUED]" {
		t.Errorf("notificationTypes %v", mail["notificationTypes"])
	}
	supplied := "whsec_" + strings.Repeat("QUFB", 8) // 24 bytes
	own := e.createPolicy(`{"name":"own","channel":"WEBHOOK","recipients":["https://example.com/x"],"webhookSecret":"` + supplied + `"}`)
	if own["webhookSecret"] != supplied {
		t.Errorf("supplied secret not kept: %v", own["webhookSecret"])
	}

	// Operation 21.
	id := hook["id"].(string)
	r := e.get("/notifications/policies/" + id)
	wantStatus(t, r, http.StatusOK)
	if got := decode[policyWire](t, r); fmt.Sprint(got) != fmt.Sprint(hook) {
		t.Errorf("GET = %v, want %v", got, hook)
	}
	wantError(t, e.get("/notifications/policies/00000000-0000-7000-8000-000000000000"), 404, billing.CodeNotFound)
	_, otherAuth := e.newAccount("other")
	wantError(t, e.do(req{method: "GET", path: "/notifications/policies/" + id, auth: otherAuth}), 404, billing.CodeNotFound)

	ids := e.ids("/notifications/policies?notificationType=INVOICE_ISSUED")
	if len(ids) != 3 { // hook and own cover every type
		t.Errorf("filtered list %v, want 3 policies", ids)
	}
	if ids := e.ids("/notifications/policies?notificationType=CUSTOMER_CREATED"); len(ids) != 2 {
		t.Errorf("filtered list %v, want the 2 all-types policies", ids)
	}
	wantError(t, e.get("/notifications/policies?notificationType=NOPE"), 400, billing.CodeValidationFailed, "notificationType")

	r = e.del("/notifications/policies/" + id)
	wantStatus(t, r, http.StatusOK)
	wantError(t, e.get("/notifications/policies/"+id), 404, billing.CodeNotFound)
}

func TestNotificationPolicyValidation(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t)
	long := "https://example.com/" + strings.Repeat("a", 2030)
	for _, tc := range []struct {
		name, body string
		fields     []string
	}{
		{"ErrRequired", `{}`, []string{"name", "channel"}},
		{"ErrChannel", `{"name":"x","channel":"SMS","recipients":["a@b.c"]}`, []string{"channel"}},
		{"ErrNoRecipients", `{"name":"x","channel":"WEBHOOK","recipients":[]}`, []string{"recipients"}},
		{"ErrWebhookRecipients", `{"name":"x","channel":"WEBHOOK","recipients":["ftp://example.com","https://user:pw@example.com/","/relative","https:///nohost","` + long + `","https://ok.example.com/"]}`,
			[]string{"recipients[0]", "recipients[1]", "recipients[2]", "recipients[3]", "recipients[4]"}},
		{"ErrEmailRecipients", `{"name":"x","channel":"EMAIL","recipients":["Bob <bob@example.com>","no-at","ok@example.com"]}`,
			[]string{"recipients[0]", "recipients[1]"}},
		{"ErrTypes", `{"name":"x","channel":"EMAIL","recipients":["a@example.com"],"notificationTypes":["CUSTOMER_CREATED","CUSTOMER_DELETED"]}`,
			[]string{"notificationTypes[1]"}},
		{"ErrSecretShort", `{"name":"x","channel":"WEBHOOK","recipients":["https://example.com"],"webhookSecret":"whsec_QUFBQUFB"}`, []string{"webhookSecret"}},
		{"ErrSecretPrefix", `{"name":"x","channel":"WEBHOOK","recipients":["https://example.com"],"webhookSecret":"` + strings.Repeat("QUFB", 10) + `"}`, []string{"webhookSecret"}},
		{"ErrSecretOnEmail", `{"name":"x","channel":"EMAIL","recipients":["a@example.com"],"webhookSecret":"whsec_` + strings.Repeat("QUFB", 10) + `"}`, []string{"webhookSecret"}},
		{"ErrUnknownField", `{"name":"x","channel":"EMAIL","recipients":["a@example.com"],"id":"mine"}`, []string{"id"}},
		{"ErrWrongType", `{"name":"x","channel":"EMAIL","recipients":"a@example.com"}`, []string{"recipients"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, e.post("/notifications/policies", tc.body), 400, billing.CodeValidationFailed, tc.fields...)
		})
	}
	t.Run("ErrHTTPWithoutAllowPrivate", func(t *testing.T) {
		strict := newEnv(t, nil)
		wantError(t, strict.post("/notifications/policies", `{"name":"x","channel":"WEBHOOK","recipients":["http://example.com/hook"]}`),
			400, billing.CodeValidationFailed, "recipients[0]")
	})
	t.Run("HTTPWithAllowPrivate", func(t *testing.T) {
		e.createPolicy(`{"name":"x","channel":"WEBHOOK","recipients":["http://example.com/hook"]}`)
	})
}

// TestAddRecipients is operation 20: set semantics, order kept, limit 100.
func TestAddRecipients(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t)
	p := e.createPolicy(`{"name":"x","channel":"WEBHOOK","recipients":["https://a.example.com","https://b.example.com"]}`)
	path := "/notifications/policies/" + p["id"].(string) + "/recipients"
	r := e.post(path, `{"recipients":["https://c.example.com","https://a.example.com","https://c.example.com"]}`)
	wantStatus(t, r, http.StatusOK)
	got := decode[policyWire](t, r)
	if want := "[https://a.example.com https://b.example.com https://c.example.com]"; fmt.Sprint(recipientsOf(got)) != want {
		t.Errorf("recipients %v, want %s", recipientsOf(got), want)
	}
	if got["webhookSecret"] != p["webhookSecret"] || got["id"] != p["id"] {
		t.Errorf("op 20 must return the whole policy: %v", got)
	}
	wantError(t, e.post(path, `{"recipients":["a@example.com","https://d.example.com"]}`), 400, billing.CodeValidationFailed, "recipients[0]")
	wantError(t, e.post(path, `{"recipients":[]}`), 400, billing.CodeValidationFailed, "recipients")
	var many []string
	for i := range 98 {
		many = append(many, fmt.Sprintf(`"https://h%d.example.com"`, i))
	}
	wantError(t, e.post(path, `{"recipients":[`+strings.Join(many, ",")+`]}`), 400, billing.CodeValidationFailed, "recipients")
	wantStatus(t, e.post(path, `{"recipients":[`+strings.Join(many[:97], ",")+`]}`), http.StatusOK)
	wantError(t, e.post("/notifications/policies/00000000-0000-7000-8000-000000000000/recipients", `{"recipients":["https://x.example.com"]}`), 404, billing.CodeNotFound)
}

// TestRemoveRecipient: the recipient is the escaped last path segment.
func TestRemoveRecipient(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t)
	p := e.createPolicy(`{"name":"x","channel":"WEBHOOK","recipients":["https://a.example.com/hooks/in?x=a%2Fb","https://b.example.com/"]}`)
	base := "/notifications/policies/" + p["id"].(string) + "/recipients/"
	r := e.del(base + url.PathEscape("https://a.example.com/hooks/in?x=a%2Fb"))
	wantStatus(t, r, http.StatusOK)
	if got := recipientsOf(decode[policyWire](t, r)); fmt.Sprint(got) != "[https://b.example.com/]" {
		t.Errorf("recipients %v", got)
	}
	wantError(t, e.del(base+url.PathEscape("https://c.example.com/")), 404, billing.CodeNotFound)
	// Fully escaped (":" too) works as well.
	wantError(t, e.del(base+url.QueryEscape("https://b.example.com/")), 409, billing.CodeInvalidState)

	mail := e.createPolicy(`{"name":"m","channel":"EMAIL","recipients":["a@example.com","b@example.com"]}`)
	r = e.del("/notifications/policies/" + mail["id"].(string) + "/recipients/a%40example.com")
	wantStatus(t, r, http.StatusOK)
	if got := recipientsOf(decode[policyWire](t, r)); fmt.Sprint(got) != "[b@example.com]" {
		t.Errorf("recipients %v", got)
	}
}

func TestNotificationTypesEndpoints(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t)
	p := e.createPolicy(`{"name":"x","channel":"EMAIL","recipients":["a@example.com"],"notificationTypes":["INVOICE_ISSUED"]}`)
	base := "/notifications/policies/" + p["id"].(string) + "/notification-types"
	r := e.post(base, `{"notificationTypes":["CREDIT_NOTE_ISSUED","INVOICE_ISSUED"]}`)
	wantStatus(t, r, http.StatusOK)
	if got := decode[policyWire](t, r)["notificationTypes"]; fmt.Sprint(got) != "[INVOICE_ISSUED CREDIT_NOTE_ISSUED]" {
		t.Errorf("types %v", got)
	}
	wantError(t, e.post(base, `{"notificationTypes":["NOPE"]}`), 400, billing.CodeValidationFailed, "notificationTypes[0]")
	wantStatus(t, e.del(base+"/INVOICE_ISSUED"), http.StatusOK)
	wantError(t, e.del(base+"/INVOICE_ISSUED"), 404, billing.CodeNotFound)
	wantError(t, e.del(base+"/CREDIT_NOTE_ISSUED"), 409, billing.CodeInvalidState)
	wantError(t, e.del(base+"/NOPE"), 400, billing.CodeValidationFailed, "type")

	all := e.createPolicy(`{"name":"all","channel":"EMAIL","recipients":["a@example.com"]}`)
	r = e.del("/notifications/policies/" + all["id"].(string) + "/notification-types/QUOTE_ACCEPTED")
	wantStatus(t, r, http.StatusOK)
	types := decode[policyWire](t, r)["notificationTypes"].([]any)
	if len(types) != len(billing.NotificationTypes())-1 || fmt.Sprint(types) != strings.Replace(fmt.Sprint(billing.NotificationTypes()), " QUOTE_ACCEPTED", "", 1) {
		t.Errorf("after removing one type from an all-types policy: %v", types)
	}
}

func TestRotateSecretEndpoint(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t)
	p := e.createPolicy(`{"name":"x","channel":"WEBHOOK","recipients":["https://a.example.com"]}`)
	r := e.post("/notifications/policies/"+p["id"].(string)+"/rotate-secret", "")
	wantStatus(t, r, http.StatusOK)
	if s := decode[policyWire](t, r)["webhookSecret"]; s == p["webhookSecret"] || !strings.HasPrefix(s.(string), "whsec_") {
		t.Errorf("rotated secret %v (was %v)", s, p["webhookSecret"])
	}
	m := e.createPolicy(`{"name":"m","channel":"EMAIL","recipients":["a@example.com"]}`)
	wantError(t, e.post("/notifications/policies/"+m["id"].(string)+"/rotate-secret", ""), 409, billing.CodeInvalidState)
}

// TestDeliveriesEndpoints: a customer created over HTTP is delivered by a
// dispatcher; the list shows its attempts and a retry re-queues it.
func TestDeliveriesEndpoints(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t)
	status := http.StatusInternalServerError
	var ids []string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ids = append(ids, r.Header.Get("webhook-id"))
		w.WriteHeader(status)
	}))
	defer recv.Close()
	p := e.createPolicy(`{"name":"x","channel":"WEBHOOK","recipients":["` + recv.URL + `"]}`)
	e.create("/customers", `{"legalName":"Initech"}`)
	d := dispatch.New(e.svc, dispatch.Config{Webhooks: webhook.NewSender(true)})
	run := func() {
		t.Helper()
		if _, err := d.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	run()
	r := e.get("/notifications/deliveries?status=PENDING&policyId=" + p["id"].(string))
	wantStatus(t, r, http.StatusOK)
	pg := decode[page](t, r)
	if len(pg.Items) != 1 {
		t.Fatalf("pending deliveries %s", r.body)
	}
	dl := pg.Items[0]
	attempts := dl["attempts"].([]any)
	if len(attempts) != 1 || attempts[0].(map[string]any)["statusCode"] != float64(500) || dl["notificationType"] != "CUSTOMER_CREATED" {
		t.Errorf("delivery %v", dl)
	}
	if ids := e.ids("/notifications/deliveries?notificationId=" + dl["notificationId"].(string)); len(ids) != 1 {
		t.Errorf("by notificationId: %v", ids)
	}
	if ids := e.ids("/notifications/deliveries?status=SUCCEEDED"); len(ids) != 0 {
		t.Errorf("SUCCEEDED: %v", ids)
	}
	wantError(t, e.get("/notifications/deliveries?status=DONE"), 400, billing.CodeValidationFailed, "status")
	retry := "/notifications/deliveries/" + dl["id"].(string) + "/retry"
	wantError(t, e.post(retry, ""), 409, billing.CodeInvalidState)

	status = http.StatusOK
	e.clock.Advance(6 * 1e9)
	run()
	if ids := e.ids("/notifications/deliveries?status=SUCCEEDED"); len(ids) != 1 {
		t.Fatalf("SUCCEEDED after the retry: %v", ids)
	}
	r = e.post(retry, "")
	wantStatus(t, r, http.StatusOK)
	if got := decode[map[string]any](t, r)["status"]; got != "PENDING" {
		t.Errorf("status after retry %v", got)
	}
	run()
	if len(ids) != 3 || ids[0] != ids[1] || ids[1] != ids[2] {
		t.Errorf("webhook-ids %v, want the same id three times", ids)
	}
	wantError(t, e.post("/notifications/deliveries/00000000-0000-7000-8000-000000000000/retry", ""), 404, billing.CodeNotFound)
}
