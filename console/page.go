package console

import (
	"bytes"
	"context"
	"errors"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/billingd/billing"
	"github.com/billingd/billing/httpserver"
	"github.com/billingd/billing/render"
)

// pageSize is the length of every list page, as design asks (the API's
// cursors, 20 per page).
const pageSize = 20

// maxFormBytes bounds the body of a console form.
const maxFormBytes = 64 << 10

// request is one signed-in request as a page handler sees it.
type request struct {
	c       *Console
	w       http.ResponseWriter
	r       *http.Request
	ctx     context.Context
	sess    *session
	account string // the signed-in account: every Service call is scoped to it
}

// navItem is an entry of the navigation bar.
type navItem struct {
	Label, Href, Section string
}

// nav is the navigation bar, in design order. A section is added here when
// its pages exist.
var nav = []navItem{
	{"Overview", Prefix, ""},
	{"Customers", Prefix + "customers", "customers"},
	{"Invoices", Prefix + "invoices", "invoices"},
	{"Credit notes", Prefix + "credit-notes", "credit-notes"},
	{"Receivables", Prefix + "receivables", "receivables"},
	{"Schedules", Prefix + "schedules", "schedules"},
	{"Usage metrics", Prefix + "usage-metrics", "usage-metrics"},
	{"Notifications", Prefix + "deliveries", "deliveries"},
	{"Billing runs", Prefix + "billing-runs", "billing-runs"},
}

// view is what layout.html executes: the page's own data is Data.
type view struct {
	Title   string
	Section string // the nav section shown as current
	Nav     []navItem
	Account string // the account's name
	CSRF    string
	Nonce   string       // of the one <style> element carrying the accent
	Accent  template.CSS // the merchant's primary colour, checked
	Flash   string
	Data    any
}

// hexColour is what a primary colour must look like to be put in CSS.
var hexColour = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

// doneMessages are the confirmations shown after an action redirected with
// rq.done; only these fixed texts are ever shown, never the query's text.
var doneMessages = map[string]string{
	"finalized":             "The invoice was finalized.",
	"sent":                  "The invoice was sent.",
	"voided":                "The invoice was voided.",
	"paid":                  "The payment was recorded.",
	"credits-applied":       "The customer's credit was applied.",
	"collection-retried":    "The collection's next step is due now: the next collection run takes it.",
	"reminder-sent":         "The payment reminder was queued for the customer's billing contacts.",
	"created":               "The invoice was created.",
	"customer-created":      "The customer was created.",
	"customer-saved":        "The customer was saved.",
	"customer-archived":     "The customer was archived.",
	"line-added":            "The line was added.",
	"group-added":           "The group was added.",
	"group-removed":         "The group was removed.",
	"line-saved":            "The line was saved.",
	"line-removed":          "The line was removed.",
	"granted":               "The credit was granted.",
	"cn-created":            "The credit note was created.",
	"schedule-created":      "The billing schedule was created.",
	"schedule-phases-saved": "The phases of the billing schedule were saved.",
	"schedule-activated":    "The billing schedule was activated.",
	"schedule-suspended":    "The billing schedule was suspended.",
	"schedule-cancelled":    "The billing schedule was cancelled.",
	"retried":               "The delivery was queued again.",

	"cn-finalized": "The credit note was finalized.",
	"cn-sent":      "The credit note was sent.",
	"cn-voided":    "The credit note was voided.",
}

// handle registers a page that needs a session: without one a GET is
// redirected to the sign-in page (and back after it); a POST must carry the
// session's CSRF token.
func (c *Console) handle(pattern string, h func(*request) error) {
	c.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		rq := &request{c: c, w: w, r: r, ctx: r.Context()}
		s, err := c.currentSession(r)
		if err != nil {
			rq.fail(err)
			return
		}
		if s == nil {
			c.setCookie(w, r, cookieName, "", -1)
			target := Prefix + "sign-in"
			if r.Method == http.MethodGet && r.URL.Path != Prefix {
				target += "?" + url.Values{"next": {r.URL.RequestURI()}}.Encode()
			}
			http.Redirect(w, r, target, http.StatusSeeOther)
			return
		}
		rq.sess, rq.account = s, s.Account
		if wait, ok := c.cfg.Guard.AllowKey(s.KeyID, requestCost(r)); !ok {
			w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
			rq.fail(billing.Errorf(httpserver.CodeRateLimited, "Too many requests for this API key. Wait a moment and reload the page."))
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if r.ParseForm() != nil || !sameToken(r.PostForm.Get("csrf"), s.CSRF) {
				rq.fail(billing.Errorf(csrfRefused, "This form is not from this console or has expired: reload the page and try again."))
				return
			}
		}
		if err := h(rq); err != nil {
			rq.fail(err)
		}
	})
}

