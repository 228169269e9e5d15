package httpserver

import (
	"fmt"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"unsafe"

	"github.com/billingd/billing"
)

// eventPage is the wire shape of GET /usage-events.
type eventPage struct {
	Items      []billing.UsageEvent `json:"items"`
	Pagination billing.Pagination   `json:"pagination"`
}

func TestUsageEventEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.post("/usage-events", `{"customerAlias":"c1","eventType":"api_call","customerEventId":"x",
		"eventTimestamp":"2024-07-01T12:00:00.5+02:00","eventProperties":{"n":1.50,"big":1e3,"s":"EU","b":true}}`)
	wantStatus(t, r, http.StatusCreated)
	for _, want := range []string{`"n":1.50`, `"big":1000`, `"s":"EU"`, `"b":true`, `"eventTimestamp":"2024-07-01T10:00:00Z"`, `"customerEventId":"x"`} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("response %s lacks %s", r.body, want)
		}
	}
	wantError(t, e.post("/usage-events", `{"customerAlias":"c1","eventType":"t","eventProperties":{"x":{"y":1},"z":[1]}}`),
		400, billing.CodeValidationFailed, "eventProperties.x", "eventProperties.z")
	wantError(t, e.post("/usage-events", `{"customerAlias":"c1","eventType":"t","id":"mine"}`), 400, billing.CodeValidationFailed, "id")
	wantError(t, e.post("/usage-events", `{"customerAlias":"c1","eventType":"t","eventTimestamp":"2030-01-01T00:00:00Z"}`),
		400, billing.CodeValidationFailed, "eventTimestamp")

	bad := `{"events":[{"customerAlias":"c1","eventType":"t"},{"customerAlias":"c1","eventType":"t","eventProperties":{"x":null}}]}`
	wantError(t, e.post("/usage-events/batch", bad), 400, billing.CodeValidationFailed, "events[1].eventProperties.x")
	bad = `{"events":[{"customerAlias":"c1","eventType":"t"},{"customerAlias":"c1"},{"customerAlias":"c,1","eventType":"t"}]}`
	wantError(t, e.post("/usage-events/batch", bad), 400, billing.CodeValidationFailed, "events[1].eventType", "events[2].customerAlias")
	list := decode[eventPage](t, e.get("/usage-events"))
	if list.Pagination.TotalResultSize != 1 {
		t.Errorf("a bad batch changed the events: %d stored", list.Pagination.TotalResultSize)
	}

	// A batch over the 1 MiB default but under the 5 MiB batch limit.
	long := strings.Repeat("v", 1000)
	var events []string
	for i := range 1000 {
		events = append(events, fmt.Sprintf(`{"customerAlias":"c%d","eventType":"api_call","eventProperties":{"s":"%s","n":%d}}`, i%2, long, i))
	}
	r = e.post("/usage-events/batch", `{"events":[`+strings.Join(events, ",")+`]}`)
	wantStatus(t, r, http.StatusCreated)
	if items := decode[billing.Items[billing.UsageEvent]](t, r).Items; len(items) != 1000 {
		t.Errorf("batch returned %d items", len(items))
	}

	page := decode[eventPage](t, e.get("/usage-events?customerAlias=c1&eventType=api_call&limit=5"))
	if page.Pagination.TotalResultSize != 501 || len(page.Items) != 5 || page.Pagination.After == "" {
		t.Errorf("filtered list: %+v, %d items", page.Pagination, len(page.Items))
	}
	wantError(t, e.get("/usage-events?eventTimestampAfter=yesterday"), 400, billing.CodeValidationFailed, "eventTimestampAfter")
}

func TestCalculateEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.clock.Set(e.clock.Now().AddDate(0, 1, 0))
	wantStatus(t, e.post("/usage-events/batch", `{"events":[
		{"customerAlias":"c1","eventType":"api_call","eventTimestamp":"2024-07-01T00:00:00Z","eventProperties":{"region":"EU","n":2}},
		{"customerAlias":"c2","eventType":"api_call","eventTimestamp":"2024-07-15T00:00:00Z","eventProperties":{"region":"eu","n":"0.5"}},
		{"customerAlias":"c1","eventType":"api_call","eventTimestamp":"2024-07-20T00:00:00Z","eventProperties":{"region":"US","n":true}},
		{"customerAlias":"c1","eventType":"api_call","eventTimestamp":"2024-08-01T00:00:00Z","eventProperties":{"n":100}}]}`), http.StatusCreated)
	r := e.post("/usage-metrics", `{"name":"n","metricType":"GROUPED","eventType":"api_call","aggregationType":"SUM",
		"aggregationProperty":"n","groupingProperty":"region"}`)
	wantStatus(t, r, http.StatusCreated)
	m := decode[billing.UsageMetric](t, r)
	r = e.get("/usage-metrics/" + m.ID + "/calculate?customerAliases=c1,c2&periodStart=2024-07-01&periodEnd=2024-07-31")
	wantStatus(t, r, http.StatusOK)
	want := `"periodStart":"2024-07-01","periodEnd":"2024-07-31","eventCount":3,"invalidEventCount":1,"value":"2.5","groups":[{"group":"eu","eventCount":2,"value":"2.5"},{"group":"us","eventCount":1,"value":"0"}]`
	if !strings.Contains(string(r.body), want) {
		t.Errorf("calculation %s\nlacks %s", r.body, want)
	}
	base := "/usage-metrics/" + m.ID + "/calculate?customerAliases=c1"
	wantError(t, e.get(base+"&periodStart=2024-07-01&periodEnd=2024-08-01T00:00:00Z"), 400, billing.CodeValidationFailed, "periodEnd")
	wantError(t, e.get(base+"&periodStart=2024-07-01"), 400, billing.CodeValidationFailed, "periodEnd")
	wantError(t, e.get("/usage-metrics/"+m.ID+"/calculate?periodStart=2024-07-01&periodEnd=2024-07-02"), 400, billing.CodeValidationFailed, "customerAliases")
	wantError(t, e.get(base+"&periodStart=2024-07-01&periodEnd=2024-07-02&customParameters=x"), 400, billing.CodeValidationFailed, "customParameters")
	wantError(t, e.get("/usage-metrics/00000000-0000-7000-8000-000000000000/calculate?customerAliases=c1&periodStart=2024-07-01&periodEnd=2024-07-02"),
		404, billing.CodeNotFound)

	r = e.post("/usage-metrics", `{"name":"custom","metricType":"SIMPLE","eventType":"api_call","aggregationType":"CUSTOM"}`)
	wantStatus(t, r, http.StatusCreated)
	c := decode[billing.UsageMetric](t, r)
	errs := wantError(t, e.get("/usage-metrics/"+c.ID+"/calculate?customerAliases=c1&periodStart=2024-07-01&periodEnd=2024-07-02"),
		409, billing.CodeInvalidState)
	if !strings.Contains(errs[0].Message, `"custom"`) {
		t.Errorf("message %q does not name the missing function", errs[0].Message)
	}
}

func TestParseCustomParameters(t *testing.T) {
	t.Parallel()
	got, err := parseCustomParameters("a=1,b=2.5")
	if err != nil || len(got) != 2 || got["a"] != "1" || got["b"] != "2.5" {
		t.Errorf("got %v, %v", got, err)
	}
	if _, err := parseCustomParameters("a"); billing.CodeOf(err) != billing.CodeValidationFailed {
		t.Errorf("a pair without = accepted: %v", err)
	}
}

