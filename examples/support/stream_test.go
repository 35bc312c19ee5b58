package support_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/examples/support/sim"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/llm/openaicompat"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
)

// writingModel is the agent as a model that writes its answers piece by
// piece: a text answer becomes a JSON decision that names no tool first
// (as a model answering in JSON may write it) and reaches req.OnText a few
// bytes at a time. After its first sentence it waits for hold, so a test
// can see what was streamed while the model still writes.
type writingModel struct {
	llm.Provider
	hold     chan struct{} // nil: no wait
	finished chan struct{} // closed when a streamed answer was written
}

func (m *writingModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	onText := req.OnText
	req.OnText = nil
	resp, err := m.Provider.Complete(ctx, req)
	if err != nil || len(resp.ToolCalls) > 0 || resp.Text == "" {
		return resp, err
	}
	say, _ := json.Marshal(resp.Text)
	resp.Protocol = llm.ProtocolJSON
	resp.Text = `{"tool":null,"say":` + string(say) + `,"args":null,"done":false,"newTopic":false,"buttons":[]}`
	if onText == nil {
		return resp, nil
	}
	holdAt := strings.Index(resp.Text, ". ") + 2 // once the first sentence is out
	for i := 0; i < len(resp.Text); i += 5 {
		onText(resp.Text[i:min(i+5, len(resp.Text))])
		if i < holdAt && i+5 >= holdAt && m.hold != nil {
			select {
			case <-m.hold:
			case <-ctx.Done():
				return llm.Response{}, ctx.Err()
			}
		}
	}
	close(m.finished)
	return resp, nil
}

// newWritingDesk is the example's server with the agent behind a
// writingModel.
func newWritingDesk(t *testing.T, a *agent, hold chan struct{}) (*desk, *writingModel) {
	t.Helper()
	yaml, err := os.ReadFile("arbiter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	payments, err := sim.New()
	if err != nil {
		t.Fatal(err)
	}
	paysrv := httptest.NewServer(payments)
	t.Cleanup(paysrv.Close)
	fake := llmtest.NewServer(llmtest.ServerConfig{APIKey: "sk-test", Respond: a.respond})
	t.Cleanup(fake.Close)
	inner, err := openaicompat.New(openaicompat.Config{BaseURL: fake.URL, APIKey: "sk-test", Model: "m", Protocol: llm.ProtocolTools})
	if err != nil {
		t.Fatal(err)
	}
	model := &writingModel{Provider: inner, hold: hold, finished: make(chan struct{})}
	env := map[string]string{"PAYSIM_URL": paysrv.URL, "OPENAI_BASE_URL": fake.URL, "OPENAI_API_KEY": "sk-test"}
	srv := servertest.NewWith(t, string(yaml), server.Builtin(), fake, server.Options{Getenv: func(k string) string { return env[k] }, Model: model})
	return &desk{Server: srv, sim: payments, agent: a}, model
}

// event is one server-sent event.
type event struct {
	name string
	data map[string]any
	raw  string
}

// streamCustomer posts the customer's message asking for a stream and
// calls each as its events arrive.
func (d *desk) streamCustomer(conversation string, each func(event)) {
	d.T.Helper()
	body := fmt.Sprintf(`{"conversation_id":%q,"message_id":"m1","text":%q,"context":{"ticket_id":"T-4821"}}`, conversation, customerMessage)
	req, _ := http.NewRequest("POST", d.API.URL+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer k-helpdesk-01")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.T.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		raw, _ := io.ReadAll(resp.Body)
		d.T.Fatalf("stream: %d %s %s", resp.StatusCode, ct, raw)
	}
	r := bufio.NewReader(resp.Body)
	var ev event
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		switch line = strings.TrimSuffix(line, "\n"); {
		case strings.HasPrefix(line, "event: "):
			ev.name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			ev.raw = line[len("data: "):]
			if err := json.Unmarshal([]byte(ev.raw), &ev.data); err != nil {
				d.T.Fatalf("event %s: data is not JSON: %q", ev.name, ev.raw)
			}
		case line == "":
			each(ev)
			ev = event{}
		}
	}
}

