package billing

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Account is a tenant of the service. Every record belongs to exactly one
// account, and API keys authenticate as one account.
type Account struct {
	ID        string    `json:"serviceAccountId"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
}

// CreateAccountParams are the fields of a new account.
type CreateAccountParams struct {
	Name string
}

// APIKey is an API key without its secret. The secret is shown once, when
// the key is created; only its SHA-256 hash is stored.
type APIKey struct {
	ID string `json:"keyId"`
	// ServiceAccountID is the account the key acts for.
	ServiceAccountID string    `json:"serviceAccountId"`
	CreatedAt        time.Time `json:"createdAt"`
	// RevokedAt is when the key was revoked; nil while it works. Revocation is
	// immediate.
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
}

// NewAPIKey is a freshly created API key with its secret, which is never
// available again.
type NewAPIKey struct {
	APIKey
	// Secret is the key's secret (sk_ and 43 characters); shown only in this
	// answer, stored only as a hash.
	Secret string `json:"secret"`
}

// Authorization returns the value of an Authorization header that
// authenticates with this key.
func (k *NewAPIKey) Authorization() string {
	return BasicAuthorization(k.ID, k.Secret)
}

// BasicAuthorization returns "Basic base64(keyID:secret)".
func BasicAuthorization(keyID, secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(keyID+":"+secret))
}

// ParseBasicAuthorization parses an Authorization header value of the form
// "Basic base64(keyID:secret)". ok is false for anything else.
func ParseBasicAuthorization(header string) (keyID, secret string, ok bool) {
	scheme, payload, found := strings.Cut(header, " ")
	if !found || !strings.EqualFold(scheme, "Basic") || len(payload) > 1024 {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(payload))
	if err != nil {
		return "", "", false
	}
	keyID, secret, found = strings.Cut(string(raw), ":")
	if !found || keyID == "" || secret == "" {
		return "", "", false
	}
	return keyID, secret, true
}

// apiKeyRecord is the stored form of an API key.
type apiKeyRecord struct {
	APIKey
	SecretHash []byte `json:"secretHash"`
}

// CreateAccount creates an account. Returns validation_failed for a missing
// or over-long name.
func (s *Service) CreateAccount(ctx context.Context, p CreateAccountParams) (*Account, error) {
	var v validator
	s.checkString(&v, "name", p.Name, true)
	if err := v.err(); err != nil {
		return nil, err
	}
	a := &Account{ID: s.newID(), Name: p.Name, CreatedAt: s.clock()}
	return mutate(ctx, s, a.ID, func(tx Tx) (*Account, error) {
		b, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		return a, tx.Insert(ctx, tableAccounts, []byte(a.ID), b)
	})
}

// GetAccount returns an account. Returns not_found if it does not exist.
func (s *Service) GetAccount(ctx context.Context, id string) (*Account, error) {
	var a *Account
	err := s.view(ctx, func(tx Tx) (err error) {
		a, err = getRecord[Account](ctx, tx, tableAccounts, []byte(id))
		return lookupErr(err, "account")
	})
	return a, err
}

// ListAccounts returns every account, oldest first. It is an operator
// function (the CLI), not part of the tenant API.
func (s *Service) ListAccounts(ctx context.Context) ([]Account, error) {
	return read(ctx, s, func(tx Tx) ([]Account, error) {
		return scanRecords[Account](ctx, tx, tableAccounts, Range{})
	})
}

// CreateAPIKey creates an API key for an account and returns it with its
// secret, which is not stored and cannot be shown again. Returns not_found
// if the account does not exist.
func (s *Service) CreateAPIKey(ctx context.Context, accountID string) (*NewAPIKey, error) {
	raw, err := s.randomBytes(32)
	if err != nil {
		return nil, internal(err)
	}
	k := &NewAPIKey{
		APIKey: APIKey{ID: s.newID(), ServiceAccountID: accountID, CreatedAt: s.clock()},
		Secret: "sk_" + base64.RawURLEncoding.EncodeToString(raw),
	}
	hash := sha256.Sum256([]byte(k.Secret))
	return mutate(ctx, s, accountID, func(tx Tx) (*NewAPIKey, error) {
		if _, err := tx.Get(ctx, tableAccounts, []byte(accountID)); err != nil {
			return nil, lookupErr(err, "account")
		}
		rec := apiKeyRecord{APIKey: k.APIKey, SecretHash: hash[:]}
		b, err := json.Marshal(rec)
		if err != nil {
			return nil, err
		}
		if err := tx.Insert(ctx, tableAPIKeys, []byte(k.ID), b); err != nil {
			return nil, err
		}
		return k, nil
	})
}

// ListAPIKeys returns the API keys of an account, revoked ones included,
// oldest first.
func (s *Service) ListAPIKeys(ctx context.Context, accountID string) ([]APIKey, error) {
	var out []APIKey
	err := s.view(ctx, func(tx Tx) error {
		return eachRecord(ctx, tx, tableAPIKeys, Range{}, func(r *apiKeyRecord) error {
			if r.ServiceAccountID == accountID {
				out = append(out, r.APIKey)
			}
			return nil
		})
	})
	return out, err
}

// RevokeAPIKey revokes an API key; it stops authenticating at once. Revoking
// a revoked key changes nothing. Returns not_found if the key does not exist.
func (s *Service) RevokeAPIKey(ctx context.Context, keyID string) (*APIKey, error) {
	now := s.clock()
	// Drop the cached key once the revocation has committed (or failed):
	// from then on the key is read from the store, revoked.
	defer s.keys.Revoke(keyID)
	return mutate(ctx, s, "", func(tx Tx) (*APIKey, error) {
		r, err := getRecord[apiKeyRecord](ctx, tx, tableAPIKeys, []byte(keyID))
		if err != nil {
			return nil, lookupErr(err, "API key")
		}
		if r.RevokedAt == nil {
			r.RevokedAt = &now
			if err := putRecord(ctx, tx, tableAPIKeys, []byte(keyID), r); err != nil {
				return nil, err
			}
		}
		return &r.APIKey, nil
	})
}

// dummySecretHash is compared against when a key id is unknown, so an
// unknown key costs the same work as a known one with a wrong secret.
var dummySecretHash = sha256.Sum256([]byte("billingd: no such key"))

// cachedKey is what Authenticate needs of a live key; the Service caches
// the keys that authenticated successfully (cache.Keys), so that a request
// with a known key costs a hash and a compare instead of a read
// transaction and a JSON decode. Only live (not revoked) keys are cached,
// and keys are never deleted, only revoked.
//
// Revocation stays immediate because every revocation of this database
// goes through this process: bbolt allows one process per file, and the
// admin CLI revokes through the running server's admin socket, which calls
// RevokeAPIKey here. RevokeAPIKey drops the key after its commit and bumps
// the cache's generation; an Authenticate that read the key before that
// bump does not cache what it read (it may have read the key before the
// revocation committed).
//
// A store shared with other processes (PostgreSQL, where admin commands
// and other billingd instances revoke keys directly in the database)
// breaks that premise, so Config.KeyCacheTTL (1 s in billingd on
// PostgreSQL) bounds how long a cached key is trusted there: the
// time is taken before the read, so a key revoked anywhere is refused
// everywhere at most KeyCacheTTL after the revocation committed, and at
// once by the Service that revoked it.
type cachedKey struct {
	key        APIKey
	secretHash [sha256.Size]byte
	cachedAt   time.Time // monotonic: only compared with time.Since
}

// Authenticate checks an API key id and secret and returns the key. The
// secret is compared in constant time on fixed-length hashes, and an
// unknown key id costs the same as a wrong secret. Returns unauthorized for
// an unknown, revoked or wrong key, without saying which.
//
// Keys that authenticated are cached in the Service (see cachedKey), so a
// known key costs a hash and a compare; RevokeAPIKey drops its key from the
// cache before returning.
func (s *Service) Authenticate(ctx context.Context, keyID, secret string) (*APIKey, error) {
	given := sha256.Sum256([]byte(secret))
	if k, ok := s.keys.Get(keyID); ok && (s.keyTTL == 0 || time.Since(k.cachedAt) < s.keyTTL) {
		if subtle.ConstantTimeCompare(given[:], k.secretHash[:]) != 1 {
			return nil, Errorf(CodeUnauthorized, "missing or invalid API credentials")
		}
		key := k.key
		return &key, nil
	}
	gen := s.keys.Generation()
	// Taken before the read: a revocation that commits after the read's
	// snapshot is at most KeyCacheTTL old when the cached key expires.
	readAt := time.Now()
	var rec *apiKeyRecord
	err := s.view(ctx, func(tx Tx) (err error) {
		if len(keyID) > 255 {
			return nil
		}
		rec, err = findRecord[apiKeyRecord](ctx, tx, tableAPIKeys, []byte(keyID))
		return err
	})
	if err != nil {
		return nil, err
	}
	want := dummySecretHash[:]
	valid := rec != nil && len(rec.SecretHash) == sha256.Size
	if valid {
		want = rec.SecretHash
	}
	match := subtle.ConstantTimeCompare(given[:], want) == 1
	if !valid || !match || rec.RevokedAt != nil {
		return nil, Errorf(CodeUnauthorized, "missing or invalid API credentials")
	}
	if s.keyTTL >= 0 {
		s.keys.Put(gen, keyID, cachedKey{key: rec.APIKey, secretHash: [sha256.Size]byte(rec.SecretHash), cachedAt: readAt})
	}
	return &rec.APIKey, nil
}

// lookupErr maps a store ErrNotFound to the not_found error for kind.
func lookupErr(err error, kind string) error {
	if errors.Is(err, ErrNotFound) {
		return notFound(kind)
	}
	return err
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// KeyValue is a key and a value, for metadata, custom fields and external
// ids.
type KeyValue struct {
	// Key is required and non-empty.
	Key string `json:"key"`
	// Value is free text, possibly empty.
	Value string `json:"value"`
}

// UKAccountDetails are the details of a UK bank account.
type UKAccountDetails struct {
	// SortCode is the bank's six-digit sort code, printed as given ("20-20-15").
	SortCode string `json:"sortCode,omitempty"`
	// AccountNumber is the eight-digit account number, printed as given.
	AccountNumber string `json:"accountNumber,omitempty"`
}

// USAchDetails are the details of a US ACH destination.
type USAchDetails struct {
	// AccountNumber is the bank account number, printed as given.
	AccountNumber string `json:"accountNumber,omitempty"`
	// AccountName is the name the account is held in.
	AccountName string `json:"accountName,omitempty"`
	// BankName is the name of the receiving bank.
	BankName string `json:"bankName,omitempty"`
	// BankRoutingNumber is the bank's nine-digit ABA routing number.
	BankRoutingNumber string `json:"bankRoutingNumber,omitempty"`
}

// USWireDetails are the details of a US wire destination.
type USWireDetails struct {
	// AccountNumber is the bank account number, printed as given.
	AccountNumber string `json:"accountNumber,omitempty"`
	// AccountName is the name the account is held in.
	AccountName string `json:"accountName,omitempty"`
	// BankName is the name of the receiving bank.
	BankName string `json:"bankName,omitempty"`
	// BankRoutingNumber is the bank's nine-digit ABA routing number for
	// wires.
	BankRoutingNumber string `json:"bankRoutingNumber,omitempty"`
	// SwiftCode is the bank's SWIFT/BIC, for wires from abroad.
	SwiftCode string `json:"swiftCode,omitempty"`
	// BankAddress is the receiving bank's address; nil when not printed.
	BankAddress *Address `json:"bankAddress,omitempty"`
}

// CABankAccountDetails are the details of a Canadian bank account.
type CABankAccountDetails struct {
	// TransitNumber is the five-digit branch transit number.
	TransitNumber string `json:"transitNumber,omitempty"`
	// InstitutionNumber is the bank's three-digit institution number.
	InstitutionNumber string `json:"institutionNumber,omitempty"`
	// AccountNumber is the bank account number, printed as given.
	AccountNumber string `json:"accountNumber,omitempty"`
}

// IntermediaryBank is the intermediary of an international transfer.
type IntermediaryBank struct {
	// BankName is the name of the intermediary bank.
	BankName string `json:"bankName,omitempty"`
	// BankAddress is the intermediary bank's address; nil when not printed.
	BankAddress *Address `json:"bankAddress,omitempty"`
	// SwiftCode is the intermediary bank's SWIFT/BIC.
	SwiftCode string `json:"swiftCode,omitempty"`
	// RoutingNumber is the intermediary bank's routing number, when the
	// transfer needs one.
	RoutingNumber string `json:"routingNumber,omitempty"`
}

// CanadianInternationalDestination is a Canadian account for international
// transfers.
type CanadianInternationalDestination struct {
	// LegalName is the account holder's legal name, printed as the account
	// name.
	LegalName string `json:"legalName,omitempty"`
	// AccountNumber is the bank account number, printed as given.
	AccountNumber string `json:"accountNumber,omitempty"`
	// TransitNumber is the five-digit branch transit number.
	TransitNumber string `json:"transitNumber,omitempty"`
	// BankName is the name of the receiving bank.
	BankName string `json:"bankName,omitempty"`
	// BankAddress is the receiving bank's address; nil when not printed.
	BankAddress *Address `json:"bankAddress,omitempty"`
	// InstitutionNumber is the bank's three-digit institution number.
	InstitutionNumber string `json:"institutionNumber,omitempty"`
	// SwiftCode is the receiving bank's SWIFT/BIC.
	SwiftCode string `json:"swiftCode,omitempty"`
	// IntermediaryBank is the bank a transfer passes through; nil when it
	// goes directly.
	IntermediaryBank *IntermediaryBank `json:"intermediaryBank,omitempty"`
}

// AustralianDestination is an Australian bank account.
type AustralianDestination struct {
	// LegalName is the account holder's legal name.
	LegalName string `json:"legalName,omitempty"`
	// AccountNumber is the bank account number, printed as given.
	AccountNumber string `json:"accountNumber,omitempty"`
	// SwiftCode is the bank's SWIFT/BIC, for transfers from abroad.
	SwiftCode string `json:"swiftCode,omitempty"`
	// BSB is the six-digit bank-state-branch number.
	BSB string `json:"bsb,omitempty"`
}

// SwedishBankgiroDestination is a Swedish Bankgiro destination.
type SwedishBankgiroDestination struct {
	// BankgiroNumber is the merchant's Bankgiro number (7 or 8 digits).
	BankgiroNumber string `json:"bankgiroNumber,omitempty"`
	// AccountName is the name the Bankgiro number is registered to.
	AccountName string `json:"accountName,omitempty"`
}

// MerchantDetails are the account's own details as printed on invoices and
// credit notes: one record per account. Documents copy them when they are
// finalized, so later edits do not rewrite issued documents.
type MerchantDetails struct {
	// Address is printed on documents as the merchant's.
	Address *Address `json:"address,omitempty"`
	// PhoneNumber is printed on documents as the merchant's; free text.
	PhoneNumber string `json:"phoneNumber,omitempty"`
	// Email is printed on documents as the merchant's; a valid address when
	// set.
	Email string `json:"email,omitempty"`
	// TaxID is the merchant's tax registration, printed on documents.
	TaxID string `json:"taxId,omitempty"`
	// IBAN is printed in the payment details; empty when not given.
	IBAN string `json:"iban,omitempty"`
	// UKAccountDetails are printed in the payment details of GBP documents;
	// nil when not given (likewise the other destinations below, each for
	// its currency).
	UKAccountDetails *UKAccountDetails `json:"ukAccountDetails,omitempty"`
	// USAchDetails are printed in the payment details of USD documents.
	USAchDetails *USAchDetails `json:"usAchDetails,omitempty"`
	// USWireDetails are printed in the payment details of USD documents.
	USWireDetails *USWireDetails `json:"usWireDetails,omitempty"`
	// CABankAccountDetails are printed in the payment details of CAD
	// documents.
	CABankAccountDetails *CABankAccountDetails `json:"caBankAccountDetails,omitempty"`
	// CanadianInternationalDestination is printed in the payment details of
	// CAD documents, for transfers from abroad.
	CanadianInternationalDestination *CanadianInternationalDestination `json:"canadianInternationalDestination,omitempty"`
	// AustralianDestination is printed in the payment details of AUD
	// documents.
	AustralianDestination *AustralianDestination `json:"australianDestination,omitempty"`
	// SwedishBankgiroDestination is printed in the payment details of SEK
	// documents.
	SwedishBankgiroDestination *SwedishBankgiroDestination `json:"swedishBankgiroDestination,omitempty"`
	// LogoURL is set when a logo is uploaded (the path it is served at) and
	// cleared when it is deleted; empty when there is none.
	LogoURL string `json:"logoUrl,omitempty"`
	// LegalCompanyName is the merchant's name as printed on documents.
	LegalCompanyName string `json:"legalCompanyName,omitempty"`
	// PrimaryColour is the merchant's brand colour, a hex colour such as
	// "#1a2b3c"; empty when not given.
	PrimaryColour string `json:"primaryColour,omitempty"`
	// CustomFields are extra lines printed on documents.
	CustomFields []KeyValue `json:"customFields"`
	// IncludeBeneficiaryAddressInPaymentDetails prints Address among the payment
	// details.
	IncludeBeneficiaryAddressInPaymentDetails bool `json:"includeBeneficiaryAddressInPaymentDetails"`
	// LegalRegistrationID is the merchant's company registration number
	// (e-invoices: EN 16931 BT-30); empty when not given.
	LegalRegistrationID string `json:"legalRegistrationId,omitempty"`
	// BIC is the bank identifier of IBAN (e-invoices: BT-86); empty when not
	// given.
	BIC string `json:"bic,omitempty"`
	// ElectronicAddress is where the merchant receives electronic documents
	// (e-invoices: BT-34); nil when not given (Email is then used).
	ElectronicAddress *ElectronicAddress `json:"electronicAddress,omitempty"`
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
	if a := md.ElectronicAddress; a != nil && !isEASCode(a.Scheme) {
		v.add("electronicAddress.scheme", "electronicAddress.scheme must be a code of the EAS list: four digits such as \"0088\", or \"EM\"")
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

// AccountSettings are the settings of an account (GET and PUT
// /account-settings).
type AccountSettings struct {
	// TimeZone is the IANA time zone whose calendar dates the account's dates
	// are (unless a customer has its own): period boundaries are its
	// midnights. Default UTC. A change applies to days that have not begun.
	TimeZone string `json:"timeZone"`
	// EmailAttachments are what the e-mails of sent invoices and credit notes
	// carry: any of PDF, FACTURX, UBL and CII (a customer's own choice wins).
	// Default (and when left out of a PUT): ["PDF"].
	EmailAttachments []AttachmentFormat `json:"emailAttachments"`
}

// GetAccountSettings returns the account's settings; an account that never
// set them has the defaults.
func (s *Service) GetAccountSettings(ctx context.Context, account string) (*AccountSettings, error) {
	return read(ctx, s, func(tx Tx) (*AccountSettings, error) {
		h, err := zoneHistory(ctx, tx, key(account))
		if err != nil {
			return nil, err
		}
		prefs, err := preferences(ctx, tx, account)
		return &AccountSettings{TimeZone: currentZone(h, DefaultTimeZone), EmailAttachments: prefs.attachments()}, err
	})
}

// PutAccountSettings replaces the account's settings (a timeZone left out
// is UTC). A new time zone is in force from now on: days that began before
// keep their instants, so no period that has begun moves. Returns
// validation_failed naming the field for an unknown zone.
func (s *Service) PutAccountSettings(ctx context.Context, account string, p AccountSettings) (*AccountSettings, error) {
	if p.TimeZone == "" {
		p.TimeZone = DefaultTimeZone
	}
	var v validator
	checkTimeZone(&v, "timeZone", p.TimeZone)
	checkAttachments(&v, "emailAttachments", p.EmailAttachments)
	if err := v.err(); err != nil {
		return nil, err
	}
	prefs := accountPreferences{EmailAttachments: slices.Clone(p.EmailAttachments)}
	p.EmailAttachments = prefs.attachments()
	now := s.clock()
	return mutate(ctx, s, account, func(tx Tx) (*AccountSettings, error) {
		if err := putRecord(ctx, tx, tableAccountPreferences, key(account), &prefs); err != nil {
			return nil, err
		}
		return &p, setZone(ctx, tx, key(account), DefaultTimeZone, p.TimeZone, now)
	})
}

// zoneHistory reads the zone history stored under k (the account's, or a
// customer's); nil when none was ever set.
func zoneHistory(ctx context.Context, tx Tx, k []byte) ([]zoneChange, error) {
	h, err := findRecord[[]zoneChange](ctx, tx, tableTimeZones, k)
	if err != nil || h == nil {
		return nil, err
	}
	return *h, nil
}

// currentZone is the zone last set in h, or def.
func currentZone(h []zoneChange, def string) string {
	if len(h) == 0 {
		return def
	}
	return h[len(h)-1].Zone
}

// setZone records that zone is in force from now on in the history under k
// (whose zone before any change is def); no change when it already is.
func setZone(ctx context.Context, tx Tx, k []byte, def, zone string, now time.Time) error {
	h, err := zoneHistory(ctx, tx, k)
	if err != nil || currentZone(h, def) == zone {
		return err
	}
	if len(h) == 0 {
		h = []zoneChange{{Zone: def}}
	}
	if last := &h[len(h)-1]; !last.Since.Before(now) && len(h) > 1 {
		last.Zone = zone // a second change at the same instant replaces the first
	} else {
		h = append(h, zoneChange{Zone: zone, Since: now})
	}
	return putRecord(ctx, tx, tableTimeZones, k, h)
}

// calendarFor returns the calendar of a customer of account (customerID
// "": the account's own): the one place that decides which zone applies.
func (s *Service) calendarFor(ctx context.Context, tx Tx, account, customerID string) (Calendar, error) {
	ah, err := zoneHistory(ctx, tx, key(account))
	if err != nil || customerID == "" {
		return calendarOf(ah, nil), err
	}
	ch, err := zoneHistory(ctx, tx, key(account, customerID))
	return calendarOf(ah, ch), err
}

// dateOf returns the date of instant t in the calendar of a customer of
// account ("": the account's): "today" for now.
func (s *Service) dateOf(ctx context.Context, tx Tx, account, customerID string, t time.Time) (Date, error) {
	cal, err := s.calendarFor(ctx, tx, account, customerID)
	return cal.DateOf(t), err
}
