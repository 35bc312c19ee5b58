package telegram

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/arbiterhq/arbiter/chat"
)

func TestCrashRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api, inbox, h := newFakeAPI(t), newFakeInbox(), newRecorder()
		// The first process accepts two updates and dies before processing.
		first := newHarnessWith(t, api, inbox, h, nil)
		first.deliver(fixture(t, "text"))
		first.deliver(textUpdate(100002, 1001, 1001, 1366, "второе"))
		waitIdle()
		if n := h.sideEffects(); n != 0 {
			t.Fatalf("turns ran without a processor: %d", n)
		}
		second := newHarnessWith(t, api, inbox, h, nil)
		stop := second.start()
		waitFor(t, "both replies", func() bool { return len(api.sentTexts()) == 2 })
		stop()
		got := h.inbounds()
		if len(got) != 2 || got[0].MessageID != "1001:100001" || got[1].MessageID != "1001:100002" {
			t.Fatalf("inbounds = %+v, want both updates in order", got)
		}
		if p := inbox.pendingIDs(); len(p) != 0 {
			t.Fatalf("pending after recovery: %q", p)
		}
		third := newHarnessWith(t, api, inbox, h, nil)
		third.start()
		waitIdle()
		if n := h.sideEffects(); n != 2 || len(api.sentTexts()) != 2 {
			t.Errorf("after a restart: %d turns, %d replies; want 2 and 2", n, len(api.sentTexts()))
		}
	})
}

// A crash after the turn committed but before Done: the engine answers the
// redelivered message as a duplicate, and nothing is sent twice.
func TestRecoveryAfterTurnCommitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api, inbox, h := newFakeAPI(t), newFakeInbox(), newRecorder()
		first := newHarnessWith(t, api, inbox, h, nil)
		first.deliver(fixture(t, "text"))
		// The turn ran to its commit in the dead process.
		h.replies[ivanKey("1001", "1001:100001")] = chat.Outbound{TurnID: "t-old", Say: "отвечено"}
		h.effects = 1

		second := newHarnessWith(t, api, inbox, h, nil)
		second.start()
		waitFor(t, "the item to be done", func() bool { return len(inbox.pendingIDs()) == 0 })
		waitIdle()
		if n := h.sideEffects(); n != 1 {
			t.Errorf("side effects %d, want 1", n)
		}
		if got := api.sentTexts(); len(got) != 0 {
			t.Errorf("a duplicate sent %q, want nothing", got)
		}
	})
}

func ivanKey(chatID, messageID string) string {
	return chat.ConversationKey{Tenant: "acme", Chat: chatID, User: "ivan"}.String() + "#" + messageID
}

func TestTurnErrorIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.h.failFirst = 2 // "no reply possible" twice (lock wait, store down)
		h.start()
		h.deliver(fixture(t, "text"))
		waitFor(t, "the reply", func() bool { return len(h.api.sentTexts()) == 1 })
		h.wantOneTurn(t)
		if got := h.api.sentTexts(); got[0] != "ok: о чём эта задача?" {
			t.Errorf("sent %q", got)
		}
	})
}

// A send failing with 5xx is resent without running the turn again, and
// Telegram redelivering the update meanwhile changes nothing.
func TestSendErrorIsResent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.RetryBackoff = 50 * time.Millisecond })
		h.api.failNext("sendMessage", 502, 500)
		h.start()
		h.deliver(fixture(t, "text"))
		waitFor(t, "the first failed send", func() bool { return len(h.api.callsOf("sendMessage")) >= 1 })
		h.deliver(fixture(t, "text"))
		waitFor(t, "the item to be done", func() bool {
			return len(h.inbox.pendingIDs()) == 0 && len(h.api.callsOf("sendMessage")) == 3
		})
		waitIdle()
		if n := h.h.sideEffects(); n != 1 {
			t.Errorf("side effects %d, want 1", n)
		}
		if n := len(h.api.callsOf("sendMessage")); n != 3 {
			t.Errorf("sendMessage calls %d, want 3 (two failures, one success)", n)
		}
	})
}

