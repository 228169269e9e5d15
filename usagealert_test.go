package billing_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/dispatch"
	"github.com/billingd/billing/storage/boltstore"
	"github.com/billingd/billing/storage/pgstore"
	"github.com/billingd/billing/storage/pgstore/pgtest"
	"github.com/billingd/billing/webhook"
)

// alertEnv is an account with a customer in New York, a SUM metric, a
// webhook policy for threshold notifications to a loopback receiver, and
// the Services (instances) that share its store.
type alertEnv struct {
	t        *testing.T
	clock    *billingtest.Clock
	svcs     []*billing.Service
	account  string
	customer *billing.Customer
	metric   *billing.UsageMetric
	rc       *billingtest.WebhookReceiver
}

// alertConfig is the Config of an alertEnv's Services.
func alertConfig(clock *billingtest.Clock) *billing.Config {
	return &billing.Config{Now: clock.Now, WebhookAllowPrivate: true, ConcurrentBillingRuns: true}
}

// setUp creates the env's fixtures through its first Service.
func (e *alertEnv) setUp() {
	e.t.Helper()
	ctx, svc := context.Background(), e.svcs[0]
	e.account = billingtest.Account(e.t, svc, "acme")
	e.customer = must(svc.CreateCustomer(ctx, e.account, billing.CustomerParams{
		LegalName: "Initech", CustomerAliases: []string{"initech"}, TimeZone: "America/New_York",
	})).of(e.t, "CreateCustomer")
	e.metric = must(svc.CreateUsageMetric(ctx, e.account, billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
		Name: "GB", MetricType: billing.MetricTypeSimple, EventType: "storage",
		AggregationType: billing.AggregationSum, AggregationProperty: "gb",
	}})).of(e.t, "CreateUsageMetric")
	e.rc = billingtest.NewWebhookReceiver(e.t, nil)
	must(svc.CreateNotificationPolicy(ctx, e.account, billing.CreateNotificationPolicyParams{
		Name: "alerts", Channel: billing.ChannelWebhook, Recipients: []string{e.rc.URL},
		NotificationTypes: []billing.NotificationType{billing.NotificationUsageThresholdReached},
	})).of(e.t, "CreateNotificationPolicy")
}

// alert creates a USAGE alert on the metric (for the customer, or for every
// customer when all).
func (e *alertEnv) alert(threshold string, all bool) *billing.UsageAlert {
	e.t.Helper()
	p := billing.CreateUsageAlertParams{Kind: billing.UsageAlertUsage, UsageMetricID: e.metric.ID, Threshold: dec(threshold)}
	if !all {
		p.CustomerID = e.customer.ID
	}
	return must(e.svcs[0].CreateUsageAlert(context.Background(), e.account, p)).of(e.t, "CreateUsageAlert")
}

// ingest records an event of gb at ts through instance i; id, when set, is
// its customerEventId.
func (e *alertEnv) ingest(i int, gb string, ts time.Time, id string) {
	e.t.Helper()
	_, err := e.svcs[i].CreateUsageEvent(context.Background(), e.account, billing.UsageEventParams{
		CustomerAlias: "initech", EventType: "storage", CustomerEventID: id, EventTimestamp: &ts,
		EventProperties: billing.EventProperties{"gb": billing.NumberProperty(*dec(gb))},
	})
	if err != nil {
		e.t.Fatalf("CreateUsageEvent: %v", err)
	}
}

// evaluate runs EvaluateAlerts on instance i and returns what it notified.
func (e *alertEnv) evaluate(i int) int {
	e.t.Helper()
	return must(e.svcs[i].EvaluateAlerts(context.Background())).of(e.t, "EvaluateAlerts").Notified
}

