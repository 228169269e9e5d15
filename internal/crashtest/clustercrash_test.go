package crashtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/pgstore/pgtest"
)

// clusterLoad runs the crash workloads (usage events, customers, invoice
// sends, credit notes; every write notifies the receiver) against a
// cluster until stopped, recording every acknowledged write. A write that
// failed because its instance was killed is not acknowledged; any other
// failure is a surviving instance that stopped answering.
type clusterLoad struct {
	gate  sync.RWMutex // held for writing while a round is verified
	mu    sync.Mutex
	acked map[string]map[string]bool // kind → key → acknowledged
	lost  atomic.Int64               // writes cut off by a kill
	fail  chan error
	stop  chan struct{}
	wg    sync.WaitGroup
}

// run starts workers writing through cl.
func (l *clusterLoad) run(cl *client, workers int) {
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	var seq atomic.Int64
	for w := range workers {
		l.wg.Go(func() {
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				n := seq.Add(1)
				wl := workloads[(int(n)+w)%len(workloads)]
				l.gate.RLock()
				k, err := wl.write(context.Background(), cl, fmt.Sprintf("%s-%d", run, n))
				if err == nil {
					l.mu.Lock()
					l.acked[wl.name][k] = true
					l.mu.Unlock()
				}
				l.gate.RUnlock()
				switch {
				case errors.Is(err, errKilled):
					l.lost.Add(1)
				case err != nil:
					select {
					case l.fail <- fmt.Errorf("%s: %w", wl.name, err):
					default:
					}
					return
				}
			}
		})
	}
}

// snapshot returns a copy of what was acknowledged so far.
func (l *clusterLoad) snapshot() map[string]map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]map[string]bool{}
	for kind, keys := range l.acked {
		out[kind] = map[string]bool{}
		for k := range keys {
			out[kind][k] = true
		}
	}
	return out
}

// TestCrashOneOfThreeInstances runs three real billingd processes on one
// PostgreSQL database under the crash test's mixed load, spread over the
// instances, and SIGKILLs one of them at a random moment in every round
// (at least 10 rounds; CRASH_ROUNDS raises it), restarting it afterwards.
// After each kill, with the load paused, every acknowledged write is
// stored once and document numbers are gapless; the surviving instances
// answered every request throughout. At the end, the instances' own
// dispatchers (a killed instance's claims are taken over when their
// 16-second leases expire) have delivered every committed notification,
// received with its original webhook-id. CRASH_SEED replays the kill
// moments and victims.
//
// Long on purpose: the cluster, the load, the rounds and the final
// delivery check share their state; each phase is a few lines.
func TestCrashOneOfThreeInstances(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	seed, rng := crashSeed(t)
	c := startCluster(t, db, 3, "--billing-interval", "1s", "--delivery-lease", "16s")
	ctx := context.Background()
	rcv := billingtest.NewWebhookReceiver(t, nil)
	if _, err := c.svc.CreateNotificationPolicy(ctx, c.account, billing.CreateNotificationPolicyParams{
		Name: "cluster receiver", Channel: billing.ChannelWebhook, Recipients: []string{rcv.URL + "/hook"},
	}); err != nil {
		t.Fatal(err)
	}
	customer, err := c.svc.CreateCustomer(ctx, c.account, billing.CustomerParams{LegalName: "Cluster documents"})
	if err != nil {
		t.Fatal(err)
	}
	load := &clusterLoad{acked: map[string]map[string]bool{}, fail: make(chan error, 1), stop: make(chan struct{})}
	for _, w := range workloads {
		load.acked[w.name] = map[string]bool{}
	}
	load.run(&client{auth: c.auth, customer: customer.ID, http: c.http, router: c}, 6)
	defer func() {
		close(load.stop)
		load.wg.Wait()
	}()

	rounds := max(10, crashRounds(t))
	for round := range rounds {
		select {
		case <-time.After(time.Duration(200+rng.IntN(1300)) * time.Millisecond):
		case err := <-load.fail:
			t.Fatalf("round %d: a surviving instance failed: %v (CRASH_SEED=%d)", round, err, seed)
		}
		victim := rng.IntN(len(c.nodes))
		c.kill(victim)
		// The others keep answering while it is down.
		for i := range c.nodes {
			if i != victim {
				if a, err := c.do(ctx, i, "GET", "/readyz", "", "", nil); err != nil || a.status != http.StatusOK {
					t.Fatalf("round %d: instance %d (alive) answered /readyz %v %d", round, i, err, a.status)
				}
			}
		}
		time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
		c.start(victim)
		load.gate.Lock()
		acked := load.snapshot()
		verifyCluster(t, ctx, c, acked, round)
		load.gate.Unlock()
		if t.Failed() {
			t.Fatalf("round %d failed (CRASH_SEED=%d)", round, seed)
		}
	}
	close(load.stop)
	load.wg.Wait()
	load.stop = make(chan struct{}) // for the deferred close
	select {
	case err := <-load.fail:
		t.Fatalf("a surviving instance failed: %v (CRASH_SEED=%d)", err, seed)
	default:
	}

	// Every committed notification reaches the receiver through the
	// instances' dispatchers, a dead instance's claims once their leases
	// expired.
	deadline := time.Now().Add(90 * time.Second)
	for {
		page, err := c.svc.ListDeliveries(ctx, c.account, billing.DeliveryFilter{Status: billing.DeliveryPending}, billing.ListParams{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries still PENDING 90s after the load stopped: %+v", page.Items[0])
		}
		time.Sleep(200 * time.Millisecond)
	}
	notifications := checkReceived(t, ctx, c.svc, c.account, rcv, rounds)
	acked, n := load.snapshot(), 0
	for kind, keys := range acked {
		n += len(keys)
		t.Logf("%s: %d acknowledged", kind, len(keys))
	}
	t.Logf("%d kills, %d acknowledged writes verified, %d writes cut off by kills, %d notifications delivered (%d webhooks received)",
		rounds, n, load.lost.Load(), notifications, len(rcv.Received()))
}

// verifyCluster checks the database against what was acknowledged: every
// acknowledged write stored once, and documents numbered without gaps.
func verifyCluster(t *testing.T, ctx context.Context, c *cluster, acked map[string]map[string]bool, round int) {
	t.Helper()
	checkAcked(t, ctx, c.svc, c.account, acked, round)
	checkDocuments(t, ctx, c.svc, c.account, round)
}