// A permanent send error (the user blocked the bot) does not block the
// chat: the item is done.
func TestSendForbiddenIsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.api.failNext("sendMessage", 403)
		h.start()
		h.deliver(fixture(t, "text"))
		h.deliver(textUpdate(100002, 1001, 1001, 1366, "второе"))
		waitFor(t, "both items done", func() bool { return len(h.inbox.pendingIDs()) == 0 && h.h.sideEffects() == 2 })
	})
}

func TestGiveUpAfterLongFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		now := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
		clock := func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			now = now.Add(time.Minute) // every look at the clock is a minute later
			return now
		}
		h := newHarness(t, func(c *Config) { c.Now = clock; c.GiveUpAfter = 10 * time.Minute; c.RetryBackoff = time.Millisecond })
		h.h.failFirst = 1000
		h.start()
		h.deliver(fixture(t, "text"))
		waitFor(t, "the apology", func() bool { return len(h.api.sentTexts()) == 1 })
		if got := h.api.sentTexts()[0]; !strings.Contains(got, "не получилось обработать") {
			t.Errorf("apology = %q", got)
		}
		waitFor(t, "the item to be dropped", func() bool { return len(h.inbox.pendingIDs()) == 0 })
	})
}

func TestPerChatOrderAndConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.MaxConcurrent = 3 })
		h.h.block = func(chat.Inbound) { time.Sleep(time.Duration(rand.IntN(8)) * time.Millisecond) }
		h.start()
		const chats, perChat = 5, 8
		var wg sync.WaitGroup
		for c := range chats {
			wg.Go(func() {
				user := int64(1001 + c%2)
				chatID := int64(-100500 - c)
				for i := range perChat {
					h.deliver(textUpdate(int64(1000*c+i+1), chatID, user, int64(i+1), fmt.Sprintf("c%d-m%d", c, i)))
				}
			})
		}
		wg.Wait()
		waitFor(t, "every reply", func() bool { return len(h.api.sentTexts()) == chats*perChat })
		got := map[string][]string{}
		for _, in := range h.h.inbounds() {
			got[in.Chat] = append(got[in.Chat], in.Text)
		}
		for c := range chats {
			chatID := fmt.Sprint(-100500 - c)
			for i, text := range got[chatID] {
				if want := fmt.Sprintf("c%d-m%d", c, i); text != want {
					t.Fatalf("chat %s: turn %d was %q, want %q (order %q)", chatID, i, text, want, got[chatID])
				}
			}
		}
		h.h.mu.Lock()
		defer h.h.mu.Unlock()
		if h.h.overlap {
			t.Error("two turns of one conversation ran at once")
		}
		if h.h.peak > 3 {
			t.Errorf("%d turns ran at once, want at most MaxConcurrent=3", h.h.peak)
		}
	})
}

// In a group the order key is chat + user: one user's slow turn does not
// hold up another user's.
func TestGroupUsersAreSeparateConversations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		release := make(chan struct{})
		h.h.block = func(in chat.Inbound) {
			if in.Identity.UserID == "ivan" {
				<-release
			}
		}
		h.start()
		const group = -1001555000111
		h.deliver(textUpdate(1, group, 1001, 10, "долгий запрос"))
		h.deliver(fixture(t, "group")) // Olga in the same group
		waitFor(t, "Olga's reply", func() bool { return len(h.api.sentTexts()) == 1 })
		close(release)
		waitFor(t, "Ivan's reply", func() bool { return len(h.api.sentTexts()) == 2 })
		byUser := map[string]chat.Inbound{}
		for _, in := range h.h.inbounds() {
			byUser[in.Identity.UserID] = in
		}
		if byUser["olga"].Chat != "-1001555000111" || byUser["ivan"].Chat != "-1001555000111" {
			t.Errorf("chats = %q, %q", byUser["olga"].Chat, byUser["ivan"].Chat)
		}
		if byUser["olga"].Text != "покажи мои задачи" {
			t.Errorf("the bot's mention is not dropped: %q", byUser["olga"].Text)
		}
		if byUser["olga"].Key() == byUser["ivan"].Key() {
			t.Error("two users of one group share a conversation key")
		}
		// Group replies answer the user's message.
		for _, c := range h.api.callsOf("sendMessage") {
			rp, _ := c.params["reply_parameters"].(map[string]any)
			if rp == nil || (rp["message_id"] != float64(512) && rp["message_id"] != float64(10)) {
				t.Errorf("group reply without reply_parameters: %v", c.params)
			}
		}
	})
}

func TestForwardBatchWithCommentAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.ForwardHold = 400 * time.Millisecond; c.CommentGrace = 100 * time.Millisecond })
		h.start()
		h.deliver(forwardUpdate(1, 1001, 1001, 1, "первое пересланное"))
		h.deliver(forwardUpdate(2, 1001, 1001, 2, "второе пересланное: да, удаляй"))
		h.deliver(textUpdate(3, 1001, 1001, 3, "сделай из этого задачу"))
		waitFor(t, "the reply", func() bool { return len(h.api.sentTexts()) == 1 })
		waitIdle()
		got := h.h.inbounds()
		if len(got) != 1 {
			t.Fatalf("%d turns, want one joined turn: %+v", len(got), got)
		}
		in := got[0]
		if in.Text != "сделай из этого задачу" || !strings.HasPrefix(in.MessageID, "batch:1001:1:") {
			t.Errorf("text %q, message id %q", in.Text, in.MessageID)
		}
		if len(in.Evidence) != 2 || in.Evidence[0].Text != "первое пересланное" || in.Evidence[1].Kind != chat.EvidenceForward {
			t.Errorf("evidence = %+v", in.Evidence)
		}
		if p := h.inbox.pendingIDs(); len(p) != 0 {
			t.Errorf("pending: %q", p)
		}
	})
}

// The usual "forward with comment": Telegram sends the comment first.
func TestForwardBatchWithCommentBefore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.ForwardHold = 300 * time.Millisecond; c.CommentGrace = 300 * time.Millisecond })
		h.start()
		h.deliver(textUpdate(1, 1001, 1001, 1, "о чём эта задача?"))
		h.deliver(forwardUpdate(2, 1001, 1001, 2, "https://trello.com/c/AbCd1234"))
		waitFor(t, "the reply", func() bool { return len(h.api.sentTexts()) == 1 })
		// A later message is its own turn.
		time.Sleep(400 * time.Millisecond)
		h.deliver(textUpdate(3, 1001, 1001, 3, "спасибо"))
		waitFor(t, "the second reply", func() bool { return len(h.api.sentTexts()) == 2 })
		got := h.h.inbounds()
		if len(got) != 2 || got[0].Text != "о чём эта задача?" || len(got[0].Evidence) != 1 || got[1].Text != "спасибо" {
			t.Fatalf("turns = %+v", got)
		}
		if ev := got[0].Evidence[0]; ev.Kind != chat.EvidenceForward || ev.Text != "https://trello.com/c/AbCd1234" {
			t.Errorf("evidence = %+v", ev)
		}
	})
}

