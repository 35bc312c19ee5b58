package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/examples/support/sim"
	"github.com/arbiterhq/arbiter/llm/llmtest"
)

// paySwitch is the support example's payments simulator behind a switch
// the test controls: the refund that kills the server right after the
// simulator committed it, and a payments system that is down for writes.
type paySwitch struct {
	sim *sim.Sim
	// committed receives once a refund is committed and its answer held
	// back, the server then being killed with the call in flight.
	committed chan struct{}
	// holdNext: the next refund's answer never comes.
	holdNext atomic.Bool
	// writesDown: refunds answer 503 without reaching the simulator.
	writesDown atomic.Bool
	mu         sync.Mutex
	seen       map[string]int // requests by path
}

func (p *paySwitch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.seen[r.URL.Path]++
	p.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/refunds" {
		p.sim.ServeHTTP(w, r)
		return
	}
	if p.writesDown.Load() {
		http.Error(w, `{"error":{"message":"payments system unavailable"}}`, http.StatusServiceUnavailable)
		return
	}
	if p.holdNext.CompareAndSwap(true, false) {
		body, _ := io.ReadAll(r.Body)
		rec := httptest.NewRecorder()
		r.Body = io.NopCloser(bytes.NewReader(body))
		p.sim.ServeHTTP(rec, r.Clone(r.Context()))
		p.committed <- struct{}{}
		<-r.Context().Done() // the refund is made; the server dies waiting for the answer
		return
	}
	p.sim.ServeHTTP(w, r)
}

func (p *paySwitch) count(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[path]
}

// refundAgent is the fake model of the support desk: it proposes the
// ticket's refund, and in the turn of a decided action tells the outcome
// it read — and reports that turn on resumed.
func refundAgent(resumed chan<- string) func(r *llmtest.ChatRequest) llmtest.HTTPReply {
	return func(r *llmtest.ChatRequest) llmtest.HTTPReply {
		last := r.Messages[len(r.Messages)-1]
		switch {
		case last.Role == "user" && strings.Contains(last.Content, ` tool="create_refund">`):
			select {
			case resumed <- last.Content:
			default:
			}
			return llmtest.HTTPReply{Content: "Сотрудник проверит возврат."}
		case last.Role == "user":
			return llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{ID: "c_refund", Name: "create_refund",
				Arguments: `{"payment_id":"pay_4821","amount":990,"currency":"RUB","reason":"оплата подтверждена, доступ не открыт"}`}}}
		}
		return llmtest.HTTPReply{Content: "Возврат ждёт одобрения сотрудника."}
	}
}

func readBackConfig(db, modelURL, paysimURL string) string {
	return fmt.Sprintf(`listen: 127.0.0.1:0
store: {kind: sqlite, path: %q}
models:
  - {name: fake, kind: openai, protocol: tools, base_url: %q, model: fake-model, api_key: sk-crash-test}
log: {level: warn}
confirmation: {read_back: {attempts: 4, wait: 10ms}}
assistants:
  support: {mode: loop, prompt: "Support desk."}
tenants:
  - id: support
    language: ru
    assistant: support
    roles:
      desk: {tools: ["*"]}
      staff: {tools: []}
    users:
      - {id: helpdesk, role: desk, keys: [{token: k-desk-0001, scopes: [read, "write:safe", "write:full", "context:bind"]}]}
      - {id: staff, role: staff, keys: [{token: k-staff-0001, scopes: [read]}]}
tools:
  taskboard: {disabled: true}
  http:
    - name: create_refund
      title: Возврат платежа
      description: Refund the ticket's payment.
      url: %[3]s/refunds
      precheck_url: %[3]s/refunds/precheck
      reconcile_url: %[3]s/refunds/find
      risk: "write:full"
      approve: [staff]
      idempotent: true
      bound: [ticket_id]
      timeout: 30s
      input_schema:
        type: object
        additionalProperties: false
        required: [ticket_id, payment_id, amount, currency, reason]
        properties:
          ticket_id: {type: string}
          payment_id: {type: string}
          amount: {type: integer}
          currency: {type: string}
          reason: {type: string}
`, db, modelURL, paysimURL)
}

