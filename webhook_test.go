package billing_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// sign computes a v1 signature the way the Standard Webhooks reference
// libraries do.
func sign(secret, id string, ts int64, body []byte) string {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "."))
	h.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(h.Sum(nil))
}

func webhookHeaders(id string, ts int64, sig string) http.Header {
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", sig)
	return h
}

func TestVerifyWebhook(t *testing.T) {
	t.Parallel()
	now := time.Unix(1722340800, 0)
	body := []byte(`{"id":"n1"}`)
	good := sign(testSecret, "n1", now.Unix(), body)
	other := sign("whsec_"+base64.StdEncoding.EncodeToString([]byte("another secret of 24 byte")), "n1", now.Unix(), body)
	for _, tc := range []struct {
		name string
		h    http.Header
		body []byte
		tol  time.Duration
		want error
	}{
		{"Valid", webhookHeaders("n1", now.Unix(), good), body, 0, nil},
		{"ValidAmongSeveral", webhookHeaders("n1", now.Unix(), other+" "+good), body, 0, nil},
		{"ValidWithinTolerance", webhookHeaders("n1", now.Unix()-299, sign(testSecret, "n1", now.Unix()-299, body)), body, 0, nil},
		{"ErrWebhookTimestampOld", webhookHeaders("n1", now.Unix()-301, sign(testSecret, "n1", now.Unix()-301, body)), body, 0, billing.ErrWebhookTimestamp},
		{"ErrWebhookTimestampFuture", webhookHeaders("n1", now.Unix()+301, sign(testSecret, "n1", now.Unix()+301, body)), body, 0, billing.ErrWebhookTimestamp},
		{"LongerToleranceAccepts", webhookHeaders("n1", now.Unix()-3600, sign(testSecret, "n1", now.Unix()-3600, body)), body, 2 * time.Hour, nil},
		{"ErrWebhookSignatureBody", webhookHeaders("n1", now.Unix(), good), []byte(`{"id":"n2"}`), 0, billing.ErrWebhookSignature},
		{"ErrWebhookSignatureID", webhookHeaders("n2", now.Unix(), good), body, 0, billing.ErrWebhookSignature},
		{"ErrWebhookSignatureOtherSecret", webhookHeaders("n1", now.Unix(), other), body, 0, billing.ErrWebhookSignature},
		{"ErrWebhookSignatureVersion", webhookHeaders("n1", now.Unix(), "v2,"+strings.TrimPrefix(good, "v1,")), body, 0, billing.ErrWebhookSignature},
		{"ErrWebhookHeadersMissing", http.Header{}, body, 0, billing.ErrWebhookHeaders},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := billing.VerifyWebhookAt(testSecret, tc.h, tc.body, tc.tol, now); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("VerifyWebhook = %v, want %v", err, tc.want)
			}
		})
	}
	bad := webhookHeaders("n1", now.Unix(), good)
	bad.Set("webhook-timestamp", "soon")
	if err := billing.VerifyWebhookAt(testSecret, bad, body, 0, now); !errors.Is(err, billing.ErrWebhookHeaders) {
		t.Errorf("malformed timestamp: %v", err)
	}
	if err := billing.VerifyWebhookAt("secret", webhookHeaders("n1", now.Unix(), good), body, 0, now); !errors.Is(err, billing.ErrWebhookSecret) {
		t.Errorf("malformed secret: %v", err)
	}
	// VerifyWebhook itself reads the real clock.
	real := time.Now().Unix()
	if err := billing.VerifyWebhook(testSecret, webhookHeaders("n1", real, sign(testSecret, "n1", real, body)), body, 0); err != nil {
		t.Errorf("VerifyWebhook at the real time: %v", err)
	}
}

// FuzzVerifyWebhook: VerifyWebhook never panics, and accepts a request only
// when one of its signatures is the genuine one.
func FuzzVerifyWebhook(f *testing.F) {
	f.Add("n1", int64(1722340800), "v1,abc", []byte(`{}`), int64(0))
	f.Add("msg_2", int64(1722340800), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", []byte(`{"a":1}`), int64(-10))
	f.Fuzz(func(t *testing.T, id string, ts int64, sigs string, body []byte, skew int64) {
		now := time.Unix(ts, 0).Add(time.Duration(skew%600) * time.Second)
		genuine := sign(testSecret, id, ts, body)
		err := billing.VerifyWebhookAt(testSecret, webhookHeaders(id, ts, sigs), body, 0, now)
		if err == nil && !strings.Contains(sigs, strings.TrimPrefix(genuine, "v1,")) {
			t.Fatalf("accepted %q without the genuine signature %q", sigs, genuine)
		}
		err = billing.VerifyWebhookAt(testSecret, webhookHeaders(id, ts, sigs+" "+genuine), body, 0, now)
		inTolerance := skew%600 >= -300 && skew%600 <= 300
		if id != "" && !strings.ContainsAny(id, "\r\n") && inTolerance && err != nil {
			t.Fatalf("rejected a genuine signature: %v", err)
		}
	})
}
