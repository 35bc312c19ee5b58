package calendar

import "testing"

func TestIsSelf(t *testing.T) {
	tests := []struct {
		q    string
		want bool
	}{
		{"me", true},
		{"Мне", true},
		{"I", true}, // the calendar also takes a bare "I"
		{" i ", true},
		{"Ivan", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := isSelf(tt.q); got != tt.want {
			t.Errorf("isSelf(%q) = %v, want %v", tt.q, got, tt.want)
		}
	}
}
