// Command gin mounts the billing API on a gin engine the program already
// owns, under /billing, next to its own routes.
//
// It stores its data in ./billing-example.db and prints a ready
// Authorization header for a new account on start.
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/billingd/billing"
	"github.com/billingd/billing/httpserver"
	"github.com/billingd/billing/storage/boltstore"
)

func main() {
	store, err := boltstore.Open("billing-example.db", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	svc, err := billing.New(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := printCredential(context.Background(), svc); err != nil {
		log.Fatal(err)
	}

	engine := gin.New()
	engine.Use(gin.Recovery())
	engine.GET("/hello", func(c *gin.Context) { c.String(http.StatusOK, "the program's own route\n") })
	// The billing routes, with their authentication, errors and logging,
	// mounted on a group of the program's engine.
	httpserver.NewServer(svc, nil).Register(engine.Group("/billing"))

	srv := &http.Server{Addr: "127.0.0.1:8081", Handler: engine, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("listening on http://%s (try GET /billing/usage-metrics)", srv.Addr)
	log.Fatal(srv.ListenAndServe())
}

// printCredential creates an account with an API key and prints the header
// that authenticates as it.
func printCredential(ctx context.Context, svc *billing.Service) error {
	account, err := svc.CreateAccount(ctx, billing.CreateAccountParams{Name: "example"})
	if err != nil {
		return err
	}
	key, err := svc.CreateAPIKey(ctx, account.ID)
	if err != nil {
		return err
	}
	fmt.Printf("Authorization: %s\n", key.Authorization())
	return nil
}
