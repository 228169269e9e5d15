package billing

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// KeyValue is a key and a value, for metadata, custom fields and external
// ids.
type KeyValue struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// UKAccountDetails are the details of a UK bank account.
type UKAccountDetails struct {
	SortCode      string `json:"sortCode,omitempty"`
	AccountNumber string `json:"accountNumber,omitempty"`
}

// USAchDetails are the details of a US ACH destination.
type USAchDetails struct {
	AccountNumber     string `json:"accountNumber,omitempty"`
	AccountName       string `json:"accountName,omitempty"`
	BankName          string `json:"bankName,omitempty"`
	BankRoutingNumber string `json:"bankRoutingNumber,omitempty"`
}

// USWireDetails are the details of a US wire destination.
type USWireDetails struct {
	AccountNumber     string   `json:"accountNumber,omitempty"`
	AccountName       string   `json:"accountName,omitempty"`
	BankName          string   `json:"bankName,omitempty"`
	BankRoutingNumber string   `json:"bankRoutingNumber,omitempty"`
	SwiftCode         string   `json:"swiftCode,omitempty"`
	BankAddress       *Address `json:"bankAddress,omitempty"`
}

// CABankAccountDetails are the details of a Canadian bank account.
type CABankAccountDetails struct {
	TransitNumber     string `json:"transitNumber,omitempty"`
	InstitutionNumber string `json:"institutionNumber,omitempty"`
	AccountNumber     string `json:"accountNumber,omitempty"`
}

// IntermediaryBank is the intermediary of an international transfer.
type IntermediaryBank struct {
	BankName      string   `json:"bankName,omitempty"`
	BankAddress   *Address `json:"bankAddress,omitempty"`
	SwiftCode     string   `json:"swiftCode,omitempty"`
	RoutingNumber string   `json:"routingNumber,omitempty"`
}

// CanadianInternationalDestination is a Canadian account for international
// transfers.
type CanadianInternationalDestination struct {
	LegalName         string            `json:"legalName,omitempty"`
	AccountNumber     string            `json:"accountNumber,omitempty"`
	TransitNumber     string            `json:"transitNumber,omitempty"`
	BankName          string            `json:"bankName,omitempty"`
	BankAddress       *Address          `json:"bankAddress,omitempty"`
	InstitutionNumber string            `json:"institutionNumber,omitempty"`
	SwiftCode         string            `json:"swiftCode,omitempty"`
	IntermediaryBank  *IntermediaryBank `json:"intermediaryBank,omitempty"`
}

// AustralianDestination is an Australian bank account.
type AustralianDestination struct {
	LegalName     string `json:"legalName,omitempty"`
	AccountNumber string `json:"accountNumber,omitempty"`
	SwiftCode     string `json:"swiftCode,omitempty"`
	BSB           string `json:"bsb,omitempty"`
}

// SwedishBankgiroDestination is a Swedish Bankgiro destination.
type SwedishBankgiroDestination struct {
	BankgiroNumber string `json:"bankgiroNumber,omitempty"`
	AccountName    string `json:"accountName,omitempty"`
}

// MerchantDetails are the account's own details as printed on invoices and
// credit notes: one record per account. Documents copy them when they are
// finalized, so later edits do not rewrite issued documents.
type MerchantDetails struct {
	Address                                   *Address                          `json:"address,omitempty"`
	PhoneNumber                               string                            `json:"phoneNumber,omitempty"`
	Email                                     string                            `json:"email,omitempty"`
	TaxID                                     string                            `json:"taxId,omitempty"`
	IBAN                                      string                            `json:"iban,omitempty"`
	UKAccountDetails                          *UKAccountDetails                 `json:"ukAccountDetails,omitempty"`
	USAchDetails                              *USAchDetails                     `json:"usAchDetails,omitempty"`
	USWireDetails                             *USWireDetails                    `json:"usWireDetails,omitempty"`
	CABankAccountDetails                      *CABankAccountDetails             `json:"caBankAccountDetails,omitempty"`
	CanadianInternationalDestination          *CanadianInternationalDestination `json:"canadianInternationalDestination,omitempty"`
	AustralianDestination                     *AustralianDestination            `json:"australianDestination,omitempty"`
	SwedishBankgiroDestination                *SwedishBankgiroDestination       `json:"swedishBankgiroDestination,omitempty"`
	LogoURL                                   string                            `json:"logoUrl,omitempty"`
	LegalCompanyName                          string                            `json:"legalCompanyName,omitempty"`
	PrimaryColour                             string                            `json:"primaryColour,omitempty"`
	CustomFields                              []KeyValue                        `json:"customFields"`
	IncludeBeneficiaryAddressInPaymentDetails bool                              `json:"includeBeneficiaryAddressInPaymentDetails"`
}

