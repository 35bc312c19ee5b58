package providertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/internal/wire"
)

// The shared material of the providers' benchmarks, so their figures
// compare: one turn-sized request and its decision.

// BenchSchema is a decision-like strict schema of about 1 KB.
var BenchSchema = []byte(`{"type":"object","additionalProperties":false,` +
	`"required":["reply","action","arguments","confidence","needs_confirmation"],"properties":{` +
	`"reply":{"type":"string","description":"What to say to the user, in their language."},` +
	`"action":{"type":["string","null"],"enum":["none","search_tasks","create_task","move_task","comment_task","list_events","create_event",null],"description":"The tool to call, or none."},` +
	`"arguments":{"type":["object","null"],"additionalProperties":false,"required":["query","title","list","due","text"],"properties":{` +
	`"query":{"type":["string","null"]},"title":{"type":["string","null"]},"list":{"type":["string","null"]},` +
	`"due":{"type":["string","null"],"description":"RFC 3339 date or null"},"text":{"type":["string","null"]}}},` +
	`"confidence":{"type":"number","minimum":0,"maximum":1},` +
	`"needs_confirmation":{"type":"boolean","description":"True when the action changes data."}}}`)

// BenchDecision is the model's answer to BenchRequest.
const BenchDecision = `{"reply":"I found 3 tasks about the launch.","action":"search_tasks","arguments":{"query":"launch","title":null,"list":null,"due":null,"text":null},"confidence":0.92,"needs_confirmation":false}`

// BenchRequest is a turn-sized request: a ~2.5 KB system prompt, a short
// history and a user message (~3 KB in all) plus the strict schema.
func BenchRequest() llm.Request {
	system := strings.Repeat("You are the team assistant. Answer briefly, in the user's language, and propose at most one action. ", 25)
	return llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: system},
			{Role: llm.RoleUser, Content: "What is on the board for the launch?"},
			{Role: llm.RoleAssistant, Content: `{"reply":"Let me look.","action":"none","arguments":null,"confidence":0.8,"needs_confirmation":false}`},
			{Role: llm.RoleUser, Content: "Show me the open tasks about the launch, please, and anything due this week."},
		},
		Schema:      &llm.Schema{Name: "decision", JSON: BenchSchema, Strict: BenchSchema},
		Temperature: 0,
		MaxTokens:   500,
		Operation:   "turn",
	}
}

// ReportCPU starts measuring the process's CPU time; the returned func
// reports it per iteration as "cpu-ns/op" (client and fake server
// together), which is steadier than wall time on a shared machine.
func ReportCPU(b *testing.B) func() {
	start, ok := processCPU()
	return func() {
		end, _ := processCPU()
		if ok && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

// BenchComplete runs p.Complete on BenchRequest in b's loop, reporting
// allocations and CPU; every answer must be BenchDecision.
func BenchComplete(b *testing.B, p llm.Provider) {
	BenchLoop(b, func(ctx context.Context, req *llm.Request) (string, error) {
		resp, err := p.Complete(ctx, *req)
		return resp.Text, err
	})
}

// BenchCompleteStreamed is BenchComplete with OnText set: the same answer
// as a stream, put together again by p. It fails if OnText is never
// called.
func BenchCompleteStreamed(b *testing.B, p llm.Provider) {
	var pieces int
	BenchLoop(b, func(ctx context.Context, req *llm.Request) (string, error) {
		req.OnText = func(string) { pieces++ }
		resp, err := p.Complete(ctx, *req)
		return resp.Text, err
	})
	if pieces == 0 {
		b.Fatal("OnText never called")
	}
}

// BenchReadStream measures read, a provider's reader of streamed answers,
// alone: h's streamed answer to req is recorded once and read from memory,
// with no server and no connection. Every read must give BenchDecision.
func BenchReadStream(b *testing.B, h http.Handler, req *http.Request, read func(body io.Reader, watch *wire.StreamWatch) (string, error)) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body := rec.Body.Bytes()
	_, watch, stop := wire.WatchStream(context.Background(), llm.StreamLimits{}, 500)
	defer stop()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if text, err := read(bytes.NewReader(body), watch); err != nil || text != BenchDecision {
			b.Fatalf("%v %q", err, text)
		}
	}
}

// BenchLoop runs call on BenchRequest in b's loop — a provider, or the
// hand-written baseline it is compared with — reporting allocations and
// CPU; every answer must be BenchDecision.
func BenchLoop(b *testing.B, call func(ctx context.Context, req *llm.Request) (string, error)) {
	req := BenchRequest()
	ctx := context.Background()
	b.ReportAllocs()
	defer ReportCPU(b)()
	for b.Loop() {
		text, err := call(ctx, &req)
		if err != nil || text != BenchDecision {
			b.Fatalf("call: %v %q", err, text)
		}
	}
}

// PostJSON is the HTTP exchange of a provider's hand-written baseline,
// plain net/http and encoding/json: in, encoded, is POSTed to url with
// header and the answer's body decoded into out; a status other than 200
// is an error carrying the body.
func PostJSON(ctx context.Context, client *http.Client, url string, header http.Header, in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return err
	}
	maps.Copy(hreq.Header, header)
	hreq.Header.Set("Content-Type", "application/json")
	hresp, err := client.Do(hreq)
	if err != nil {
		return err
	}
	defer hresp.Body.Close()
	raw, err := io.ReadAll(hresp.Body)
	if err != nil {
		return err
	}
	if hresp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", hresp.StatusCode, raw)
	}
	return json.Unmarshal(raw, out)
}
