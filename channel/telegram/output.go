package telegram

import (
	"strings"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/chat"
)

// maxMessageLen is sendMessage's limit: 4096 characters after entity
// parsing. It is counted here in UTF-16 code units, which is never less
// than the characters Telegram counts.
const maxMessageLen = 4096

// maxCallbackData is the Bot API limit of callback_data, in bytes.
const maxCallbackData = 64

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// escapeHTML escapes text for parse_mode HTML. Escaped characters count as
// one character each after parsing, so escaping never changes a length.
func escapeHTML(s string) string { return htmlEscaper.Replace(s) }

// utf16Len counts UTF-16 code units.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// prefixWithin returns the byte length of the longest prefix of s of at
// most limit UTF-16 code units.
func prefixWithin(s string, limit int) int {
	n := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if n+w > limit {
			return i
		}
		n += w
	}
	return len(s)
}

// splitMessage cuts plain text into parts of at most limit UTF-16 units:
// at the last paragraph break of a part, else its last line break (either
// only if it keeps at least a quarter of the part), else its last space,
// else anywhere on a character boundary. A cut at a space never falls
// inside a link. Empty parts are dropped.
func splitMessage(s string, limit int) []string {
	s = strings.TrimRight(s, " \t\r\n")
	var parts []string
	for utf16Len(s) > limit {
		lim := prefixWithin(s, limit)
		head := s[:lim]
		cut := -1
		for _, sep := range []string{"\n\n", "\n"} {
			if i := strings.LastIndex(head, sep); i >= lim/4 && i > 0 {
				cut = i
				break
			}
		}
		if cut < 0 {
			if i := strings.LastIndexAny(head, " \t"); i > 0 {
				cut = i
			}
		}
		if cut < 0 {
			cut = lim
		}
		if cut == 0 { // a single character wider than the limit cannot happen; be safe
			_, w := utf8.DecodeRuneInString(s)
			cut = w
		}
		if p := strings.TrimRight(s[:cut], " \t\r\n"); p != "" {
			parts = append(parts, p)
		}
		s = strings.TrimLeft(s[cut:], " \t\r\n")
	}
	if s != "" {
		parts = append(parts, s)
	}
	return parts
}

// keyboard lays out buttons as an inline keyboard: one row when there are
// at most three short labels, else one button per row. Buttons whose value
// is not valid callback_data (empty, over 64 bytes, not UTF-8) are
// returned as dropped.
func keyboard(buttons []chat.Button) (kb *inlineKeyboard, dropped []chat.Button) {
	var ok []inlineButton
	short := true
	for _, b := range buttons {
		if b.Value == "" || len(b.Value) > maxCallbackData || !utf8.ValidString(b.Value) {
			dropped = append(dropped, b)
			continue
		}
		label := strings.TrimSpace(b.Label)
		if label == "" {
			label = b.Value
		}
		label = oneLine(label, 64)
		if utf8.RuneCountInString(label) > 16 {
			short = false
		}
		ok = append(ok, inlineButton{Text: label, CallbackData: b.Value})
	}
	if len(ok) == 0 {
		return nil, dropped
	}
	kb = &inlineKeyboard{}
	if short && len(ok) <= 3 {
		kb.InlineKeyboard = [][]inlineButton{ok}
		return kb, dropped
	}
	for _, b := range ok {
		kb.InlineKeyboard = append(kb.InlineKeyboard, []inlineButton{b})
	}
	return kb, dropped
}
