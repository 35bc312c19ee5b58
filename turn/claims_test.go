package turn_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/mode/loop"
	"github.com/arbiterhq/arbiter/turn/turntest"
)

// outcomeBench is a loop bench whose engine has a subscription read that
// declares subscription_active (only when it answered "active") and a
// note write that declares nothing, with access_restored confirmed by no
// tool.
func outcomeBench(t *testing.T) *loopBench {
	t.Helper()
	b := newLoopBench(t, turn.Assistant{})
	schema := json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"ticket_id":{"type":"string"},"text":{"type":"string"}}}`)
	reg, err := tool.NewRegistry(
		&deskTool{b: b, spec: tool.Spec{
			Name:        "get_subscription_status",
			Description: "The subscription.",
			InputSchema: schema,
			Policy:      tool.Policy{Risk: tool.RiskRead, Outcomes: []tool.Outcome{{Name: "subscription_active", When: map[string]string{"status": "active"}}}},
		}},
		&deskTool{b: b, spec: tool.Spec{Name: "add_note", Description: "A note.", InputSchema: schema, Policy: tool.Policy{Risk: tool.RiskWriteSafe, Idempotent: true}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	b.eng = b.engine(turn.Config{Tools: reg,
		Assistants:            map[string]turn.Assistant{"support": {Mode: loop.Name}},
		Tenants:               map[string]turn.Tenant{"t": {ID: "t", Language: "en", Assistant: "support", Roles: map[string]turn.Role{"desk": {Tools: []string{"*"}}}}},
		UnconfirmableOutcomes: []string{"access_restored"}})
	return b
}

// A read confirms an outcome only as it answered; an outcome no tool
// confirms is never sent.
func TestOutcomeConfirmedAsTheSystemAnswered(t *testing.T) {
	b := outcomeBench(t)
	for _, c := range []struct {
		status, reply string
		sent          bool
	}{
		{"inactive", "Ваша подписка активна.", false},
		{"active", "Ваша подписка активна.", true},
		{"active", "Your subscription is active and your access is restored.", false}, // access: no tool confirms it
		{"inactive", "Your subscription is not active yet; a colleague will look into it.", true},
	} {
		b.result["get_subscription_status"] = func(string) (tool.Result, error) {
			return tool.Result{Status: tool.StatusOK, Data: json.RawMessage(`{"status":"` + c.status + `"}`)}, nil
		}
		b.model.Push(llmtest.ToolCalls("", call("a", "get_subscription_status", `{}`)), llmtest.ToolCalls(c.reply))
		out, tv := b.send("Is my subscription on?")
		if sent := out.Say == c.reply && tv.Status == "ok"; sent != c.sent {
			t.Errorf("%s, %q: sent %v (status %s, reply %q), want %v", c.status, c.reply, sent, tv.Status, out.Say, c.sent)
		}
		if !c.sent && (tv.Review == nil || tv.Review.Reason != turn.ReviewUnconfirmedClaim || tv.Review.Draft != c.reply) {
			t.Errorf("%q: review %+v", c.reply, tv.Review)
		}
	}
}

// «Done» after a write that failed goes to a person, and the reply says
// what happened to the write; after one that succeeded it goes out.
func TestCompletionWordsWhileAWriteIsNotDone(t *testing.T) {
	b := outcomeBench(t)
	b.result["add_note"] = func(string) (tool.Result, error) {
		return tool.Result{Status: tool.StatusError, Error: "the notes service is down"}, nil
	}
	b.model.Push(llmtest.ToolCalls("", call("a", "add_note", `{"text":"refund asked"}`)), llmtest.ToolCalls("Done!"))
	out, tv := b.send("Note it down")
	if tv.Status != string(turn.StatusNeedsReview) || strings.Contains(out.Say, "Done") || !strings.Contains(tv.Review.Detail, "add_note") {
		t.Errorf("after a failed write: status %s, reply %q, review %+v", tv.Status, out.Say, tv.Review)
	}
	if len(out.Actions) != 1 || out.Actions[0].Tool != "add_note" || out.Actions[0].Status != store.ActionFailed || out.Actions[0].Text != "\"add_note\": not done." {
		t.Errorf("actions %+v", out.Actions)
	}

	b.result["add_note"] = nil
	b.model.Push(llmtest.ToolCalls("", call("b", "add_note", `{"text":"refund asked again"}`)), llmtest.ToolCalls("Done!"))
	out, tv = b.send("Note it down again")
	if tv.Status != "ok" || out.Say != "Done!" {
		t.Errorf("after the write ran: status %s, reply %q (receipts are off: no tool waits for approvers)", tv.Status, out.Say)
	}
	if len(out.Actions) != 1 || out.Actions[0].Status != store.ActionConfirmed {
		t.Errorf("actions %+v", out.Actions)
	}
}

// An outcome the engine does not know needs patterns; so does one no tool
// confirms.
func TestOutcomeConfiguration(t *testing.T) {
	b := newLoopBench(t, turn.Assistant{})
	for _, c := range []struct {
		outcome       tool.Outcome
		unconfirmable []string
		want          string
	}{
		{tool.Outcome{Name: "ticket_closed"}, nil, `outcome "ticket_closed" is not one the engine knows`},
		{tool.Outcome{Name: "ticket_closed", Patterns: []string{"... closed"}}, nil, "a gap must stand between two words"},
		{tool.Outcome{Name: "refund_done"}, []string{"ticket_closed"}, `unconfirmable outcome "ticket_closed"`},
	} {
		reg, err := tool.NewRegistry(&deskTool{b: b, spec: tool.Spec{
			Name:        "close_ticket",
			Description: "Close.",
			InputSchema: json.RawMessage(`{"type":"object"}`),
			Policy:      tool.Policy{Risk: tool.RiskWriteSafe, Outcomes: []tool.Outcome{c.outcome}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = turntest.Build(t, turn.Config{Tools: reg, UnconfirmableOutcomes: c.unconfirmable}, turntest.WithStore(b.st), turntest.WithModel(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.outcome, err, c.want)
		}
	}
	reg, _ := tool.NewRegistry(&deskTool{b: b, spec: tool.Spec{
		Name:        "close_ticket",
		Description: "Close.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Policy:      tool.Policy{Risk: tool.RiskWriteSafe, Outcomes: []tool.Outcome{{Name: "ticket_closed", Patterns: []string{"ticket* ... closed"}}}},
	}})
	if _, err := turntest.Build(t, turn.Config{Tools: reg}, turntest.WithStore(b.st), turntest.WithModel(nil)); err != nil {
		t.Errorf("an outcome with its own patterns: %v", err)
	}
}

// A write put to the user shows in the reply's actions as waiting for
// their yes; the turn that runs it shows it done.
func TestActionsOfAConfirmedWrite(t *testing.T) {
	b := newLoopBench(t, turn.Assistant{})
	b.model.Push(llmtest.ToolCalls("", call("a", "create_refund", `{"ticket_id":"T-4821","text":"refund"}`)))
	out, _ := b.send("please refund")
	if len(out.Actions) != 1 || out.Actions[0].Tool != "create_refund" || out.Actions[0].Status != "awaiting_confirmation" ||
		out.Actions[0].Text != "\"create_refund\": waiting for your confirmation; not done yet." {
		t.Fatalf("proposed: actions %+v", out.Actions)
	}
	out, _ = b.send("yes")
	if b.ran("create_refund") != 1 || len(out.Actions) != 1 || out.Actions[0].Status != store.ActionConfirmed ||
		out.Actions[0].Text != "\"create_refund\": done, confirmed by the system." {
		t.Errorf("after yes: runs %v, actions %+v", b.runs, out.Actions)
	}
}

// «Done» in a later turn, while the refund proposed earlier still waits
// for staff, goes to a person too.
func TestCompletionWordsWhileAnEarlierActionWaits(t *testing.T) {
	b, _ := newApprovalBench(t)
	proposeRefund(t, b)
	b.model.Push(llmtest.ToolCalls("All set, you're good to go!"))
	out, tv := b.send("So is it done?")
	if tv.Status != string(turn.StatusNeedsReview) || strings.Contains(out.Say, "All set") || tv.Review == nil || !strings.Contains(tv.Review.Detail, "create_refund is proposed") {
		t.Errorf("status %s, reply %q, review %+v", tv.Status, out.Say, tv.Review)
	}
}
