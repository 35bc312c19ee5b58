package builtin_test

import (
	"slices"
	"testing"

	"github.com/arbiterhq/arbiter/turn/mode/builtin"
)

// The registry holds the engine's default mode, and each call makes a
// map of its own that a program may extend without touching another's.
func TestModesHoldTheDefault(t *testing.T) {
	modes := builtin.Modes()
	if modes[builtin.DefaultMode] == nil {
		t.Fatalf("modes %v lack the default %q", modes.Names(), builtin.DefaultMode)
	}
	if want := []string{"interview", "loop", "router", "single"}; !slices.Equal(modes.Names(), want) {
		t.Errorf("modes %v, want %v", modes.Names(), want)
	}
	modes["tally"] = modes[builtin.DefaultMode]
	if again := builtin.Modes(); again["tally"] != nil {
		t.Errorf("a caller's row is in the next registry: %v", again.Names())
	}
}
