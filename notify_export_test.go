package billing

import (
	"context"
	"time"
)

// SetAfterSend makes a dispatcher built from cfg call f after each send and
// before recording its result (the crash test kills the process there).
func SetAfterSend(cfg *DispatcherConfig, f func()) { cfg.afterSend = f }

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
