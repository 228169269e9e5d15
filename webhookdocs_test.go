package billing

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWebhookVerificationInTheDocs runs the Python and Node.js webhook
// checks of docs/concepts.md against a webhook signed by billingd: they
// accept it and refuse it with a changed body. Skipped for a language
// whose interpreter is not installed.
func TestWebhookVerificationInTheDocs(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("docs/concepts.md")
	if err != nil {
		t.Fatal(err)
	}
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	id, ts, body := "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", time.Now().Unix(), `{"type":"INVOICE_ISSUED"}`
	sig, err := signWebhook([]string{secret}, id, ts, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	block := func(lang string) string {
		m := regexp.MustCompile("(?s)```" + lang + "\n(.*?)```").FindSubmatch(doc)
		if m == nil {
			t.Fatalf("docs/concepts.md has no %s block", lang)
		}
		return string(m[1])
	}
	headers := `{"webhook-id": "` + id + `", "webhook-timestamp": "` + strconv.FormatInt(ts, 10) + `", "webhook-signature": "v1,bm90IGl0 ` + sig + `"}`
	for _, tc := range []struct {
		lang, bin string
		call      func(body string) string
	}{
		{"python", "python3", func(b string) string {
			return "\nprint(verify_webhook(" + strconv.Quote(secret) + ", " + headers + ", " + strconv.Quote(b) + ".encode()))\n"
		}},
		{"js", "node", func(b string) string {
			return "\nconsole.log(verifyWebhook(" + strconv.Quote(secret) + ", " + headers + ", Buffer.from(" + strconv.Quote(b) + ")) ? 'True' : 'False');\n"
		}},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			if _, err := exec.LookPath(tc.bin); err != nil {
				t.Skipf("%s is not installed", tc.bin)
			}
			for body, want := range map[string]string{body: "True", body + " ": "False"} {
				program := block(tc.lang) + tc.call(body)
				flag := map[string]string{"python3": "-c", "node": "-e"}[tc.bin]
				out, err := exec.Command(tc.bin, flag, program).CombinedOutput()
				got := strings.TrimSpace(string(out))
				if err != nil || got != want {
					t.Errorf("%s with body %q: %s (%v), want %s", tc.bin, body, got, err, want)
				}
			}
		})
	}
}
