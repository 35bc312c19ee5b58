package turn_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
	"github.com/arbiterhq/arbiter/store/storetest"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/mode/loop"
	"github.com/arbiterhq/arbiter/turn/turntest"
)

// Tests of the gate's promises at the lines that keep them: each one fails
// when the check it names is weakened (a dropped comparison, a boundary
// moved by one, a time taken from the wrong moment, an error counted as a
// success), and each asserts on what happened — the board, the stored
// pending action, the journal — not on the wording alone.

// newGateHarness is a golden harness on the default configuration, driven
// from Go rather than from a transcript.
func newGateHarness(t *testing.T) *harness {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join("testdata", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return newHarness(t, cfg, true, testEnv)
}

// handle runs one message of dmitry's conversation c1 and returns the
// reply and its journaled trace.
func (h *harness) handle(in chat.Inbound) (chat.Outbound, *traceView) {
	h.t.Helper()
	in.Identity, in.Chat = h.keys["k-dmitry"], "c1"
	out, err := h.app.Engine.HandleTurn(context.Background(), in)
	if err != nil {
		h.t.Fatalf("turn %+v: %v", in, err)
	}
	h.last, h.lastKey = out, in.Key()
	return out, h.turnTrace(out.TurnID)
}

// proposeTask has the model propose a task titled title and returns the id
// of the pending action the reply's buttons carry.
func (h *harness) proposeTask(title string) string {
	h.t.Helper()
	h.model.Push(llmtest.Text(`{"say":"","tool":"create_task","args":{"title":"` + title + `"},"done":false,"newTopic":false,"buttons":[]}`))
	out, tv := h.handle(chat.Inbound{Text: "Создай задачу " + title})
	if tv.Confirmation == nil || tv.Confirmation.Outcome != string(turn.OutcomeProposed) {
		h.t.Fatalf("proposing %q: journal %+v, reply %q", title, tv.Confirmation, out.Say)
	}
	return confirmID(h.t, out)
}

func confirmID(t *testing.T, out chat.Outbound) string {
	t.Helper()
	for _, b := range out.Buttons {
		if id, ok := strings.CutPrefix(b.Value, "confirm:"); ok {
			return id
		}
	}
	t.Fatalf("no confirmation button in %+v", out.Buttons)
	return ""
}

// cardTitles are the titles on the tenant's board.
func (h *harness) cardTitles() []string {
	h.t.Helper()
	cards, err := h.board.Board().Cards(context.Background(), h.tenant)
	if err != nil {
		h.t.Fatal(err)
	}
	var titles []string
	for _, c := range cards {
		titles = append(titles, c.Title)
	}
	return titles
}

// storedPending is the conversation's pending action; ok is false when
// none is stored.
func (h *harness) storedPending() (store.PendingAction, bool) {
	h.t.Helper()
	p, err := h.app.State.GetPending(context.Background(), h.lastKey)
	if errors.Is(err, store.ErrNotFound) {
		return store.PendingAction{}, false
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return p, true
}

// With action B waiting, the buttons of an older action A neither run B
// nor cancel it: a button names the action it was shown with.
func TestOldButtonLeavesTheWaitingActionAlone(t *testing.T) {
	h := newGateHarness(t)
	a := h.proposeTask("Старая задача")
	b := h.proposeTask("Новая задача")
	if a == b {
		t.Fatalf("both proposals have id %s", a)
	}
	for _, button := range []string{"confirm:" + a, "cancel:" + a} {
		out, tv := h.handle(chat.Inbound{Button: button})
		if got := h.cardTitles(); len(got) != 0 {
			t.Fatalf("pressing %s created %q", button, got)
		}
		if len(out.Executed) != 0 || tv.Confirmation == nil || tv.Confirmation.Outcome != string(turn.OutcomeStaleButton) {
			t.Errorf("pressing %s: %d executed, journal %+v", button, len(out.Executed), tv.Confirmation)
		}
		if p, ok := h.storedPending(); !ok || p.ID != b {
			t.Errorf("after %s the waiting action is %+v (stored %v), want %s", button, p, ok, b)
		}
	}
	// B's own button still runs B, and only B.
	out, _ := h.handle(chat.Inbound{Button: "confirm:" + b})
	if got := h.cardTitles(); len(got) != 1 || got[0] != "Новая задача" || len(out.Executed) != 1 {
		t.Errorf("B's button: cards %q, %d executed", got, len(out.Executed))
	}
	if h.model.Calls() != 2 {
		t.Errorf("the model was asked %d times, want only the two proposals", h.model.Calls())
	}
}

// A pending action is valid strictly before its expiry: a "yes" at the
// expiry itself runs nothing (docs/design.md, step 5: an expired action
// runs nothing and says so), one a moment earlier runs the stored call.
func TestConfirmationAtExactlyItsExpiry(t *testing.T) {
	for _, tt := range []struct {
		name   string
		before time.Duration // how long before the expiry the "yes" comes
		runs   bool
	}{
		{"at the expiry", 0, false},
		{"a nanosecond before", time.Nanosecond, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newGateHarness(t)
			h.proposeTask("Отправить счёт")
			p, ok := h.storedPending()
			if !ok {
				t.Fatal("nothing pending after the proposal")
			}
			h.clock.Advance(p.ExpiresAt.Sub(h.clock.Now()) - tt.before)
			out, tv := h.handle(chat.Inbound{Text: "да"})
			cards := h.cardTitles()
			if tt.runs {
				if len(cards) != 1 || len(out.Executed) != 1 || tv.Confirmation.Outcome != string(turn.OutcomeConfirmed) {
					t.Errorf("cards %q, %d executed, journal %+v", cards, len(out.Executed), tv.Confirmation)
				}
				return
			}
			if len(cards) != 0 || len(out.Executed) != 0 || tv.Confirmation == nil || tv.Confirmation.Outcome != string(turn.OutcomeExpired) {
				t.Errorf("a yes at the expiry: cards %q, %d executed, journal %+v", cards, len(out.Executed), tv.Confirmation)
			}
			if _, ok := h.storedPending(); ok {
				t.Error("the expired action is still stored")
			}
		})
	}
}

// An action is shown when the turn that proposed it commits, not when that
// turn started: a "yes" the channel accepted while the proposing turn was
// still waiting for its model answered something else, and the action
// keeps waiting for a "yes" of its own.
func TestYesDuringTheProposingTurnConfirmsNothing(t *testing.T) {
	h := newGateHarness(t)
	var whileProposing time.Time
	h.model.Push(llmtest.Func(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		// The model takes five seconds; two seconds in, a "да" arrives.
		h.clock.Advance(2 * time.Second)
		whileProposing = h.clock.Now()
		h.clock.Advance(3 * time.Second)
		return llm.Response{Protocol: llm.ProtocolJSON, Provider: "scripted", Model: "test-model", FinishReason: "stop",
			Text: `{"say":"","tool":"create_task","args":{"title":"Отчёт"},"done":false,"newTopic":false,"buttons":[]}`}, nil
	}))
	out, _ := h.handle(chat.Inbound{Text: "Создай задачу отчёт"})
	id := confirmID(t, out)
	// The "да" is handled after the proposal committed, as the lock orders
	// them, stamped with when the channel accepted it.
	out, tv := h.handle(chat.Inbound{Text: "да", ReceivedAt: whileProposing})
	if got := h.cardTitles(); len(got) != 0 || len(out.Executed) != 0 {
		t.Fatalf("a yes sent before the action was shown ran it: cards %q, %d executed", got, len(out.Executed))
	}
	if tv.Confirmation == nil || tv.Confirmation.Outcome != string(turn.OutcomeNotYetShown) {
		t.Errorf("journal %+v, want %s", tv.Confirmation, turn.OutcomeNotYetShown)
	}
	if p, ok := h.storedPending(); !ok || p.ID != id || !p.CreatedAt.After(whileProposing) {
		t.Errorf("pending %+v (stored %v): want %s, shown after %s", p, ok, id, whileProposing)
	}
	// A "да" of its own runs it.
	if out, _ := h.handle(chat.Inbound{Text: "да"}); len(h.cardTitles()) != 1 || len(out.Executed) != 1 {
		t.Errorf("the action's own yes: cards %q, %d executed", h.cardTitles(), len(out.Executed))
	}
}

