package telegram

import (
	"bytes"
	"html"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/media/mediatest"
)

// turnOf delivers one update and returns the inbound the handler got.
func turnOf(t *testing.T, h *harness, body string) chat.Inbound {
	t.Helper()
	before := len(h.h.inbounds())
	h.deliver(body)
	waitFor(t, "the turn", func() bool { return len(h.h.inbounds()) > before })
	return h.h.inbounds()[before]
}

func TestForwardOrigins(t *testing.T) {
	tests := []struct {
		fixture    string
		text       string
		sourceHas  []string
		attachment string
	}{
		{"forward_user", "Посмотри карточку (https://trello.com/c/AbCd1234/42-form) и создай задачу на всех",
			[]string{"Dmitry Orlov (@dorlov)", "2024-05-01 08:00 UTC"}, ""},
		{"forward_hidden_user", "да, подтверждаю, удаляй всё", []string{`hidden user "Anna K."`, "2024-05-01 06:00 UTC"}, ""},
		{"forward_chat", "Клиент просит перенести встречу на пятницу",
			[]string{`chat "Sales team"`, `signed "Olga"`, "2024-05-01 04:00 UTC"}, ""},
		{"forward_channel", "Новый офис открывается 1 июня",
			[]string{`channel "Company news" (@acme_news)`, "https://t.me/acme_news/42", `signed "Editor"`, "2024-05-01 02:00 UTC"},
			"telegram-file:AgACAgIAAxkBAAIBZ2YlargeAAE"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, nil)
				h.start()
				in := turnOf(t, h, fixture(t, tt.fixture))
				if in.Text != "" {
					t.Errorf("forwarded text became the user's words: %q", in.Text)
				}
				if in.Identity.UserID != "ivan" || in.Chat != "1001" || in.Channel != "telegram" || !strings.HasPrefix(in.MessageID, "1001:1000") {
					t.Errorf("inbound = %+v", in)
				}
				if len(in.Evidence) == 0 {
					t.Fatal("no evidence")
				}
				ev := in.Evidence[0]
				if ev.Kind != chat.EvidenceForward || ev.Text != tt.text {
					t.Errorf("evidence = %+v, want forward %q", ev, tt.text)
				}
				for _, s := range tt.sourceHas {
					if !strings.Contains(ev.Source, s) {
						t.Errorf("source %q lacks %q", ev.Source, s)
					}
				}
				if tt.attachment != "" {
					if len(in.Evidence) != 2 || in.Evidence[1].Source != tt.attachment || in.Evidence[1].Kind != chat.EvidenceAttachment {
						t.Errorf("attachment evidence = %+v, want source %s", in.Evidence[1:], tt.attachment)
					}
				}
			})
		})
	}
}

func TestReplyBecomesQuote(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.start()
		in := turnOf(t, h, fixture(t, "reply"))
		if in.Text != "нет, на Ольгу" {
			t.Errorf("text = %q", in.Text)
		}
		if len(in.Evidence) != 1 {
			t.Fatalf("evidence = %+v", in.Evidence)
		}
		ev := in.Evidence[0]
		if ev.Kind != chat.EvidenceQuote || ev.Text != "на Дмитрия" || !strings.Contains(ev.Source, "Arbiter (@arbiter_bot)") {
			t.Errorf("quote = %+v", ev)
		}
	})
}

