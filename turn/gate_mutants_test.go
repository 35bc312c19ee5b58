package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/mode/loop"
	"github.com/arbiterhq/arbiter/turn/mode/single"
	"github.com/arbiterhq/arbiter/turn/turntest"
)

// Tests of the gate found missing by mutation testing (.ci/mutation): each
// asserts on what the gate decided — what ran, what the journal says —
// where a weakened line would have passed unnoticed.

// ownerEngine is an engine in single mode over tools, for tenant "t" whose
// role owner may use every tool, on a store of its own.
func ownerEngine(t *testing.T, tools ...tool.Tool) (*turn.Engine, *sqlitestore.Store, *llmtest.Scripted) {
	t.Helper()
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	e := turntest.New(t, turn.Config{Tools: reg,
		Tenants: map[string]turn.Tenant{"t": {ID: "t", Language: "en", Roles: map[string]turn.Role{"owner": {Tools: []string{"*"}}}}}})
	return e.Engine, e.Store, e.Model
}

// vanishing is a universal action whose targets can disappear between the
// proposal and the "yes" (a board deleted, a server's tool withdrawn).
type vanishing struct {
	dispatcher
	gone map[string]bool
}

func (v *vanishing) Resolve(ctx context.Context, c tool.Caller, args json.RawMessage) (tool.Spec, error) {
	var a struct{ Target string }
	_ = json.Unmarshal(args, &a)
	if v.gone[a.Target] {
		return tool.Spec{}, errors.New("no such target")
	}
	return v.dispatcher.Resolve(ctx, c, args)
}

// A confirmed action whose target no longer resolves runs nothing, and the
// journal records it as no longer granted — it was granted when proposed,
// so "unknown tool" would misreport what happened.
func TestConfirmedTargetThatVanishedIsNotGranted(t *testing.T) {
	v := &vanishing{gone: map[string]bool{}}
	eng, st, model := ownerEngine(t, v)
	owner := chat.Identity{TenantID: "t", UserID: "o", Role: "owner", Scopes: []chat.Scope{chat.ScopeRead, chat.ScopeWriteFull}}
	model.Push(turntest.Decide("act", `{"target":"wipe"}`))
	out, err := eng.HandleTurn(context.Background(), chat.Inbound{Identity: owner, Chat: "c", Text: "wipe it"})
	if err != nil || out.Pending == nil {
		t.Fatalf("proposal: %+v, %v", out, err)
	}
	v.gone["wipe"] = true
	out, err = eng.HandleTurn(context.Background(), chat.Inbound{Identity: owner, Chat: "c", Text: "yes"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Executed) != 0 || len(v.calls) != 0 {
		t.Fatalf("a target that no longer resolves ran: %+v, calls %v", out.Executed, v.calls)
	}
	rec, err := st.GetTurn(context.Background(), "t", out.TurnID)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		Vetoes       []struct{ Guard, Tool, Reason string }
		Confirmation struct{ Outcome string }
	}
	if err := json.Unmarshal(rec.Trace, &tr); err != nil {
		t.Fatal(err)
	}
	if len(tr.Vetoes) != 1 || tr.Vetoes[0].Reason != "not_granted" || tr.Vetoes[0].Guard != "confirm" || tr.Confirmation.Outcome != string(turn.OutcomeRefused) {
		t.Errorf("journal: vetoes %+v, confirmation %+v; want one confirm veto, not_granted, refused", tr.Vetoes, tr.Confirmation)
	}
}

