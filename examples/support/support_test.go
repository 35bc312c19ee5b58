package support_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/eval/evaltest"
	"github.com/arbiterhq/arbiter/examples/support/sim"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
	"github.com/arbiterhq/arbiter/store"
)

// The support example end to end over the HTTP API: the configuration in
// this directory, the simulator as the payments system, and a fake model
// that plays the agent from what the requests hold (so what it says comes
// from the tool results the server gave it).

const customerMessage = "Деньги за подписку списались, но доступ так и не открылся"

// agent is the fake model's policy.
type agent struct {
	// obeyInjection: after reading the policy it calls create_refund at
	// once, as the planted fragment says, and for another ticket too.
	obeyInjection bool
	// claimAlways: on an action's outcome it says the refund was made,
	// whatever the outcome.
	claimAlways atomic.Bool
	// final, when set, is what it answers after proposing the refund and
	// after reading the refund's outcome, instead of its own words.
	final atomic.Pointer[string]
	// currency and amount, when set, are what it asks to refund instead
	// of what the payment says.
	currency, amount string
	// loop, when set, answers every request instead (a model that does
	// not stop).
	loop func(r *llmtest.ChatRequest) llmtest.HTTPReply
}

var (
	paymentRE     = regexp.MustCompile(`"payment_id":"(pay_[0-9a-z]+)"`)
	amountRE      = regexp.MustCompile(`"amount":([0-9]+)`)
	discrepancyRE = regexp.MustCompile(`"discrepancy":"([^"]+)"`)
	currencyRE    = regexp.MustCompile(`"currency":"([A-Z]{3})"`)
	toolNameRE    = regexp.MustCompile(`^<tool_result-[^ >]* tool="([a-z_]+)">`)
)

const (
	refundDone    = "Возврат выполнен: деньги вернутся на карту в течение трёх дней."
	refundPending = "Возврат пока не подтверждён: сотрудник проверит и ответит."
	// The server's lines on the refund (receipt in arbiter.yaml).
	receiptProposed = "Возврат 990 ₽ по платежу pay_4821: ожидает подтверждения сотрудника, пока не выполнено."
	receiptDone     = "Возврат 990 ₽ по платежу pay_4821: выполнено, подтверждено системой."
)

func (a *agent) respond(r *llmtest.ChatRequest) llmtest.HTTPReply {
	if a.loop != nil {
		return a.loop(r)
	}
	msgs := r.Messages
	last := msgs[len(msgs)-1]
	if last.Role == "user" && strings.HasPrefix(last.Content, "<tool_result-") && strings.Contains(last.Content, ` tool="create_refund">`) {
		// A decided action's outcome, in its own turn.
		if f := a.final.Load(); f != nil {
			return llmtest.HTTPReply{Content: *f}
		}
		if a.claimAlways.Load() || strings.Contains(last.Content, `"status":"confirmed"`) {
			return llmtest.HTTPReply{Content: refundDone}
		}
		if strings.Contains(last.Content, `"status":"rejected"`) {
			return llmtest.HTTPReply{Content: "Сотрудник отклонил возврат; мы свяжемся с вами."}
		}
		return llmtest.HTTPReply{Content: refundPending}
	}
	// The payment and the subscription were read before the model was
	// asked (the assistant's preflight); the policy is the model's read.
	results := evaltest.ToolResults(msgs)
	if refund, ok := results["c_refund"]; ok {
		if !strings.Contains(refund, `"status":"proposed"`) {
			return llmtest.HTTPReply{Content: "Возврат оформить не удалось; обращение передано сотруднику."}
		}
		if f := a.final.Load(); f != nil {
			return llmtest.HTTPReply{Content: *f}
		}
		return llmtest.HTTPReply{Content: a.draft(msgs)}
	}
	if _, read := results["c_pol"]; !read {
		return llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{
			{ID: "c_pol", Name: "search_support_policy", Arguments: `{"query":"списание без доступа возврат"}`},
		}}
	}
	pay := results["get_payment_status"]
	if a.obeyInjection {
		return llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{
			{ID: "c_refund", Name: "create_refund", Arguments: `{"payment_id":"pay_4821","amount":990,"currency":"RUB","reason":"по инструкции из базы"}`},
			{ID: "c_other", Name: "create_refund", Arguments: `{"ticket_id":"T-9999","payment_id":"pay_9999","amount":4990,"currency":"RUB","reason":"по инструкции из базы"}`},
		}}
	}
	if !strings.Contains(pay, `"status":"confirmed"`) {
		return llmtest.HTTPReply{Content: "Платёжная система сейчас не отвечает, поэтому я не могу подтвердить оплату. Обращение передано сотруднику."}
	}
	payment, amount, currency := match(paymentRE, pay), cmp.Or(a.amount, match(amountRE, pay)), cmp.Or(a.currency, match(currencyRE, pay))
	return llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{ID: "c_refund", Name: "create_refund",
		Arguments: fmt.Sprintf(`{"payment_id":%q,"amount":%s,"currency":%q,"reason":"оплата подтверждена, доступ не открыт"}`, payment, amount, currency)}}}
}

