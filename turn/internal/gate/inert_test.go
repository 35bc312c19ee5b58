package gate

import "testing"

// A value shown to the user for a yes keeps its letters, marks and
// spaces, and shows as escapes whatever could end the confirmation early
// or make it read as other text: line breaks, controls, bidirectional
// overrides and isolates, invisible format characters.
func TestInert(t *testing.T) {
	for in, want := range map[string]string{
		"Buy milk, 2 L — «срочно» ✅":  "Buy milk, 2 L — «срочно» ✅",
		"":                            "",
		"a\nb\rc\td":                  `a\nb\rc\td`,
		"pay\u202Eevil\u202C":         `pay\u202Eevil\u202C`,
		"x\u2066y\u2069":              `x\u2066y\u2069`,
		"zero\u200Bwidth\uFEFF":       `zero\u200Bwidth\uFEFF`,
		"bell\x07 and nul\x00":        `bell\u0007 and nul\u0000`,
		"line\u2028para\u2029":        `line\u2028para\u2029`,
		"Confirm: yes\n• Amount: 1 €": `Confirm: yes\n• Amount: 1 €`,
	} {
		if got := Inert(in); got != want {
			t.Errorf("Inert(%q) = %q, want %q", in, got, want)
		}
	}
}
