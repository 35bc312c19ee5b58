package server_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
	"github.com/arbiterhq/arbiter/turn"
)

// echoSettings are the settings section of the echo mode, a program's
// own: assistants.<name>.settings.
type echoSettings struct {
	Prefix string `yaml:"prefix"`
	Times  int    `yaml:"times"`
}

// echoMode answers with the model's words, prefixed and repeated as its
// settings say.
type echoMode struct{}

func (echoMode) Check(a *turn.Assistant, in turn.CheckInput) error {
	if s, _ := a.Settings.(*echoSettings); s == nil || s.Times < 1 {
		return in.Errorf("an echo needs settings with times of at least 1")
	}
	return nil
}

func (echoMode) TakesSettings(s any) bool { _, ok := s.(*echoSettings); return ok }

func (echoMode) Prompts(in turn.PromptInput) turn.Prompts { return turn.Prompts{System: "Echo."} }

func (echoMode) Run(ctx context.Context, t *turn.Turn) {
	resp, err := t.Model().Complete(ctx, llm.Request{Messages: t.Messages(ctx), Operation: "echo"})
	if err != nil {
		t.Answer().ModelFailed(err)
		return
	}
	s := t.Facts().Assistant().Settings.(*echoSettings)
	t.Reply(strings.Repeat(s.Prefix+resp.Text, s.Times))
}

func echoKinds() server.Kinds {
	kinds := server.Builtin()
	kinds.Modes["echo"] = echoMode{}
	kinds.ModeSettings["echo"] = func(sec server.ModeSection) (any, error) {
		var s echoSettings
		return &s, sec.Decode(&s)
	}
	return kinds
}

func echoYAML(modelURL, settings string) string {
	return `models:
  - {name: fake, kind: openai, base_url: "` + modelURL + `", model: m, api_key: sk-x}
assistants:
  desk:
    mode: echo
` + settings + `tenants:
  - id: acme
    assistant: desk
    roles: {user: {tools: []}}
    users:
      - {id: anna, role: user, keys: [{token: k-anna-01, scopes: [read]}]}
`
}

// A mode a program registers reads its own settings section from the
// file, through its kind, and runs with them.
func TestModeSettingsFromTheFile(t *testing.T) {
	model := llmtest.NewServer(llmtest.ServerConfig{})
	t.Cleanup(model.Close)
	e := servertest.New(t, echoYAML(model.URL, "    settings: {prefix: \">> \", times: 2}\n"), echoKinds(), model, func(string) string { return "" })
	model.Enqueue(llmtest.HTTPReply{Content: "hi"})
	status, body := e.Post("k-anna-01", `{"conversation_id":"c1","text":"hello"}`)
	if status != 200 || body["say"] != ">> hi>> hi" {
		t.Fatalf("reply %d %v, want the settings' prefix twice", status, body)
	}
}

// A settings section is refused with its line where no kind reads it (a
// built-in mode, the default one, a registered mode without a reader),
// and where the kind refuses a field; a mode's Check refuses what is
// missing.
func TestModeSettingsErrors(t *testing.T) {
	kinds := echoKinds()
	for _, tt := range []struct{ yaml, want string }{
		{"assistants:\n  desk:\n    mode: loop\n    settings: {times: 2}\n", "line 4: assistants.desk.settings: mode loop takes no settings section"},
		{"assistants:\n  desk:\n    settings: {times: 2}\n", "line 3: assistants.desk.settings: mode single takes no settings section"},
		{echoYAML("http://127.0.0.1:1", "    settings: {prefix: x, loud: true}\n"), "line 6: assistants.desk.settings: unmarshal errors"},
	} {
		if err := server.Check(cfgOf(t, tt.yaml), kinds); err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(tt.yaml, "loud") && !strings.Contains(err.Error(), "field loud not found") {
			t.Errorf("Check = %v, want %q", err, tt.want)
		}
	}
	noReader := server.Builtin()
	noReader.Modes["echo"] = echoMode{}
	if err := server.Check(cfgOf(t, echoYAML("http://127.0.0.1:1", "    settings: {times: 2}\n")), noReader); err == nil || !strings.Contains(err.Error(), "mode echo takes no settings section") {
		t.Errorf("a registered mode without a reader: Check = %v", err)
	}
	store := "store: {path: " + filepath.Join(t.TempDir(), "arbiter.db") + "}\n"
	_, err := server.Build(cfgOf(t, store+echoYAML("http://127.0.0.1:1", "    settings: {prefix: x}\n")), kinds, server.Options{})
	if err == nil || !strings.Contains(err.Error(), "assistant desk: an echo needs settings with times of at least 1") {
		t.Errorf("Build = %v, want the mode's Check", err)
	}
}
