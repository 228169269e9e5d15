// Package billing is an embeddable billing engine: usage metering, prices,
// seats, billing schedules, invoices, credit notes and signed notifications,
// exact to the last cent.
//
// A Service runs every operation of the product over a Store, the
// persistence port. The default Store is a bbolt file
// (package storage/boltstore); package storage/memstore keeps everything in
// memory for tests and demos. Package httpserver serves the Service as the
// REST API of the specification, and cmd/billingd is the standalone server.
//
// Every operation takes the account it acts for; records of one account are
// invisible to every other. Errors are *Error values with stable codes
// (CodeOf), money is Decimal (never float64), and the Service never reads the
// wall clock or generates ids except through Config.Now and Config.NewID.
// The Service starts no goroutines: the embedding program runs background
// work such as the billing engine and the notification dispatcher.
package billing