// A call that failed backs no claim: the tool answers with an error (or
// cannot run at all) and the model says it worked — the draft goes to a
// person and the customer never reads the claim.
func TestFailedCallBacksNoClaim(t *testing.T) {
	for _, tt := range []struct {
		name   string
		result func(string) (tool.Result, error)
	}{
		{"error result", func(string) (tool.Result, error) {
			return tool.Result{Status: tool.StatusError, Error: "the ticket is locked"}, nil
		}},
		{"could not run", func(string) (tool.Result, error) { return tool.Result{}, errors.New("connection refused") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := newLoopBench(t, turn.Assistant{Tools: []string{"get_*", "add_note"}})
			b.result["add_note"] = tt.result
			b.model.Push(
				llmtest.ToolCalls("", call("a", "add_note", `{"text":"customer asked for a refund"}`)),
				llmtest.ToolCalls("Note added to the ticket."),
			)
			out, tv := b.send("Write it down")
			if b.ran("add_note") != 1 {
				t.Fatalf("add_note ran %d times", b.ran("add_note"))
			}
			if tv.Status != string(turn.StatusNeedsReview) || tv.Review == nil || tv.Review.Reason != turn.ReviewUnconfirmedClaim ||
				!strings.Contains(tv.Review.Detail, "add_note") {
				t.Errorf("status %s, review %+v", tv.Status, tv.Review)
			}
			if strings.Contains(out.Say, "Note added") {
				t.Errorf("the unbacked claim reached the customer: %q", out.Say)
			}
		})
	}
}

