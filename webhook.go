package billing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers of every webhook request.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// DefaultWebhookTolerance is how far a webhook's timestamp may be from the
// receiver's clock when VerifyWebhook is given no tolerance.
const DefaultWebhookTolerance = 5 * time.Minute

// Errors of VerifyWebhook.
var (
	// ErrWebhookHeaders reports missing or malformed webhook headers.
	ErrWebhookHeaders = errors.New("billing: missing or malformed webhook headers")
	// ErrWebhookTimestamp reports a timestamp outside the tolerance.
	ErrWebhookTimestamp = errors.New("billing: webhook timestamp outside the tolerance")
	// ErrWebhookSignature reports that no signature matches the secret.
	ErrWebhookSignature = errors.New("billing: no webhook signature matches")
	// ErrWebhookSecret reports a secret that is not "whsec_" and base64.
	ErrWebhookSecret = errors.New("billing: malformed webhook secret")
)

// signWebhook returns the webhook-signature header value for a request with
// id, timestamp ts and body: one "v1,<base64 HMAC-SHA256>" per secret,
// space-separated.
func signWebhook(secrets []string, id string, ts int64, body []byte) (string, error) {
	sigs := make([]string, 0, len(secrets))
	for _, secret := range secrets {
		k, ok := secretKey(secret)
		if !ok {
			return "", ErrWebhookSecret
		}
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(webhookMAC(k, id, ts, body)))
	}
	return strings.Join(sigs, " "), nil
}

func webhookMAC(key []byte, id string, ts int64, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write([]byte(strconv.FormatInt(ts, 10)))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// VerifyWebhook checks a webhook received from billingd: that its
// webhook-timestamp is within tolerance of the local clock (0 means
// DefaultWebhookTolerance) and that one of the space-separated
// webhook-signature values is the v1 HMAC-SHA256 of "id.timestamp.body"
// under secret ("whsec_..."). Signatures are compared in constant time.
// It returns nil when the webhook is authentic, and otherwise an error
// matching ErrWebhookHeaders, ErrWebhookTimestamp, ErrWebhookSignature or
// ErrWebhookSecret. Receivers should also de-duplicate on webhook-id: a
// notification can arrive more than once. h is the request's header (an
// http.Header).
func VerifyWebhook(secret string, h map[string][]string, body []byte, tolerance time.Duration) error {
	return verifyWebhookAt(secret, h, body, tolerance, time.Now())
}

func verifyWebhookAt(secret string, h map[string][]string, body []byte, tolerance time.Duration, now time.Time) error {
	k, ok := secretKey(secret)
	if !ok {
		return ErrWebhookSecret
	}
	id, tsText, sigs := headerValue(h, HeaderWebhookID), headerValue(h, HeaderWebhookTimestamp), headerValue(h, HeaderWebhookSignature)
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if id == "" || sigs == "" || err != nil {
		return ErrWebhookHeaders
	}
	if tolerance <= 0 {
		tolerance = DefaultWebhookTolerance
	}
	sent := time.Unix(ts, 0)
	if sent.Before(now.Add(-tolerance)) || sent.After(now.Add(tolerance)) {
		return ErrWebhookTimestamp
	}
	want := webhookMAC(k, id, ts, body)
	for sig := range strings.FieldsSeq(sigs) {
		version, value, ok := strings.Cut(sig, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(value)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrWebhookSignature
}

// headerValue is http.Header.Get: the first value of the canonical name.
func headerValue(h map[string][]string, name string) string {
	if v := h[textproto.CanonicalMIMEHeaderKey(name)]; len(v) > 0 {
		return v[0]
	}
	return ""
}