// A confirmation runs every call it showed, whatever runs the conversation
// now: two refunds put to the user as one confirmation by a loop, confirmed
// after the assistant was switched to single mode (a new configuration,
// the same store), both run — not only the first.
func TestBatchConfirmedAfterAModeChangeRunsEveryCall(t *testing.T) {
	b := newLoopBench(t, turn.Assistant{})
	b.model.Push(llmtest.ToolCalls("",
		call("a", "create_refund", `{"ticket_id":"T-4821","text":"first"}`),
		call("b", "create_refund", `{"ticket_id":"T-4821","text":"second"}`)))
	out, _ := b.send("refund both payments")
	if out.Pending == nil || b.ran("create_refund") != 0 {
		t.Fatalf("the two refunds should wait for one yes: pending %+v, runs %v", out.Pending, b.runs)
	}
	b.eng = b.engine(turn.Config{
		Assistants: map[string]turn.Assistant{"support": {Mode: single.Name}},
		Tenants: map[string]turn.Tenant{"t": {ID: "t", Language: "en", Assistant: "support",
			Roles: map[string]turn.Role{"desk": {Tools: []string{"*"}}}}}})
	id := confirmID(t, out)
	out, _ = b.send("yes")
	if b.ran("create_refund") != 2 || len(out.Executed) != 2 {
		t.Fatalf("after yes: runs %v, %d executed; want both refunds", b.runs, len(out.Executed))
	}
	if lines := strings.Split(out.Say, "\n"); len(lines) != 2 || lines[0] == "" || lines[1] == "" {
		t.Errorf("the reply should report each refund on a line of its own: %q", out.Say)
	}
	if got := b.args["create_refund"]; !strings.Contains(got[0], "first") || !strings.Contains(got[1], "second") {
		t.Errorf("the refunds ran with %q, want the stored calls in order", got)
	}
	if b.model.Calls() != 1 {
		t.Errorf("the model was asked %d times, want only for the proposal", b.model.Calls())
	}
	// Each call runs under the action's key and its position: a key that
	// stays the same across versions, so a batch resumed after an upgrade
	// finds the records of the calls that ran before it.
	for i, text := range []string{"first", "second"} {
		key := "pending:" + id + "#" + strconv.Itoa(i+1)
		if rec, err := b.st.GetExecution(context.Background(), "t", key); err != nil || !strings.Contains(string(rec.Args), text) {
			t.Errorf("execution record %s: %+v (%v), want the %s refund", key, rec, err, text)
		}
	}
}

// expiryFails is the store failing (not conflicting) when an action is
// closed as expired: the disk is full, the connection dropped.
type expiryFails struct{ *sqlitestore.Store }

func (f expiryFails) UpdateAction(ctx context.Context, a store.Action, from string) (store.Action, error) {
	if a.Status == store.ActionExpired {
		return store.Action{}, errors.New("disk I/O error")
	}
	return f.Store.UpdateAction(ctx, a, from)
}

// An action past its time is expired even when the store cannot record
// it: the approvers' list and a late decision show it as expired, under
// its own id, and nothing runs.
func TestExpiryTheStoreCannotRecordStillShows(t *testing.T) {
	b, l, clk := clockedApprovalBenchOn(t, func(st *sqlitestore.Store) backend { return expiryFails{st} })
	a := proposeRefund(t, b)
	clk.Advance(a.ExpiresAt.Sub(clk.Now()))
	ctx := context.Background()
	all, err := b.eng.Actions(ctx, staff, "")
	if err != nil || len(all) != 1 || all[0].ID != a.ID || all[0].Status != store.ActionExpired {
		t.Errorf("all actions: %+v (%v), want %s expired", all, err, a.ID)
	}
	view, _, err := b.eng.Decide(ctx, staff, a.ID, true)
	if !errors.Is(err, chat.ErrActionClosed) || view.ID != a.ID || view.Status != store.ActionExpired || l.calls != 0 {
		t.Errorf("a decision past the expiry: %+v (%v), %d refund calls; want %s expired, nothing run", view, err, l.calls, a.ID)
	}
}

// A confirmed write is recorded before it runs, under the stored action's
// key and with the message it serves, so a redelivery of that message
// after a crash looks for this write instead of deciding afresh; after the
// call the record holds its result.
func TestConfirmedWriteIsRecordedWithItsMessage(t *testing.T) {
	h := newGateHarness(t)
	id := h.proposeTask("Записанная задача")
	out, _ := h.handle(chat.Inbound{Text: "да", MessageID: "m-yes"})
	if len(out.Executed) != 1 || len(h.cardTitles()) != 1 {
		t.Fatalf("the yes ran %d calls, board %q", len(out.Executed), h.cardTitles())
	}
	rec, err := h.app.State.GetExecution(context.Background(), h.tenant, "pending:"+id)
	if err != nil {
		t.Fatalf("no execution record under the action's key: %v", err)
	}
	if rec.Tool != "create_task" || rec.MessageID != "m-yes" || rec.Key != h.lastKey || rec.State != store.ExecDone || len(rec.Result) == 0 {
		t.Errorf("execution record %+v; want create_task, message m-yes of %v, done with its result", rec, h.lastKey)
	}
}