// staffBench is the approval bench with an engine whose staff may also
// ask for refunds: the requester holds the approver role.
func staffBench(t *testing.T) (*loopBench, *ledger) {
	t.Helper()
	b, l := newApprovalBench(t)
	b.eng = b.engine(turn.Config{
		Assistants: map[string]turn.Assistant{"support": {Mode: loop.Name}},
		Tenants: map[string]turn.Tenant{"t": {ID: "t", Language: "en", Assistant: "support",
			Roles: map[string]turn.Role{"desk": {Tools: []string{"*"}}, "staff": {Tools: []string{"*"}}}}},
		ApprovalTTL: time.Hour,
	})
	return b, l
}

// actionStatus is the stored status of action id.
func actionStatus(t *testing.T, b *loopBench, id string) string {
	t.Helper()
	a, err := store.Actions(b.st).GetAction(context.Background(), "t", id)
	if err != nil {
		t.Fatal(err)
	}
	return a.Status
}

// Four eyes: a requester who holds the approver role still cannot approve
// (or reject) their own action; another member of the role can.
func TestRequesterWhoIsStaffCannotApproveTheirOwnAction(t *testing.T) {
	b, l := staffBench(t)
	requester := chat.Identity{TenantID: "t", UserID: "olga", Role: "staff", Scopes: []chat.Scope{chat.ScopeRead, chat.ScopeWriteSafe, chat.ScopeWriteFull}}
	b.id = requester
	a := proposeRefund(t, b)
	if a.RequestedBy != "olga" {
		t.Fatalf("the action was requested by %q", a.RequestedBy)
	}
	for _, approve := range []bool{true, false} {
		if _, _, err := b.eng.Decide(context.Background(), requester, a.ID, approve); !errors.Is(err, chat.ErrActionNotFound) {
			t.Errorf("the requester's own decision (approve=%v): %v, want not found", approve, err)
		}
	}
	if l.calls != 0 || actionStatus(t, b, a.ID) != store.ActionProposed {
		t.Fatalf("after the requester's own decision: %d refund calls, status %s", l.calls, actionStatus(t, b, a.ID))
	}
	petr := chat.Identity{TenantID: "t", UserID: "petr", Role: "staff", Scopes: []chat.Scope{chat.ScopeRead}}
	b.model.Push(llmtest.ToolCalls("Возврат выполнен."))
	view, _, err := b.eng.Decide(context.Background(), petr, a.ID, true)
	if err != nil || view.Status != store.ActionConfirmed || view.DecidedBy != "petr" || l.count() != 1 {
		t.Errorf("another staff member's approval: %+v %v, %d refunds", view, err, l.count())
	}
}

