package turn

import "testing"

func TestSensitiveArg(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   bool
	}{
		{"url", []string{"page"}, true},
		{"recipientEmail", nil, true},
		{"to", []string{"x"}, true},
		{"token", []string{"abc"}, false}, // "to" only as a whole name
		{"query", []string{"https://attacker.example/?d=1"}, true},
		{"note", []string{"mark@attacker.example"}, true},
		{"note", []string{"DE89 3704 0044 0532 0130 00"}, true},
		{"note", []string{"+49 30 1234567"}, true},
		{"title", []string{"Buy milk"}, false},
		{"note", []string{"meet at 10:00, room 4"}, false},
	}
	for _, tt := range tests {
		if got := sensitiveArg(tt.name, tt.values); got != tt.want {
			t.Errorf("sensitiveArg(%q, %q) = %v, want %v", tt.name, tt.values, got, tt.want)
		}
	}
}
