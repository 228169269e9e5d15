package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/httpserver"
)

// The forms of the console (create a customer, an invoice, a credit note,
// a credit grant, a schedule; record a payment; every confirmation of an
// action) share one path: the confirmation data and the confirm template
// (fields, with the Service's messages beside them), the CSRF check of
// handle, and submit, which runs the form's Service calls at most once
// per form key.

// option is a choice of a select field.
type option struct {
	Value, Label string
}

// fieldset is a group of fields shown together, such as a line of an
// invoice being created.
type fieldset struct {
	Legend string
	Fields []field
}

// formKeyField is the hidden input carrying a form's double-submit key.
const formKeyField = "formKey"

// value returns the submitted value of a form field, trimmed, or def when
// the request carries none (a GET, or a field left out).
func (rq *request) value(name, def string) string {
	if v, ok := rq.r.PostForm[name]; ok && len(v) > 0 {
		return strings.TrimSpace(v[0])
	}
	return def
}

// formValue returns the trimmed submitted value of name ("" when absent).
func (rq *request) formValue(name string) string { return rq.value(name, "") }

// decimalField parses a decimal form field; a wrong one is a
// validation_failed error naming the field.
func decimalField(rq *request, name, label string, required bool) (*billing.Decimal, error) {
	return parsedField(rq, name, label, required, billing.ParseDecimal, "a decimal number such as 120.50")
}

// dateField parses a date form field (YYYY-MM-DD); a wrong one is a
// validation_failed error naming the field.
func dateField(rq *request, name, label string, required bool) (*billing.Date, error) {
	return parsedField(rq, name, label, required, billing.ParseDate, "a date such as 2026-11-24")
}

// parsedField parses form field name with parse: nil when it is empty and
// not required; a missing required value, or one parse refuses, is a
// validation_failed error naming the field ("<label> must be <want>").
func parsedField[T any](rq *request, name, label string, required bool, parse func(string) (T, error), want string) (*T, error) {
	s := rq.formValue(name)
	if s == "" {
		if required {
			return nil, billing.FieldError(name, "%s is required", label)
		}
		return nil, nil
	}
	v, err := parse(s)
	if err != nil {
		return nil, billing.FieldError(name, "%s must be %s", label, want)
	}
	return &v, nil
}

// fieldErrors renames the fields of err's errors with prefix (the form's
// name of a row: "lines.1."), keeping their messages: the Service names
// the fields of one call ("quantity"), the form those of its row.
func fieldErrors(prefix string, err error) error {
	if err == nil {
		return nil
	}
	errs := billing.Errors(err)
	out := make(billing.ValidationErrors, 0, len(errs))
	for _, e := range errs {
		if e.Code != billing.CodeValidationFailed || e.Field == "" {
			return err
		}
		c := *e
		c.Field = prefix + c.Field
		out = append(out, &c)
	}
	return out
}

