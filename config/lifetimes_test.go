package config

import (
	"testing"

	"github.com/arbiterhq/arbiter/turn"
)

// The checks compare what the engine will apply: their defaults are the
// engine's.
func TestLifetimeDefaultsAreTheEngines(t *testing.T) {
	if defaultCaseLifetime != turn.DefaultCaseLifetime || defaultMemoryTTL != turn.DefaultMemoryTTL ||
		defaultInterviewTTL != turn.DefaultInterviewPause {
		t.Errorf("config's defaults (%v, %v, %v) differ from the engine's (%v, %v, %v)",
			defaultCaseLifetime, defaultMemoryTTL, defaultInterviewTTL,
			turn.DefaultCaseLifetime, turn.DefaultMemoryTTL, turn.DefaultInterviewPause)
	}
}
