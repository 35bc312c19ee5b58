package server_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/tool"
)

// TestCheckNamesUnknownKinds: a kind the tables lack is refused with the
// line of its name, listing the kinds there are.
func TestCheckNamesUnknownKinds(t *testing.T) {
	kinds := server.Builtin()
	for _, tc := range []struct{ name, yaml, want string }{
		{"bad store", "store: {kind: etcd}\n", `line 1: store.kind: unknown store kind "etcd" (one of: sqlite)`},
		{"bad journal", "journal: {kind: mysql}\n", `line 1: journal.kind: unknown journal kind "mysql"`},
		{"bad model kind", "models:\n  - name: p\n    kind: magic\n    model: m\n", `line 3: models[0].kind: unknown model kind "magic"`},
		{"a kind of another module", "models:\n  - {name: a, kind: anthropic, model: m}\n", `line 2: models[0].kind: unknown model kind "anthropic"`},
		{"unknown tool", "tools:\n  taskboard: {}\n  shout: {loud: true}\n", `line 3: tools.shout: unknown tool kind "shout"`},
		{"unknown channel", "channels:\n  slack: {}\n", `line 2: channels.slack: unknown channel kind "slack"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse(strings.NewReader(tc.yaml), func(string) string { return "" })
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			err = server.Check(cfg, kinds)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check = %v, want %q", err, tc.want)
			}
		})
	}
	// With the kind in the table, the section is accepted.
	kinds.Tools["shout"] = func(_ context.Context, _ *server.Env, sec server.Section) (server.ToolSet, error) {
		return server.ToolSet{}, nil
	}
	cfg, err := config.Parse(strings.NewReader("tools:\n  shout: {loud: true}\n"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Check(cfg, kinds); err != nil {
		t.Errorf("Check with the kind: %v", err)
	}
}

// TestSectionDecodeIsStrict: a kind's own section refuses fields it lacks.
func TestSectionDecodeIsStrict(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader("tools:\n  shout:\n    loud: true\n    volume: 11\n"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	node := cfg.Tools.Extra["shout"]
	var v struct {
		Loud bool `yaml:"loud"`
	}
	err = server.Section{Kind: "shout", Node: &node}.Decode(&v)
	if err == nil || !strings.Contains(err.Error(), "volume") || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("Decode = %v, want the unknown field volume and the section's line", err)
	}
}

// TestBuildRefusesACommandForAToolNoKindBuilt: a tool kind of a program
// declares no names (Kinds.ToolNames), so Check cannot know its tools;
// Build, which built them, refuses a command or a preflight read naming a
// tool that does not exist, with its line, instead of starting without it.
func TestBuildRefusesACommandForAToolNoKindBuilt(t *testing.T) {
	kinds := server.Builtin()
	kinds.Tools["shout"] = func(_ context.Context, _ *server.Env, _ server.Section) (server.ToolSet, error) {
		shout, err := tool.Func(tool.Spec{Name: "shout_out", Description: "Shouts.", Policy: tool.Policy{Risk: tool.RiskRead}},
			func(_ context.Context, _ tool.Call, in struct{}) (string, error) { return "HEY", nil })
		return server.ToolSet{Tools: []tool.Tool{shout}}, err
	}
	build := func(command string) error {
		yaml := "commands:\n  /x: {tool: " + command + "}\ntenants:\n  - id: a\n    roles: {owner: {tools: ['*']}}\n    users: [{id: u, role: owner, keys: [{token: abcdefgh, scopes: [read]}]}]\ntools:\n  shout: {}\n"
		cfg, err := config.Parse(strings.NewReader(yaml), func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		if err := server.Check(cfg, kinds); err != nil {
			t.Fatalf("Check knows no names of shout, so it has nothing to say: %v", err)
		}
		cfg.Store.Path = filepath.Join(t.TempDir(), "arbiter.db")
		s, err := server.Build(cfg, kinds, server.Options{})
		if err == nil {
			s.Close()
		}
		return err
	}
	err := build("shout_ot")
	if want := `line 2: commands./x.tool: no configured tool is named "shout_ot" (did you mean "shout_out"?)`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Build = %v, want %q", err, want)
	}
	if err := build("shout_out"); err != nil {
		t.Errorf("Build with the tool's own name: %v", err)
	}
}

// TestBuiltinToolNamesAreTheBuiltTools: every name the built-in kinds
// declare for Check is a tool Build makes — a command naming each builds.
func TestBuiltinToolNamesAreTheBuiltTools(t *testing.T) {
	kinds := server.Builtin()
	yaml := "tenants:\n  - id: a\n    roles: {owner: {tools: ['*']}}\n    users: [{id: u, role: owner, keys: [{token: abcdefgh, scopes: [read]}]}]\n" +
		"tools:\n  taskboard: {}\n  calendar: {}\n  knowledge: {}\n  content_ideas: {platforms: [blog]}\n" +
		"  http: [{name: ping, description: Pings., url: 'http://127.0.0.1:1/', risk: read, input_schema: {type: object}}]\n"
	cfg, err := config.Parse(strings.NewReader(yaml), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Commands = map[string]config.Command{}
	n := 0
	for _, kind := range []string{"taskboard", "calendar", "knowledge", "content_ideas", "http"} {
		for _, name := range kinds.ToolNames[kind](cfg, server.Section{Kind: kind}) {
			cfg.Commands["/"+name] = config.Command{Tool: name}
			n++
		}
	}
	if n < 12 {
		t.Fatalf("only %d names declared", n)
	}
	if err := server.Check(cfg, kinds); err != nil {
		t.Fatal(err)
	}
	cfg.Store.Path = filepath.Join(t.TempDir(), "arbiter.db")
	s, err := server.Build(cfg, kinds, server.Options{})
	if err != nil {
		t.Fatalf("a declared name is not a built tool: %v", err)
	}
	s.Close()
}

// A write's basis names a read: check-config names a basis tool no
// section offers, with its line and the name meant.
func TestCheckNamesAnUnknownBasis(t *testing.T) {
	yaml := `tenants:
  - id: t
    roles: {staff: {tools: ["*"]}}
tools:
  taskboard: {disabled: true}
  http:
    - {name: get_payment, description: d, url: "http://p/s", risk: read, input_schema: {type: object}}
    - name: refund
      description: d
      url: http://p/r
      risk: "write:full"
      approve: [staff]
      basis: [get_paymnet]
      input_schema: {type: object}
`
	cfg, err := config.Parse(strings.NewReader(yaml), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	err = server.Check(cfg, server.Builtin())
	if err == nil || !strings.Contains(err.Error(), "tools.http[1].basis[0]") || !strings.Contains(err.Error(), "get_payment") {
		t.Errorf("Check = %v, want the unknown basis tool named with the one meant", err)
	}
}
