package main

import (
	"context"
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

	"github.com/arbiterhq/arbiter/llm/llmtest"
)

// payLedger is a payment service that cannot deduplicate: every call is a
// payment. The first call of a conversation hangs until its caller goes
// away (the process is killed mid-write); later ones answer at once.
type payLedger struct {
	mu      sync.Mutex
	calls   map[string][]string // conversation -> memo of every payment received
	arrived chan string         // a hanging call arrived, by conversation
}

func (p *payLedger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var args struct {
		Conv string `json:"to"`
		Memo string `json:"memo"`
	}
	_ = json.NewDecoder(r.Body).Decode(&args)
	p.mu.Lock()
	p.calls[args.Conv] = append(p.calls[args.Conv], args.Memo)
	first := len(p.calls[args.Conv]) == 1
	p.mu.Unlock()
	if first {
		p.arrived <- args.Conv
		<-r.Context().Done() // the instance dies with the call in flight
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"paid":true,"memo":%q}`, args.Memo)
}

// unsteadyPayment starts a model that always proposes tool (a payment to
// the conversation named in the message) with another memo each time it
// is asked — a compromised or merely unsteady model — and the payLedger
// behind the tool. Both close with the test.
func unsteadyPayment(t *testing.T, tool string) (*llmtest.Server, *payLedger, *httptest.Server, *atomic.Int64) {
	asked := new(atomic.Int64)
	model := llmtest.NewServer(llmtest.ServerConfig{SkipRecording: true, Respond: func(r *llmtest.ChatRequest) llmtest.HTTPReply {
		n := asked.Add(1)
		to := "nobody"
		if m := msgRE.FindStringSubmatch(r.Messages[len(r.Messages)-1].Content); m != nil {
			to = m[1]
		}
		return llmtest.HTTPReply{Content: fmt.Sprintf(`{"say":"","tool":%q,"args":{"amount":100,"to":%q,"memo":"rent for May #%d"},"done":false,"newTopic":false,"buttons":[]}`, tool, to, n)}
	}})
	t.Cleanup(model.Close)
	ledger := &payLedger{calls: map[string][]string{}, arrived: make(chan string, 1)}
	paySrv := httptest.NewServer(ledger)
	t.Cleanup(paySrv.Close)
	return model, ledger, paySrv, asked
}

// ledgerTool is the tools section of unsteadyPayment's tool, name, a
// payment that runs without confirmation and cannot deduplicate, at url.
func ledgerTool(name, url string) string {
	return fmt.Sprintf(`tools:
  http:
    - name: %s
      title: Pay
      description: Pay an amount to a recipient.
      url: %q
      risk: "write:full"
      confirm: never
      idempotent: false
      timeout: 30s
      input_schema:
        type: object
        additionalProperties: false
        required: [amount, to, memo]
        properties:
          amount: {type: integer, minimum: 1}
          to: {type: string}
          memo: {type: string}
`, name, url)
}

// killMidPayment runs send, kills in once its payment for conv reached
// ledger, and returns what send came to.
func killMidPayment(t *testing.T, in *instance, ledger *payLedger, conv string, send func() error) error {
	t.Helper()
	sent := make(chan error, 1)
	go func() { sent <- send() }()
	select {
	case got := <-ledger.arrived:
		if got != conv {
			t.Fatalf("payment for %s arrived, want %s", got, conv)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the payment for %s never reached the service: %s", conv, in.logs.String())
	}
	in.kill()
	return <-sent
}

func (p *payLedger) payments(conv string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls[conv]...)
}

// TestCrashMidWriteNeverPaysTwice: twenty times, the real binary on the
// embedded store is killed with SIGKILL while a write that runs without
// confirmation, on a tool that cannot deduplicate, is in flight; then it
// restarts and the client redelivers the same message id. The model would
// answer differently every time it is asked. Each message causes exactly
// one payment, the redelivery is answered with an outcome the server
// cannot know (and a second redelivery with the same answer), and the
// journal holds both the interrupted turn, with its call, and the one that
// took over.
func TestCrashMidWriteNeverPaysTwice(t *testing.T) {
	bin := slowBinary(t, "builds and kills the binary twenty times")
	model, ledger, paySrv, asked := unsteadyPayment(t, "pay")

	db := filepath.Join(t.TempDir(), "arbiter.db")
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
store: {kind: sqlite, path: %q}
models:
  - {name: fake, kind: openai, base_url: %q, model: fake-model, api_key: sk-crash-test}
log: {level: warn}
`, db, model.URL) + ownerTenant("k-crash-test") + ledgerTool("pay", paySrv.URL+"/pay")
	client := &http.Client{Timeout: 30 * time.Second}

	const rounds = 20
	for round := range rounds {
		conv := fmt.Sprintf("c%d", round+1)
		in := startInstance(t, bin, cfg)
		addr := in.addr
		err := killMidPayment(t, in, ledger, conv, func() error {
			_, err := postMessage(client, addr, conv, conv+"-m", fmt.Sprintf("conv=%s msg=0 pay the rent", conv))
			return err
		})
		if err == nil {
			t.Fatalf("round %d: the first delivery was answered although the instance died mid-write", round)
		}

		in = startInstance(t, bin, cfg)
		addr = in.addr
		for attempt := range 2 {
			reply, err := postMessage(client, addr, conv, conv+"-m", fmt.Sprintf("conv=%s msg=0 pay the rent", conv))
			if err != nil {
				t.Fatalf("round %d: redelivery %d: %v", round, attempt, err)
			}
			ex, _ := reply["executed"].([]any)
			if len(ex) != 1 || ex[0].(map[string]any)["status"] != "outcome_unknown" {
				t.Errorf("round %d: redelivery %d executed %v, want the interrupted payment reported as outcome_unknown", round, attempt, reply["executed"])
			}
			if say, _ := reply["say"].(string); !strings.Contains(say, "unknown") {
				t.Errorf("round %d: redelivery %d says %q, want it to say the outcome is unknown", round, attempt, say)
			}
			if dup, _ := reply["duplicate"].(bool); dup != (attempt == 1) {
				t.Errorf("round %d: redelivery %d duplicate=%v", round, attempt, dup)
			}
		}
		if got := ledger.payments(conv); len(got) != 1 {
			t.Errorf("round %d: %d payments for one message (%q), want exactly 1", round, len(got), got)
		}
		checkJournalNoGap(t, client, addr, conv)
		in.kill()
	}
	t.Logf("%d kills mid-write; model asked %d times", rounds, asked.Load())
}