// joinErrors collects the validation errors of several checks into one
// error (nil when there are none); any other error is returned as it is.
func joinErrors(errs ...error) error {
	var out billing.ValidationErrors
	for _, err := range errs {
		if err == nil {
			continue
		}
		if billing.CodeOf(err) != billing.CodeValidationFailed {
			return err
		}
		out = append(out, billing.Errors(err)...)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// problem is a refusal listed above a form, linking to its field.
type fieldProblem struct {
	ID, Label, Message string
}

// setError puts message beside the field named name (or the field it is
// part of) and lists it above the form; false when the form has no such
// field.
func (cf *confirmation) setError(name, message string) bool {
	mark := func(fields []field, name string) bool {
		for i := range fields {
			if fields[i].Name == name {
				if fields[i].Error != "" {
					fields[i].Error += " "
				}
				fields[i].Error += message
				cf.Problems = append(cf.Problems, fieldProblem{"f-" + name, fields[i].Label, message})
				return true
			}
		}
		return false
	}
	for n := name; n != ""; n = parentField(n) {
		if mark(cf.Fields, n) {
			return true
		}
		for i := range cf.Sets {
			if mark(cf.Sets[i].Fields, n) {
				for j := range cf.Problems {
					if p := &cf.Problems[len(cf.Problems)-1-j]; p.ID == "f-"+n {
						p.Label = cf.Sets[i].Legend + ": " + p.Label
						break
					}
				}
				return true
			}
		}
	}
	return false
}

// parentField is the field a nested field name belongs to:
// "customerAliases[1]" → "customerAliases", "phases[0].priceIds" →
// "phases[0]"; "" for a top-level name.
func parentField(name string) string {
	if i := strings.LastIndexAny(name, ".["); i > 0 {
		return name[:i]
	}
	return ""
}

// refused shows err (the Service's refusal, or the form's own checks)
// on the form: each validation message beside the field it names, the
// others above the form. Errors that are no refusal (not found, internal)
// are returned for the error page.
func (cf *confirmation) refused(err error) (int, error) {
	errs := billing.Errors(err)
	if len(errs) == 0 {
		return http.StatusOK, nil
	}
	for _, e := range errs {
		if e.Code == billing.CodeNotFound || httpserver.StatusOf(e.Code) >= 500 {
			return 0, err
		}
	}
	var general []string
	for _, e := range errs {
		if e.Field == "" || !cf.setError(e.Field, e.Message) {
			general = append(general, e.Message)
		}
	}
	cf.Error = strings.Join(general, " ")
	if cf.Error == "" {
		cf.Error = "The form has errors:"
	}
	return httpserver.StatusOf(errs[0].Code), nil
}

// formLocks serializes the submissions of one form key in this process, so
// that a double click's second request waits for the first and then finds
// its stored answer.
type formLocks struct {
	mu    sync.Mutex
	locks map[string]*formLock
}

type formLock struct {
	sync.Mutex
	users int
}

// lock locks key and returns its unlock.
func (l *formLocks) lock(key string) func() {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*formLock{}
	}
	k := l.locks[key]
	if k == nil {
		k = &formLock{}
		l.locks[key] = k
	}
	k.users++
	l.mu.Unlock()
	k.Lock()
	return func() {
		k.Unlock()
		l.mu.Lock()
		if k.users--; k.users == 0 {
			delete(l.locks, key)
		}
		l.mu.Unlock()
	}
}

// formKeysTable holds the console's form keys: for each (account, key),
// when the form was first acted on and the page it led to. Console.Sweep
// deletes the ones older than formKeyTTL.
const formKeysTable billing.Table = "console_form_keys"

// formKeyTTL is how long a form's double submit is recognized.
const formKeyTTL = 24 * time.Hour

// formKeyRecord is the stored form of a form key.
type formKeyRecord struct {
	At   time.Time `json:"at"`
	Next string    `json:"next"`
}

// submit runs a form's action at most once per form key, as the API's
// Idempotency-Key does: the form carries a random key (formKeyField), and
// the first Service operation run with the context run is given stores,
// through a commit hook in its own transaction, the page to go to next;
// the same form submitted again (a double click, a reload of the POST)
// goes to that page instead of acting again. run must give that context to
// its first Service call only and rq.ctx to any later one. On a refusal
// the form is shown again with the messages by their fields and a fresh
// key; on success the browser is redirected (303) to the page of run's
// result (pageOf) with the fixed message of done.
func (rq *request) submit(cf confirmation, done string, run func(ctx context.Context) (any, error)) error {
	if !rq.isPost() {
		return rq.confirm(cf, nil)
	}
	key := rq.formValue(formKeyField)
	if key == "" { // not a form of the console's (they all carry one): no replay
		result, err := run(rq.ctx)
		if err != nil {
			return rq.confirm(cf, err)
		}
		http.Redirect(rq.w, rq.r, doneURL(pageOf(result, cf.Back), done), http.StatusSeeOther)
		return nil
	}
	defer rq.c.forms.lock(rq.account + "\x00" + key)()
	recKey := []byte(rq.account + "\x00" + key + "\x00" + rq.r.URL.Path)
	if prev, err := rq.c.formKey(rq.ctx, recKey); err != nil {
		return err
	} else if prev != nil {
		http.Redirect(rq.w, rq.r, prev.Next, http.StatusSeeOther)
		return nil
	}
	stored := false
	hook := func(ctx context.Context, tx billing.Tx, result any) error {
		stored = true
		err := insertFormKey(ctx, tx, recKey, formKeyRecord{At: rq.c.sessions.now(), Next: doneURL(pageOf(result, cf.Back), done)})
		if errors.Is(err, billing.ErrConflict) {
			return errFormSubmitted // the same form, acted on by another instance meanwhile
		}
		return err
	}
	result, err := run(billing.WithCommitHook(rq.ctx, hook))
	if errors.Is(err, errFormSubmitted) {
		prev, err := rq.c.formKey(rq.ctx, recKey)
		if err != nil {
			return err
		}
		next := cf.Back
		if prev != nil {
			next = prev.Next
		}
		http.Redirect(rq.w, rq.r, next, http.StatusSeeOther)
		return nil
	}
	if err != nil {
		cf.Key = randomToken()
		return rq.confirm(cf, err)
	}
	next := doneURL(pageOf(result, cf.Back), done)
	if !stored { // an operation that runs no hook (one of several transactions)
		err := rq.c.cfg.Store.Update(rq.ctx, func(tx billing.Tx) error {
			return insertFormKey(rq.ctx, tx, recKey, formKeyRecord{At: rq.c.sessions.now(), Next: next})
		})
		if err != nil && !errors.Is(err, billing.ErrConflict) {
			rq.c.log.WarnContext(rq.ctx, "console form key not stored", "err", err)
		}
	}
	http.Redirect(rq.w, rq.r, next, http.StatusSeeOther)
	return nil
}

// formKey returns the stored form key recKey, or nil when there is none
// (or it is older than formKeyTTL).
func (c *Console) formKey(ctx context.Context, recKey []byte) (*formKeyRecord, error) {
	var rec *formKeyRecord
	err := c.cfg.Store.View(ctx, func(tx billing.Tx) error {
		rec = nil
		v, err := tx.Get(ctx, formKeysTable, recKey)
		if errors.Is(err, billing.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		var r formKeyRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return err
		}
		if c.sessions.now().Sub(r.At) < formKeyTTL {
			rec = &r
		}
		return nil
	})
	return rec, err
}

// errFormSubmitted is the commit hook's refusal of a form key stored
// meanwhile: the change rolls back and the form goes where the first
// submission went.
var errFormSubmitted = errors.New("console: the form was submitted already")

// insertFormKey stores r under recKey, or returns billing.ErrConflict when
// the key is stored already (an expired one is replaced).
func insertFormKey(ctx context.Context, tx billing.Tx, recKey []byte, r formKeyRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	err = tx.Insert(ctx, formKeysTable, recKey, b)
	if !errors.Is(err, billing.ErrConflict) {
		return err
	}
	v, gerr := tx.Get(ctx, formKeysTable, recKey)
	if gerr != nil {
		return gerr
	}
	var old formKeyRecord
	if json.Unmarshal(v, &old) == nil && r.At.Sub(old.At) < formKeyTTL {
		return err
	}
	return tx.Put(ctx, formKeysTable, recKey, b)
}

// sweepFormKeys deletes the form keys older than formKeyTTL.
func (c *Console) sweepFormKeys(ctx context.Context) (int, error) {
	now := c.sessions.now()
	return billing.Sweep(ctx, c.cfg.Store, formKeysTable, func(v []byte) (bool, error) {
		var r formKeyRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return true, nil
		}
		return now.Sub(r.At) >= formKeyTTL, nil
	})
}

