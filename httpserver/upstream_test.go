package httpserver

import (
	"net/http"
	"strings"
	"testing"

	"github.com/billingd/billing"
)

// Tests of what the server does for clients of the upstream API.

func TestSequenceVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	get := func(header, value string) response {
		return e.do(req{method: "GET", path: "/usage-metrics", header: map[string]string{header: value}})
	}
	t.Run("Supported", func(t *testing.T) {
		wantStatus(t, get("Sequence-Version", billing.APIVersion), http.StatusOK)
	})
	t.Run("ErrUnsupportedVersion", func(t *testing.T) {
		wantError(t, get("Sequence-Version", "1999-01-01"), http.StatusBadRequest, CodeUnsupportedVersion, "Sequence-Version")
	})
	t.Run("ServiceVersionStillChecked", func(t *testing.T) {
		r := e.do(req{method: "GET", path: "/usage-metrics", header: map[string]string{
			"Sequence-Version": billing.APIVersion, "Service-Version": "1999-01-01"}})
		wantError(t, r, http.StatusBadRequest, CodeUnsupportedVersion, "Service-Version")
	})
}

// TestNullListIsEmpty sends externalIds: null on op 13 (a credit note line)
// and op 18 (an invoice line update): null means an empty list; a missing
// externalIds is still refused where it is required.
func TestNullListIsEmpty(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	cust := e.customer("Acme Ltd")
	cn, cnPath := e.newDraftCreditNote(cust)
	nullIDs := func(body string) string { return strings.Replace(body, `"externalIds":[]`, `"externalIds":null`, 1) }
	t.Run("Op13", func(t *testing.T) {
		line := object(t, e.post(cnPath+"/line-items", nullIDs(cnLine(cn, "Refund", "1", "5", "0", ""))), http.StatusCreated, []string{"externalIds"})
		if ids, ok := line["externalIds"].([]any); !ok || len(ids) != 0 {
			t.Errorf("externalIds = %v, want []", line["externalIds"])
		}
	})
	t.Run("Op13ErrMissing", func(t *testing.T) {
		body := `{"creditNoteId":"` + cn + `","title":"x","quantity":"1","rate":"1","taxRate":"0"}`
		wantError(t, e.post(cnPath+"/line-items", body), http.StatusBadRequest, billing.CodeValidationFailed, "externalIds")
	})
	t.Run("Op18", func(t *testing.T) {
		_, invPath := e.newDraftInvoice(cust)
		line := e.create(invPath+"/line-items", strings.Replace(lineBody("Plan", "1", "10", "0.2", ""), `[]`, `[{"key":"k","value":"v"}]`, 1))
		r := e.put(invPath+"/line-items/"+line, nullIDs(lineBody("Plan", "2", "10", "0.2", "")))
		got := object(t, r, http.StatusOK, []string{"externalIds"})
		if ids, ok := got["externalIds"].([]any); !ok || len(ids) != 0 {
			t.Errorf("externalIds = %v, want []", got["externalIds"])
		}
	})
}

// TestSeatBalanceAlwaysHasChangeTimestamp: a customer without seat events
// has the time of its creation (op 8).
func TestSeatBalanceAlwaysHasChangeTimestamp(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	id := e.customer("Quiet Ltd")
	created := decode[map[string]any](t, e.get("/customers/"+id))["createdAt"]
	page := decode[struct{ Items []map[string]any }](t, e.get("/seat-balances?customerIds="+id))
	if len(page.Items) != 1 || page.Items[0]["changeTimestamp"] != created {
		t.Fatalf("balances = %v, want changeTimestamp %v", page.Items, created)
	}
}

// TestMerchantDetailsFullShape: documents carry merchantDetails with every
// field of the specification's MerchantDetails, set or not.
func TestMerchantDetailsFullShape(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	wantStatus(t, e.put("/merchant-details", `{"legalCompanyName":"Seller"}`), http.StatusOK)
	path := e.invoiceIn(e.customer("Acme Ltd"), "FINAL")
	md, ok := decode[map[string]any](t, e.get(path))["merchantDetails"].(map[string]any)
	if !ok {
		t.Fatal("the invoice has no merchantDetails")
	}
	if md["legalCompanyName"] != "Seller" || md["email"] != "" || md["includeBeneficiaryAddressInPaymentDetails"] != false {
		t.Errorf("merchantDetails = %v", md)
	}
	wantKeys(t, "merchantDetails", md, []string{"address", "phoneNumber", "email", "taxId", "iban", "ukAccountDetails",
		"usAchDetails", "usWireDetails", "caBankAccountDetails", "canadianInternationalDestination", "australianDestination",
		"swedishBankgiroDestination", "logoUrl", "legalCompanyName", "primaryColour", "customFields",
		"includeBeneficiaryAddressInPaymentDetails"})
	wantKeys(t, "address", md["address"].(map[string]any), []string{"line1", "line2", "town", "state", "postcode", "country"})
	cid := md["canadianInternationalDestination"].(map[string]any)
	wantKeys(t, "intermediaryBank", cid["intermediaryBank"].(map[string]any), []string{"bankName", "bankAddress", "swiftCode", "routingNumber"})
	draft, _ := e.newDraftInvoice(e.customer("Other Ltd"))
	if _, ok := decode[map[string]any](t, e.get("/invoices/"+draft))["merchantDetails"].(map[string]any); !ok {
		t.Error("a draft invoice has no merchantDetails")
	}
}

func TestUpstreamFieldNames(t *testing.T) {
	t.Parallel()
	t.Run("Off", func(t *testing.T) {
		e := newEnv(t, nil)
		e.createMetric("calls")
		if r := e.get("/usage-metrics"); strings.Contains(string(r.body), "sequenceAccountId") {
			t.Errorf("sequenceAccountId sent without the option: %s", r.body)
		}
	})
	t.Run("On", func(t *testing.T) {
		e := newEnv(t, &Config{UpstreamFieldNames: true})
		m := e.createMetric("calls")
		for _, r := range []response{e.get("/usage-metrics/" + m.ID), e.post("/usage-events", `{"customerAlias":"a","eventType":"api_call"}`)} {
			got := decode[map[string]any](t, r)
			if got["sequenceAccountId"] != e.account || got["serviceAccountId"] != e.account {
				t.Errorf("answer %s: want sequenceAccountId and serviceAccountId %s", r.body, e.account)
			}
		}
		page := decode[struct{ Items []map[string]any }](t, e.get("/usage-metrics"))
		if len(page.Items) != 1 || page.Items[0]["sequenceAccountId"] != e.account {
			t.Errorf("list items = %v", page.Items)
		}
	})
}

func TestUpstreamNamesLeaveStringsAlone(t *testing.T) {
	t.Parallel()
	s := &Server{cfg: Config{UpstreamFieldNames: true}}
	in := `{"memo":"a \"serviceAccountId\":\"x\" b","serviceAccountId":"acc","items":[{"serviceAccountId":"acc2"}]}`
	want := `{"memo":"a \"serviceAccountId\":\"x\" b","serviceAccountId":"acc","sequenceAccountId":"acc","items":[{"serviceAccountId":"acc2","sequenceAccountId":"acc2"}]}`
	if got := string(s.upstreamNames([]byte(in))); got != want {
		t.Errorf("upstreamNames =\n%s\nwant\n%s", got, want)
	}
}