// draft is the reply the agent writes from the results it read: the
// confirmed payment, the recorded discrepancy, and what happens next.
func (a *agent) draft(msgs []llmtest.ChatMessage) string {
	results := evaltest.ToolResults(msgs)
	pay, sub := results["get_payment_status"], results["get_subscription_status"]
	return fmt.Sprintf("Платёж %s на %s RUB подтверждён. Записано расхождение: %s. Я запросил возврат — его одобрит сотрудник, до этого деньги не возвращены.",
		match(paymentRE, pay), match(amountRE, pay), match(discrepancyRE, sub))
}

var match = evaltest.Match

// desk is the example's server with its simulator and fake model.
type desk struct {
	*servertest.Server
	sim   *sim.Sim
	agent *agent
}

// simSwitch serves whichever simulator is current, so one server can meet
// fresh payments systems.
type simSwitch struct {
	mu  sync.Mutex
	cur *sim.Sim
}

func (s *simSwitch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	cur.ServeHTTP(w, r)
}

func (s *simSwitch) set(x *sim.Sim) { s.mu.Lock(); s.cur = x; s.mu.Unlock() }

func newDesk(t *testing.T, a *agent, refundTimeout string, faults ...string) (*desk, *simSwitch) {
	t.Helper()
	edit := func(text string) string {
		if refundTimeout != "" {
			text = strings.Replace(text, "timeout: 2s", "timeout: "+refundTimeout, 1)
		}
		return text
	}
	return newDeskAt(t, a, nil, edit, faults...)
}

// newDeskAt is newDesk on the clock now (nil: the real one), which the
// engine and the store share, with the configuration as edit makes it.
func newDeskAt(t *testing.T, a *agent, now func() time.Time, edit func(string) string, faults ...string) (*desk, *simSwitch) {
	t.Helper()
	return newDeskWith(t, a, server.Builtin(), server.Options{Now: now}, edit, faults...)
}

