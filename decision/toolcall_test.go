package decision

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestFromToolCalls(t *testing.T) {
	tests := []struct {
		name      string
		text      string
		calls     []ToolCall
		wantTool  string
		wantArgs  string
		unknown   bool
		wantError string
	}{
		{"plain text is a reply", "Привет!", nil, "", "{}", false, ""},
		{"one call", "Создаю", []ToolCall{{Name: "create_task", Arguments: json.RawMessage(`{"title":"x"}`)}}, "create_task", `{"title":"x"}`, false, ""},
		{"args as a JSON string", "", []ToolCall{{Name: "create_task", Arguments: json.RawMessage(`"{\"title\":\"x\"}"`)}}, "create_task", `{"title":"x"}`, false, ""},
		{"no args", "", []ToolCall{{Name: "list_my_tasks"}}, "list_my_tasks", "{}", false, ""},
		{"unknown tool never maps", "", []ToolCall{{Name: "drop_database", Arguments: json.RawMessage(`{}`)}}, "drop_database", "{}", true, ""},
		{"two calls", "", []ToolCall{{Name: "create_task"}, {Name: "list_my_tasks"}}, "", "", false, "2 tool calls"},
		{"nothing", "  ", nil, "", "", false, "neither text nor"},
		{"broken args", "", []ToolCall{{Name: "create_task", Arguments: json.RawMessage(`{"title":`)}}, "", "", false, "not valid JSON"},
		{"array args", "", []ToolCall{{Name: "create_task", Arguments: json.RawMessage(`[1]`)}}, "", "", false, "JSON object"},
		{"duplicate args", "", []ToolCall{{Name: "create_task", Arguments: json.RawMessage(`{"title":"a","title":"b"}`)}}, "", "", false, "duplicate key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := FromToolCalls(tc.text, tc.calls, allowed)
			if tc.wantError != "" {
				pe, ok := err.(*ParseError)
				if !ok || !containsProblem(pe, tc.wantError) {
					t.Fatalf("error = %v, want a ParseError with %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Tool != tc.wantTool || d.UnknownTool != tc.unknown || !jsonEqual(d.Args, []byte(tc.wantArgs)) {
				t.Errorf("got tool %q unknown %v args %s", d.Tool, d.UnknownTool, d.Args)
			}
		})
	}
}

func containsProblem(pe *ParseError, s string) bool {
	for _, p := range pe.Problems {
		if strings.Contains(p.Message, s) {
			return true
		}
	}
	return false
}