// GetMerchantDetails returns the account's merchant details; an account that
// never set them gets empty details (no error).
func (s *Service) GetMerchantDetails(ctx context.Context, account string) (*MerchantDetails, error) {
	var md *MerchantDetails
	err := s.view(ctx, func(tx Tx) (err error) {
		md, err = s.merchantDetails(ctx, tx, account)
		return err
	})
	return md, err
}

// merchantDetails reads the account's merchant details inside tx, for
// documents that copy them.
func (s *Service) merchantDetails(ctx context.Context, tx Tx, account string) (*MerchantDetails, error) {
	md, err := getRecord[MerchantDetails](ctx, tx, tableMerchantDetails, key(account))
	if errors.Is(err, ErrNotFound) {
		return &MerchantDetails{CustomFields: []KeyValue{}}, nil
	}
	return md, err
}

// PutMerchantDetails replaces the account's merchant details (fields left
// out are cleared; logoUrl stays MerchantLogoPath while a logo is
// uploaded). Returns validation_failed for invalid fields, all at
// once.
func (s *Service) PutMerchantDetails(ctx context.Context, account string, md MerchantDetails) (*MerchantDetails, error) {
	if err := s.validateMerchantDetails(&md); err != nil {
		return nil, err
	}
	if md.CustomFields == nil {
		md.CustomFields = []KeyValue{}
	}
	return mutate(ctx, s, account, func(tx Tx) (*MerchantDetails, error) {
		if logo, err := s.currentLogo(ctx, tx, account); err != nil {
			return nil, err
		} else if logo != nil {
			md.LogoURL = MerchantLogoPath // an uploaded logo wins over a given URL
		}
		if err := putRecord(ctx, tx, tableMerchantDetails, key(account), &md); err != nil {
			return nil, err
		}
		return &md, s.emit(ctx, tx, account, NotificationMerchantUpdated, &md)
	})
}

func (s *Service) validateMerchantDetails(md *MerchantDetails) error {
	var v validator
	s.checkStrings(&v, "", reflect.ValueOf(md).Elem())
	if md.Email != "" {
		checkEmail(&v, "email", md.Email)
	}
	if c := md.PrimaryColour; c != "" && !isHexColour(c) {
		v.add("primaryColour", "primaryColour must be a hex colour such as \"#1a2b3c\"")
	}
	if len(md.CustomFields) > s.limits.MaxEntries {
		v.add("customFields", "at most %d custom fields", s.limits.MaxEntries)
	}
	for i, kv := range md.CustomFields {
		s.checkString(&v, fmt.Sprintf("customFields[%d].key", i), kv.Key, true)
	}
	return v.err()
}

// checkStrings checks every string field of the struct rv, recursively,
// with checkString, and every Address with checkAddress. Merchant details
// are a deep tree of optional strings; walking it keeps every field checked
// without listing them twice.
func (s *Service) checkStrings(v *validator, path string, rv reflect.Value) {
	if a, ok := rv.Addr().Interface().(*Address); ok {
		s.checkAddress(v, path, a)
		return
	}
	for i := range rv.NumField() {
		f, sf := rv.Field(i), rv.Type().Field(i)
		name := joinField(path, strings.Split(sf.Tag.Get("json"), ",")[0])
		switch {
		case f.Kind() == reflect.String:
			s.checkString(v, name, f.String(), false)
		case f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.Struct:
			s.checkStrings(v, name, f.Elem())
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct:
			for j := range f.Len() {
				s.checkStrings(v, fmt.Sprintf("%s[%d]", name, j), f.Index(j))
			}
		}
	}
}

func isHexColour(c string) bool {
	if len(c) != 7 && len(c) != 4 || c[0] != '#' {
		return false
	}
	for _, r := range c[1:] {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}