// requestCost is how many requests r counts as in its key's rate limit:
// a document's rendering (the framed page or the PDF) as many as the
// API's download, anything else one.
func requestCost(r *http.Request) int {
	if strings.HasSuffix(r.URL.Path, "/document") || strings.HasSuffix(r.URL.Path, "/pdf") {
		return httpserver.RenderCost
	}
	return 1
}

// csrfRefused is the code of a POST without the session's CSRF token.
const csrfRefused billing.Code = "csrf_refused"

// currentSession returns the request's live session, or nil.
func (c *Console) currentSession(r *http.Request) (*session, error) {
	s, err := c.sessions.get(r.Context(), c.cookie(r, cookieName))
	if err != nil || s == nil {
		return nil, err
	}
	live, err := c.liveKey(r.Context(), s)
	if err != nil || !live {
		if err == nil {
			err = c.sessions.delete(r.Context(), s)
		}
		return nil, err
	}
	return s, nil
}

// render answers with page (templates/<page>.html) in the layout.
func (rq *request) render(status int, page, title string, data any) error {
	v := view{Title: title, Section: strings.SplitN(strings.TrimPrefix(rq.r.URL.Path, Prefix), "/", 2)[0],
		Nav: nav, Nonce: randomToken(), Accent: "#2563eb", Data: data}
	if rq.sess != nil {
		v.CSRF = rq.sess.CSRF
		if a, err := rq.c.svc.GetAccount(rq.ctx, rq.account); err == nil {
			v.Account = a.Name
		}
		if m, err := rq.c.svc.GetMerchantDetails(rq.ctx, rq.account); err == nil && hexColour.MatchString(m.PrimaryColour) {
			v.Accent = template.CSS(m.PrimaryColour)
		}
		v.Flash = doneMessages[rq.r.URL.Query().Get("done")]
	}
	t := rq.c.pages[page]
	if t == nil {
		return errors.New("console: no template " + page)
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout.html", v); err != nil {
		return err
	}
	h := rq.w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", strings.Replace(contentSecurityPolicy, "style-src 'self'", "style-src 'self' 'nonce-"+v.Nonce+"'", 1))
	rq.w.WriteHeader(status)
	_, err := rq.w.Write(b.Bytes())
	return err
}

// problem is the data of the error page.
type problem struct {
	Heading, Message string
}

// fail answers with the error page for err: the Service's message for a
// client error, a generic one (and a log line) for anything else.
func (rq *request) fail(err error) {
	code := billing.CodeOf(err)
	status, p := httpserver.StatusOf(code), problem{"Something went wrong", "The console could not show this page. The cause has been logged."}
	var be *billing.Error
	switch {
	case code == billing.CodeNotFound:
		p = problem{"Not found", "There is nothing here, or it belongs to another account."}
	case errors.Is(err, render.ErrBusy):
		p = problem{"Busy", "The server is busy rendering documents. Try again in a moment."}
	case code == csrfRefused:
		status, p = http.StatusForbidden, problem{"Form refused", err.(*billing.Error).Message}
	case status < 500 && errors.As(err, &be):
		p = problem{"Cannot do that", be.Message}
	default:
		rq.c.log.ErrorContext(rq.ctx, "console page failed", "path", rq.r.URL.Path, "err", err)
	}
	if rerr := rq.render(status, "problem", p.Heading, p); rerr != nil {
		rq.c.log.ErrorContext(rq.ctx, "console error page failed", "err", rerr)
		http.Error(rq.w, p.Message, status)
	}
}