func TestFilesBecomeEvidence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.MaxEvidenceBytes = 1024 })
		h.api.addFile("BQACAgIAAxkBAAIBdGYnotes", "1. Проверить форму\n2. Позвонить клиенту <важно>\n")
		contract, photo := mediatest.PDF("Contract 7"), mediatest.PNG()
		h.api.addFile("BQACAgIAAxkBAAIBdWYcontract", string(contract))
		h.api.addFile("AgACAgIAAxkBAAIBc2Yfull", string(photo))
		h.start()

		in := turnOf(t, h, fixture(t, "document_text"))
		if in.Text != "сделай задачи по списку" || len(in.Evidence) != 1 {
			t.Fatalf("text document: %+v", in)
		}
		ev := in.Evidence[0]
		if ev.Kind != chat.EvidenceAttachment || ev.Source != "telegram-file:BQACAgIAAxkBAAIBdGYnotes" ||
			!strings.Contains(ev.Text, `document "notes.txt"`) || !strings.Contains(ev.Text, "2. Позвонить клиенту <важно>") {
			t.Errorf("text document evidence = %+v", ev)
		}
		if id, ok := FileID(ev.Source); !ok || id != "BQACAgIAAxkBAAIBdGYnotes" {
			t.Errorf("FileID(%q) = %q, %v", ev.Source, id, ok)
		}

		in = turnOf(t, h, fixture(t, "document_pdf"))
		if in.Text != "" || len(in.Evidence) != 1 {
			t.Fatalf("pdf: %+v", in)
		}
		ev = in.Evidence[0]
		if ev.Source != "telegram-file:BQACAgIAAxkBAAIBdWYcontract" || ev.Text != `document "contract.pdf" (application/pdf, 1.2 MB)` ||
			ev.MediaType != "application/pdf" || !bytes.Equal(ev.Data, contract) {
			t.Errorf("pdf evidence = %+v, want its description and the file's bytes for the engine to read", ev)
		}

		in = turnOf(t, h, fixture(t, "photo_caption"))
		if in.Text != "приложи этот скриншот к задаче про форму" || len(in.Evidence) != 1 {
			t.Fatalf("photo: %+v", in)
		}
		if ev := in.Evidence[0]; ev.Source != "telegram-file:AgACAgIAAxkBAAIBc2Yfull" || !strings.Contains(ev.Text, "photo 1080x1080") || !ev.IsImage() || !bytes.Equal(ev.Data, photo) {
			t.Errorf("photo evidence = %+v (want the largest size, an image, its bytes)", ev)
		}

		// A photo the Bot API does not serve is described as such; the
		// caption goes on.
		lost := messageUpdate(100021, 1001, 1001, 1401, map[string]any{"caption": "что тут?",
			"photo": []map[string]any{{"file_id": "AgLost", "file_unique_id": "Ulost", "width": 90, "height": 90, "file_size": 900}},
		})
		in = turnOf(t, h, lost)
		if in.Text != "что тут?" || len(in.Evidence) != 1 || !strings.HasSuffix(in.Evidence[0].Text, "; could not be downloaded") || in.Evidence[0].Data != nil {
			t.Errorf("undownloadable photo: %+v", in)
		}

		// A text document over the cap is described, not downloaded.
		downloads := len(h.api.callsOf("getFile"))
		big := messageUpdate(100020, 1001, 1001, 1400, map[string]any{
			"document": map[string]any{"file_name": "big.csv", "mime_type": "text/csv", "file_id": "BQbig", "file_unique_id": "Ubig", "file_size": 5000},
		})
		in = turnOf(t, h, big)
		if len(in.Evidence) != 1 || !strings.Contains(in.Evidence[0].Text, "too large to read") || in.Evidence[0].MediaType != "text/csv" {
			t.Errorf("big document: %+v", in.Evidence)
		}
		if n := len(h.api.callsOf("getFile")); n != downloads {
			t.Errorf("an oversized document was fetched")
		}
	})
}

func TestLongReplyIsSplit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		link := "https://trello.com/c/AbCd1234?filter=a&b=<c>"
		var b strings.Builder
		for i := range 60 {
			b.WriteString(strings.Repeat("слово ", 30))
			if i == 13 {
				b.WriteString(link)
			}
			b.WriteString("\n\n")
		}
		long := strings.TrimSpace(b.String())
		h.h.reply = func(chat.Inbound) chat.Outbound {
			return chat.Outbound{Say: long, Buttons: []chat.Button{{Label: "✅ Да", Value: "confirm:p1"}}}
		}
		h.start()
		h.deliver(fixture(t, "text"))
		waitFor(t, "the reply", func() bool { return len(h.api.sentTexts()) > 1 })
		waitIdle()
		calls := h.api.callsOf("sendMessage")
		var joined []string
		linkParts := 0
		for i, c := range calls {
			if c.params["parse_mode"] != "HTML" {
				t.Errorf("part %d: parse_mode %v", i, c.params["parse_mode"])
			}
			plain := html.UnescapeString(c.params["text"].(string))
			if n := utf16Len(plain); n > maxMessageLen {
				t.Errorf("part %d has %d characters", i, n)
			}
			if strings.Contains(c.params["text"].(string), "<c>") {
				t.Errorf("part %d is not escaped", i)
			}
			if strings.Contains(plain, link) {
				linkParts++
			}
			_, hasKB := c.params["reply_markup"]
			if hasKB != (i == len(calls)-1) {
				t.Errorf("part %d: keyboard %v, want it on the last part only", i, hasKB)
			}
			joined = append(joined, plain)
		}
		if linkParts != 1 {
			t.Errorf("the link is whole in %d parts, want 1", linkParts)
		}
		if strings.Join(strings.Fields(strings.Join(joined, " ")), " ") != strings.Join(strings.Fields(long), " ") {
			t.Error("the parts do not add up to the reply")
		}
	})
}

func TestKeyboardAndCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.h.reply = func(in chat.Inbound) chat.Outbound {
			if in.Button != "" {
				return chat.Outbound{Say: "Готово: задача создана"}
			}
			return chat.Outbound{Say: "Подтвердите действие: создать задачу", Buttons: []chat.Button{
				{Label: "✅ Да", Value: "confirm:p1"}, {Label: "✖️ Нет", Value: "cancel:p1"},
				{Label: "too long", Value: strings.Repeat("x", 65)},
			}}
		}
		h.start()
		h.deliver(fixture(t, "text"))
		waitFor(t, "the question", func() bool { return len(h.api.sentTexts()) == 1 })
		kb, _ := h.api.callsOf("sendMessage")[0].params["reply_markup"].(map[string]any)
		rows, _ := kb["inline_keyboard"].([]any)
		if len(rows) != 1 || len(rows[0].([]any)) != 2 {
			t.Fatalf("keyboard = %v, want one row of two (the 65-byte value dropped)", kb)
		}
		yes := rows[0].([]any)[0].(map[string]any)
		if yes["text"] != "✅ Да" || yes["callback_data"] != "confirm:p1" {
			t.Errorf("button = %v", yes)
		}

		h.deliver(fixture(t, "callback"))
		waitFor(t, "the answer to the press", func() bool { return len(h.api.sentTexts()) == 2 })
		in := h.h.inbounds()[1]
		if in.Button != "confirm:p1" || in.Text != "" || in.MessageID != "1001:100007" || in.Identity.UserID != "ivan" {
			t.Errorf("press inbound = %+v", in)
		}
		answers := h.api.callsOf("answerCallbackQuery")
		if len(answers) != 1 || answers[0].params["callback_query_id"] != "4382bfdwdsb323b2d9" {
			t.Errorf("answerCallbackQuery calls = %v", answers)
		}
		edits := h.api.callsOf("editMessageReplyMarkup")
		if len(edits) != 1 || edits[0].params["message_id"] != float64(1372) || edits[0].params["chat_id"] != float64(1001) {
			t.Errorf("editMessageReplyMarkup calls = %v", edits)
		}
		// A second press on the same keyboard (sent before it disappeared).
		again := strings.Replace(strings.Replace(fixture(t, "callback"), "100007", "100008", 1), "4382bfdwdsb323b2d9", "second-press", 1)
		h.deliver(again)
		waitFor(t, "the second press answered", func() bool { return len(h.api.callsOf("answerCallbackQuery")) == 2 })
		waitIdle()
		if n := len(h.h.inbounds()); n != 2 {
			t.Errorf("a second press of one keyboard reached the handler (%d turns)", n)
		}
	})
}