// deliver sends what the outbox holds through instance i's dispatcher and
// returns the crossings the receiver has seen so far.
func (e *alertEnv) deliver(i int) []billing.AlertCrossing {
	e.t.Helper()
	d := dispatch.New(e.svcs[i], dispatch.Config{Webhooks: webhook.NewSender(true)})
	if _, err := d.RunOnce(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	var out []billing.AlertCrossing
	for _, h := range e.rc.Received() {
		var n struct {
			Type billing.NotificationType
			Data billing.AlertCrossing
		}
		if err := json.Unmarshal(h.Body, &n); err != nil {
			e.t.Fatal(err)
		}
		if n.Type != billing.NotificationUsageThresholdReached {
			e.t.Fatalf("type %s", n.Type)
		}
		out = append(out, n.Data)
	}
	return out
}

// TestUsageAlertAcrossRestart: on bbolt and (with BILLINGD_TEST_POSTGRES)
// PostgreSQL, a threshold crossed before a restart of the Service (the
// same file or database opened again) is notified once after it, and never
// again in that period; a superseded event counts as the calculation
// counts it; the next month in the customer's time zone notifies again.
func TestUsageAlertAcrossRestart(t *testing.T) {
	t.Parallel()
	stores := map[string]func() billing.Store{}
	path := filepath.Join(t.TempDir(), "billing.db")
	stores["bbolt"] = func() billing.Store {
		st, err := boltstore.Open(path, &boltstore.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if pgtest.Enabled() {
		url := pgtest.URL(t)
		stores["postgres"] = func() billing.Store {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st, err := pgstore.Open(ctx, url, &pgstore.Options{MaxConns: 4})
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
	}
	for name, reopen := range stores {
		t.Run(name, func(t *testing.T) { checkAlertAcrossRestart(t, reopen) })
	}
}

// checkAlertAcrossRestart is TestUsageAlertAcrossRestart on the store
// that reopen opens (again).
//
// Long on purpose: one story through two Services on one store, observed
// at a real receiver after each step.
func checkAlertAcrossRestart(t *testing.T, reopen func() billing.Store) {
	clock := billingtest.NewClock(time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)) // 15:00 in New York
	open := func() *billing.Service {
		svc, err := billing.New(reopen(), alertConfig(clock))
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	e := &alertEnv{t: t, clock: clock, svcs: []*billing.Service{open()}}
	e.setUp()
	a := e.alert("10", false)
	nov := time.Date(2026, 11, 10, 0, 0, 0, 0, time.UTC)
	e.ingest(0, "6", nov, "")
	e.ingest(0, "9", nov, "ev-1")
	e.ingest(0, "1", nov, "ev-1") // supersedes 9: the month holds 7
	if n := e.evaluate(0); n != 0 {
		t.Fatalf("below the threshold: %d notified", n)
	}
	// A late event (timestamped days ago) crosses it; the Service stops
	// before evaluating, and a new one on the same file notifies.
	e.ingest(0, "3.000000000001", nov.AddDate(0, 0, -5), "")
	if err := e.svcs[0].Store().Close(); err != nil {
		t.Fatal(err)
	}
	e.svcs[0] = open()
	defer e.svcs[0].Store().Close()
	if n := e.evaluate(0); n != 1 {
		t.Fatalf("after the restart: %d notified, want 1", n)
	}
	e.ingest(0, "5", nov, "")
	if n := e.evaluate(0); n != 0 {
		t.Fatalf("the same period again: %d notified", n)
	}
	got := e.deliver(0)
	if len(got) != 1 {
		t.Fatalf("receiver saw %d crossings, want 1", len(got))
	}
	c := got[0]
	ny, _ := time.LoadLocation("America/New_York")
	if c.AlertID != a.ID || c.CustomerID != e.customer.ID || c.UsageMetricID != e.metric.ID ||
		c.Threshold.String() != "10" || c.Value.String() != "10.000000000001" ||
		!c.PeriodStart.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, ny)) || !c.PeriodEnd.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, ny)) {
		t.Fatalf("crossing %+v", c)
	}
	// 03:00 UTC on December 1st is still November in New York: the event
	// counts in November, notified already.
	e.ingest(0, "20", time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC), "")
	if n := e.evaluate(0); n != 0 {
		t.Fatalf("November in New York: %d notified", n)
	}
	// December in New York begins at 05:00 UTC: a new period.
	clock.Set(time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC))
	e.ingest(0, "4", time.Date(2026, 12, 1, 5, 30, 0, 0, time.UTC), "")
	if n := e.evaluate(0); n != 0 {
		t.Fatalf("December holds 4: %d notified", n)
	}
	e.ingest(0, "6", time.Date(2026, 12, 1, 5, 40, 0, 0, time.UTC), "")
	if n := e.evaluate(0); n != 1 {
		t.Fatalf("December reached 10: %d notified, want 1", n)
	}
	if got := e.deliver(0); len(got) != 2 || got[1].Value.String() != "10" || !got[1].PeriodStart.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, ny)) {
		t.Fatalf("after December: %+v", got)
	}
}