// TestStreamShowsTheReplyWhileWritten: over the HTTP API the reads' chips
// and the wait for approval arrive as progress, the reply's first
// sentences before the model finished, and the last event is the reply —
// the same as the JSON reply of the same turn, recorded as such.
func TestStreamShowsTheReplyWhileWritten(t *testing.T) {
	hold := make(chan struct{})
	d, model := newWritingDesk(t, &agent{}, hold)
	var texts []string
	var progress []string
	var reply event
	d.streamCustomer("T-4821-stream", func(ev event) {
		switch ev.name {
		case "text":
			if len(texts) == 0 {
				select {
				case <-model.finished:
					t.Error("the first text event came after the model finished")
				default:
				}
				close(hold)
			}
			texts = append(texts, ev.data["text"].(string))
		case "progress":
			progress = append(progress, fmt.Sprint(ev.data["kind"], " ", ev.data["name"], " ", ev.data["done"], " ", ev.data["text"]))
		case "reply":
			reply = ev
		default:
			t.Errorf("unexpected event %s %s", ev.name, ev.raw)
		}
	})
	if len(texts) == 0 {
		t.Fatal("no text event")
	}
	say, _ := reply.data["say"].(string)
	if streamed := strings.Join(texts, ""); !strings.HasPrefix(say, streamed) || !strings.HasPrefix(streamed, "Платёж pay_4821 на 990 RUB подтверждён. ") {
		t.Errorf("streamed %q, the reply says %q", streamed, say)
	}
	for _, want := range []string{"tool get_payment_status false", "tool get_payment_status true", "approval create_refund false"} {
		if !strings.Contains(strings.Join(progress, "\n"), want) {
			t.Errorf("progress lacks %q: %q", want, progress)
		}
	}

	// The same message as JSON, in a conversation of its own: the same
	// reply, apart from the ids of its turn and action.
	_, plain := d.customer("T-4821-plain", "m1")
	var streamed map[string]any
	if err := json.Unmarshal([]byte(reply.raw), &streamed); err != nil {
		t.Fatal(err)
	}
	if streamed["turn_id"] == nil || plain["turn_id"] == nil {
		t.Fatalf("turn ids: %v %v", streamed["turn_id"], plain["turn_id"])
	}
	_, rec := d.Do("GET", "/v1/turns/"+streamed["turn_id"].(string), "k-helpdesk-01", "")
	if rec["say"] != say {
		t.Errorf("the turn record says %q, the reply event %q", rec["say"], say)
	}
	for _, r := range []map[string]any{streamed, plain} { // ids of their own
		delete(r, "turn_id")
		for _, list := range []string{"actions", "approvals"} {
			for _, x := range r[list].([]any) {
				delete(x.(map[string]any), "id")
			}
		}
	}
	a, _ := json.Marshal(streamed)
	b, _ := json.Marshal(plain)
	if string(a) != string(b) {
		t.Errorf("the reply event\n%s\nthe JSON reply\n%s", a, b)
	}
}

// TestStreamNeverShowsAHeldClaim: the sentence that says the refund is
// done, while it only waits for staff, is never streamed — nor anything
// after it; the reply hands the ticket to a person.
func TestStreamNeverShowsAHeldClaim(t *testing.T) {
	for _, final := range []string{
		"Платёж подтверждён. Возврат выполнен. Деньги вернутся на карту.",
		"Платёж подтверждён. Воз\u200bврат **выполнен**, ждите.",
		"Готово. Всё сделано.",
	} {
		a := &agent{}
		a.final.Store(&final)
		d, _ := newWritingDesk(t, a, nil)
		var streamed strings.Builder
		var say string
		d.streamCustomer("T-4821-held", func(ev event) {
			switch ev.name {
			case "text":
				streamed.WriteString(ev.data["text"].(string))
			case "reply":
				say, _ = ev.data["say"].(string)
			}
		})
		if got := streamed.String(); strings.Contains(got, "выполнен") || strings.Contains(got, "Готово") || strings.Contains(got, "сделано") {
			t.Errorf("%q: streamed %q", final, got)
		}
		if lead := strings.SplitAfter(final, ". ")[0]; lead == "Платёж подтверждён. " && streamed.String() != lead {
			t.Errorf("%q: streamed %q, want the sentence before the claim, %q", final, streamed.String(), lead)
		}
		if !strings.HasPrefix(say, "Я передал обращение сотруднику") {
			t.Errorf("%q: the reply says %q", final, say)
		}
	}
}
