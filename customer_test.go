package billing_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/google/go-cmp/cmp"
)

func createCustomer(tb testing.TB, svc *billing.Service, account, name string, aliases ...string) *billing.Customer {
	tb.Helper()
	return must(svc.CreateCustomer(context.Background(), account, billing.CustomerParams{LegalName: name, CustomerAliases: aliases})).of(tb, "CreateCustomer")
}

func TestCreateCustomerValidation(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	acct := billingtest.Account(t, svc, "a")
	tests := []struct {
		name   string
		p      billing.CustomerParams
		fields []string
	}{
		{"ErrEverything", billing.CustomerParams{
			TaxStatus:       "FREE",
			CustomerAliases: []string{"a,b", "x", "x", ""},
			Address:         &billing.Address{Country: "gb"},
			Contacts:        []billing.Contact{{Email: "nope", BillingPreference: "ALL"}, {Email: "a@b.c"}},
		}, []string{
			"legalName", "taxStatus", "customerAliases[0]", "customerAliases[2]", "customerAliases[3]",
			"address.line1", "address.town", "address.postcode", "address.country",
			"contacts[0].email", "contacts[0].billingPreference", "contacts[1].billingPreference",
		}},
		{"ErrControlCharacters", billing.CustomerParams{LegalName: "a\x01"}, []string{"legalName"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := svc.CreateCustomer(context.Background(), acct, tc.p)
			if diff := cmp.Diff(tc.fields, errFields(t, err, billing.CodeValidationFailed)); diff != "" {
				t.Fatalf("invalid fields (-want +got):\n%s", diff)
			}
		})
	}
}

// Long on purpose: one scenario walked in order; each step starts from the state the previous steps
// left, so pieces would repeat the set-up.
func TestCustomerLifecycle(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, clock *billingtest.Clock) {
		ctx := context.Background()
		acct := billingtest.Account(t, svc, "a")
		p := billing.CustomerParams{
			LegalName: "Acme Ltd", CustomerAliases: []string{"acme", "acme-eu"},
			Address: &billing.Address{Line1: "1 Road", Town: "London", Postcode: "N1", Country: "GB"},
			Contacts: []billing.Contact{
				{Name: "Bob", Email: "bob@acme.test", BillingPreference: billing.BillingPreferenceStandard},
				{Name: "Al", Email: "al@acme.test", BillingPreference: billing.BillingPreferenceNone},
				{Name: "Ann", Email: "ann@acme.test", BillingPreference: billing.BillingPreferencePrimary},
			},
		}
		c, err := svc.CreateCustomer(ctx, acct, p)
		if err != nil {
			t.Fatal(err)
		}
		if c.TaxStatus != billing.TaxStatusTaxed || c.ServiceAccountID != acct || !c.CreatedAt.Equal(billingtest.Start) {
			t.Fatalf("created = %+v", c)
		}
		if got := c.BillingEmails(); !slices.Equal(got, []string{"ann@acme.test", "bob@acme.test"}) {
			t.Fatalf("BillingEmails = %v", got)
		}
		got, err := svc.GetCustomer(ctx, acct, c.ID)
		if diff := cmp.Diff(c, got); err != nil || diff != "" {
			t.Fatalf("read back (-created +read):\n%s %v", diff, err)
		}

		t.Run("ConflictOnTakenAlias", func(t *testing.T) {
			_, err := svc.CreateCustomer(ctx, acct, billing.CustomerParams{LegalName: "B", CustomerAliases: []string{"new", "acme-eu"}})
			if f := errFields(t, err, billing.CodeConflict); !slices.Equal(f, []string{"customerAliases[1]"}) {
				t.Fatalf("fields %v", f)
			}
			_, err = svc.CreateCustomer(ctx, acct, billing.CustomerParams{LegalName: "B", CustomerAliases: []string{c.ID}})
			if billing.CodeOf(err) != billing.CodeConflict {
				t.Fatalf("alias equal to a customer id: %v", err)
			}
			if _, err := svc.CreateCustomer(ctx, acct, billing.CustomerParams{LegalName: "B", CustomerAliases: []string{"new"}}); err != nil {
				t.Fatalf("a failed create kept its aliases: %v", err)
			}
		})

		clock.Advance(time.Hour)
		p.CustomerAliases = []string{"acme-eu", "acme-us"}
		p.LegalName, p.Address = "Acme Inc", nil
		up, err := svc.UpdateCustomer(ctx, acct, c.ID, p)
		if err != nil {
			t.Fatal(err)
		}
		if up.LegalName != "Acme Inc" || up.Address != nil || !up.UpdatedAt.Equal(clock.Now()) || !slices.Equal(up.CustomerAliases, p.CustomerAliases) {
			t.Fatalf("updated = %+v", up)
		}
		if _, err := svc.CreateCustomer(ctx, acct, billing.CustomerParams{LegalName: "C", CustomerAliases: []string{"acme"}}); err != nil {
			t.Fatalf("a dropped alias is still taken: %v", err)
		}
		arch, err := svc.ArchiveCustomer(ctx, acct, c.ID)
		if err != nil || arch.ArchivedAt == nil || !arch.ArchivedAt.Equal(clock.Now()) {
			t.Fatalf("ArchiveCustomer = %+v, %v", arch, err)
		}
		clock.Advance(time.Hour)
		if again, err := svc.ArchiveCustomer(ctx, acct, c.ID); err != nil || !again.ArchivedAt.Equal(*arch.ArchivedAt) {
			t.Fatalf("archiving twice changed archivedAt: %+v, %v", again, err)
		}
		page, err := svc.ListCustomers(ctx, acct, billing.CustomerFilter{SortOrder: billing.SortAsc}, billing.ListParams{})
		if err != nil || page.TotalResultSize != 3 || page.Items[0].ID != c.ID {
			t.Fatalf("list = %+v, %v", page, err)
		}
	})
}

