package turn_test

import (
	"testing"

	"github.com/arbiterhq/arbiter/turn"
)

// A clipped text keeps whole characters: a cut inside a two-byte letter
// goes back to its start.
func TestClipKeepsWholeCharacters(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"longer text", 6, "longer…"},
		{"привет", 3, "п…"}, // byte 3 is inside «р»
		{"привет", 4, "пр…"},
	} {
		if got := turn.Clip(tt.in, tt.n); got != tt.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
