package server

import (
	"reflect"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/turn"
)

// A configuration's lifetimes reach the engine: the case and the offer as
// its own, the skill and the interview as the router's and the
// interview's slots; what is not set is left to the defaults.
func TestLifetimesReachTheModesSlots(t *testing.T) {
	day := config.Duration(24 * time.Hour)
	got := lifetimes(config.Lifetimes{Case: 60 * day, Skill: 7 * day, Interview: 2 * day, Offer: day / 2})
	want := turn.Lifetimes{Case: 60 * 24 * time.Hour, Offer: 12 * time.Hour,
		Slots: map[string]time.Duration{"skill": 7 * 24 * time.Hour, "interview": 48 * time.Hour}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lifetimes = %+v, want %+v", got, want)
	}
	if got := lifetimes(config.Lifetimes{Interview: day}); got.Slots["interview"] != 24*time.Hour || len(got.Slots) != 1 || got.Case != 0 {
		t.Errorf("one slot's lifetime = %+v, want only it set", got)
	}
	if got := lifetimes(config.Lifetimes{}); got.Slots != nil {
		t.Errorf("no lifetimes = %+v, want none set", got)
	}
}