// The approver role is checked by the decision itself, not only by the
// listing: a member of another role (or of the role in another tenant)
// who names the action's id neither approves nor rejects it.
func TestDecisionChecksTheApproverRole(t *testing.T) {
	b, l := newApprovalBench(t)
	a := proposeRefund(t, b)
	for _, who := range []chat.Identity{
		{TenantID: "t", UserID: "ivan", Role: "desk", Scopes: []chat.Scope{chat.ScopeRead, chat.ScopeWriteFull}},
		{TenantID: "t", UserID: "nobody", Scopes: []chat.Scope{chat.ScopeRead}},
		{TenantID: "t2", UserID: "olga", Role: "staff", Scopes: []chat.Scope{chat.ScopeRead}},
	} {
		for _, approve := range []bool{true, false} {
			if _, _, err := b.eng.Decide(context.Background(), who, a.ID, approve); !errors.Is(err, chat.ErrActionNotFound) {
				t.Errorf("%s/%s (role %q) decides approve=%v: %v, want not found", who.TenantID, who.UserID, who.Role, approve, err)
			}
		}
	}
	if l.calls != 0 || actionStatus(t, b, a.ID) != store.ActionProposed {
		t.Errorf("after decisions of non-approvers: %d refund calls, status %s", l.calls, actionStatus(t, b, a.ID))
	}
}

// clockedApprovalBench is the approval bench on a fake clock that the
// store keeps too, so the conversation ages as the action waits.
func clockedApprovalBench(t *testing.T) (*loopBench, *ledger, *storetest.Clock) {
	t.Helper()
	return clockedApprovalBenchOn(t, nil)
}

// backend is everything the engine asks of its store.
type backend interface {
	store.State
	store.Locker
	store.Journal
}

// clockedApprovalBenchOn is clockedApprovalBench with the engine's store
// wrapped by wrap (nil: as it is).
func clockedApprovalBenchOn(t *testing.T, wrap func(*sqlitestore.Store) backend) (*loopBench, *ledger, *storetest.Clock) {
	t.Helper()
	b, l := newApprovalBench(t)
	clk := storetest.NewClock(time.Now())
	b.st = turntest.OpenStore(t, clk.Now)
	var be backend = b.st
	if wrap != nil {
		be = wrap(b.st)
	}
	b.eng = b.engine(turn.Config{State: be, Locker: be, Journal: be,
		Assistants: map[string]turn.Assistant{"support": {Mode: loop.Name}},
		Tenants: map[string]turn.Tenant{"t": {ID: "t", Language: "en", Assistant: "support",
			Roles: map[string]turn.Role{"desk": {Tools: []string{"*"}}, "staff": {Tools: []string{"get_*"}}}}},
	}, turntest.WithClock(clk))
	return b, l, clk
}

// An action waits for its approvers strictly before its expiry: approved
// at the expiry itself it is expired and nothing runs; a moment earlier it
// runs.
func TestApprovalAtExactlyItsExpiry(t *testing.T) {
	for _, tt := range []struct {
		name   string
		before time.Duration
		status string
	}{
		{"at the expiry", 0, store.ActionExpired},
		{"a nanosecond before", time.Nanosecond, store.ActionConfirmed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, l, clk := clockedApprovalBench(t)
			a := proposeRefund(t, b)
			if ttl := a.ExpiresAt.Sub(a.CreatedAt); ttl != turn.DefaultApprovalTTL {
				t.Errorf("the action waits %s, want %s", ttl, turn.DefaultApprovalTTL)
			}
			clk.Advance(a.ExpiresAt.Sub(clk.Now()) - tt.before)
			b.model.Push(llmtest.ToolCalls("Возврат выполнен."))
			view, _, err := b.eng.Decide(context.Background(), staff, a.ID, true)
			if view.Status != tt.status || actionStatus(t, b, a.ID) != tt.status {
				t.Errorf("decided %s before the expiry: status %s reason %q (%v), stored %s, want %s",
					tt.before, view.Status, view.Reason, err, actionStatus(t, b, a.ID), tt.status)
			}
			if want := map[string]int{store.ActionExpired: 0, store.ActionConfirmed: 1}[tt.status]; l.count() != want {
				t.Errorf("%d refunds, want %d", l.count(), want)
			}
		})
	}
}