// checkJournalNoGap: the conversation's journal holds the interrupted turn
// with its payment call, and the turn that recovered it.
func checkJournalNoGap(t *testing.T, client *http.Client, addr, conv string) {
	t.Helper()
	var list struct {
		Turns []struct {
			TurnID string `json:"turn_id"`
			Route  string `json:"route"`
			Status string `json:"status"`
		} `json:"turns"`
	}
	getJSON(t, client, addr+"/v1/turns?conversation_id="+conv, &list)
	routes := map[string]int{}
	var interrupted string
	for _, tr := range list.Turns {
		routes[tr.Route+"/"+tr.Status]++
		if tr.Status == "interrupted" {
			interrupted = tr.TurnID
		}
	}
	if routes["interrupted/interrupted"] != 1 || routes["recovered/ok"] != 1 {
		t.Errorf("%s: journal has %v, want one interrupted turn and one recovered turn", conv, routes)
		return
	}
	var rec struct {
		Executed []struct {
			Tool string          `json:"tool"`
			Args json.RawMessage `json:"args"`
		} `json:"executed"`
	}
	getJSON(t, client, addr+"/v1/turns/"+interrupted, &rec)
	if len(rec.Executed) != 1 || rec.Executed[0].Tool != "pay" || !strings.Contains(string(rec.Executed[0].Args), "#") {
		t.Errorf("%s: interrupted turn's record = %+v, want its pay call with the memo it sent", conv, rec)
	}
}

// getJSON decodes the answer of GET url, asked with the test's key, into v.
func getJSON(t *testing.T, client *http.Client, url string, v any) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer k-crash-test")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// postMessage sends one message and decodes the 200 reply.
func postMessage(client *http.Client, addr, conv, msgID, text string) (map[string]any, error) {
	body := fmt.Sprintf(`{"conversation_id":%q,"message_id":%q,"text":%q}`, conv, msgID, text)
	req, _ := http.NewRequestWithContext(context.Background(), "POST", addr+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer k-crash-test")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, raw)
	}
	var m map[string]any
	return m, json.Unmarshal(raw, &m)
}