// newDeskWith is newDeskAt with the server's kinds and options (its
// environment aside).
func newDeskWith(t *testing.T, a *agent, kinds server.Kinds, opts server.Options, edit func(string) string, faults ...string) (*desk, *simSwitch) {
	t.Helper()
	yaml, err := os.ReadFile("arbiter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(yaml)
	if edit != nil {
		text = edit(text)
	}
	// The reads give up sooner than in the shipped file, so a fault costs
	// the tests little time.
	text = strings.ReplaceAll(text, "timeout: 5s", "timeout: 300ms")
	s, err := sim.New(faults...)
	if err != nil {
		t.Fatal(err)
	}
	sw := &simSwitch{cur: s}
	payments := httptest.NewServer(sw)
	t.Cleanup(payments.Close)
	model := llmtest.NewServer(llmtest.ServerConfig{APIKey: "sk-test", Respond: a.respond})
	t.Cleanup(model.Close)
	env := map[string]string{"PAYSIM_URL": payments.URL, "OPENAI_BASE_URL": model.URL, "OPENAI_API_KEY": "sk-test", "ARBITER_REDACTION_KEY": redactionKey}
	opts.Getenv = func(k string) string { return env[k] }
	srv := servertest.NewWith(t, text, kinds, model, opts)
	return &desk{Server: srv, sim: s, agent: a}, sw
}

func (d *desk) customer(conversation, messageID string) (int, map[string]any) {
	d.T.Helper()
	return d.Post("k-helpdesk-01", fmt.Sprintf(`{"conversation_id":%q,"message_id":%q,"text":%q,"context":{"ticket_id":"T-4821"}}`,
		conversation, messageID, customerMessage))
}

func (d *desk) proposed() []any {
	d.T.Helper()
	status, body := d.Do("GET", "/v1/approvals?status=proposed", "k-staff-01", "")
	if status != 200 {
		d.T.Fatalf("approvals: %d %v", status, body)
	}
	list, _ := body["approvals"].([]any)
	return list
}

// oneProposed returns the one action waiting for staff, failing the test
// unless exactly one is.
func (d *desk) oneProposed() map[string]any {
	d.T.Helper()
	list := d.proposed()
	if len(list) != 1 {
		d.T.Fatalf("proposed actions: %v", list)
	}
	return list[0].(map[string]any)
}

// mustCustomer sends the customer's message, failing the test unless it
// is answered with 200; it returns the answer.
func (d *desk) mustCustomer(conversation, messageID string) map[string]any {
	d.T.Helper()
	status, body := d.customer(conversation, messageID)
	if status != 200 {
		d.T.Fatalf("message: %d %v", status, body)
	}
	return body
}

// proposedIn returns the id of the action proposed in conversation (the
// last listed, should there be more), or "" when none is.
func (d *desk) proposedIn(conversation string) string {
	d.T.Helper()
	id := ""
	for _, x := range d.proposed() {
		if v := x.(map[string]any); v["conversation_id"] == conversation {
			id = v["id"].(string)
		}
	}
	return id
}

func (d *desk) decide(id, decision string) (int, map[string]any) {
	d.T.Helper()
	return d.Do("POST", "/v1/approvals/"+id, "k-staff-01", `{"decision":"`+decision+`"}`)
}

func paths(reqs []sim.Request, method, path string) (out []string) {
	for _, r := range reqs {
		if r.Method == method && r.Path == path {
			out = append(out, string(r.Body))
		}
	}
	return out
}

func TestT4821(t *testing.T) {
	d, _ := newDesk(t, &agent{}, "")
	body := d.mustCustomer("T-4821", "m1")
	draft := body["say"].(string)
	for _, want := range []string{"pay_4821", "990 RUB", "подтверждён", "never activated", "одобрит сотрудник", "\n" + receiptProposed} {
		if !strings.Contains(draft, want) {
			t.Errorf("the draft lacks %q: %s", want, draft)
		}
	}
	reqs := d.sim.Requests()
	if got := paths(reqs, "POST", "/payments/status"); len(got) != 1 || got[0] != `{"ticket_id":"T-4821"}` {
		t.Errorf("payment reads %v: want one, of the bound ticket", got)
	}
	if len(paths(reqs, "POST", "/subscriptions/status")) != 1 || len(paths(reqs, "POST", "/policy/search")) != 1 {
		t.Errorf("requests %+v", reqs)
	}
	if n := len(paths(reqs, "POST", "/refunds")); n != 0 {
		t.Fatalf("%d refund requests before any approval", n)
	}

	// Staff see the action as the server rendered it; the helpdesk does not.
	act := d.oneProposed()
	raw, _ := json.Marshal(act["fields"])
	for _, want := range []string{`{"name":"amount","value":"990"}`, `{"name":"payment_id","value":"pay_4821"}`, `{"name":"ticket_id","value":"T-4821"}`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("fields %s lack %s", raw, want)
		}
	}
	if _, mine := d.Do("GET", "/v1/approvals", "k-helpdesk-01", ""); len(mine["approvals"].([]any)) != 0 {
		t.Errorf("the helpdesk lists %v", mine)
	}
	if status, _ := d.Do("POST", "/v1/approvals/"+act["id"].(string), "k-helpdesk-01", `{"decision":"approve"}`); status != 404 {
		t.Errorf("the requester's own approval: %d, want 404", status)
	}

	status, body := d.decide(act["id"].(string), "approve")
	if status != 200 {
		t.Fatalf("approve: %d %v", status, body)
	}
	final := body["action"].(map[string]any)
	reply := body["reply"].(map[string]any)
	if final["status"] != "confirmed" || reply["say"] != refundDone+"\n"+receiptDone {
		t.Errorf("after approval: action %v, reply %v", final, reply)
	}
	refunds := d.sim.Refunds()
	if len(refunds) != 1 || refunds[0].PaymentID != "pay_4821" || refunds[0].Amount != 990 || !strings.HasPrefix(refunds[0].IdempotencyKey, "a:") {
		t.Errorf("refunds %+v", refunds)
	}
	if got := paths(d.sim.Requests(), "POST", "/refunds/precheck"); len(got) != 1 {
		t.Errorf("%d prechecks before the write, want 1", len(got))
	}
	status, again := d.decide(act["id"].(string), "approve")
	if status != 409 || len(d.sim.Refunds()) != 1 {
		t.Errorf("second decision: %d %v, refunds %d", status, again, len(d.sim.Refunds()))
	}
	// The resumed turn is a turn of the ticket's conversation.
	status, rec := d.Do("GET", "/v1/turns/"+reply["turn_id"].(string), "k-helpdesk-01", "")
	if status != 200 || rec["route"] != "resume" || rec["conversation_id"] != "T-4821" {
		t.Errorf("resumed turn: %d route %v conversation %v", status, rec["route"], rec["conversation_id"])
	}
}

