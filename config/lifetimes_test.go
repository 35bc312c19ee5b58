package config

import (
	"testing"

	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/mode/interview"
)

// The checks compare what the engine will apply: their defaults are the
// engine's and the interview mode's.
func TestLifetimeDefaultsAreTheEngines(t *testing.T) {
	if defaultCaseLifetime != turn.DefaultCaseLifetime || defaultMemoryTTL != turn.DefaultMemoryTTL ||
		defaultInterviewTTL != interview.DefaultPause {
		t.Errorf("config's defaults (%v, %v, %v) differ from the engine's (%v, %v, %v)",
			defaultCaseLifetime, defaultMemoryTTL, defaultInterviewTTL,
			turn.DefaultCaseLifetime, turn.DefaultMemoryTTL, interview.DefaultPause)
	}
}
