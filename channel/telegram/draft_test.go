package telegram

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/arbiterhq/arbiter/chat"
)

// draftHandler is a turn that streams: a tool's chip, then the reply in
// pieces, each waiting until Telegram got a draft showing it.
type draftHandler struct {
	*recorder
	t   *testing.T
	api *fakeAPI
}

func (d *draftHandler) HandleTurn(ctx context.Context, in chat.Inbound) (chat.Outbound, error) {
	s, ok := in.Live.(chat.Streamer)
	if !ok {
		return d.recorder.HandleTurn(ctx, in) // a group: no drafts
	}
	s.Step(chat.Step{Kind: chat.StepTool, Name: "search_mail", Text: "Ищу в вашей почте…"})
	d.draftShows("⏳ Ищу в вашей почте…")
	s.Step(chat.Step{Kind: chat.StepTool, Name: "search_mail", Text: "Ищу в вашей почте…", Done: true})
	s.Text("Нашёл два письма. ")
	d.draftShows("Нашёл два письма.")
	s.Text("Первое — от Анны.")
	d.draftShows("Нашёл два письма. Первое — от Анны.")
	return chat.Outbound{Say: "Нашёл два письма. Первое — от Анны."}, nil
}

func (d *draftHandler) draftShows(text string) {
	waitFor(d.t, "a draft showing "+text, func() bool {
		drafts := d.api.callsOf("sendMessageDraft")
		return len(drafts) > 0 && drafts[len(drafts)-1].params["text"] == text
	})
}

// TestDraftThenMessage: in a private chat the reply streams into one
// message draft — the tool's chip as its status first, then the text as
// it is written — and the reply's sendMessage follows the last draft; in
// a group no draft is sent.
func TestDraftThenMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.h.reply = func(in chat.Inbound) chat.Outbound { return chat.Outbound{Say: "в группе"} }
		h.ch.cfg.Handler = &draftHandler{recorder: h.h, t: t, api: h.api}
		h.start()

		h.deliver(textUpdate(1, 1001, 1001, 10, "что в почте?"))
		waitFor(t, "the reply", func() bool {
			return strings.Contains(strings.Join(h.api.sentTexts(), "\n"), "Первое — от Анны.")
		})
		var id any
		last := -1
		calls := h.api.allCalls()
		for i, c := range calls {
			if c.method != "sendMessageDraft" {
				continue
			}
			if c.params["chat_id"] != float64(1001) || c.params["draft_id"] == float64(0) || (id != nil && c.params["draft_id"] != id) {
				t.Errorf("draft %v: want chat 1001 and one non-zero draft id", c.params)
			}
			id, last = c.params["draft_id"], i
		}
		final := -1
		for i, c := range calls {
			if c.method == "sendMessage" && c.params["text"] == "Нашёл два письма. Первое — от Анны." {
				final = i
			}
		}
		if last < 0 || final < last {
			t.Errorf("the last draft is call %d, the reply's sendMessage call %d: %v", last, final, calls)
		}

		h.deliver(textUpdate(2, -1001555000111, 1001, 11, "@arbiter_bot что в почте?"))
		waitFor(t, "the group's reply", func() bool { return strings.Contains(strings.Join(h.api.sentTexts(), "\n"), "в группе") })
		for _, c := range h.api.callsOf("sendMessageDraft") {
			if c.params["chat_id"] != float64(1001) {
				t.Errorf("a draft in a group: %v", c.params)
			}
		}
	})
}
