package turn_test

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/turntest"
)

// toolsModel is a scripted model that decides by native tool calling.
type toolsModel struct{ *llmtest.Scripted }

func (toolsModel) Protocol() llm.Protocol { return llm.ProtocolTools }

// A single-decision assistant on a model that calls tools natively is not
// told the JSON contract or the tool schemas again: they travel as the
// tool definitions. A JSON model still gets both.
func TestSinglePromptFollowsTheProtocol(t *testing.T) {
	b := newLoopBench(t, turn.Assistant{})
	model := toolsModel{llmtest.NewScripted(llmtest.ToolCalls("Hello."))}
	b.eng = b.engine(turn.Config{
		Tenants: map[string]turn.Tenant{"t": {ID: "t", Language: "en", Roles: map[string]turn.Role{"desk": {Tools: []string{"*"}}}}}}, turntest.WithModel(model))
	if out, _ := b.send("hi"); out.Say != "Hello." {
		t.Fatalf("reply %q", out.Say)
	}
	tools := model.Requests()[0]
	sys := tools.Messages[0].Content
	if strings.Contains(sys, `"say"`) || strings.Contains(sys, "args schema") || !strings.Contains(sys, "Call one tool") || len(tools.Tools) == 0 {
		t.Errorf("tools-protocol prompt:\n%s", sys)
	}

	json := llmtest.NewScripted(turntest.Say("Hello."))
	b.eng = b.engine(turn.Config{
		Tenants: map[string]turn.Tenant{"t": {ID: "t", Language: "en", Roles: map[string]turn.Role{"desk": {Tools: []string{"*"}}}}}}, turntest.WithModel(json))
	b.send("hi again")
	jsonSys := json.Requests()[0].Messages[0].Content
	if !strings.Contains(jsonSys, `"say"`) || !strings.Contains(jsonSys, "args schema") {
		t.Errorf("JSON prompt lost its contract:\n%s", jsonSys)
	}
	t.Logf("system prompt: %d bytes for native tool calling, %d with the JSON contract and schemas", len(sys), len(jsonSys))
}

// The prompt names the assistant as its tenant does, "the assistant" when
// the tenant names none, and asks for the conversation's language.
func TestPromptNamesTheAssistantAndItsLanguage(t *testing.T) {
	b := newLoopBench(t, turn.Assistant{})
	for _, c := range []struct{ name, lang, want, language string }{
		{"Ada", "en", "You are Ada,", "in English"},
		{"", "en", "You are the assistant,", "in English"},
		{"Ада", "ru", "You are Ада,", "in Russian"},
	} {
		model := llmtest.NewScripted(turntest.Say("Hello."))
		b.eng = b.engine(turn.Config{
			Tenants: map[string]turn.Tenant{"t": {ID: "t", Language: c.lang, AssistantName: c.name, Roles: map[string]turn.Role{"desk": {Tools: []string{"*"}}}}}},
			turntest.WithModel(model))
		b.send("hi " + c.lang + c.name)
		sys := model.Requests()[0].Messages[0].Content
		if !strings.Contains(sys, c.want) || !strings.Contains(sys, c.language) {
			t.Errorf("tenant named %q in %s: the prompt says neither %q nor %q:\n%.300s", c.name, c.lang, c.want, c.language, sys)
		}
	}
}