func TestResolveAliases(t *testing.T) {
	t.Parallel()
	svc, ctx, a, b := newTenants(t)
	acme := createCustomer(t, svc, a, "Acme", "acme", "acme-2")
	other := createCustomer(t, svc, b, "Other", "other")
	for _, tc := range []struct {
		name   string
		values []string
		want   []string
	}{
		{"ByAlias", []string{"acme-2"}, []string{acme.ID, "acme", "acme-2"}},
		{"ByID", []string{acme.ID}, []string{acme.ID, "acme", "acme-2"}},
		{"UnclaimedStandsForItself", []string{"zed", "acme"}, []string{acme.ID, "acme", "acme-2", "zed"}},
		{"OtherAccountIsUnknown", []string{"other", other.ID}, []string{other.ID, "other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := svc.ResolveAliases(ctx, a, tc.values)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("resolveAliases(%v) = %v, %v; want %v", tc.values, got, err, want)
			}
		})
	}
}

func TestCustomersAreInvisibleToOtherAccounts(t *testing.T) {
	t.Parallel()
	svc, ctx, a, b := newTenants(t)
	c := createCustomer(t, svc, a, "Acme", "acme")
	if _, err := svc.GetCustomer(ctx, b, c.ID); billing.CodeOf(err) != billing.CodeNotFound {
		t.Fatalf("B reads A's customer: %v", err)
	}
	if _, err := svc.UpdateCustomer(ctx, b, c.ID, billing.CustomerParams{LegalName: "x"}); billing.CodeOf(err) != billing.CodeNotFound {
		t.Fatalf("B updates A's customer: %v", err)
	}
	if _, err := svc.ArchiveCustomer(ctx, b, c.ID); billing.CodeOf(err) != billing.CodeNotFound {
		t.Fatalf("B archives A's customer: %v", err)
	}
	// Aliases are unique per account, not globally.
	createCustomer(t, svc, b, "Acme B", "acme")
}
