package telegram

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/chat"
)

func TestPlan(t *testing.T) {
	t0 := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	const hold, grace = 1500 * time.Millisecond, 400 * time.Millisecond
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	type e struct {
		kind int
		at   int // ms after t0
	}
	W, F, A := kindWords, kindForward, kindAlone
	tests := []struct {
		name    string
		es      []e
		now     int
		n       int
		waitMax int // 0: no wait expected
	}{
		{"button alone", []e{{A, 0}, {F, 10}}, 0, 1, 0},
		{"words wait the grace", []e{{W, 0}}, 100, 0, 450},
		{"words after the grace", []e{{W, 0}}, 600, 1, 0},
		{"words then words", []e{{W, 0}, {W, 50}}, 60, 1, 0},
		{"words then a late forward", []e{{W, 0}, {F, 500}}, 600, 1, 0},
		{"words lead forwards, run open", []e{{W, 0}, {F, 100}, {F, 300}}, 400, 0, 1550},
		{"words lead forwards, run closed", []e{{W, 0}, {F, 100}, {F, 300}}, 2000, 3, 0},
		{"words lead; a second comment is not joined", []e{{W, 0}, {F, 100}, {W, 200}}, 300, 2, 0},
		{"forward waits for more", []e{{F, 0}}, 100, 0, 1550},
		{"forward then comment: no wait", []e{{F, 0}, {F, 1000}, {W, 2000}}, 2000, 3, 0},
		{"forward then a late comment", []e{{F, 0}, {W, 1600}}, 1600, 1, 0},
		{"forwards split by a gap", []e{{F, 0}, {F, 1600}}, 1600, 1, 0},
		{"forward run ended by a button", []e{{F, 0}, {A, 100}}, 100, 1, 0},
		{"forward run capped", []e{{F, 0}, {F, 1}, {F, 2}, {F, 3}}, 3, 3, 0},
		{"forward alone after the hold", []e{{F, 0}}, 1700, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var es []*entry
			for i, x := range tt.es {
				es = append(es, &entry{id: string(rune('a' + i)), kind: x.kind, at: t0.Add(ms(x.at))})
			}
			n, wait := plan(es, t0.Add(ms(tt.now)), hold, grace, 3)
			if n != tt.n {
				t.Errorf("n = %d, want %d", n, tt.n)
			}
			if tt.waitMax == 0 && wait != 0 || tt.waitMax != 0 && (wait <= 0 || wait > ms(tt.waitMax)) {
				t.Errorf("wait = %v, want %s", wait, map[bool]string{true: "none", false: "(0, " + ms(tt.waitMax).String() + "]"}[tt.waitMax == 0])
			}
		})
	}
	// Joining disabled.
	es := []*entry{{kind: kindForward, at: t0}, {kind: kindForward, at: t0}}
	if n, wait := plan(es, t0, -1, grace, 10); n != 1 || wait != 0 {
		t.Errorf("hold < 0: n=%d wait=%v, want 1, 0", n, wait)
	}
}

func TestSplitMessage(t *testing.T) {
	para := strings.Repeat("a", 30)
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"fits", "short", []string{"short"}},
		{"empty", "  \n", nil},
		{"paragraphs", para + "\n\n" + para + "\n\n" + para, []string{para + "\n\n" + para, para}},
		{"lines", para + "\n" + para + "\n" + para, []string{para + "\n" + para, para}},
		{"words", strings.Repeat("word ", 20), []string{strings.TrimSpace(strings.Repeat("word ", 14)), strings.TrimSpace(strings.Repeat("word ", 6))}},
		{"no spaces", strings.Repeat("x", 150), []string{strings.Repeat("x", 70), strings.Repeat("x", 70), strings.Repeat("x", 10)}},
		{"astral characters count twice", strings.Repeat("😀", 50), []string{strings.Repeat("😀", 35), strings.Repeat("😀", 15)}},
		{"a link is never cut", "see " + "https://example.com/" + strings.Repeat("p", 40) + " and more text here", []string{"see https://example.com/" + strings.Repeat("p", 40) + " and", "more text here"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := splitMessage(tt.in, 70)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Errorf("split = %q\nwant    %q", got, tt.want)
			}
			for _, p := range got {
				if utf16Len(p) > 70 || !utf8.ValidString(p) {
					t.Errorf("bad part %q", p)
				}
			}
		})
	}
}

func TestEscapeHTML(t *testing.T) {
	in := `<b>5 > 3 & "x"</b> https://a.example/?q=1&r=<2>`
	want := `&lt;b&gt;5 &gt; 3 &amp; "x"&lt;/b&gt; https://a.example/?q=1&amp;r=&lt;2&gt;`
	if got := escapeHTML(in); got != want {
		t.Errorf("escapeHTML = %q, want %q", got, want)
	}
}