// TestConcurrentBatchesKeepTheirOwnMemory sends batches from several
// clients at once, valid and refused ones mixed, and single events, so that
// requests take and give back each other's batchScratch and body buffers:
// every answer echoes exactly its own request's events (run with -race: no
// memory is shared while in use).
func TestConcurrentBatchesKeepTheirOwnMemory(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Config{RateLimit: -1})
	const clients, rounds, events = 6, 8, 40
	for c := range clients { // parallel subtests: the clients run at once
		t.Run(fmt.Sprintf("client%d", c), func(t *testing.T) {
			t.Parallel()
			for r := range rounds {
				tag := fmt.Sprintf("c%d-r%d", c, r)
				var evs []string
				for i := range events - c { // batches of different lengths
					evs = append(evs, fmt.Sprintf(`{"customerAlias":"%s","eventType":"t%d","eventTimestamp":"2024-07-01T00:00:%02dZ","eventProperties":{"tag":"%s-%d","n%d":%d}}`,
						tag, c, i, tag, i, c, i))
				}
				if r%3 == 2 { // refused after decoding: its memory is given back unused
					evs = append(evs, `{"customerAlias":"x"}`)
				}
				// A single event between batches: its answer is encoded
				// into writeResult's pooled buffers, never a batch's.
				single := e.post("/usage-events", fmt.Sprintf(`{"customerAlias":"%s-single","eventType":"t"}`, tag))
				wantStatus(t, single, http.StatusCreated)
				if got := decode[billing.UsageEvent](t, single).CustomerAlias; got != tag+"-single" {
					t.Errorf("%s: single event answered as %q", tag, got)
				}
				resp := e.post("/usage-events/batch", `{"events":[`+strings.Join(evs, ",")+`]}`)
				if r%3 == 2 {
					wantError(t, resp, 400, billing.CodeValidationFailed, fmt.Sprintf("events[%d].eventType", len(evs)-1))
					continue
				}
				wantStatus(t, resp, http.StatusCreated)
				items := decode[billing.Items[billing.UsageEvent]](t, resp).Items
				if len(items) != len(evs) {
					t.Errorf("%s: %d items for %d events", tag, len(items), len(evs))
					continue
				}
				for i, it := range items {
					n, _ := it.EventProperties[fmt.Sprintf("n%d", c)].Number()
					if it.CustomerAlias != tag || it.EventType != fmt.Sprintf("t%d", c) || len(it.EventProperties) != 2 ||
						it.EventProperties["tag"].String() != fmt.Sprintf("%s-%d", tag, i) || n.String() != fmt.Sprint(i) ||
						it.EventTimestamp.Second() != i {
						t.Errorf("%s: item %d is %+v", tag, i, it)
					}
				}
			}
		})
	}
}

// TestBatchAnswerMemoryNotShared checks that a written batch answer's
// buffer goes back to its batchScratch only (and its body's to
// bodyBuffers), never also to writeResult's pool of answer buffers, where
// a single event's answer would be encoded into the memory of the next
// batch's answer. Not parallel: it looks at
// the process-wide pools, on one P and without collections, so that
// sync.Pool hands back what was put.
func TestBatchAnswerMemoryNotShared(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	e := newEnv(t, nil)
	wantStatus(t, e.post("/usage-events/batch", `{"events":[{"customerAlias":"c","eventType":"t"}]}`), http.StatusCreated)
	var kept []*batchScratch
	for len(batchScratches) > 0 {
		kept = append(kept, <-batchScratches)
	}
	if len(kept) == 0 {
		t.Fatal("the batch's memory was not given back")
	}
	for range 8 {
		buf := answerBuffers.Get().(*[]byte)
		for _, sc := range kept {
			if cap(*buf) > 0 && cap(sc.answer) > 0 && unsafe.SliceData((*buf)[:1]) == unsafe.SliceData(sc.answer[:1]) {
				t.Fatal("a batch answer's buffer is also in answerBuffers")
			}
		}
	}
	for _, sc := range kept {
		sc.release()
	}
	// Its body's buffer was given back too, for the next batch to read into.
	select {
	case b := <-bodyBuffers:
		if cap(b) == 0 {
			t.Error("an empty body buffer was kept")
		}
	default:
		t.Error("the batch's body buffer was not given back")
	}
}

// TestRefusedBatchBodyGivesItsBufferBack: a batch refused before its body
// was read (too large) gives the body buffer it took back for the next.
// Not parallel: it looks at the process-wide bodyBuffers.
func TestRefusedBatchBodyGivesItsBufferBack(t *testing.T) {
	e := newEnv(t, &Config{MaxBatchBodyBytes: 64})
	for len(bodyBuffers) > 0 {
		<-bodyBuffers
	}
	mine := make([]byte, 0, 4096)
	giveBodyBuffer(mine)
	wantStatus(t, e.post("/usage-events/batch", `{"events":[`+strings.Repeat(`{"customerAlias":"c","eventType":"t"},`, 10)+`{}]}`), http.StatusRequestEntityTooLarge)
	select {
	case b := <-bodyBuffers:
		if unsafe.SliceData(b[:1]) != unsafe.SliceData(mine[:1]) {
			t.Error("another buffer came back")
		}
	default:
		t.Error("the refused batch's body buffer was not given back")
	}
}