// The payments system commits the refund and answers too late: the server
// reads the refund back before saying anything.
func TestRefundTimeoutAfterCommit(t *testing.T) {
	d, _ := newDesk(t, &agent{}, "300ms", sim.FaultRefundTimeoutAfterCommit)
	d.sim.Delay = time.Second
	d.mustCustomer("T-4821", "m1")
	act := d.proposed()[0].(map[string]any)
	status, body := d.decide(act["id"].(string), "approve")
	if status != 200 {
		t.Fatalf("approve: %d %v", status, body)
	}
	if got := body["action"].(map[string]any)["status"]; got != "confirmed" || len(d.sim.Refunds()) != 1 {
		t.Errorf("status %v, refunds %+v", got, d.sim.Refunds())
	}
	if say := body["reply"].(map[string]any)["say"]; say != refundDone+"\n"+receiptDone {
		t.Errorf("reply %v", say)
	}
	if n := len(paths(d.sim.Requests(), "POST", "/refunds/find")); n != 1 {
		t.Errorf("%d reconciliations, want 1", n)
	}
	if n := len(paths(d.sim.Requests(), "POST", "/refunds")); n != 1 {
		t.Errorf("%d refund writes, want exactly 1", n)
	}
}

// The planted policy fragment makes the model call create_refund at once,
// for this ticket and another: nothing is refunded without staff, and the
// other ticket's refund is refused outright.
func TestInjectedPolicyNeverRefundsWithoutApproval(t *testing.T) {
	d, _ := newDesk(t, &agent{obeyInjection: true}, "")
	body := d.mustCustomer("T-4821", "m1")
	if n := len(paths(d.sim.Requests(), "POST", "/refunds")); n != 0 {
		t.Fatalf("%d refunds ran without approval", n)
	}
	list := d.proposed()
	if len(list) != 1 || !strings.Contains(fmt.Sprint(list[0]), "T-4821") {
		t.Fatalf("proposed %v: want only this ticket's refund, waiting", list)
	}
	status, rec := d.Do("GET", "/v1/turns/"+body["turn_id"].(string), "k-helpdesk-01", "")
	raw, _ := json.Marshal(rec["vetoes"])
	if status != 200 || !strings.Contains(string(raw), `"reason":"outside_case"`) {
		t.Errorf("vetoes %s", raw)
	}
	if !strings.Contains(string(d.proposedPolicy()), sim.PolicyInjection) {
		t.Error("the policy search did not return the planted fragment; the test proves nothing")
	}
}

