package billing

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// VerifyWebhookAt is VerifyWebhook against the clock reading now.
func VerifyWebhookAt(secret string, h map[string][]string, body []byte, tolerance time.Duration, now time.Time) error {
	return verifyWebhookAt(secret, h, body, tolerance, now)
}

// QueueEmail runs queueEmail in a transaction of its own, as document
// sending will inside its own.
func (s *Service) QueueEmail(ctx context.Context, account string, e Email) error {
	_, err := mutate(ctx, s, account, func(tx Tx) (struct{}, error) {
		return struct{}{}, s.queueEmail(ctx, tx, account, e)
	})
	return err
}

// NotificationPayloadsForTest returns, oldest first, the payload of every
// notification delivery of account of type typ.
func NotificationPayloadsForTest(tb testing.TB, s *Service, account string, typ NotificationType) []string {
	tb.Helper()
	var out []string
	err := s.store.View(context.Background(), func(tx Tx) error {
		return tx.Scan(context.Background(), tableDeliveries, Range{Prefix: prefix(account)}, func(_, v []byte) error {
			var d deliveryRecord
			if err := json.Unmarshal(v, &d); err != nil {
				return err
			}
			if d.NotificationType == typ {
				out = append(out, string(d.Payload))
			}
			return nil
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}
