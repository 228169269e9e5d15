package billing_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/billingd/billing"
)

func TestCodeOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want billing.Code
	}{
		{nil, ""},
		{billing.Errorf(billing.CodeInvalidState, "x"), billing.CodeInvalidState},
		{fmt.Errorf("wrapped: %w", billing.FieldError("limit", "bad")), billing.CodeValidationFailed},
		{billing.ValidationErrors{billing.FieldError("a", "x")}, billing.CodeValidationFailed},
		{fmt.Errorf("get: %w", billing.ErrNotFound), billing.CodeNotFound},
		{billing.ErrConflict, billing.CodeConflict},
		{fmt.Errorf("disk: %w", billing.ErrUnavailable), billing.CodeUnavailable},
		{billing.ErrClosed, billing.CodeUnavailable},
		{context.Canceled, billing.CodeUnavailable},
		{errors.New("something broke"), billing.CodeInternal},
	} {
		if got := billing.CodeOf(tc.err); got != tc.want {
			t.Errorf("CodeOf(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestErrorsNeverLeakCauses(t *testing.T) {
	t.Parallel()
	errs := billing.Errors(fmt.Errorf("open /var/lib/secret.db: %w", errors.New("permission denied")))
	if len(errs) != 1 || errs[0].Code != billing.CodeInternal || errs[0].Message != "internal error" || errs[0].Err == nil {
		t.Fatalf("Errors = %+v", errs)
	}
	two := billing.ValidationErrors{billing.FieldError("a", "x"), billing.FieldError("b", "y")}
	if got := billing.Errors(fmt.Errorf("ctx: %w", two)); len(got) != 2 || got[1].Field != "b" {
		t.Fatalf("Errors(ValidationErrors) = %+v", got)
	}
}
