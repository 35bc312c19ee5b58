package turn_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/mode/loop"
)

// The approvers' list closes what is past its time: an action whose
// expiry passed lists as expired (and is stored so), never as waiting.
func TestListingExpiresActionsPastTheirTime(t *testing.T) {
	b, l, clk := clockedApprovalBench(t)
	a := proposeRefund(t, b)
	clk.Advance(a.ExpiresAt.Sub(clk.Now()))
	ctx := context.Background()
	if waiting, err := b.eng.Actions(ctx, staff, store.ActionProposed); err != nil || len(waiting) != 0 {
		t.Errorf("waiting actions past their time: %+v (%v)", waiting, err)
	}
	all, err := b.eng.Actions(ctx, staff, "")
	if err != nil || len(all) != 1 || all[0].Status != store.ActionExpired {
		t.Errorf("all actions: %+v (%v), want the one expired", all, err)
	}
	if got := actionStatus(t, b, a.ID); got != store.ActionExpired || l.calls != 0 {
		t.Errorf("stored %s, %d refund calls", got, l.calls)
	}
}

// rivalStore is the store with a rival approver who decides an action in
// the instant between this process reading it and closing it as expired.
type rivalStore struct {
	*sqlitestore.Store
	raced bool
}

func (r *rivalStore) UpdateAction(ctx context.Context, a store.Action, from string) (store.Action, error) {
	if !r.raced && a.Status == store.ActionExpired {
		r.raced = true
		rival := a
		rival.Status, rival.DecidedBy, rival.DecidedAt = store.ActionRejected, "petr", a.UpdatedAt
		if _, err := r.Store.UpdateAction(ctx, rival, from); err != nil {
			return store.Action{}, err
		}
	}
	return r.Store.UpdateAction(ctx, a, from)
}

// An action closed by someone else first shows as what they made it, not
// as expired: the store's answer wins over this process's intent.
func TestExpiryLosesARaceToADecision(t *testing.T) {
	b, _, clk := clockedApprovalBenchOn(t, func(st *sqlitestore.Store) backend { return &rivalStore{Store: st} })
	a := proposeRefund(t, b)
	clk.Advance(a.ExpiresAt.Sub(clk.Now()) + time.Second)
	all, err := b.eng.Actions(context.Background(), staff, "")
	if err != nil || len(all) != 1 || all[0].Status != store.ActionRejected || all[0].DecidedBy != "petr" {
		t.Errorf("listed %+v (%v), want the rival's rejection", all, err)
	}
}

// A write begun before a crash already took effect, so the tool's
// precondition no longer holds ("refunded already"): resuming reads the
// write back first and confirms it, rather than failing on the effect of
// its own first attempt.
func TestResumeReadsBackBeforeThePrecondition(t *testing.T) {
	b, l := newApprovalBench(t)
	a := proposeRefund(t, b)
	ctx := context.Background()
	as := store.Actions(b.st)
	act := beginWrite(t, b, a.ID, "a:crashed-write", nil)
	l.refunds[act.IdempotencyKey] = "pay_4821"
	l.refunded["pay_4821"] = true
	b.model.Push(llmtest.ToolCalls("Возврат выполнен."))
	if n, err := b.eng.ResumeActions(ctx); err != nil || n != 1 {
		t.Fatalf("resumed %d (%v)", n, err)
	}
	if got, _ := as.GetAction(ctx, "t", a.ID); got.Status != store.ActionConfirmed || got.Reason != "" || l.calls != 0 {
		t.Errorf("status %s (%s), %d refund calls; want confirmed by reading back", got.Status, got.Reason, l.calls)
	}
}

// errorCounter is a slog handler that counts error records.
type errorCounter struct {
	mu     sync.Mutex
	errors []string
}

func (c *errorCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *errorCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		c.mu.Lock()
		c.errors = append(c.errors, r.Message)
		c.mu.Unlock()
	}
	return nil
}
func (c *errorCounter) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *errorCounter) WithGroup(string) slog.Handler      { return c }

