package server_test

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/server"
)

// TestCheckNamesUnknownModes: an assistant's mode is a kind like the
// others: one the table lacks is refused with the line of its name,
// listing the modes there are.
func TestCheckNamesUnknownModes(t *testing.T) {
	const yaml = "assistants:\n  desk:\n    mode: loop\n"
	cfg, err := config.Parse(strings.NewReader(yaml), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	kinds := server.Builtin()
	if err := server.Check(cfg, kinds); err != nil {
		t.Errorf("Check with the built-in modes: %v", err)
	}
	if err := server.Check(cfgOf(t, "assistants:\n  desk:\n    mode: swarm\n"), kinds); err == nil || !strings.Contains(err.Error(), `line 3: assistants.desk.mode: unknown mode "swarm"`) {
		t.Errorf("Check of a mode no kind registers = %v", err)
	}
	// A mode the program registers is one the configuration may name:
	// the configuration itself knows no list of modes.
	kinds.Modes["swarm"] = kinds.Modes["single"]
	if err := server.Check(cfgOf(t, "assistants:\n  desk:\n    mode: swarm\n"), kinds); err != nil {
		t.Errorf("Check of a registered mode: %v", err)
	}
	delete(kinds.Modes, "swarm")
	delete(kinds.Modes, "loop")
	err = server.Check(cfg, kinds)
	if want := `line 3: assistants.desk.mode: unknown mode "loop" (one of: interview, router, single)`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Check = %v, want %q", err, want)
	}
}

func cfgOf(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(strings.NewReader(yaml), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
