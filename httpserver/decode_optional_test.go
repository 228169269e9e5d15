package httpserver

import (
	"testing"

	"github.com/billingd/billing"
)

// TestDecodeOptional: the decoder tells an absent field from a null one and
// from a value, and checks the value inside billing.Optional[T] as a T, so
// every error inside it is reported with its full path.
func TestDecodeOptional(t *testing.T) {
	t.Parallel()
	var p billing.PatchSentInvoiceParams
	if err := decodeJSON([]byte(`{"memo":null,"dueDate":"2024-09-01","customerBillingAddress":{"line1":"1","town":"t","postcode":"p","country":"GB"}}`), &p); err != nil {
		t.Fatal(err)
	}
	switch {
	case p.PurchaseOrderNumber.Set:
		t.Error("an absent field is Set")
	case !p.Memo.Set || !p.Memo.Null:
		t.Errorf("memo:null = %+v, want Set and Null", p.Memo)
	case !p.DueDate.Set || p.DueDate.Null || p.DueDate.Value.String() != "2024-09-01":
		t.Errorf("dueDate = %+v", p.DueDate)
	case p.CustomerBillingAddress.Value.Town != "t":
		t.Errorf("address = %+v", p.CustomerBillingAddress)
	}

	err := decodeJSON([]byte(`{"customerBillingAddress":{"line1":1,"town":"t","zip":"z"},"dueDate":"2024-02-30","memo":["m"]}`), &p)
	var got []string
	for _, e := range billing.Errors(err) {
		if e.Code != billing.CodeValidationFailed {
			t.Errorf("code %s: %v", e.Code, e)
		}
		got = append(got, e.Field)
	}
	want := []string{"customerBillingAddress.line1", "customerBillingAddress.zip", "dueDate", "memo"}
	if len(got) != len(want) {
		t.Fatalf("fields = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("fields = %q, want %q", got, want)
		}
	}
}
