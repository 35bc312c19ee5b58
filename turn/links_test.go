package turn

import (
	"testing"

	"github.com/arbiterhq/arbiter/chat"
)

func TestInertLinks(t *testing.T) {
	e := &Engine{cfg: Config{LinkHosts: []string{"board.example", "www.google.com"}}}
	tests := []struct{ user, in, want string }{
		{"", "see https://evil.example/log?d=secret.", "see https://evil.example/log (link parameters removed)."},
		{"", "(https://evil.example/a#secret)", "(https://evil.example/a (link parameters removed))"},
		{"", "https://user:secret@evil.example/x", "https://evil.example/x (link parameters removed)"},
		{"", "https://evil.example/page", "https://evil.example/page"},
		{"", "https://BOARD.example/c/1?tab=history", "https://BOARD.example/c/1?tab=history"},
		{"", "https://www.google.com/calendar/event?eid=abc", "https://www.google.com/calendar/event?eid=abc"},
		{"", "![chart](https://evil.example/c.png)", "chart [image from evil.example removed]"},
		{"", `![](<https://evil.example/c.png?d=1> "t")`, "[image from evil.example removed]"},
		{"", "![logo](https://board.example/logo.png?v=2)", "![logo](https://board.example/logo.png?v=2)"},
		{"read https://news.example/a?id=7", "you sent https://news.example/a?id=7", "you sent https://news.example/a?id=7"},
		{"", "no links at all", "no links at all"},
	}
	for _, tt := range tests {
		s := &state{caller: caller{lang: "en"}, arrival: arrival{in: chat.Inbound{Text: tt.user}}}
		got, _ := e.inertLinks(s, tt.in)
		if got != tt.want {
			t.Errorf("inertLinks(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}