// doneURL is path with the fixed message of key (doneMessages).
func doneURL(path, key string) string {
	if key == "" {
		return path
	}
	return path + "?done=" + url.QueryEscape(key)
}

// pageOf is the console page of the result of a Service operation: the
// customer, invoice, credit note or schedule it made or changed (a
// payment's invoice, a credit grant's customer); fallback for anything else.
func pageOf(result any, fallback string) string {
	switch v := result.(type) {
	case *billing.Customer:
		return Prefix + "customers/" + v.ID
	case *billing.Invoice:
		return Prefix + "invoices/" + v.ID
	case *billing.Payment:
		return Prefix + "invoices/" + v.InvoiceID
	case *billing.CreditNote:
		return Prefix + "credit-notes/" + v.ID
	case *billing.CreditGrant:
		return Prefix + "customers/" + v.CustomerID
	case *billing.BillingSchedule:
		return Prefix + "schedules/" + v.ID
	}
	return fallback
}

// errNoCustomer is the refusal of a form that needs a customer and got
// none.
var errNoCustomer = billing.FieldError("customerId", "Choose a customer.")

// maxCustomerOptions is how many customers a form's customer choice lists:
// one page of the API's list (each read of it costs the same however
// small the page, so more pages would cost more reads). Beyond it a form
// is opened from the customer's page, which preselects the customer.
const maxCustomerOptions = 100

// customerOptions are the customers to choose from in a form, by legal
// name: the newest maxCustomerOptions that are not archived, and selected
// (a customer id, when given) whether or not among them.
func (rq *request) customerOptions(selected string) ([]option, error) {
	page, err := rq.c.svc.ListCustomers(rq.ctx, rq.account, billing.CustomerFilter{}, billing.ListParams{Limit: maxCustomerOptions})
	if err != nil {
		return nil, err
	}
	var out []option
	found := selected == ""
	for _, cu := range page.Items {
		if cu.ArchivedAt == nil {
			out = append(out, option{cu.ID, cu.LegalName})
		}
		found = found || cu.ID == selected
	}
	if !found {
		cu, err := rq.c.svc.GetCustomer(rq.ctx, rq.account, selected)
		if err != nil && billing.CodeOf(err) != billing.CodeNotFound {
			return nil, err
		}
		if err == nil {
			out = append([]option{{cu.ID, cu.LegalName}}, out...)
		}
	}
	return out, nil
}

// currencyOptions are the currencies billingd supports, by code.
func currencyOptions() []option {
	var out []option
	for _, c := range billing.Currencies() {
		out = append(out, option{string(c), string(c)})
	}
	return out
}

// isPost reports whether the request submits a form.
func (rq *request) isPost() bool { return rq.r.Method == http.MethodPost }