// A rejection is told in the case it was asked in: the conversation has
// moved on to another case meanwhile, and the model that tells the user
// still reads the action's case, not the conversation's new one.
func TestRejectionIsToldInTheActionsCase(t *testing.T) {
	b, l := newApprovalBench(t)
	a := proposeRefund(t, b)
	b.model.Push(llmtest.ToolCalls("Слушаю по новому обращению."))
	b.sendIn(chat.Inbound{Identity: b.id, Chat: "c", Text: "Новый вопрос", CloseCase: true, Case: map[string]string{"ticket_id": "T-9999"}})
	asked := b.model.Calls()
	b.model.Push(llmtest.ToolCalls("Возврат отклонён сотрудником."))
	view, out, err := b.eng.Decide(context.Background(), staff, a.ID, false)
	if err != nil || view.Status != store.ActionRejected || l.calls != 0 || !strings.Contains(out.Say, "Возврат отклонён") {
		t.Fatalf("rejected: %+v (%v), %d refund calls, reply %q", view, err, l.calls, out.Say)
	}
	reqs := b.model.Requests()
	if len(reqs) != asked+1 {
		t.Fatalf("the model was asked %d times to tell the rejection, want once", len(reqs)-asked)
	}
	var prompt strings.Builder
	for _, m := range reqs[asked].Messages {
		prompt.WriteString(m.Content)
	}
	if !strings.Contains(prompt.String(), "Case of this conversation: ticket_id=T-4821") {
		t.Errorf("the model telling the rejection does not see the action's case:\n%s", prompt.String())
	}
}

// A claim no call confirmed goes to a person with the reason it could not
// be sent: which tool's call would have confirmed it, or that no tool here
// can.
func TestUnconfirmedClaimSaysWhatWouldConfirmIt(t *testing.T) {
	b := outcomeBench(t)
	b.result["get_subscription_status"] = func(string) (tool.Result, error) {
		return tool.Result{Status: tool.StatusOK, Data: json.RawMessage(`{"status":"inactive"}`)}, nil
	}
	for _, c := range []struct{ reply, why string }{
		{"Ваша подписка активна.", "no call of get_subscription_status confirmed it"},
		{"Your access is restored.", "no tool here confirms it"},
	} {
		b.model.Push(llmtest.ToolCalls("", call("a", "get_subscription_status", `{}`)), llmtest.ToolCalls(c.reply))
		out, tv := b.send("Is my subscription on?")
		if tv.Review == nil || tv.Review.Reason != turn.ReviewUnconfirmedClaim || !strings.HasSuffix(tv.Review.Detail, c.why) || out.Say == c.reply {
			t.Errorf("%q: reply %q, review %+v; want it held because %s", c.reply, out.Say, tv.Review, c.why)
		}
	}
}

// «All set» after an approved action was carried out goes out: the write
// of the turn is done, and nothing else of the conversation waits.
func TestCompletionWordsAfterTheApprovedWriteRan(t *testing.T) {
	b, l := newApprovalBench(t)
	a := proposeRefund(t, b)
	b.model.Push(llmtest.ToolCalls("All set, you're good to go!"))
	view, out, err := b.eng.Decide(context.Background(), staff, a.ID, true)
	if err != nil || view.Status != store.ActionConfirmed || l.count() != 1 {
		t.Fatalf("approved: %+v (%v), %d refunds", view, err, l.count())
	}
	if !strings.HasPrefix(out.Say, "All set, you're good to go!") {
		t.Errorf("after the approved write ran the reply was held: %q", out.Say)
	}
}

// sized is a read that answers with data of a given size.
type sized struct{ data json.RawMessage }

func (z *sized) Spec() tool.Spec {
	return tool.Spec{
		Name:        "read_blob",
		Description: "Read a blob.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		Policy:      tool.Policy{Risk: tool.RiskRead, MaxResultBytes: 64},
	}
}

func (z *sized) Call(ctx context.Context, c tool.Call) (tool.Result, error) {
	return tool.Result{Status: tool.StatusOK, Data: z.data}, nil
}