// An approval carried out as planned logs no error: operators page on
// them.
func TestApprovedActionLogsNoError(t *testing.T) {
	b, l := newApprovalBench(t)
	logs := &errorCounter{}
	b.eng = b.engine(turn.Config{Logger: slog.New(logs),
		Assistants: map[string]turn.Assistant{"support": {Mode: loop.Name}},
		Tenants: map[string]turn.Tenant{"t": {ID: "t", Language: "en", Assistant: "support",
			Roles: map[string]turn.Role{"desk": {Tools: []string{"*"}}, "staff": {Tools: []string{"get_*"}}}}},
	})
	a := proposeRefund(t, b)
	b.model.Push(llmtest.ToolCalls("Возврат выполнен."))
	if view, _, err := b.eng.Decide(context.Background(), staff, a.ID, true); err != nil || view.Status != store.ActionConfirmed || l.count() != 1 {
		t.Fatalf("approval: %+v %v", view, err)
	}
	if len(logs.errors) != 0 {
		t.Errorf("errors logged: %q", logs.errors)
	}
}

// A write that finished before the crash (its record done) is not asked
// again, not even of the tool's system: its recorded result confirms the
// action, and the journal says it was reused.
func TestResumeReusesAFinishedWrite(t *testing.T) {
	b, l := newApprovalBench(t)
	a := proposeRefund(t, b)
	ctx := context.Background()
	as := store.Actions(b.st)
	act := beginWrite(t, b, a.ID, "a:finished-write", nil)
	if err := b.st.FinishExecution(ctx, "t", act.IdempotencyKey, json.RawMessage(`{"status":"ok","data":{"refund":"re_1"}}`), time.Now()); err != nil {
		t.Fatal(err)
	}
	b.model.Push(llmtest.ToolCalls("Возврат выполнен."))
	if n, err := b.eng.ResumeActions(ctx); err != nil || n != 1 {
		t.Fatalf("resumed %d (%v)", n, err)
	}
	got, _ := as.GetAction(ctx, "t", a.ID)
	if got.Status != store.ActionConfirmed || l.calls != 0 || l.count() != 0 {
		t.Fatalf("status %s (%s), %d refund calls", got.Status, got.Reason, l.calls)
	}
	turns, err := b.st.ListTurns(ctx, "t", store.TurnFilter{Limit: 1})
	if err != nil || len(turns) != 1 {
		t.Fatalf("turns %+v (%v)", turns, err)
	}
	rec, _ := b.st.GetTurn(ctx, "t", turns[0].TurnID)
	if trace := string(rec.Trace); !strings.Contains(trace, `"reused":true`) || strings.Contains(trace, `"reconciled":true`) {
		t.Errorf("the resumed turn's record: %s", trace)
	}
	// The reused write backs the model's "Возврат выполнен": the reply is
	// sent, not handed to a person.
	if rec.Status != string(turn.StatusOK) {
		t.Errorf("the resumed turn ended %s: %s", rec.Status, rec.Trace)
	}
}

// A write begun before a crash that never reached the payments system is
// closed as failed on the system's word ("not applied"), and not sent
// again blindly.
func TestResumeOfAWriteThatNeverLanded(t *testing.T) {
	b, l := newApprovalBench(t)
	a := proposeRefund(t, b)
	ctx := context.Background()
	as := store.Actions(b.st)
	beginWrite(t, b, a.ID, "a:lost-write", nil)
	b.model.Push(llmtest.ToolCalls("Возврат не прошёл."))
	if n, err := b.eng.ResumeActions(ctx); err != nil || n != 1 {
		t.Fatalf("resumed %d (%v)", n, err)
	}
	got, _ := as.GetAction(ctx, "t", a.ID)
	if got.Status != store.ActionFailed || got.Reason != "reconciled: not applied" || l.calls != 0 {
		t.Errorf("status %s reason %q, %d refund calls", got.Status, got.Reason, l.calls)
	}
}