func TestKeyboardLayout(t *testing.T) {
	kb, dropped := keyboard([]chat.Button{{Label: "✅ Да", Value: "да"}, {Label: "✖️ Нет", Value: "нет"}})
	if len(dropped) != 0 || len(kb.InlineKeyboard) != 1 || len(kb.InlineKeyboard[0]) != 2 {
		t.Errorf("two short buttons: %+v", kb)
	}
	kb, _ = keyboard([]chat.Button{{Label: "Перенести встречу на пятницу", Value: "a"}, {Label: "b", Value: "b"}})
	if len(kb.InlineKeyboard) != 2 {
		t.Errorf("long labels: %+v, want one per row", kb)
	}
	kb, dropped = keyboard([]chat.Button{{Label: "", Value: "v"}, {Label: "x", Value: ""}, {Label: "y", Value: strings.Repeat("я", 33)}, {Label: "z", Value: "\xff"}})
	if len(dropped) != 3 || kb.InlineKeyboard[0][0].Text != "v" {
		t.Errorf("kb %+v dropped %+v", kb, dropped)
	}
	if kb, _ := keyboard(nil); kb != nil {
		t.Errorf("no buttons: %+v", kb)
	}
}

func TestWithLinks(t *testing.T) {
	tests := []struct {
		text string
		ents []entity
		want string
	}{
		{"see card", []entity{{Type: "text_link", Offset: 4, Length: 4, URL: "https://trello.com/c/x"}}, "see card (https://trello.com/c/x)"},
		{"😀 тут и там", []entity{{Type: "text_link", Offset: 3, Length: 3, URL: "https://a"}, {Type: "bold", Offset: 0, Length: 2}}, "😀 тут (https://a) и там"},
		{"two links", []entity{{Type: "text_link", Offset: 4, Length: 5, URL: "https://b"}, {Type: "text_link", Offset: 0, Length: 3, URL: "https://a"}}, "two (https://a) links (https://b)"},
		{"https://a shown", []entity{{Type: "text_link", Offset: 0, Length: 9, URL: "https://a"}}, "https://a shown"},
		{"out of range", []entity{{Type: "text_link", Offset: 5, Length: 100, URL: "https://x"}, {Type: "text_link", Offset: -1, Length: 2, URL: "https://y"}}, "out of range"},
	}
	for _, tt := range tests {
		if got := withLinks(tt.text, tt.ents); got != tt.want {
			t.Errorf("withLinks(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestStripMention(t *testing.T) {
	for in, want := range map[string]string{
		"@arbiter_bot покажи мои задачи":  "покажи мои задачи",
		"/tasks@Arbiter_Bot":              "/tasks",
		"покажи, @ARBITER_BOT, задачи":    "покажи, , задачи",
		"@arbiter_bot":                    "@arbiter_bot",
		"@arbiter_bot_two hi":             "@arbiter_bot_two hi",
		"mail me@arbiter_bot":             "mail me@arbiter_bot",
		"İİ @arbiter_bot ok":              "İİ ok",
		"строка 1\n@arbiter_bot строка 2": "строка 1\n строка 2",
	} {
		if got := stripMention(in, "arbiter_bot"); got != want {
			t.Errorf("stripMention(%q) = %q, want %q", in, got, want)
		}
	}
	if got := stripMention("@arbiter_bot hi", ""); got != "@arbiter_bot hi" {
		t.Errorf("without a username: %q", got)
	}
}

func TestFileID(t *testing.T) {
	for src, want := range map[string]string{
		"telegram-file:BQACAgIAAx": "BQACAgIAAx",
		"telegram-file:":           "",
		"telegram-file:a b":        "",
		"https://example.com":      "",
	} {
		got, ok := FileID(src)
		if got != want || ok != (want != "") {
			t.Errorf("FileID(%q) = %q, %v", src, got, ok)
		}
	}
	if FileSource("abc") != "telegram-file:abc" {
		t.Error("FileSource")
	}
}

func TestDecodeRouting(t *testing.T) {
	tests := []struct {
		fixture string
		id, key string
		kind    int
	}{
		{"text", "1001:100001", "1001:1001", kindWords},
		{"forward_user", "1001:100002", "1001:1001", kindForward},
		{"forward_hidden_user", "1001:100003", "1001:1001", kindForward},
		{"forward_chat", "1001:100004", "1001:1001", kindForward},
		{"forward_channel", "1001:100005", "1001:1001", kindForward},
		{"reply", "1001:100006", "1001:1001", kindWords},
		{"callback", "1001:100007", "1001:1001", kindAlone},
		{"photo_caption", "1001:100008", "1001:1001", kindWords},
		{"document_text", "1001:100009", "1001:1001", kindWords},
		{"document_pdf", "1001:100010", "1001:1001", kindWords},
		{"voice", "1001:100011", "1001:1001", kindWords},
		{"edited", "1001:100012", "1001:1001", kindAlone},
		{"group", "-1001555000111:100013", "-1001555000111:1002", kindWords},
		{"unknown_user", "9999:100014", "9999:9999", kindWords},
	}
	for _, tt := range tests {
		u, rt, err := decodeUpdate([]byte(fixture(t, tt.fixture)))
		if err != nil || !rt.relevant {
			t.Errorf("%s: err %v relevant %v", tt.fixture, err, rt.relevant)
			continue
		}
		if id, key := itemID(rt.chatID, u.UpdateID), orderKey(rt.chatID, rt.userID); id != tt.id || key != tt.key || rt.kind != tt.kind {
			t.Errorf("%s: id %s key %s kind %d; want %s %s %d", tt.fixture, id, key, rt.kind, tt.id, tt.key, tt.kind)
		}
	}
}

// A transport error never shows the token (a *url.Error would).
func TestErrorsHideToken(t *testing.T) {
	api := &botAPI{base: "http://127.0.0.1:1", token: testToken, hc: &http.Client{}}
	err := api.call(context.Background(), "getMe", map[string]any{}, nil)
	if err == nil || strings.Contains(err.Error(), testToken) || strings.Contains(err.Error(), "ABC-test") {
		t.Errorf("error = %v", err)
	}
	if retry, _ := transient(err); !retry {
		t.Errorf("a connection error is not transient: %v", err)
	}
}

// FuzzDecodeUpdate feeds arbitrary bodies through the decoder and the
// mapping: nothing panics, and every accepted update maps to a well-formed
// inbound message.
func FuzzDecodeUpdate(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "updates", "*.json"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"update_id":1,"message":{"message_id":1,"date":1,"chat":{"id":5,"type":"private"},"from":{"id":5,"is_bot":false,"first_name":"a"},"text":"x","entities":[{"type":"text_link","offset":0,"length":1,"url":"u"}]}}`))
	f.Add([]byte(`{"update_id":2,"callback_query":{"id":"q","from":{"id":1001,"first_name":"a"},"message":{"message_id":1,"date":0,"chat":{"id":-5,"type":"group"}},"chat_instance":"c","data":"d"}}`))
	ch, err := New(Config{
		Token: testToken, APIBaseURL: "http://127.0.0.1:1", Handler: newRecorder(), Inbox: newFakeInbox(),
		Identify: func(int64) (chat.Identity, bool) { return ivan, true }, MaxEvidenceBytes: 512,
		HTTPClient: &http.Client{Transport: failingTransport{}},
	})
	if err != nil {
		f.Fatal(err)
	}
	bot := "arbiter_bot"
	ch.username.Store(&bot)
	f.Fuzz(func(t *testing.T, data []byte) {
		u, rt, err := decodeUpdate(data)
		if err != nil || !rt.relevant {
			return
		}
		id := itemID(rt.chatID, u.UpdateID)
		p := ch.buildPlan(context.Background(), id, []member{{id: id, raw: data, u: u}})
		if p.chatID != rt.chatID || p.userID != rt.userID {
			t.Fatalf("plan addresses %d/%d, routing %d/%d", p.chatID, p.userID, rt.chatID, rt.userID)
		}
		if p.in != nil {
			in := p.in
			if in.MessageID != id || in.Channel != ChannelName || !utf8.ValidString(in.Text) || len(in.Evidence) > maxEvidence {
				t.Fatalf("inbound = %+v", in)
			}
			for _, ev := range in.Evidence {
				if strings.TrimSpace(ev.Text) == "" || len(ev.Text) > 512 || !utf8.ValidString(ev.Text) || !utf8.ValidString(ev.Source) {
					t.Fatalf("evidence = %+v", ev)
				}
				if ev.Kind != chat.EvidenceForward && ev.Kind != chat.EvidenceQuote && ev.Kind != chat.EvidenceAttachment {
					t.Fatalf("evidence kind %q", ev.Kind)
				}
			}
			if in.Text == "" && in.Button == "" && len(in.Evidence) == 0 {
				t.Fatal("an empty inbound")
			}
		}
		for _, part := range splitMessage(string(data), maxMessageLen) {
			if utf16Len(part) > maxMessageLen {
				t.Fatal("a part over the limit")
			}
		}
	})
}
