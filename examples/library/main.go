// Command library is the README's "library" example: billingd embedded in
// a Go program. It creates an account, an API key and a usage metric, then
// serves the API; the key it prints works with every route.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"

	"github.com/billingd/billing"
	"github.com/billingd/billing/httpserver"
	"github.com/billingd/billing/storage/boltstore"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	db := flag.String("db", "billing.db", "database file")
	flag.Parse()
	ctx := context.Background()

	store, err := boltstore.Open(*db, nil) // or memstore.New() for tests
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	svc, err := billing.New(store, nil) // nil Config: production defaults
	if err != nil {
		log.Fatal(err)
	}
	acct, err := svc.CreateAccount(ctx, billing.CreateAccountParams{Name: "Acme"})
	if err != nil {
		log.Fatal(err)
	}
	key, err := svc.CreateAPIKey(ctx, acct.ID) // the secret is shown only now
	if err != nil {
		log.Fatal(err)
	}
	metric, err := svc.CreateUsageMetric(ctx, acct.ID, billing.CreateUsageMetricParams{
		UsageMetricParams: billing.UsageMetricParams{Name: "API calls", MetricType: billing.MetricTypeSimple,
			EventType: "api_call", AggregationType: billing.AggregationCount}})
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("metric %s; try:\ncurl -H 'Authorization: %s' http://%s/usage-metrics\n",
		metric.ID, key.Authorization(), ln.Addr())
	// httpserver.New prints nothing; give it a Config with a Logger for
	// request logs. Or mount the routes on your own gin engine (Register).
	log.Fatal(http.Serve(ln, httpserver.New(svc, nil)))
}