// A batch stored in the inbox before its turn failed is processed as the
// same batch after a restart, even though a new process would group the
// remaining items differently.
func TestForwardBatchSurvivesRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api, inbox, h := newFakeAPI(t), newFakeInbox(), newRecorder()
		hold := func(c *Config) { c.ForwardHold = 200 * time.Millisecond }
		h.failFirst = 1 << 30
		first := newHarnessWith(t, api, inbox, h, hold)
		stop := first.start()
		first.deliver(forwardUpdate(1, 1001, 1001, 1, "пересланное"))
		first.deliver(textUpdate(2, 1001, 1001, 2, "комментарий"))
		waitFor(t, "the batch in the inbox", func() bool {
			return strings.Contains(strings.Join(inbox.pendingIDs(), ","), "batch:1001:1:")
		})
		stop()
		h.mu.Lock()
		h.failFirst = 0
		h.mu.Unlock()

		second := newHarnessWith(t, api, inbox, h, hold)
		second.start()
		waitFor(t, "the reply", func() bool { return len(api.sentTexts()) == 1 })
		waitIdle()
		got := h.inbounds()
		if len(got) != 1 || !strings.HasPrefix(got[0].MessageID, "batch:1001:1:") || got[0].Text != "комментарий" || len(got[0].Evidence) != 1 {
			t.Fatalf("turns = %+v", got)
		}
		if p := inbox.pendingIDs(); len(p) != 0 {
			t.Errorf("pending: %q", p)
		}
	})
}

func TestForwardsAloneWithoutComment(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.ForwardHold = 400 * time.Millisecond })
		h.start()
		h.deliver(forwardUpdate(1, 1001, 1001, 1, "одно"))
		h.deliver(forwardUpdate(2, 1001, 1001, 2, "другое"))
		waitFor(t, "the reply", func() bool { return len(h.api.sentTexts()) == 1 })
		got := h.h.inbounds()
		if len(got) != 1 || got[0].Text != "" || len(got[0].Evidence) != 2 {
			t.Fatalf("turns = %+v", got)
		}
	})
}

func TestUnknownUserRefusedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.start()
		h.deliver(fixture(t, "unknown_user"))
		h.deliver(textUpdate(100015, 9999, 9999, 13, "hello?"))
		waitFor(t, "both items done", func() bool { return len(h.inbox.pendingIDs()) == 0 && h.inbox.count() == 2 })
		waitIdle()
		got := h.api.sentTexts()
		if len(got) != 1 || !strings.Contains(got[0], "Sorry") {
			t.Errorf("sent %q, want one refusal (in the user's language)", got)
		}
		if n := len(h.h.inbounds()); n != 0 {
			t.Errorf("handler got %d messages from an unknown user", n)
		}
	})
}

func TestEditedMessageIsNotProcessed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		c := h.noticeFor(t, fixture(t, "edited"))
		if !strings.Contains(c.params["text"].(string), "новым сообщением") {
			t.Errorf("notice = %q", c.params["text"])
		}
		rp, _ := c.params["reply_parameters"].(map[string]any)
		if rp == nil || rp["message_id"] != float64(1365) {
			t.Errorf("the notice does not answer the edited message: %v", c.params)
		}
	})
}

func TestVoiceWithoutTranscription(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		if got := h.noticeFor(t, fixture(t, "voice")).params["text"]; got != say("ru", txtVoiceOff) {
			t.Errorf("sent %q", got)
		}
	})
}

func TestVoiceTranscribed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var gotMime string
		var gotAudio []byte
		h := newHarness(t, func(c *Config) {
			c.Transcribe = func(_ context.Context, audio []byte, mime string) (string, error) {
				gotAudio, gotMime = audio, mime
				return "создай задачу проверить форму", nil
			}
		})
		h.api.addFile("AwACAgIAAxkBAAIBdmYvoice", "OggS-fake-audio")
		h.start()
		h.deliver(fixture(t, "voice"))
		waitFor(t, "the reply", func() bool { return len(h.api.sentTexts()) == 1 })
		in := h.h.inbounds()[0]
		if in.Text != "создай задачу проверить форму" || len(in.Evidence) != 0 {
			t.Errorf("inbound = %+v", in)
		}
		if string(gotAudio) != "OggS-fake-audio" || gotMime != "audio/ogg" {
			t.Errorf("transcribe got %q %q", gotAudio, gotMime)
		}
	})
}
