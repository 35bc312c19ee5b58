package turn

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/tool"
)

// Tests of the catalog found missing by mutation testing (.ci/mutation):
// who is shown which tool, and what the prompts built from a catalog say.

// specTool is a tool that only has a spec: catalogs never call it.
type specTool struct{ spec tool.Spec }

func (t specTool) Spec() tool.Spec { return t.spec }
func (t specTool) Call(context.Context, tool.Call) (tool.Result, error) {
	return tool.Result{}, nil
}

// Callers who differ only in the integrations they connected get catalogs
// of their own, whichever asks first.
func TestCatalogPerConnectedIntegrations(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{}}`)
	reg, err := tool.NewRegistry(
		specTool{tool.Spec{Name: "calendar_read", Description: "events", InputSchema: schema, Policy: tool.Policy{Risk: tool.RiskRead, Requires: "google"}}},
		specTool{tool.Spec{Name: "chat_read", Description: "chats", InputSchema: schema, Policy: tool.Policy{Risk: tool.RiskRead, Requires: "slack"}}},
		specTool{tool.Spec{Name: "notes_read", Description: "notes", InputSchema: schema, Policy: tool.Policy{Risk: tool.RiskRead}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	tenants := map[string]Tenant{"t": {ID: "t", Language: "en", Roles: map[string]Role{"member": {Tools: []string{"*"}}}}}
	caller := func(connected ...string) chat.Identity {
		return chat.Identity{TenantID: "t", Role: "member", Scopes: []chat.Scope{chat.Scope(tool.RiskRead)}, Connected: connected}
	}
	want := map[string][]string{"": {"notes_read"}, "google": {"calendar_read", "notes_read"}, "slack": {"chat_read", "notes_read"}}
	for _, order := range [][]chat.Identity{{caller(), caller("google"), caller("slack")}, {caller("slack"), caller("google"), caller()}} {
		e := &Engine{cfg: Config{Tools: reg, Tenants: tenants, Modes: Modes{"only": slotKeeper{}}, DefaultMode: "only"}}
		for _, id := range order {
			var got []string
			for _, sp := range e.Catalog(id) {
				got = append(got, sp.Name)
			}
			if w := want[strings.Join(id.Connected, ",")]; !slices.Equal(got, w) {
				t.Errorf("connected %q: catalog %q, want %q", id.Connected, got, w)
			}
		}
	}
}

func TestSystemPromptParts(t *testing.T) {
	schema := json.RawMessage(`{ "type": "object", "properties": { "title": { "type": "string", "pattern": "<b>" } } }`)
	write := &tool.Entry{Spec: tool.Spec{Name: "create_task", Description: "creates a task", InputSchema: schema, Policy: tool.Policy{Risk: tool.RiskWriteSafe}}}
	read := &tool.Entry{Spec: tool.Spec{Name: "list_tasks", Description: "lists tasks", InputSchema: json.RawMessage(`not json`), Policy: tool.Policy{Risk: tool.RiskRead}}}
	tenant := Tenant{ID: "acme"}

	p := systemPrompt(tenant, "en", "  ", []*tool.Entry{write, read}, false)
	for _, want := range []string{
		"You are the assistant, a work assistant of team \"acme\"",
		"in English.",
		"- args: " + argsRuleQuiet,
		"- create_task: creates a task (changes data)\n  args schema: " + `{"properties":{"title":{"pattern":"<b>","type":"string"}},"type":"object"}` + "\n",
		"- list_tasks: lists tasks\n  args schema: not json\n",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt without live context lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, liveRule) || strings.Contains(p, "\n\n\n") {
		t.Errorf("prompt without live context or own instructions holds the live rule or an empty block:\n%s", p)
	}

	tenant.AssistantName = "Ada"
	p = systemPrompt(tenant, "ru", "Be brief.", nil, true)
	for _, want := range []string{"You are Ada,", "in Russian.", "\n\nBe brief.\n\n", "- args: " + argsRule, liveRule,
		"Tools: none are available to this user; always set tool to null.\n"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt with live context lacks %q:\n%s", want, p)
		}
	}
}

func TestToolsPromptParts(t *testing.T) {
	tenant := Tenant{ID: "acme"}
	entry := &tool.Entry{Spec: tool.Spec{Name: "list_tasks", Policy: tool.Policy{Risk: tool.RiskRead}}}
	const (
		none     = "- No tools are available to this user: answer in text only.\n"
		callOne  = "- Call one tool when an action or a lookup is needed"
		liveDate = "- Resolve relative dates with the local time of <live_context>"
		liveFact = "- <live_context> is the server's facts"
	)
	for _, tt := range []struct {
		entries   []*tool.Entry
		live      bool
		has, lack []string
	}{
		{nil, false, []string{none}, []string{callOne, liveDate, liveFact}},
		{nil, true, []string{none, liveFact}, []string{callOne, liveDate}},
		{[]*tool.Entry{entry}, false, []string{callOne}, []string{none, liveDate, liveFact}},
		{[]*tool.Entry{entry}, true, []string{callOne, liveDate, liveFact}, []string{none}},
	} {
		p := toolsPrompt(tenant, "en", "", tt.entries, tt.live)
		for _, want := range tt.has {
			if !strings.Contains(p, want) {
				t.Errorf("%d tools, live %v: lacks %q", len(tt.entries), tt.live, want)
			}
		}
		for _, unwanted := range tt.lack {
			if strings.Contains(p, unwanted) {
				t.Errorf("%d tools, live %v: holds %q", len(tt.entries), tt.live, unwanted)
			}
		}
	}
}

// Only a write that a person confirms or approves waits for people.
func TestWaitsForPeople(t *testing.T) {
	entry := func(risk tool.Risk, confirm tool.Confirm, approve ...string) []*tool.Entry {
		return []*tool.Entry{{Spec: tool.Spec{Name: "x", Policy: tool.Policy{Risk: risk, Confirm: confirm, Approve: approve}}}}
	}
	for _, tt := range []struct {
		name    string
		entries []*tool.Entry
		want    bool
	}{
		{"none", nil, false},
		{"a read confirmed", entry(tool.RiskRead, tool.ConfirmAlways), false},
		{"a write never confirmed", entry(tool.RiskWriteSafe, tool.ConfirmNever), false},
		{"a write confirmed", entry(tool.RiskWriteSafe, tool.ConfirmAlways), true},
		{"a write approved", entry(tool.RiskWriteFull, tool.ConfirmNever, "manager"), true},
	} {
		if got := waitsForPeople(tt.entries); got != tt.want {
			t.Errorf("%s: waitsForPeople = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCarriesLiveContext(t *testing.T) {
	quiet, sourced := &Engine{}, &Engine{cfg: Config{Context: make([]tool.ContextSource, 1)}}
	for _, tt := range []struct {
		e      *Engine
		policy LiveContextPolicy
		want   bool
	}{
		{quiet, "", false}, {sourced, "", true},
		{sourced, LiveContextOff, false}, {quiet, LiveContextAlways, true},
	} {
		if got := tt.e.carriesLiveContext(Assistant{LiveContext: tt.policy}); got != tt.want {
			t.Errorf("%d sources, policy %q: %v, want %v", len(tt.e.cfg.Context), tt.policy, got, tt.want)
		}
	}
}

// The tenant's role of the caller is the one whose tools count: another
// role's grants, or a role the tenant lacks, show nothing.
func TestPermittedByTheCallersRole(t *testing.T) {
	tenant := Tenant{ID: "t", Roles: map[string]Role{"member": {Tools: []string{"list_*"}}, "owner": {Tools: []string{"*"}}}}
	spec := tool.Spec{Name: "create_task", Policy: tool.Policy{Risk: tool.RiskWriteSafe}}
	scopes := []chat.Scope{chat.Scope(tool.RiskWriteSafe)}
	for role, want := range map[string]bool{"owner": true, "member": false, "guest": false} {
		if got := permitted(chat.Identity{TenantID: "t", Role: role, Scopes: scopes}, tenant, spec); got != want {
			t.Errorf("role %s: permitted = %v, want %v", role, got, want)
		}
	}
}
