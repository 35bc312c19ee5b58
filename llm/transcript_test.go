package llm_test

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/arbiterhq/arbiter/llm"
)

// A provider that uses a call ID again later in a conversation, or twice
// in one answer, or not at all, still gets a transcript CheckMessages
// accepts, whose new IDs keep the form of the provider's.
func TestUniqueCallIDs(t *testing.T) {
	args := json.RawMessage(`{}`)
	call := func(id string) llm.ToolCall { return llm.ToolCall{ID: id, Name: "search", Arguments: args} }
	earlier := []llm.Message{
		{Role: llm.RoleUser, Content: "find flights"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call("call_Ab3dE"), call("Xy7kQ2mN9")}},
		{Role: llm.RoleTool, ToolCallID: "call_Ab3dE", Content: "[]"},
		{Role: llm.RoleTool, ToolCallID: "Xy7kQ2mN9", Content: "[]"},
	}
	tests := []struct {
		name  string
		calls []llm.ToolCall
		want  []string
	}{
		{"new ids kept", []llm.ToolCall{call("call_Zz9"), call("toolu_01")}, []string{"call_Zz9", "toolu_01"}},
		{"reused from earlier", []llm.ToolCall{call("call_Ab3dE"), call("Xy7kQ2mN9")}, []string{"call_Ab3d1", "Xy7kQ2mN1"}},
		{"twice in one answer", []llm.ToolCall{call("call_9"), call("call_9")}, []string{"call_9", "call_1"}},
		{"a new id never takes a later call's", []llm.ToolCall{call("call_Ab3dE"), call("call_Ab3d1")}, []string{"call_Ab3d2", "call_Ab3d1"}},
		{"none given", []llm.ToolCall{call(""), call("")}, []string{"call_1", "call_2"}},
		{"short", []llm.ToolCall{call("1"), call("1")}, []string{"1", "11"}},
	}
	form := regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := make([]string, len(tc.calls))
			for i, c := range tc.calls {
				orig[i] = c.ID
			}
			got := llm.UniqueCallIDs(earlier, tc.calls)
			for i, c := range got {
				if c.ID != tc.want[i] || !form.MatchString(c.ID) {
					t.Errorf("call %d: id %q, want %q", i, c.ID, tc.want[i])
				}
				if tc.calls[i].ID != orig[i] {
					t.Errorf("call %d: the answer's own id changed to %q", i, tc.calls[i].ID)
				}
			}
			msgs := append(append([]llm.Message(nil), earlier...), llm.Message{Role: llm.RoleAssistant, ToolCalls: got})
			for _, c := range got {
				msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Content: "ok"})
			}
			if err := llm.CheckMessages(msgs); err != nil {
				t.Errorf("transcript refused: %v", err)
			}
		})
	}
}

// A tool call's arguments in a transcript are one JSON object, whatever
// surrounds it: anything else is refused before a provider sees it.
func TestCheckMessagesArgumentsAreOneObject(t *testing.T) {
	for args, ok := range map[string]bool{
		`{"a":1}`: true, " {\"a\":[1,{}]}\n": true, `{}`: true,
		`null`: false, `[1]`: false, `"x"`: false, `1`: false, `{"a":`: false,
		`{"a":1} {"b":2}`: false, `{"a":1}]`: false, `{"a":1,}`: false,
	} {
		msgs := []llm.Message{{Role: llm.RoleUser, Content: "go"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "f", Arguments: json.RawMessage(args)}}},
			{Role: llm.RoleTool, ToolCallID: "c1", Content: "{}"}}
		if err := llm.CheckMessages(msgs); (err == nil) != ok {
			t.Errorf("arguments %q: CheckMessages = %v, want accepted %v", args, err, ok)
		}
	}
}