// An action outlives the conversation's memory: approved hours after the
// customer's last message (the memory and its case binding expired long
// ago), the write runs in the case it was asked for.
func TestApprovalOutlivesTheConversationMemory(t *testing.T) {
	b, l, clk := clockedApprovalBench(t)
	a := proposeRefund(t, b)
	clk.Advance(3 * time.Hour)
	b.model.Push(llmtest.ToolCalls("Возврат выполнен."))
	view, _, err := b.eng.Decide(context.Background(), staff, a.ID, true)
	if err != nil || view.Status != store.ActionConfirmed || l.count() != 1 {
		t.Fatalf("approved three hours later: status %s reason %q (%v), %d refunds", view.Status, view.Reason, err, l.count())
	}
	for _, payment := range l.refunds {
		if payment != "pay_4821" {
			t.Errorf("refunded %q", payment)
		}
	}
}

// losingLocker grants the store's own leases and reports one of them lost
// on demand while the store still holds it: the store's fence agrees with
// the holder, so only the engine's own check can stop the commit.
type losingLocker struct {
	store.Locker
	lost chan struct{}
}

type losingLease struct {
	store.Lease
	lost <-chan struct{}
}

func (l *losingLocker) Lock(ctx context.Context, key string) (store.Lease, error) {
	lease, err := l.Locker.Lock(ctx, key)
	if err != nil {
		return nil, err
	}
	return losingLease{Lease: lease, lost: l.lost}, nil
}

func (l losingLease) Lost() <-chan struct{} { return l.lost }

// A holder whose lease was lost commits nothing, even when the store's
// fence would let it: no memory, no pending action, no inbox reply.
func TestNoCommitAfterTheLeaseWasLost(t *testing.T) {
	b := newLoopBench(t, turn.Assistant{})
	lk := &losingLocker{Locker: b.st, lost: make(chan struct{})}
	eng := b.engine(turn.Config{Locker: lk,
		Tenants: map[string]turn.Tenant{"t": {ID: "t", Language: "en", Roles: map[string]turn.Role{"desk": {Tools: []string{"*"}}}}}})
	b.model.Push(llmtest.Func(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		close(lk.lost) // the lease expires while the model thinks
		return llm.Response{Protocol: llm.ProtocolJSON, Provider: "scripted", Model: "test-model", FinishReason: "stop",
			Text: `{"say":"","tool":"create_refund","args":{"ticket_id":"T-4821"},"done":false,"newTopic":false,"buttons":[]}`}, nil
	}))
	in := chat.Inbound{Identity: b.id, Chat: "c", MessageID: "m1", Text: "Refund me", Case: map[string]string{"ticket_id": "T-4821"}}
	if _, err := eng.HandleTurn(context.Background(), in); !errors.Is(err, store.ErrFenced) {
		t.Errorf("turn after a lost lease: %v, want ErrFenced", err)
	}
	ctx := context.Background()
	if p, err := b.st.GetPending(ctx, in.Key()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a pending action was committed after the lease was lost: %+v (%v)", p, err)
	}
	if conv, err := b.st.LoadConversation(ctx, in.Key()); err == nil && len(conv.Messages) != 0 {
		t.Errorf("memory was committed after the lease was lost: %+v", conv.Messages)
	}
	if rec, claimed, err := b.st.ClaimMessage(ctx, in.Key(), in.MessageID, "probe", time.Now()); err != nil || (!claimed && rec.Done) {
		t.Errorf("the message was answered after the lease was lost: %+v (%v)", rec, err)
	}
}
