package action

import (
	"context"
	"encoding/json"
	"maps"
	"testing"

	"github.com/arbiterhq/arbiter/tool"
)

func TestDefSpec(t *testing.T) {
	tests := []struct {
		name    string
		def     Def
		confirm tool.Confirm
		want    tool.Spec
	}{
		{"write", Def{Title: "Создать", Description: "Create it.", Risk: tool.RiskWriteSafe, Schema: `{"type":"object"}`},
			tool.ConfirmAlways,
			tool.Spec{
				Name:        "write",
				Title:       "Создать",
				Description: "Create it.",
				InputSchema: json.RawMessage(`{"type":"object"}`),
				Policy:      tool.Policy{Risk: tool.RiskWriteSafe, Confirm: tool.ConfirmAlways, Idempotent: true},
			}},
		{"read", Def{Title: "Список", Risk: tool.RiskRead, Schema: `{}`, MaxResult: 32 << 10},
			tool.ConfirmNever,
			tool.Spec{
				Name:        "read",
				Title:       "Список",
				InputSchema: json.RawMessage(`{}`),
				Policy:      tool.Policy{Risk: tool.RiskRead, Confirm: tool.ConfirmNever, MaxResultBytes: 32 << 10},
			}},
	}
	for _, tt := range tests {
		got, _ := json.Marshal(tt.def.Spec(tt.name, tt.confirm))
		want, _ := json.Marshal(tt.want)
		if string(got) != string(want) {
			t.Errorf("%s: Spec =\n %s\nwant\n %s", tt.name, got, want)
		}
	}
}

func TestToolCall(t *testing.T) {
	spec := tool.Spec{Name: "do_it"}
	var ran []string
	a := New("box", spec, func(_ context.Context, call tool.Call) tool.Result {
		ran = append(ran, call.Caller.UserID)
		return tool.Result{Status: tool.StatusOK, Text: "done"}
	})
	if a.Spec().Name != "do_it" {
		t.Errorf("Spec = %+v", a.Spec())
	}
	tests := []struct {
		caller  tool.Caller
		wantErr string
	}{
		{tool.Caller{TenantID: "t1", UserID: "u1"}, ""},
		{tool.Caller{TenantID: "t1"}, "box do_it: caller has no tenant or user id"},
		{tool.Caller{UserID: "u1"}, "box do_it: caller has no tenant or user id"},
	}
	for _, tt := range tests {
		r, err := a.Call(context.Background(), tool.Call{Caller: tt.caller})
		switch {
		case tt.wantErr == "" && (err != nil || r.Text != "done"):
			t.Errorf("Call(%+v) = %+v, %v; want the run's result", tt.caller, r, err)
		case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
			t.Errorf("Call(%+v) error = %v, want %q", tt.caller, err, tt.wantErr)
		}
	}
	if len(ran) != 1 || ran[0] != "u1" {
		t.Errorf("run called for %v, want only u1", ran)
	}
}

func TestPolicies(t *testing.T) {
	defaults := map[string]tool.Confirm{"create": tool.ConfirmAlways, "list": tool.ConfirmNever}
	tests := []struct {
		name      string
		overrides map[string]tool.Confirm
		want      map[string]tool.Confirm
		wantErr   string
	}{
		{"none", nil, defaults, ""},
		{"override", map[string]tool.Confirm{"create": tool.ConfirmNever},
			map[string]tool.Confirm{"create": tool.ConfirmNever, "list": tool.ConfirmNever}, ""},
		{"unknown action", map[string]tool.Confirm{"drop": tool.ConfirmAlways}, nil,
			`box: confirm override for unknown action "drop"`},
		{"unknown policy", map[string]tool.Confirm{"list": "maybe"}, nil,
			`box: confirm override for list: unknown policy "maybe" (want never or always)`},
	}
	for _, tt := range tests {
		before := maps.Clone(defaults)
		got, err := Policies("box", defaults, tt.overrides)
		if (err == nil) != (tt.wantErr == "") || (err != nil && err.Error() != tt.wantErr) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.wantErr)
		}
		if err == nil && !maps.Equal(got, tt.want) {
			t.Errorf("%s: Policies = %v, want %v", tt.name, got, tt.want)
		}
		if !maps.Equal(defaults, before) {
			t.Errorf("%s: defaults changed to %v", tt.name, defaults)
		}
	}
}