// call sends one request to the API with key and decodes its answer.
func call(t *testing.T, client *http.Client, method, url, key, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		return 0, map[string]any{"error": err.Error()}
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// TestKilledAfterTheRefundCommittedIsNeverFailed: staff approve a
// refund; the real binary is killed with SIGKILL after the payments
// system committed it and before it answered; at restart the read-back
// answers 503 for its first attempts. The action ends confirmed — or
// unknown when the payments system stays down past the read-back's
// attempts — never failed: the precheck, which would see this very
// refund, is never asked again, and there is one refund.
func TestKilledAfterTheRefundCommittedIsNeverFailed(t *testing.T) {
	bin := slowBinary(t, "builds and kills the binary")
	for _, tc := range []struct {
		name       string
		findDown   int
		writesDown bool
		want       string
	}{
		{"the read-back answers on its third attempt", 2, false, "confirmed"},
		{"the payments system stays down", 1000, true, "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := sim.New()
			if err != nil {
				t.Fatal(err)
			}
			pay := &paySwitch{sim: s, committed: make(chan struct{}, 1), seen: map[string]int{}}
			paySrv := httptest.NewServer(pay)
			t.Cleanup(paySrv.Close)
			resumed := make(chan string, 1)
			model := llmtest.NewServer(llmtest.ServerConfig{SkipRecording: true, Respond: refundAgent(resumed)})
			t.Cleanup(model.Close)
			cfg := readBackConfig(filepath.Join(t.TempDir(), "arbiter.db"), model.URL, paySrv.URL)
			client := &http.Client{Timeout: 30 * time.Second}

			in := startInstance(t, bin, cfg)
			addr := in.addr
			status, body := call(t, client, "POST", addr+"/v1/messages", "k-desk-0001",
				`{"conversation_id":"T-4821","message_id":"m1","text":"Деньги списались, доступа нет","context":{"ticket_id":"T-4821"}}`)
			if status != 200 {
				t.Fatalf("message: %d %v", status, body)
			}
			_, list := call(t, client, "GET", addr+"/v1/approvals?status=proposed", "k-staff-0001", "")
			approvals, _ := list["approvals"].([]any)
			if len(approvals) != 1 {
				t.Fatalf("proposed: %v", list)
			}
			id := approvals[0].(map[string]any)["id"].(string)

			pay.holdNext.Store(true)
			decided := make(chan int, 1)
			go func() {
				status, _ := call(t, client, "POST", addr+"/v1/approvals/"+id, "k-staff-0001", `{"decision":"approve"}`)
				decided <- status
			}()
			select {
			case <-pay.committed:
			case <-time.After(30 * time.Second):
				t.Fatalf("the refund never reached the payments system: %s", in.logs.String())
			}
			in.kill()
			<-decided
			prechecks := pay.count("/refunds/precheck")
			if prechecks != 1 || len(s.Refunds()) != 1 {
				t.Fatalf("before the restart: %d prechecks, refunds %+v", prechecks, s.Refunds())
			}

			s.SetFindUnavailable(tc.findDown)
			pay.writesDown.Store(tc.writesDown)
			in = startInstance(t, bin, cfg) // resumes the action at start
			addr = in.addr
			var told string
			select {
			case told = <-resumed:
			case <-time.After(30 * time.Second):
				t.Fatalf("the action was not resumed: %s", in.logs.String())
			}
			_, list = call(t, client, "GET", addr+"/v1/approvals", "k-staff-0001", "")
			approvals, _ = list["approvals"].([]any)
			if len(approvals) != 1 {
				t.Fatalf("approvals after the restart: %v", list)
			}
			act := approvals[0].(map[string]any)
			if act["status"] != tc.want {
				t.Errorf("the action ended %v (%v), want %s", act["status"], act["reason"], tc.want)
			}
			if !strings.Contains(told, `"status":"`+tc.want+`"`) {
				t.Errorf("the conversation was told %s", told)
			}
			if n := pay.count("/refunds/precheck"); n != prechecks {
				t.Errorf("the precheck was asked again after the restart (%d in all)", n)
			}
			if n := pay.count("/refunds/find"); n < 3 {
				t.Errorf("%d read-backs, want the read-back asked again while it was down", n)
			}
			if got := s.Refunds(); len(got) != 1 {
				t.Errorf("%d refunds, want exactly 1: %+v", len(got), got)
			}
		})
	}
}
