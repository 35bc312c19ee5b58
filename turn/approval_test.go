package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/storetest"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn"
)

// ledger is a payments system's refunds, keyed by idempotency key, with
// the faults a real one shows.
type ledger struct {
	mu      sync.Mutex
	refunds map[string]string // idempotency key -> payment
	calls   int
	// timeoutAfterCommit: the refund is recorded, then the answer never
	// comes in time.
	timeoutAfterCommit bool
	refunded           map[string]bool // payment -> refunded before
	// readBackDown: the read-back answers "unavailable" this many more
	// times.
	readBackDown int
	readBacks    int
	// noReadBack: the tool has no way to read its writes back.
	noReadBack bool
	prechecks  int
}

// refundTool refunds a payment; staff approve it. It re-checks the payment
// before the write and reads its ledger back when asked to reconcile.
type refundTool struct {
	l *ledger
	// idempotent: the payments system dedupes refunds by key (the ledger
	// always does; this says whether the engine may count on it).
	idempotent bool
}

func (r *refundTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        "create_refund",
		Title:       "Refund",
		Description: "Refund a payment.",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["ticket_id","payment_id","amount"],` +
			`"properties":{"ticket_id":{"type":"string"},"payment_id":{"type":"string"},"amount":{"type":"integer"},"reason":{"type":"string"}}}`),
		Policy: tool.Policy{Risk: tool.RiskWriteFull, Idempotent: r.idempotent, Approve: []string{"staff"}, BoundArgs: []string{"ticket_id"}, Claims: []string{"возврат выполнен"}, Timeout: 200 * time.Millisecond},
	}
}

func (r *refundTool) payment(c tool.Call) string {
	var a struct {
		PaymentID string `json:"payment_id"`
	}
	_ = json.Unmarshal(c.Args, &a)
	return a.PaymentID
}

func (r *refundTool) Call(ctx context.Context, c tool.Call) (tool.Result, error) {
	r.l.mu.Lock()
	r.l.calls++
	if c.IdempotencyKey == "" {
		r.l.mu.Unlock()
		return tool.Result{}, errors.New("no idempotency key")
	}
	if _, done := r.l.refunds[c.IdempotencyKey]; !done {
		r.l.refunds[c.IdempotencyKey] = r.payment(c)
	}
	slow := r.l.timeoutAfterCommit
	r.l.mu.Unlock()
	if slow {
		<-ctx.Done()
		return tool.Result{}, ctx.Err()
	}
	return tool.Result{Status: tool.StatusOK, Data: json.RawMessage(`{"refund":"re_1","amount":990}`)}, nil
}

func (r *refundTool) Precheck(ctx context.Context, c tool.Call) error {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	r.l.prechecks++
	payment := r.payment(c)
	for _, p := range r.l.refunds {
		if p == payment {
			return errors.New("the payment is refunded already")
		}
	}
	if r.l.refunded[payment] {
		return errors.New("the payment is refunded already")
	}
	return nil
}

func (r *refundTool) Reconcile(ctx context.Context, c tool.Call) (tool.Result, error) {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	r.l.readBacks++
	if r.l.noReadBack {
		return tool.Result{}, fmt.Errorf("no reconcile endpoint is configured: %w", tool.ErrNoReadBack)
	}
	if r.l.readBackDown > 0 {
		r.l.readBackDown--
		return tool.Result{}, errors.New("reconcile: status 503")
	}
	if _, ok := r.l.refunds[c.IdempotencyKey]; ok {
		return tool.Result{Status: tool.StatusOK, Data: json.RawMessage(`{"refund":"re_1","found":true}`)}, nil
	}
	return tool.Result{Status: tool.StatusNotFound}, nil
}

func (l *ledger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.refunds)
}

var staff = chat.Identity{TenantID: "t", UserID: "olga", Role: "staff", Scopes: []chat.Scope{chat.ScopeRead}}

const refundArgs = `{"payment_id":"pay_4821","amount":990,"reason":"access never opened"}`

// receiptDone is the server's line on a refund carried out.
const receiptDone = "\"Refund\": done, confirmed by the system."

// proposeRefund runs the loop turn that reads the payment and proposes the
// refund, and returns the action waiting for staff.
func proposeRefund(t *testing.T, b *loopBench) chat.ActionView {
	t.Helper()
	b.model.Push(
		llmtest.ToolCalls("", call("a", "get_payment_status", ticket)),
		llmtest.ToolCalls("", call("b", "create_refund", refundArgs)),
		llmtest.ToolCalls("Платёж подтверждён; я запросил возврат, его одобрит сотрудник."),
	)
	out, tv := b.send("Деньги списались, доступа нет. Верните деньги.")
	// The model's reply, then the server's line on the write (receipts are
	// on for an assistant with a tool of approvers).
	receipt := "\"Refund\": waiting for a colleague's approval; not done yet."
	if tv.Status != "ok" || out.Say != "Платёж подтверждён; я запросил возврат, его одобрит сотрудник.\n"+receipt {
		t.Fatalf("status %s, reply %q", tv.Status, out.Say)
	}
	if len(out.Actions) != 1 || out.Actions[0].Status != store.ActionProposed || out.Actions[0].Tool != "create_refund" || out.Actions[0].Text != receipt {
		t.Errorf("actions %+v", out.Actions)
	}
	second := b.model.Requests()[2].Messages
	if last := second[len(second)-1]; !strings.Contains(last.Content, `"status":"proposed"`) || !strings.Contains(last.Content, "has not happened") {
		t.Errorf("the model was told %q", last.Content)
	}
	list, err := b.eng.Actions(context.Background(), staff, store.ActionProposed)
	if err != nil || len(list) != 1 {
		t.Fatalf("staff see %+v (%v)", list, err)
	}
	return list[0]
}

func newApprovalBench(t *testing.T) (*loopBench, *ledger) {
	l := &ledger{refunds: map[string]string{}, refunded: map[string]bool{}}
	return newLoopBench(t, turn.Assistant{}, &refundTool{l: l}), l
}

func TestApprovalLifecycle(t *testing.T) {
	b, l := newApprovalBench(t)
	a := proposeRefund(t, b)
	if l.calls != 0 {
		t.Fatal("the refund ran before any approval")
	}
	fields := map[string]string{}
	for _, f := range a.Fields {
		fields[f.Name] = f.Value
	}
	if a.Tool != "create_refund" || a.Case["ticket_id"] != "T-4821" || fields["amount"] != "990" || fields["ticket_id"] != "T-4821" || fields["payment_id"] != "pay_4821" {
		t.Errorf("staff see %+v", a)
	}
	// The requester's own role does not list it, and cannot decide it.
	if mine, _ := b.eng.Actions(context.Background(), b.id, ""); len(mine) != 0 {
		t.Errorf("the requester lists %+v", mine)
	}
	if _, _, err := b.eng.Decide(context.Background(), b.id, a.ID, true); !errors.Is(err, chat.ErrActionNotFound) {
		t.Errorf("the requester's own approval: %v, want not found", err)
	}

	b.model.Push(llmtest.ToolCalls("Возврат выполнен: 990 ₽ вернутся на карту."))
	view, out, err := b.eng.Decide(context.Background(), staff, a.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	if view.Status != store.ActionConfirmed || view.DecidedBy != "olga" || out.Say != "Возврат выполнен: 990 ₽ вернутся на карту.\n"+receiptDone {
		t.Errorf("view %+v, reply %q", view, out.Say)
	}
	if l.count() != 1 {
		t.Errorf("%d refunds, want 1", l.count())
	}
	for key := range l.refunds {
		if !strings.HasPrefix(key, "a:") {
			t.Errorf("the refund's key %q is not the approval's", key)
		}
	}
	// The resumed turn is a turn of the conversation.
	rec, err := b.st.GetTurn(context.Background(), "t", out.TurnID)
	if err != nil || rec.Route != string(turn.RouteResume) || rec.Chat != "c" {
		t.Errorf("resumed turn %+v (%v)", rec, err)
	}
	// A second decision changes nothing and runs nothing.
	if _, _, err := b.eng.Decide(context.Background(), staff, a.ID, false); !errors.Is(err, chat.ErrActionClosed) {
		t.Errorf("second decision: %v, want ErrActionClosed", err)
	}
	if l.calls != 1 {
		t.Errorf("the refund tool was called %d times", l.calls)
	}
}

// The payments system commits the refund and then times out: the server
// reads the ledger before saying anything, finds the refund, and reports
// it confirmed — one refund, never a blind second one.
func TestApprovalReconcilesATimeoutAfterCommit(t *testing.T) {
	// The refund's timeout passes on the bubble's fake time.
	synctest.Test(t, func(t *testing.T) {
		b, l := newApprovalBench(t)
		a := proposeRefund(t, b)
		l.timeoutAfterCommit = true
		b.model.Push(llmtest.ToolCalls("Возврат выполнен."))
		view, out, err := b.eng.Decide(context.Background(), staff, a.ID, true)
		if err != nil {
			t.Fatal(err)
		}
		if view.Status != store.ActionConfirmed || l.count() != 1 || l.calls != 1 || out.Say != "Возврат выполнен.\n"+receiptDone {
			t.Errorf("status %s, refunds %d, calls %d, reply %q", view.Status, l.count(), l.calls, out.Say)
		}
		rec, _ := b.st.GetTurn(context.Background(), "t", out.TurnID)
		if !strings.Contains(string(rec.Trace), `"reconciled":true`) {
			t.Errorf("the turn does not show the reconciliation: %s", rec.Trace)
		}
	})
}

// A precondition that no longer holds stops the write; the model may not
// claim it happened.
func TestApprovalPreconditionAndRejection(t *testing.T) {
	b, l := newApprovalBench(t)
	a := proposeRefund(t, b)
	l.refunded["pay_4821"] = true
	b.model.Push(llmtest.ToolCalls("Возврат выполнен."))
	view, out, err := b.eng.Decide(context.Background(), staff, a.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	if view.Status != store.ActionFailed || !strings.Contains(view.Reason, "refunded already") || l.calls != 0 {
		t.Errorf("view %+v, calls %d", view, l.calls)
	}
	if strings.Contains(out.Say, "Возврат выполнен") {
		t.Errorf("an unconfirmed claim reached the customer: %q", out.Say)
	}

	a = proposeRefund(t, b)
	b.model.Push(llmtest.ToolCalls("Сотрудник отклонил возврат."))
	view, out, err = b.eng.Decide(context.Background(), staff, a.ID, false)
	if err != nil || view.Status != store.ActionRejected || out.Say != "Сотрудник отклонил возврат.\n\"Refund\": rejected by a colleague; not done." || l.calls != 0 {
		t.Errorf("reject: %+v %q %v calls %d", view, out.Say, err, l.calls)
	}
}

// An action approved by a process that stopped before the write finished
// is carried out by ResumeActions: a begun write is read back, not
// repeated.
func TestResumeActionsAfterACrash(t *testing.T) {
	b, l := newApprovalBench(t)
	a := proposeRefund(t, b)
	ctx := context.Background()
	as := store.Actions(b.st)
	// The first process approved it, began the write and committed the
	// refund, then died.
	act := beginWrite(t, b, a.ID, "a:crashed-write", nil)
	l.refunds[act.IdempotencyKey] = "pay_4821"
	b.model.Push(llmtest.ToolCalls("Возврат выполнен."))
	n, err := b.eng.ResumeActions(ctx)
	if err != nil || n != 1 {
		t.Fatalf("resumed %d (%v)", n, err)
	}
	got, _ := as.GetAction(ctx, "t", a.ID)
	if got.Status != store.ActionConfirmed || l.count() != 1 || l.calls != 0 {
		t.Errorf("status %s, refunds %d, calls %d", got.Status, l.count(), l.calls)
	}
	if n, _ := b.eng.ResumeActions(ctx); n != 0 {
		t.Errorf("a finished action was resumed again")
	}
}

func TestApprovalExpires(t *testing.T) {
	b, l := newApprovalBench(t)
	a := proposeRefund(t, b)
	ctx := context.Background()
	as := store.Actions(b.st)
	act, _ := as.GetAction(ctx, "t", a.ID)
	act.ExpiresAt = time.Now().Add(-time.Second)
	if _, err := as.UpdateAction(ctx, act, store.ActionProposed); err != nil {
		t.Fatal(err)
	}
	view, _, err := b.eng.Decide(ctx, staff, a.ID, true)
	if !errors.Is(err, chat.ErrActionClosed) || view.Status != store.ActionExpired || l.calls != 0 {
		t.Errorf("late approval: %+v %v, calls %d", view, err, l.calls)
	}
}

// sleeper keeps the waits asked of Config.Sleep and moves the shared
// clock on by each, so waiting takes no time.
type sleeper struct {
	clk   *storetest.Clock
	mu    sync.Mutex
	waits []time.Duration
}

func (z *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	z.mu.Lock()
	z.waits = append(z.waits, d)
	z.mu.Unlock()
	z.clk.Advance(d)
	return ctx.Err()
}

// beginWrite leaves action id as a process leaves it when it dies after
// olga approved it and it began the write under key (with args, as the
// execution record holds them), before the write's end was recorded.
func beginWrite(t *testing.T, b *loopBench, id, key string, args json.RawMessage) store.Action {
	t.Helper()
	ctx := context.Background()
	as := store.Actions(b.st)
	act, _ := as.GetAction(ctx, "t", id)
	act.Status, act.DecidedBy, act.DecidedAt, act.IdempotencyKey = store.ActionExecuting, "olga", time.Now(), key
	if _, err := as.UpdateAction(ctx, act, store.ActionProposed); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.st.BeginExecution(ctx, store.ExecutionRecord{Tenant: "t", IdempotencyKey: key, Tool: "create_refund",
		Args: args, State: store.ExecStarted, StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return act
}

// crashedAfterCommit leaves the action as a process leaves it when it is
// killed after the payments system committed the refund and before it
// answered: approved, executing, its write begun, the refund made.
func crashedAfterCommit(t *testing.T, b *loopBench, l *ledger, id string) {
	t.Helper()
	act := beginWrite(t, b, id, "a:killed-after-commit", json.RawMessage(refundArgs))
	l.mu.Lock()
	l.refunds[act.IdempotencyKey] = "pay_4821"
	l.mu.Unlock()
}

// A refund that happened is never recorded as failed: the process died
// after the payments system committed it, and at restart the read-back
// answers 503. The engine asks it again with a growing wait (never the
// precheck, which would see this very refund), and the action ends
// confirmed when the read-back answers; when it stays down past its
// attempts, unknown for a person — never failed, and never a second
// refund. A tool that dedupes by key is asked the write again with its
// own key instead.
func TestResumeReadsBackAWriteThatMayHaveHappened(t *testing.T) {
	for _, tc := range []struct {
		name       string
		down       int
		idempotent bool
		noReadBack bool
		want       string
		readBacks  int
		calls      int
		waits      []time.Duration
	}{
		{"read-back down twice", 2, false, false, store.ActionConfirmed, 3, 0, []time.Duration{time.Second, 2 * time.Second}},
		{"read-back down past its attempts", 100, false, false, store.ActionUnknown, 4, 0, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}},
		{"read-back down, the write asked again with its key", 100, true, false, store.ActionConfirmed, 4, 1, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}},
		{"a precheck and no read-back", 0, false, true, store.ActionUnknown, 1, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &ledger{refunds: map[string]string{}, refunded: map[string]bool{}}
			clk := &sleeper{clk: storetest.NewClock(time.Now())}
			b := newLoopBenchWith(t, turn.Assistant{}, func(c *turn.Config) {
				c.Now, c.Sleep = clk.clk.Now, clk.Sleep
				c.ReadBack = turn.ReadBackPolicy{Attempts: 4, Wait: time.Second}
			}, &refundTool{l: l, idempotent: tc.idempotent})
			a := proposeRefund(t, b)
			crashedAfterCommit(t, b, l, a.ID)
			l.readBackDown, l.noReadBack = tc.down, tc.noReadBack
			b.model.Push(llmtest.ToolCalls("Done."))
			if n, err := b.eng.ResumeActions(context.Background()); err != nil || n != 1 {
				t.Fatalf("resumed %d (%v)", n, err)
			}
			got, _ := store.Actions(b.st).GetAction(context.Background(), "t", a.ID)
			if got.Status != tc.want {
				t.Errorf("the action ended %s (%s), want %s", got.Status, got.Reason, tc.want)
			}
			if l.count() != 1 || l.calls != tc.calls || l.prechecks != 0 || l.readBacks != tc.readBacks {
				t.Errorf("refunds %d, writes %d, prechecks %d, read-backs %d; want 1 refund, %d writes, no precheck, %d read-backs",
					l.count(), l.calls, l.prechecks, l.readBacks, tc.calls, tc.readBacks)
			}
			if !slices.Equal(clk.waits, tc.waits) {
				t.Errorf("waited %v, want %v", clk.waits, tc.waits)
			}
			view, _ := b.eng.Actions(context.Background(), staff, "")
			if len(view) != 1 || view[0].Status != tc.want {
				t.Errorf("staff see %+v", view)
			}
		})
	}
}

// One call twice in one model answer — and once more in the next answer,
// its arguments in another order — is one proposal: staff see one action,
// the repeats are journaled as dropped and the model is told so, and the
// approval makes one refund and one reply.
func TestRepeatedCallIsOneProposal(t *testing.T) {
	b, l := newApprovalBench(t)
	reordered := `{"reason":"access never opened","amount":990,"payment_id":"pay_4821"}`
	b.model.Push(
		llmtest.ToolCalls("", call("a", "create_refund", refundArgs), call("b", "create_refund", refundArgs)),
		llmtest.ToolCalls("", call("c", "create_refund", reordered)),
		llmtest.ToolCalls("The refund waits for staff."),
	)
	out, tv := b.send("Деньги списались, доступа нет. Верните деньги.")
	list, err := b.eng.Actions(context.Background(), staff, store.ActionProposed)
	if err != nil || len(list) != 1 {
		t.Fatalf("staff see %d actions (%v), want one", len(list), err)
	}
	if tv.Status != "ok" || !strings.HasPrefix(out.Say, "The refund waits for staff.\n") {
		t.Fatalf("status %s, reply %q", tv.Status, out.Say)
	}
	dropped := 0
	for _, v := range tv.Vetoes {
		if v.Tool == "create_refund" && v.Reason == "repeat_dropped" {
			dropped++
		}
	}
	if dropped != 2 {
		t.Errorf("vetoes %+v: want the two repeats journaled as dropped", tv.Vetoes)
	}
	reqs := b.model.Requests()
	for i, want := range map[int]string{1: "b", 2: "c"} {
		msgs := reqs[i].Messages
		var told string
		for _, m := range msgs {
			if m.ToolCallID == want {
				told = m.Content
			}
		}
		if !strings.Contains(told, `"status":"dropped"`) || !strings.Contains(told, list[0].ID) {
			t.Errorf("the model was told of call %s: %q", want, told)
		}
	}
	b.model.Push(llmtest.ToolCalls("Возврат выполнен."))
	if _, _, err := b.eng.Decide(context.Background(), staff, list[0].ID, true); err != nil {
		t.Fatal(err)
	}
	if l.count() != 1 || l.calls != 1 {
		t.Errorf("refunds %d, calls %d: want one of each", l.count(), l.calls)
	}
}
