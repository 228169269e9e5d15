package pgstore

import (
	"context"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The reporting views: read-only SQL views of the financial records, with
// typed columns (numeric amounts, dates, timestamps, text), for finance and
// BI tools. Records are stored as JSON in billing_kv; each view selects one
// Store table and decodes each row's JSON once (a lateral subquery that the
// planner keeps as one step, so a query reading ten columns parses the
// record once). The account id is the first part of the record's key.
//
// The views live in the reporting schema (see Options.ReportingSchema). A
// migration creates them; a later change of a view is a new migration that
// replaces it ("create or replace view", or drop and create), so the views
// always match the records this binary writes. A view joins a table and a
// lateral subquery, which makes it not automatically updatable: nothing can
// be written through it, whatever the role's privileges.

// reportingPlaceholder stands for the quoted name of the reporting schema in
// migrations; migrateOnce replaces it.
const reportingPlaceholder = "{reporting}"

// defaultReportingSchema is the reporting schema of a store whose tables are
// in the "public" schema.
const defaultReportingSchema = "billing_reporting"

// reportingSchemaFor returns the default reporting schema of a store whose
// tables are in storeSchema: billing_reporting for "public" (or none),
// else storeSchema followed by "_reporting" (two stores in one database
// never share views; a store in schema "billing" reports in
// billing_reporting).
func reportingSchemaFor(storeSchema string) string {
	if storeSchema == "" || storeSchema == "public" {
		return defaultReportingSchema
	}
	return storeSchema + "_reporting"
}

// withReportingSchema puts the quoted reporting schema into a migration.
func withReportingSchema(migration, schema string) string {
	return strings.ReplaceAll(migration, reportingPlaceholder, pgx.Identifier{schema}.Sanitize())
}

// SQL expressions shared by the views: r is the record's JSON.
const (
	accountOfKey = `convert_from(substring(kv.k from 1 for position('\x00'::bytea in kv.k) - 1), 'UTF8')`
	recordJSON   = `convert_from(kv.v, 'UTF8')::jsonb`
)

// text, num, date and ts read a JSON field of the record as a typed column.
func text(field, column string) string { return `r->>'` + field + `' as ` + column }
func num(field, column string) string  { return `(r->>'` + field + `')::numeric as ` + column }
func date(field, column string) string {
	return `nullif(r->>'` + field + `', '')::date as ` + column
}
func ts(field, column string) string { return `(r->>'` + field + `')::timestamptz as ` + column }

// reportingView is the SQL that creates one view over the records of table.
func reportingView(name, table string, columns ...string) string {
	return `create view {reporting}.` + name + ` as
	select ` + strings.Join(columns, ",\n\t\t") + `
	from billing_kv kv cross join lateral (select ` + recordJSON + ` as r offset 0) rec
	where kv.tbl = '` + table + `';
	`
}

// documentColumns are the columns invoices and credit notes share.
var documentColumns = []string{
	text("id", "id"), accountOfKey + ` as account_id`, text("customerId", "customer_id"), text("status", "status"),
	text("currency", "currency"), date("issueDate", "issue_date"), date("accountingDate", "accounting_date"),
	num("netTotal", "net_total"), num("totalTax", "total_tax"), num("grossTotal", "gross_total"),
	ts("createdAt", "created_at"), ts("updatedAt", "updated_at"),
}

// lineColumns are the columns invoice and credit note lines share.
var lineColumns = []string{
	text("id", "id"), accountOfKey + ` as account_id`, `(r->>'index')::integer as line_index`, text("groupId", "group_id"),
	text("title", "title"), text("description", "description"), text("productId", "product_id"), text("priceId", "price_id"),
	num("quantity", "quantity"), num("rate", "rate"), num("taxRate", "tax_rate"),
	num("netTotal", "net_total"), num("totalTax", "total_tax"), num("grossTotal", "gross_total"),
}

// reportingMigration creates the reporting schema and its views
// (migration 3). Column by column, they say what the API says: a VOIDED
// invoice owes nothing, and an invoice stored before credit could be money
// on account has no credit applied (zeros with the currency's digits: an
// amount times 0).
var reportingMigration = `create schema if not exists {reporting};
	` + reportingView("invoices", "invoices", slices.Concat(documentColumns, []string{
	text("invoiceNumber", "invoice_number"), text("paymentStatus", "payment_status"), date("dueDate", "due_date"),
	text("billingScheduleId", "billing_schedule_id"), num("amountPaid", "amount_paid"), num("amountCredited", "amount_credited"),
	`case when jsonb_typeof(r->'creditApplications') is distinct from 'array' then (r->>'grossTotal')::numeric * 0 else (r->>'creditsApplied')::numeric end as credits_applied`,
	`case when r->>'status' = 'VOIDED' then (r->>'amountDue')::numeric * 0 else (r->>'amountDue')::numeric end as amount_due`,
})...) + reportingView("invoice_lines", "invoice_lines", slices.Concat(lineColumns, []string{
	text("invoiceId", "invoice_id"), text("creditGrantId", "credit_grant_id"),
	`nullif(r->'servicePeriod'->>'startDate', '')::date as service_start_date`,
	`nullif(r->'servicePeriod'->>'endDate', '')::date as service_end_date`,
})...) + reportingView("credit_notes", "credit_notes", slices.Concat(documentColumns, []string{
	text("creditNoteNumber", "credit_note_number"), text("invoiceId", "invoice_id"), text("invoiceNumber", "invoice_number"),
	text("billingScheduleId", "billing_schedule_id"),
})...) + reportingView("credit_note_lines", "credit_note_lines", slices.Concat(lineColumns, []string{
	text("creditNoteId", "credit_note_id"), text("lineItemId", "invoice_line_id"),
})...) + reportingView("payments", "payments",
	text("id", "id"), accountOfKey+` as account_id`, text("invoiceId", "invoice_id"), num("amount", "amount"),
	text("currency", "currency"), date("paidAt", "paid_at"), text("method", "method"), text("reference", "reference"),
	ts("createdAt", "created_at"),
) + reportingView("customers", "customers",
	text("id", "id"), accountOfKey+` as account_id`, text("legalName", "legal_name"), text("label", "label"),
	text("taxStatus", "tax_status"), text("taxId", "tax_id"), `r->'address'->>'country' as country`,
	`r->'address'->>'town' as town`, `r->'address'->>'postcode' as postcode`, text("timeZone", "time_zone"),
	ts("archivedAt", "archived_at"), ts("createdAt", "created_at"), ts("updatedAt", "updated_at"),
) + reportingView("journal_entries", "journal",
	text("id", "id"), accountOfKey+` as account_id`, text("sourceType", "source_type"), text("sourceId", "source_id"),
	text("account", "ledger_account"), num("debit", "debit"), num("credit", "credit"), text("currency", "currency"),
	ts("createdAt", "created_at"),
) + reportingView("credit_transactions", "credit_transactions",
	text("id", "id"), accountOfKey+` as account_id`, text("grantId", "grant_id"), text("customerId", "customer_id"),
	text("type", "type"), num("amount", "amount"), date("date", "date"), text("invoiceId", "invoice_id"),
	text("reason", "reason"), ts("createdAt", "created_at"),
)

// reportingSchema returns the reporting schema of the store migrated in
// ptx: Options.ReportingSchema, else one named after the schema the tables
// are created in (the first of the search path).
func (s *Store) reportingSchema(ctx context.Context, ptx pgx.Tx) (string, error) {
	if s.opts.ReportingSchema != "" {
		return s.opts.ReportingSchema, nil
	}
	var current *string
	if err := ptx.QueryRow(ctx, `select current_schema()`).Scan(&current); err != nil {
		return "", err
	}
	if current == nil {
		return reportingSchemaFor(""), nil
	}
	return reportingSchemaFor(*current), nil
}

// ReportingSchema returns the schema of the store's reporting views, as the
// migrations on Open chose it (see Options.ReportingSchema).
func (s *Store) ReportingSchema() string { return s.reporting }