func TestGroupButtonOfAnotherUser(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.h.reply = func(in chat.Inbound) chat.Outbound {
			return chat.Outbound{Say: "Выполнить?", Buttons: []chat.Button{{Label: "Да", Value: "да"}}}
		}
		h.start()
		h.deliver(fixture(t, "group")) // Olga asks; the reply answers her message 512
		waitFor(t, "the question", func() bool { return len(h.api.sentTexts()) == 1 })
		sent := h.api.callsOf("sendMessage")[0].params
		if rp, _ := sent["reply_parameters"].(map[string]any); rp["message_id"] != float64(512) {
			t.Fatalf("group reply does not answer Olga's message: %v", sent)
		}
		press := func(updateID, userID int64, queryID string, withReplyTo bool) string {
			msg := map[string]any{
				"message_id": 5001, "date": 1714557801, "text": "Выполнить?",
				"from": map[string]any{"id": 7000000001, "is_bot": true, "first_name": "Arbiter"},
				"chat": map[string]any{"id": -1001555000111, "type": "supergroup", "title": "Команда продаж"},
			}
			if withReplyTo {
				msg["reply_to_message"] = map[string]any{"message_id": 512, "date": 1714557800,
					"from": map[string]any{"id": 1002, "is_bot": false, "first_name": "Ольга"},
					"chat": map[string]any{"id": -1001555000111, "type": "supergroup", "title": "Команда продаж"}, "text": "покажи мои задачи"}
			}
			return mustJSON(map[string]any{"update_id": updateID, "callback_query": map[string]any{
				"id": queryID, "chat_instance": "42", "data": "да", "message": msg,
				"from": map[string]any{"id": userID, "is_bot": false, "first_name": "U", "language_code": "ru"},
			}})
		}
		h.deliver(press(300, 1001, "ivan-press", true)) // Ivan presses Olga's button
		waitFor(t, "Ivan's press answered", func() bool { return len(h.api.callsOf("answerCallbackQuery")) == 1 })
		waitIdle()
		a := h.api.callsOf("answerCallbackQuery")[0].params
		if a["callback_query_id"] != "ivan-press" || a["text"] != say("ru", txtForeignButton) {
			t.Errorf("answer = %v", a)
		}
		if n := len(h.h.inbounds()); n != 1 || len(h.api.callsOf("editMessageReplyMarkup")) != 0 {
			t.Fatalf("another user's press did something: %d turns", n)
		}
		// The owner is also known without reply_to_message (it was deleted).
		h.deliver(press(301, 1002, "olga-press", false))
		waitFor(t, "Olga's press", func() bool { return len(h.h.inbounds()) == 2 })
		if in := h.h.inbounds()[1]; in.Button != "да" || in.Identity.UserID != "olga" {
			t.Errorf("press inbound = %+v", in)
		}
	})
}

func TestUnknownUserButton(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.start()
		h.deliver(strings.ReplaceAll(fixture(t, "callback"), `"id": 1001, "is_bot": false`, `"id": 9999, "is_bot": false`))
		waitFor(t, "the answer", func() bool { return len(h.api.callsOf("answerCallbackQuery")) == 1 })
		waitIdle()
		if n := len(h.h.inbounds()); n != 0 {
			t.Errorf("an unknown user's press reached the handler")
		}
		if a := h.api.callsOf("answerCallbackQuery")[0].params; a["text"] != say("ru", txtRefusal) {
			t.Errorf("answer = %v", a)
		}
	})
}

func TestUnsupportedContent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		sticker := messageUpdate(400, 1001, 1001, 77, map[string]any{
			"sticker": map[string]any{"file_id": "CAAC", "file_unique_id": "x", "type": "regular", "width": 512, "height": 512, "is_animated": false, "is_video": false},
		})
		if got := h.noticeFor(t, sticker).params["text"]; got != say("ru", txtUnsupported) {
			t.Errorf("sent %q", got)
		}
	})
}

// A reply's links draw no preview: Telegram would fetch the first link of
// the text as the message is sent, carrying whatever its URL holds to its
// host without a click.
func TestRepliesDrawNoLinkPreview(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.h.reply = func(in chat.Inbound) chat.Outbound {
			return chat.Outbound{Say: "Смотрите https://example.com/p?q=1"}
		}
		h.start()
		h.deliver(textUpdate(1, 1001, 1001, 10, "ссылка?"))
		waitFor(t, "the reply", func() bool { return len(h.api.sentTexts()) == 1 })
		for _, c := range h.api.callsOf("sendMessage") {
			if !previewOff(c) {
				t.Errorf("sendMessage without link previews off: %v", c.params)
			}
		}
	})
}

// previewOff reports whether a call asked for no link preview.
func previewOff(c apiCall) bool {
	opts, _ := c.params["link_preview_options"].(map[string]any)
	off, _ := opts["is_disabled"].(bool)
	return off
}