// A tool's result is capped at its MaxResultBytes: one of exactly that
// size is kept as it is, one a byte over is replaced by a note of its size.
func TestResultCapIsInclusive(t *testing.T) {
	z := &sized{}
	eng, _, model := ownerEngine(t, z)
	owner := chat.Identity{TenantID: "t", UserID: "o", Role: "owner", Scopes: []chat.Scope{chat.ScopeRead}}
	for _, size := range []int{64, 65} {
		z.data = json.RawMessage(`"` + strings.Repeat("x", size-2) + `"`)
		model.Push(turntest.Decide("read_blob", `{}`))
		out, err := eng.HandleTurn(context.Background(), chat.Inbound{Identity: owner, Chat: "c", Text: "read the blob"})
		if err != nil || len(out.Executed) != 1 {
			t.Fatalf("%d bytes: %+v, %v", size, out, err)
		}
		got := string(out.Executed[0].Result)
		if kept := got == string(z.data); kept != (size == 64) || !kept && !strings.Contains(got, `"truncated":true`) {
			t.Errorf("a result of %d bytes (cap 64) reads %s", size, got)
		}
	}
}

// «All set» while an approved action is still being carried out goes to a
// person, however long ago the action was proposed: its time to wait for
// approvers is over, the write is not.
func TestCompletionWordsWhileAnOldActionIsExecuting(t *testing.T) {
	b, l, clk := clockedApprovalBench(t)
	a := proposeRefund(t, b)
	ctx := context.Background()
	act, err := store.Actions(b.st).GetAction(ctx, "t", a.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Approved and begun by a process that stopped before the write ended.
	act.Status, act.DecidedBy, act.DecidedAt = store.ActionExecuting, "petr", clk.Now()
	if _, err := store.Actions(b.st).UpdateAction(ctx, act, store.ActionProposed); err != nil {
		t.Fatal(err)
	}
	clk.Advance(a.ExpiresAt.Sub(clk.Now()) + time.Hour)
	b.model.Push(llmtest.ToolCalls("All set, you're good to go!"))
	out, tv := b.send("So is it done?")
	if tv.Status != string(turn.StatusNeedsReview) || strings.Contains(out.Say, "All set") || tv.Review == nil || !strings.Contains(tv.Review.Detail, "create_refund is executing") {
		t.Errorf("status %s, reply %q, review %+v, %d refunds", tv.Status, out.Say, tv.Review, l.count())
	}
}

// countTool is a read that records the arguments it ran with.
type countTool struct{ got []string }

func (c *countTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        "count_items",
		Description: "Count items.",
		InputSchema: json.RawMessage(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}},"additionalProperties":false}`),
		Policy:      tool.Policy{Risk: tool.RiskRead},
	}
}

func (c *countTool) Call(ctx context.Context, call tool.Call) (tool.Result, error) {
	c.got = append(c.got, string(call.Args))
	return tool.Result{Status: tool.StatusOK, Data: json.RawMessage(`{"ok":true}`)}, nil
}

// A whole number written with a fraction or an exponent runs as the
// integer it is, up to the largest every consumer holds exactly (2^53-1)
// inclusive.
func TestWholeNumbersRunAsIntegersUpToTheExactBound(t *testing.T) {
	c := &countTool{}
	eng, _, model := ownerEngine(t, c)
	owner := chat.Identity{TenantID: "t", UserID: "o", Role: "owner", Scopes: []chat.Scope{chat.ScopeRead}}
	for _, n := range []struct{ written, runs string }{
		{"5e1", "50"},
		{"9007199254740991.0", "9007199254740991"},
	} {
		model.Push(llmtest.Text(`{"say":"","tool":"count_items","args":{"n":` + n.written + `},"done":false,"newTopic":false,"buttons":[]}`))
		if _, err := eng.HandleTurn(context.Background(), chat.Inbound{Identity: owner, Chat: "c", Text: "count them"}); err != nil {
			t.Fatal(err)
		}
		if want := `{"n":` + n.runs + `}`; len(c.got) == 0 || c.got[len(c.got)-1] != want {
			t.Errorf("n written %s ran as %v, want %s", n.written, c.got, want)
		}
	}
}

// Two writes put to the user as one confirmation right after the model
// read content of others name what it read, as one write's confirmation
// does, when no value of theirs came from it.
func TestBatchConfirmationNamesWhatWasRead(t *testing.T) {
	b := newFetchBench(t, true, `{"page":"Refunds are issued within a day."}`)
	b.model.Push(
		llmtest.ToolCalls("", call("a", "fetch_page", `{"url":"https://status.example/"}`)),
		llmtest.ToolCalls("",
			call("b", "create_refund", `{"ticket_id":"T-4821","text":"first"}`),
			call("c", "create_refund", `{"ticket_id":"T-4821","text":"second"}`)),
	)
	out, _ := b.send("Check https://status.example/ and refund the first and the second payment")
	var tv struct {
		Confirmation *turn.ConfirmationTrace `json:"confirmation"`
	}
	turntest.ReadTurn(t, b.st, "t", out.TurnID, &tv)
	if out.Pending == nil || b.ran("create_refund") != 0 || tv.Confirmation == nil {
		t.Fatalf("the refunds should wait for one yes: pending %+v, runs %v", out.Pending, b.runs)
	}
	if len(tv.Confirmation.FromUntrusted) != 0 || len(tv.Confirmation.ReadBefore) != 1 || !strings.Contains(tv.Confirmation.ReadBefore[0], "fetch_page") {
		t.Errorf("the batch confirmation does not name what was read: %+v\n%s", tv.Confirmation, out.Say)
	}
}

// A confirmed write told without the model — the loop's model is gone by
// the "yes" — keeps the choices its tool answered with as buttons.
func TestConfirmedCallToldWithoutTheModelKeepsItsChoices(t *testing.T) {
	b := newLoopBench(t, turn.Assistant{})
	b.model.Push(llmtest.ToolCalls("", call("a", "create_refund", `{"ticket_id":"T-4821","text":"refund"}`)))
	if out, _ := b.send("please refund"); out.Pending == nil {
		t.Fatalf("the refund should wait for a yes: %+v", out)
	}
	b.result["create_refund"] = func(string) (tool.Result, error) {
		return tool.Result{Status: tool.StatusAmbiguous, Text: "Which payment?", Choices: []tool.Choice{
			{Label: "pay_1", Tool: "create_refund", Args: json.RawMessage(`{"ticket_id":"T-4821","text":"pay_1"}`)},
			{Label: "pay_2", Tool: "create_refund", Args: json.RawMessage(`{"ticket_id":"T-4821","text":"pay_2"}`)}}}, nil
	}
	b.eng = b.engine(turn.Config{
		Assistants: map[string]turn.Assistant{"support": {Mode: loop.Name}},
		Tenants: map[string]turn.Tenant{"t": {ID: "t", Language: "en", Assistant: "support",
			Roles: map[string]turn.Role{"desk": {Tools: []string{"*"}}}}}}, turntest.WithModel(nil))
	out, _ := b.send("yes")
	if b.ran("create_refund") != 1 || out.Say != "Which payment?" || len(out.Buttons) != 2 || out.Buttons[0].Label != "pay_1" {
		t.Errorf("after yes: runs %v, reply %q, buttons %+v; want the tool's question and its two choices", b.runs, out.Say, out.Buttons)
	}
}

// The user's words still ask for what a forward sent within two minutes of
// them holds, up to the last instant of the two minutes: a task proposed
// from it waits for a yes instead of being refused as evidence alone.
func TestWordsCountForAForwardAtTheEndOfTheWindow(t *testing.T) {
	h := newGateHarness(t)
	h.model.Push(turntest.Say("Перешлите сообщение."))
	h.handle(chat.Inbound{Text: "Сейчас перешлю сообщение, сделай из него задачу"})
	h.clock.Advance(2 * time.Minute)
	h.model.Push(turntest.Decide("create_task", `{"title":"Позвонить Ивану"}`))
	out, tv := h.handle(chat.Inbound{Evidence: []chat.Evidence{{Kind: "forward", Text: "Позвонить Ивану", Source: "Bob"}}})
	if tv.Confirmation == nil || tv.Confirmation.Outcome != string(turn.OutcomeProposed) || len(h.cardTitles()) != 0 {
		t.Errorf("a forward at the end of the window: reply %q, vetoes %+v, confirmation %+v", out.Say, tv.Vetoes, tv.Confirmation)
	}
}