// TestUsageAlertTwoInstances: on PostgreSQL, two instances (two stores on
// one database, each with its own Service and dispatcher) ingesting and
// evaluating at the same time notify each crossing once, for an alert of
// one customer and one of every customer.
func TestUsageAlertTwoInstances(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	clock := billingtest.NewClock(time.Date(2026, 11, 15, 12, 0, 0, 0, time.UTC))
	e := &alertEnv{t: t, clock: clock}
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		st, err := pgstore.Open(ctx, url, &pgstore.Options{MaxConns: 4})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		svc, err := billing.New(st, alertConfig(clock))
		if err != nil {
			t.Fatal(err)
		}
		e.svcs = append(e.svcs, svc)
	}
	e.setUp()
	e.alert("10", false)
	e.alert("25", true)
	ts := time.Date(2026, 11, 14, 0, 0, 0, 0, time.UTC)
	done := make(chan int)
	for i := range 2 {
		go func() {
			ctx, n := context.Background(), 0
			defer func() { done <- n }()
			for range 15 {
				_, err := e.svcs[i].CreateUsageEvent(ctx, e.account, billing.UsageEventParams{
					CustomerAlias: "initech", EventType: "storage", EventTimestamp: &ts,
					EventProperties: billing.EventProperties{"gb": billing.NumberProperty(*dec("1"))},
				})
				if err != nil {
					t.Error(err)
					return
				}
				run, err := e.svcs[i].EvaluateAlerts(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				n += run.Notified
			}
		}()
	}
	notified := <-done + <-done
	notified += e.evaluate(0) + e.evaluate(1)
	if notified != 2 {
		t.Fatalf("the instances notified %d crossings, want 2", notified)
	}
	e.deliver(0)
	got := e.deliver(1)
	if len(got) != 2 || got[0].AlertID == got[1].AlertID {
		t.Fatalf("receiver saw %+v, want one crossing of each alert", got)
	}
}

// TestSpendAlert: a SPEND alert for every customer notifies once when the
// upcoming invoice's amount due in its currency reaches the threshold, with
// the invoice's billing period; not before.
func TestSpendAlert(t *testing.T) {
	t.Parallel()
	f := newSched(t, billingtest.WithBolt(), billingtest.WithConfig(billing.Config{WebhookAllowPrivate: true}))
	f.clock.Set(time.Date(2024, 3, 10, 12, 0, 0, 0, time.UTC))
	f.schedule(f.customer, "2024-03-01", nil, phase("2024-03-01", f.apiCalls("1.00")))
	rc := billingtest.NewWebhookReceiver(t, nil)
	must(f.svc.CreateNotificationPolicy(f.ctx, f.account, billing.CreateNotificationPolicyParams{
		Name: "spend", Channel: billing.ChannelWebhook, Recipients: []string{rc.URL},
		NotificationTypes: []billing.NotificationType{billing.NotificationSpendThresholdReached},
	})).of(t, "CreateNotificationPolicy")
	a := must(f.svc.CreateUsageAlert(f.ctx, f.account, billing.CreateUsageAlertParams{
		Kind: billing.UsageAlertSpend, Currency: billing.CurrencyUSD, Threshold: dec("10.00"),
	})).of(t, "CreateUsageAlert")
	evaluate := func() int { return must(f.svc.EvaluateAlerts(f.ctx)).of(t, "EvaluateAlerts").Notified }
	f.events(f.customer, "api_call", time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC), 6)
	if n := evaluate(); n != 0 {
		t.Fatalf("6.00 due: %d notified", n)
	}
	f.events(f.customer, "api_call", time.Date(2024, 3, 6, 0, 0, 0, 0, time.UTC), 5)
	if n := evaluate(); n != 1 {
		t.Fatalf("11.00 due: %d notified, want 1", n)
	}
	f.events(f.customer, "api_call", time.Date(2024, 3, 7, 0, 0, 0, 0, time.UTC), 5)
	if n := evaluate(); n != 0 {
		t.Fatalf("16.00 due in the same period: %d notified", n)
	}
	if _, err := dispatch.New(f.svc, dispatch.Config{Webhooks: webhook.NewSender(true)}).RunOnce(f.ctx); err != nil {
		t.Fatal(err)
	}
	got := rc.Received()
	if len(got) != 1 {
		t.Fatalf("receiver saw %d webhooks, want 1", len(got))
	}
	var n struct {
		Type billing.NotificationType
		Data billing.AlertCrossing
	}
	if err := json.Unmarshal(got[0].Body, &n); err != nil {
		t.Fatal(err)
	}
	c := n.Data
	if n.Type != billing.NotificationSpendThresholdReached || c.AlertID != a.ID || c.CustomerID != f.customer || c.Currency != billing.CurrencyUSD ||
		c.Value.String() != "11.00" || !c.PeriodStart.Equal(time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)) || !c.PeriodEnd.Equal(time.Date(2024, 4, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("notification %s %+v", n.Type, c)
	}
}
