package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/turntest"
)

// dispatcher is a universal action like the seed's "mcp": its arguments
// name the real target, whose risk governs the call.
type dispatcher struct{ calls []string }

func (d *dispatcher) Spec() tool.Spec {
	return tool.Spec{
		Name:        "act",
		Description: "Run a target.",
		InputSchema: json.RawMessage(`{"type":"object","required":["target"],"properties":{"target":{"type":"string"}},"additionalProperties":false}`),
		Policy:      tool.Policy{Risk: tool.RiskRead},
	}
}

func (d *dispatcher) Resolve(ctx context.Context, c tool.Caller, args json.RawMessage) (tool.Spec, error) {
	var a struct{ Target string }
	_ = json.Unmarshal(args, &a)
	switch a.Target {
	case "peek":
		return tool.Spec{Name: "act:peek", Title: "Peek", Policy: tool.Policy{Risk: tool.RiskRead}}, nil
	case "wipe":
		return tool.Spec{Name: "act:wipe", Title: "Wipe everything", Policy: tool.Policy{Risk: tool.RiskWriteFull, Confirm: tool.ConfirmAlways}}, nil
	}
	return tool.Spec{}, errors.New("no such target")
}

func (d *dispatcher) Call(ctx context.Context, c tool.Call) (tool.Result, error) {
	var a struct{ Target string }
	_ = json.Unmarshal(c.Args, &a)
	d.calls = append(d.calls, a.Target)
	return tool.Result{Status: tool.StatusOK, Text: "ran " + a.Target}, nil
}

func TestResolvedTargetsGovern(t *testing.T) {
	d := &dispatcher{}
	reg, err := tool.NewRegistry(d)
	if err != nil {
		t.Fatal(err)
	}
	e := turntest.New(t, turn.Config{Tools: reg,
		Tenants: map[string]turn.Tenant{"t": {ID: "t", Language: "en", Roles: map[string]turn.Role{
			"owner":   {Tools: []string{"act", "act:*"}},
			"manager": {Tools: []string{"act", "act:peek"}},
		}}}})
	model := e.Model
	owner := chat.Identity{TenantID: "t", UserID: "o", Role: "owner", Scopes: []chat.Scope{chat.ScopeRead, chat.ScopeWriteFull}}
	ownerRO := chat.Identity{TenantID: "t", UserID: "o", Role: "owner", Scopes: []chat.Scope{chat.ScopeRead}}
	manager := chat.Identity{TenantID: "t", UserID: "m", Role: "manager", Scopes: []chat.Scope{chat.ScopeRead, chat.ScopeWriteFull}}
	propose := func(id chat.Identity, target string) chat.Outbound {
		t.Helper()
		model.Push(llmtest.Text(`{"say":"","tool":"act","args":{"target":"` + target + `"},"done":false,"newTopic":false,"buttons":[]}`))
		return e.Send(chat.Inbound{Identity: id, Chat: "c", Text: "do " + target})
	}
	yes := func(id chat.Identity) chat.Outbound {
		return e.Send(chat.Inbound{Identity: id, Chat: "c", Text: "yes"})
	}

	if out := propose(owner, "peek"); len(out.Executed) != 1 || out.Pending != nil {
		t.Errorf("a read target should run at once: %+v", out)
	}
	// The dispatcher is read-risk, but the write target it resolves to
	// needs write:full and confirmation.
	out := propose(owner, "wipe")
	if out.Pending == nil || len(d.calls) != 1 {
		t.Fatalf("a write target should wait for confirmation: %+v, calls %v", out, d.calls)
	}
	if out.Say == "" || !contains(out.Say, "Wipe everything") {
		t.Errorf("the confirmation should name the resolved target: %q", out.Say)
	}
	// Confirming with a read-only key of the same user is refused.
	if out := yes(ownerRO); len(out.Executed) != 0 || len(d.calls) != 1 {
		t.Errorf("read-only key confirmed a write: %+v", out)
	}
	propose(owner, "wipe")
	if out := yes(owner); len(out.Executed) != 1 || d.calls[len(d.calls)-1] != "wipe" {
		t.Errorf("confirmed write did not run: %+v", out)
	}
	// A manager's role shows the dispatcher but not the wipe target.
	if out := propose(manager, "wipe"); out.Pending != nil || len(out.Executed) != 0 {
		t.Errorf("manager got a target outside the role: %+v", out)
	}
	if out := propose(owner, "nothing"); out.Pending != nil || len(out.Executed) != 0 {
		t.Errorf("an unresolvable target ran: %+v", out)
	}
	if len(d.calls) != 2 {
		t.Errorf("calls = %v, want [peek wipe]", d.calls)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
