package turn

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/decision"
)

// scanAll feeds pieces to a fresh scanner and returns what it said, piece
// by piece checked to be whole UTF-8, and what it read of "tool".
func scanAll(t *testing.T, pieces ...string) (string, toolField) {
	t.Helper()
	var sc sayScanner
	var b strings.Builder
	for _, p := range pieces {
		said := sc.feed(p)
		if !utf8.ValidString(said) {
			t.Fatalf("pieces %q: a piece of say is not whole UTF-8: %q", pieces, said)
		}
		b.WriteString(said)
	}
	return b.String(), sc.tool
}

func TestSayScannerEverySplit(t *testing.T) {
	cases := []struct {
		name, in, say string
		tool          toolField
	}{
		{"plain", `{"say":"Привет, мир!","tool":null,"args":{}}`, "Привет, мир!", toolNone},
		{"escapes", `{"say":"a\"b\\c\/d\n\te\u00e9\u0416","tool":""}`, "a\"b\\c/d\n\teéЖ", toolNone},
		{"surrogate pair", `{"tool":null,"say":"smile \ud83d\ude00 ok"}`, "smile 😀 ok", toolNone},
		{"lone high surrogate", `{"say":"x\ud83dy","tool":null}`, "x\uFFFDy", toolNone},
		{"lone low surrogate", `{"say":"x\ude00y"}`, "x\uFFFDy", toolUnread},
		{"high then escape", `{"say":"\ud83d\n"}`, "\uFFFD\n", toolUnread},
		{"nested objects first", `{"args":{"say":"no","x":[{"say":"no"}]},"buttons":[],"say":"yes"}`, "yes", toolUnread},
		{"say inside a string", `{"note":"\"say\":\"no\"","say":"yes","tool":"create_task"}`, "yes", toolProposed},
		{"key say as a value", `{"x":"say","say":"yes"}`, "yes", toolUnread},
		{"text before the object", "sure:\n```json\n{\"say\":\"ok\",\"tool\":null}\n```", "ok", toolNone},
		{"tool before say", `{"tool":"send_mail","say":"Sending"}`, "Sending", toolProposed},
		{"second say ignored", `{"say":"one","say":"two"}`, "one", toolUnread},
		{"a second tool names one", `{"tool":null,"say":"x","tool":"delete_task"}`, "x", toolProposed},
		{"a second tool empty", `{"tool":"delete_task","say":"x","tool":""}`, "x", toolProposed},
		{"after the object", `{"say":"a"} {"say":"b"}`, "a", toolUnread},
		{"bare values", `{"done":false,"n":-1.5e3,"x":true,"tool":null,"say":"ok"}`, "ok", toolNone},
		{"a fence line's object skipped", "```{\"tool\":null,\"say\":\"a\"}\n{\"tool\":null,\"say\":\"b\"}", "b", toolNone},
		{"key without a colon", `{"tool"n"say":"x"}`, "", toolBroken},
		{"prose in braces", `{this} {"tool":null,"say":"x"}`, "", toolBroken},
		{"an array", `[{"tool":null,"say":"x"}]`, "", toolBroken},
		{"tool neither null nor a string", `{"tool":nul,"say":"x"}`, "", toolBroken},
		{"an escape JSON lacks", `{"x":"\q","say":"x"}`, "", toolBroken},
		{"a raw line break in a string", "{\"x\":\"a\nb\",\"say\":\"x\"}", "", toolBroken},
		{"a trailing comma", `{"x":1,}`, "", toolBroken},
		{"multibyte raw", `{"say":"ёж 🦔 — ok"}`, "ёж 🦔 — ok", toolUnread},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, tool := scanAll(t, c.in); got != c.say || tool != c.tool {
				t.Fatalf("whole: say %q tool %d, want %q %d", got, tool, c.say, c.tool)
			}
			for i := 0; i <= len(c.in); i++ {
				for j := i; j <= len(c.in); j++ {
					got, tool := scanAll(t, c.in[:i], c.in[i:j], c.in[j:])
					if got != c.say || tool != c.tool {
						t.Fatalf("split at %d,%d: say %q tool %d, want %q %d", i, j, got, tool, c.say, c.tool)
					}
				}
			}
		})
	}
}

// TestSayScannerStreams: the say text comes out while it is written, not
// when its string closes.
func TestSayScannerStreams(t *testing.T) {
	var sc sayScanner
	if got := sc.feed(`{"tool":null,"say":"Hel`); got != "Hel" {
		t.Fatalf("first piece said %q", got)
	}
	if sc.tool != toolNone {
		t.Fatalf("tool read as %d", sc.tool)
	}
	if got := sc.feed(`lo \u00`); got != "lo " {
		t.Fatalf("second piece said %q", got)
	}
	if got := sc.feed(`e9"}`); got != "é" {
		t.Fatalf("third piece said %q", got)
	}
}

func TestFirstSentenceCut(t *testing.T) {
	cases := []struct {
		in   string
		want int
	}{
		{"Hello", -1},
		{"Hello. ", 7},
		{"One. Two", 5},
		{"One! Two? Three", 5},
		{"Wait… more", len("Wait… ")},
		{"line\nnext", 5},
		{"see [the page. here](https://x.example/a?b=1) now", -1},
		{"see [a](b). Next", len("see [a](b). ")},
		{"v1.2 is out", -1},
	}
	for _, c := range cases {
		if got := firstSentenceCut([]byte(c.in)); got != c.want {
			t.Errorf("firstSentenceCut(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

// FuzzSayScannerStreamsOnlyPlainReplies: whatever the model writes and
// however it arrives, the scanner lets say text out (tool read as null or
// "" with text said) only of an answer that the strict parser does not
// read as proposing a tool — the say of a call is never streamed.
func FuzzSayScannerStreamsOnlyPlainReplies(f *testing.F) {
	for _, seed := range []string{
		`{"tool":null,"say":"Готово.","args":{}}`,
		`{"tool":"","say":"ok"}`,
		`{"tool":null,"say":"x","tool":"create_task"}`,
		`{"t\u006fol":null,"say":"x","tool":"create_task"}`,
		`{"Tool":"create_task","tool":null,"say":"x"}`,
		`{"tool":null,"say":"a"} {"tool":"create_task","say":"b"}`,
		"```json\n{\"tool\":null,\"say\":\"ok\"}\n```",
		`{"tool":"null","say":"x"}`,
		`{"tool": nul, "say":"x"}`,
		`{"args":{"tool":null},"say":"x","tool":"create_task"}`,
		`[{"tool":null,"say":"x"}]`,
	} {
		f.Add(seed, uint16(len(seed)/2))
	}
	f.Fuzz(func(t *testing.T, text string, cut uint16) {
		at := int(cut) % (len(text) + 1)
		var sc sayScanner
		streamed := false
		for _, piece := range []string{text[:at], text[at:]} {
			said := sc.feed(piece)
			if !utf8.ValidString(said) {
				t.Fatalf("%q: a piece of say is not whole UTF-8: %q", text, said)
			}
			streamed = streamed || (said != "" && sc.tool == toolNone)
		}
		if !streamed {
			return
		}
		if d, err := decision.Parse(text, []string{"create_task"}); err == nil && d.Tool != "" {
			t.Fatalf("%q: say streamed, but the answer proposes %q", text, d.Tool)
		}
	})
}
