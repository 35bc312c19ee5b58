package textclean

import "testing"

func TestTextAndLine(t *testing.T) {
	for _, tt := range []struct{ in, text, line string }{
		{"  plain  ", "plain", "plain"},
		{"a\x00b\x1bc", "abc", "abc"},
		{"one\n\ttwo  three\r\n", "one\n\ttwo  three", "one two three"},
		{"bad \xff byte", "bad  byte", "bad byte"},
		{"\u0085 next line \u200b", "next line \u200b", "next line \u200b"},
	} {
		if got := Text(tt.in); got != tt.text {
			t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.text)
		}
		if got := Line(tt.in); got != tt.line {
			t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.line)
		}
	}
}
