package gate

import (
	"testing"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/tool"
)

func TestMatches(t *testing.T) {
	for _, tt := range []struct {
		patterns []string
		name     string
		want     bool
	}{
		{[]string{"create_task"}, "create_task", true},
		{[]string{"*"}, "create_task", true},
		{[]string{"create_*"}, "create_task", true},
		{[]string{"delete_task", "list_*"}, "create_task", false},
		{[]string{"[create"}, "create_task", false}, // not a pattern: matches nothing
		{nil, "create_task", false},
	} {
		if got := Matches(tt.patterns, tt.name); got != tt.want {
			t.Errorf("Matches(%q, %s) = %v, want %v", tt.patterns, tt.name, got, tt.want)
		}
	}
}

// A tool is permitted when the role shows it, the integration it requires
// is connected and the scopes allow its risk — each condition alone denies.
func TestPermittedNeedsRoleIntegrationAndScope(t *testing.T) {
	roles := map[string][]string{"member": {"calendar_*"}}
	spec := tool.Spec{Name: "calendar_read", Policy: tool.Policy{Risk: tool.RiskRead, Requires: "google"}}
	id := chat.Identity{TenantID: "t", Role: "member", Scopes: []chat.Scope{chat.Scope(tool.RiskRead)}, Connected: []string{"google"}}
	if !Permitted(id, roles[id.Role], spec) {
		t.Errorf("role, integration and scope all given: not permitted")
	}
	for name, change := range map[string]func(*chat.Identity, *tool.Spec){
		"an unknown role":          func(id *chat.Identity, _ *tool.Spec) { id.Role = "guest" },
		"a tool the role hides":    func(_ *chat.Identity, sp *tool.Spec) { sp.Name = "mail_read" },
		"no integration connected": func(id *chat.Identity, _ *tool.Spec) { id.Connected = nil },
		"another integration":      func(id *chat.Identity, _ *tool.Spec) { id.Connected = []string{"slack"} },
		"a risk beyond the scopes": func(_ *chat.Identity, sp *tool.Spec) { sp.Risk = tool.RiskWriteSafe },
		"no scopes":                func(id *chat.Identity, _ *tool.Spec) { id.Scopes = nil },
	} {
		id, spec := id, spec
		change(&id, &spec)
		if Permitted(id, roles[id.Role], spec) {
			t.Errorf("%s: permitted", name)
		}
	}
	spec.Requires = ""
	if id.Connected = nil; !Permitted(id, roles[id.Role], spec) {
		t.Errorf("a tool that requires no integration, none connected: not permitted")
	}
}

func TestPermittedByRoleAndScope(t *testing.T) {
	roles := map[string][]string{"owner": {"*"}, "viewer": {"list_*"}}
	read := tool.Spec{Name: "list_my_tasks", Policy: tool.Policy{Risk: tool.RiskRead}}
	write := tool.Spec{Name: "create_task", Policy: tool.Policy{Risk: tool.RiskWriteSafe}}
	full := tool.Spec{Name: "pay", Policy: tool.Policy{Risk: tool.RiskWriteFull}}
	id := func(role string, scopes ...chat.Scope) chat.Identity {
		return chat.Identity{Role: role, Scopes: scopes}
	}
	tests := []struct {
		name string
		id   chat.Identity
		spec tool.Spec
		want bool
	}{
		{"owner read", id("owner", "read"), read, true},
		{"owner write without scope", id("owner", "read"), write, false},
		{"owner write", id("owner", "read", "write:safe"), write, true},
		{"full needs write:full", id("owner", "read", "write:safe"), full, false},
		{"full", id("owner", "write:full"), full, true},
		{"viewer glob", id("viewer", "read", "write:safe"), read, true},
		{"viewer outside role", id("viewer", "read", "write:safe"), write, false},
		{"unknown role", id("admin", "read"), read, false},
	}
	for _, tc := range tests {
		if got := Permitted(tc.id, roles[tc.id.Role], tc.spec); got != tc.want {
			t.Errorf("%s: Permitted = %v, want %v", tc.name, got, tc.want)
		}
	}
}