// done redirects to path after a successful action, with the fixed message
// of key (doneMessages).
func (rq *request) done(path, key string) error {
	http.Redirect(rq.w, rq.r, path+"?done="+url.QueryEscape(key), http.StatusSeeOther)
	return nil
}

// list returns the page the query asks for (after or before cursor).
func (rq *request) list() billing.ListParams {
	q := rq.r.URL.Query()
	return billing.ListParams{Limit: pageSize, After: q.Get("after"), Before: q.Get("before")}
}

// pager holds the links to the neighbouring pages of a list.
type pager struct {
	Prev, Next string
	Total      int
}

// pager returns the links to the pages before and after a page of a list,
// keeping the request's other query values (filters).
func (rq *request) pager(before, after string, total int) pager {
	link := func(name, cursor string) string {
		if cursor == "" {
			return ""
		}
		q := rq.r.URL.Query()
		q.Del("after")
		q.Del("before")
		q.Del("done")
		q.Set(name, cursor)
		return rq.r.URL.Path + "?" + q.Encode()
	}
	return pager{Prev: link("before", before), Next: link("after", after), Total: total}
}

// statusList is the data of a list filtered by status (the API's filter):
// credit notes, deliveries. Its template shows the filter with
// {{template "statusFilter" .}}.
type statusList[S ~string, T any] struct {
	Status   string
	Statuses []S
	Items    []T
	Pager    pager
	CSV      string // the link to the list as CSV
	// Links are links of the items by id (what a delivery is about);
	// filled by listByStatus's links, when given.
	Links map[string]option
}

// listByStatus answers with the page tmpl of the items list returns for
// the status the query asks for ("" is any), or with all of them as CSV
// (exp) for ?format=csv.
func listByStatus[S ~string, T any](rq *request, tmpl, title string, statuses []S, list func(S, billing.ListParams) (billing.Page[T], error), exp csvExport[T]) error {
	data := statusList[S, T]{Status: rq.r.URL.Query().Get("status"), Statuses: statuses, CSV: rq.csvLink()}
	if rq.wantsCSV() {
		return exportCSV(rq, exp.name, exp.header, func(p billing.ListParams) (billing.Page[T], error) { return list(S(data.Status), p) }, exp.row)
	}
	page, err := list(S(data.Status), rq.list())
	if data.Items, data.Pager, err = listed(rq, page, err); err != nil {
		return err
	}
	if exp.links != nil {
		if data.Links, err = exp.links(rq, data.Items); err != nil {
			return err
		}
	}
	return rq.render(http.StatusOK, tmpl, title, data)
}

// search is the search box of a list ({{template "search" .Search}}):
// what was searched (?q=) and the box's placeholder.
type search struct {
	Query, Placeholder string
}

// field is one input of a form. Type is an input type ("text" when
// empty), "select" (Options) or "textarea"; Error is the Service's message
// about it, shown beside it.
type field struct {
	Name, Label, Type, Value, Hint string
	Required                       bool
	Options                        []option
	Error                          string
}

// confirmation is the data of the confirm template: the step before an
// action, and where its refusal is shown.
type confirmation struct {
	Heading  string
	Question string
	Action   string // the URL the form posts to
	Button   string
	Danger   bool
	Fields   []field
	Sets     []fieldset     // groups of fields after Fields (lines of a document)
	Error    string         // the Service's message when it refused
	Back     string         // where Cancel goes
	Key      string         // the form's double-submit key (submit)
	Wide     bool           // a wide form (the lines of a document)
	Problems []fieldProblem // the refusals by field, listed above the form
}

// confirm answers with the confirmation page of an action; a refusal by
// the Service (err) is shown beside the form, with the API's status for its
// code (400 for a bad field, 409 for a state that forbids the action).
func (rq *request) confirm(cf confirmation, err error) error {
	status, err := cf.refused(err)
	if err != nil {
		return err
	}
	if cf.Key == "" {
		cf.Key = rq.value(formKeyField, randomToken())
	}
	return rq.render(status, "confirm", cf.Heading, cf)
}