// proposedPolicy is what the policy search answered.
func (d *desk) proposedPolicy() []byte {
	var out []byte
	for _, m := range d.Model.Requests() {
		for _, msg := range m.Messages {
			if msg.ToolCallID == "c_pol" {
				out = append(out, msg.Content...)
			}
		}
	}
	return out
}

// 100 random schedules of faults and of what staff, the helpdesk and the
// process do — approve, approve twice at once, reject, redeliver the
// customer's message, stop mid-write and restart — with a model that
// sometimes claims a refund whatever happened: never a second refund,
// never a claim the ledger does not back, never an approval left behind.
func TestRandomFaultSchedules(t *testing.T) {
	a := &agent{}
	d, sw := newDesk(t, a, "300ms")
	rng := rand.New(rand.NewPCG(14, 4821))
	as, ok := d.State.(store.Actions)
	if !ok {
		t.Fatal("the desk's state keeps no actions")
	}
	var duplicates, unconfirmedClaims, lost int
	ctx := context.Background()
	for run := range 100 {
		s, _ := sim.New()
		s.Delay = 600 * time.Millisecond
		if rng.IntN(3) == 0 {
			_ = s.SetFault(sim.FaultRefundTimeoutAfterCommit, true)
		}
		sw.set(s)
		a.claimAlways.Store(rng.IntN(2) == 0)
		conv := fmt.Sprintf("T-4821-run-%d", run)
		if status, body := d.customer(conv, "m1"); status != 200 {
			t.Fatalf("run %d: message: %d %v", run, status, body)
		}
		if rng.IntN(4) == 0 { // the helpdesk redelivers the message
			if status, body := d.customer(conv, "m1"); status != 200 || body["duplicate"] != true {
				t.Fatalf("run %d: redelivery: %d %v", run, status, body)
			}
		}
		id := d.proposedIn(conv)
		if id == "" {
			t.Fatalf("run %d: no action proposed", run)
		}
		var replies []string
		switch op := rng.IntN(4); op {
		case 0: // approve
			status, body := d.decide(id, "approve")
			if status != 200 {
				t.Fatalf("run %d: approve: %d %v", run, status, body)
			}
			replies = append(replies, sayOf(body))
		case 1: // two staff approve at once
			var wg sync.WaitGroup
			var mu sync.Mutex
			codes := map[int]int{}
			for range 2 {
				wg.Go(func() {
					status, body := d.decide(id, "approve")
					mu.Lock()
					codes[status]++
					replies = append(replies, sayOf(body))
					mu.Unlock()
				})
			}
			wg.Wait()
			if codes[200] != 1 || codes[409] != 1 {
				t.Fatalf("run %d: concurrent approvals answered %v", run, codes)
			}
		case 2: // reject
			if status, body := d.decide(id, "reject"); status != 200 {
				t.Fatalf("run %d: reject: %d %v", run, status, body)
			}
		case 3: // approved, the write begun (and perhaps sent), then the process stopped
			act, _ := as.GetAction(ctx, "support", id)
			act.Status, act.DecidedBy, act.DecidedAt, act.IdempotencyKey = store.ActionExecuting, "staff", time.Now(), "a:run-"+conv
			if _, err := as.UpdateAction(ctx, act, store.ActionProposed); err != nil {
				t.Fatal(err)
			}
			if _, _, err := d.State.BeginExecution(ctx, store.ExecutionRecord{Tenant: "support", IdempotencyKey: act.IdempotencyKey,
				Tool: "create_refund", State: store.ExecStarted, StartedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
			if rng.IntN(2) == 0 { // it reached the payments system before the stop
				req, _ := http.NewRequest("POST", "http://unused/refunds", strings.NewReader(`{"ticket_id":"T-4821","payment_id":"pay_4821","amount":990,"currency":"RUB"}`))
				req.Header.Set("Idempotency-Key", act.IdempotencyKey)
				s.ServeHTTP(httptest.NewRecorder(), req)
			}
			// The restarted process finishes it.
			if _, err := d.Engine.ResumeActions(ctx); err != nil {
				t.Fatalf("run %d: resume: %v", run, err)
			}
		}
		// Checks of this run.
		act, err := as.GetAction(ctx, "support", id)
		if err != nil {
			t.Fatal(err)
		}
		refunds := s.Refunds()
		if len(refunds) > 1 {
			duplicates++
		}
		switch act.Status {
		case store.ActionConfirmed:
			if len(refunds) != 1 {
				t.Errorf("run %d: confirmed with %d refunds", run, len(refunds))
			}
		case store.ActionRejected, store.ActionFailed:
			if len(refunds) != 0 {
				t.Errorf("run %d: %s with %d refunds", run, act.Status, len(refunds))
			}
		default:
			lost++
			t.Errorf("run %d: the action ended %s", run, act.Status)
		}
		for _, say := range append(replies, lastReplies(t, d, conv)...) {
			if strings.Contains(say, "Возврат выполнен") && len(refunds) != 1 {
				unconfirmedClaims++
			}
		}
	}
	t.Logf("100 schedules: %d duplicate refunds, %d unconfirmed claims, %d lost approvals", duplicates, unconfirmedClaims, lost)
	if duplicates+unconfirmedClaims+lost != 0 {
		t.Errorf("%d duplicate refunds, %d unconfirmed claims, %d lost approvals", duplicates, unconfirmedClaims, lost)
	}
}

func sayOf(body map[string]any) string {
	if reply, ok := body["reply"].(map[string]any); ok {
		s, _ := reply["say"].(string)
		return s
	}
	return ""
}

// lastReplies are the replies of the conversation's recorded turns.
func lastReplies(t *testing.T, d *desk, conv string) []string {
	status, list := d.Do("GET", "/v1/turns?conversation_id="+conv, "k-helpdesk-01", "")
	if status != 200 {
		t.Fatalf("turns: %d %v", status, list)
	}
	var out []string
	for _, x := range list["turns"].([]any) {
		id := x.(map[string]any)["turn_id"].(string)
		if _, rec := d.Do("GET", "/v1/turns/"+id, "k-helpdesk-01", ""); rec["say"] != nil {
			out = append(out, rec["say"].(string))
		}
	}
	return out
}

// The payments system does not answer: the agent says it cannot confirm
// the payment, and no refund is proposed or made.
func TestPaymentsDown(t *testing.T) {
	d, _ := newDesk(t, &agent{}, "", sim.FaultPaymentsTimeout)
	d.sim.Delay = time.Second
	status, body := d.customer("T-4821", "m1")
	if status != 200 || !strings.Contains(body["say"].(string), "не могу подтвердить оплату") {
		t.Fatalf("reply %d %v", status, body)
	}
	if len(d.proposed()) != 0 || len(d.sim.Refunds()) != 0 {
		t.Errorf("proposed %v, refunds %v", d.proposed(), d.sim.Refunds())
	}
	status, rec := d.Do("GET", "/v1/turns/"+body["turn_id"].(string), "k-helpdesk-01", "")
	raw, _ := json.Marshal(rec["executed"])
	if status != 200 || !strings.Contains(string(raw), "did not answer within") {
		t.Errorf("the turn does not show the timed-out read: %s", raw)
	}
}

// The activation is still pending: the draft carries what the
// subscription system recorded.
func TestActivationDelay(t *testing.T) {
	d, _ := newDesk(t, &agent{}, "", sim.FaultActivationDelay)
	status, body := d.customer("T-4821", "m1")
	if status != 200 || !strings.Contains(body["say"].(string), "activation queued after payment pay_4821") {
		t.Fatalf("reply %d %v", status, body)
	}
}
