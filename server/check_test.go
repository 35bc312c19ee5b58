package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/server"
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
