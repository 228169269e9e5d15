// Package crashtest holds the process-level reliability tests of billingd
// (docs/ARCHITECTURE.md, "Reliability test suites"); it has no API of its own.
//
// TestCrashRecovery re-executes its own test binary as a child process that
// serves the real HTTP API over a real bbolt file (fsync on) on loopback and
// runs a mixed workload against it, printing one line to stdout for every
// write the API acknowledged. The parent SIGKILLs the child at a random
// moment (after a random number of acknowledgements), reopens the file, and
// checks that the bbolt consistency check is clean, that every acknowledged
// write is present, and that nothing is duplicated; then it starts the next
// round on the same file.
//
// The workload mixes usage events (single and batched), customers, invoice
// sends (create, add a line, send) and credit notes (against a SENT
// invoice: create, add a line, finalize or mark as sent). The child's
// account has a webhook policy covering every notification type, pointing
// at a loopback receiver run by the parent, and the child runs a
// dispatch.Dispatcher (private targets allowed, as billingd serve
// --webhook-allow-private). After each reopen the parent also checks that
// invoice and credit note numbers are unique and gapless (INV00001..,
// CN00001..), that every acknowledged send is SENT (every acknowledged
// credit note FINAL or SENT) with a number, that the journal's debits equal
// its credits per source, and, after running a dispatcher on the reopened
// file (its clock moved past leases) until no delivery is PENDING, that
// every committed notification was received at least once with its
// original webhook-id, signed (VerifyWebhook), and nothing else was. The number of rounds comes from CRASH_ROUNDS
// (default 5 in go test); the full run the reliability guarantee asks for is
//
//	CRASH_ROUNDS=25 go test -count=1 -run TestCrashRecovery -v ./internal/crashtest
//
// and CRASH_SEED=<n> replays the random moments of an earlier run (the seed
// is logged). A workload kind is one entry of the workloads table: a
// function the child runs (returning the key of the acknowledged write) and
// a function the parent uses to read back what is stored.
//
// TestShutdownUnderLoad builds the real billingd binary, drives concurrent
// POST /usage-events against `billingd serve`, sends SIGTERM mid-load and
// checks that every acknowledged (201) event is present after reopening the
// database and that the consistency check is clean.
//
// TestSeveralInstances (PostgreSQL) builds billingd and starts three
// `billingd serve` processes on one database (a cluster: fixtures and
// checks go through a Service of the test's own on the same database), and
// spreads requests over them: parallel sends of one invoice, parallel
// finalizations, concurrent billing runs, a key revoked through one
// instance or directly in the database, one Idempotency-Key raced on all
// three. TestCrashOneOfThreeInstances runs the workloads above against
// such a cluster through a round-robin client and SIGKILLs one instance at
// a random moment in each of at least 10 rounds, restarting it after; see
// their doc comments for what is checked.
package crashtest
