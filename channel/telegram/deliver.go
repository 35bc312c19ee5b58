package telegram

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"
)

// typingEvery repeats "typing": Telegram shows it for about 5 s.
const typingEvery = 4500 * time.Millisecond

// msgRef names a message the bot sent.
type msgRef struct {
	chat, msg int64
}

type ownerRecord struct {
	user int64
	at   time.Time
}

type pressRecord struct {
	item string
	at   time.Time
}

// outbox is what one item sends, in order; next is the first message not
// sent yet, so a failed send resumes where it stopped.
type outbox struct {
	chatID, threadID int64
	replyTo          int64 // 0: not a reply
	owner            int64 // the user a group keyboard belongs to
	group            bool
	msgs             []outMsg
	next             int
}

type outMsg struct {
	text string // plain text; escaped when sent
	kb   *inlineKeyboard
}

// process runs one entry: the turn (unless this is a resend), the replies,
// then Done. An error leaves the entry pending for a retry.
func (c *Channel) process(ctx context.Context, e *entry) error {
	c.mu.Lock()
	ob := c.unsent[e.id]
	delete(c.unsent, e.id)
	c.mu.Unlock()
	if ob == nil {
		var err error
		if ob, err = c.run(ctx, e); err != nil {
			return err
		}
	}
	if err := c.deliver(ctx, e.id, ob); err != nil {
		return err
	}
	c.finish(ctx, e)
	return nil
}

// run builds the plan of e, runs its turn and returns what to send.
func (c *Channel) run(ctx context.Context, e *entry) (*outbox, error) {
	p := c.buildPlan(ctx, e.id, e.members)
	ob := &outbox{chatID: p.chatID, threadID: p.threadID, owner: p.userID, group: p.group}
	if p.group || p.edited {
		ob.replyTo = p.replyTo
	}
	if !p.known {
		if p.callback != nil {
			c.answerOnce(ctx, e.id, p.callback.ID, say(p.lang, txtRefusal))
		} else if c.refuseNow(p.userID) {
			ob.add(say(p.lang, txtRefusal), nil)
		}
		c.cfg.Logger.Info("telegram: refused an unknown user", "user", p.userID, "chat", p.chatID)
		return ob, nil
	}
	if p.callback != nil && !c.press(ctx, e.id, p) {
		p.in = nil
	}
	for _, n := range p.notices {
		ob.add(n, nil)
	}
	if p.in == nil {
		return ob, nil
	}
	stop := c.typing(ctx, p.chatID, p.threadID)
	live := c.newLive(p)
	in := *p.in
	in.Live = live.forTurn()
	out, err := c.cfg.Handler.HandleTurn(ctx, in)
	live.close()
	stop()
	if err != nil {
		return nil, err
	}
	if out.Duplicate {
		// Processed before (a redelivery, another instance, a crash after
		// the turn committed): its reply was sent then.
		return &outbox{}, nil
	}
	kb, dropped := keyboard(out.Buttons)
	for _, b := range dropped {
		c.cfg.Logger.Warn("telegram: button value is not valid callback_data, dropped", "item", e.id, "value_bytes", len(b.Value))
	}
	text := out.Say
	if strings.TrimSpace(text) == "" && kb != nil {
		text = say(p.lang, txtChoose)
	}
	parts := splitMessage(text, maxMessageLen)
	for i, part := range parts {
		var k *inlineKeyboard
		if i == len(parts)-1 {
			k = kb
		}
		ob.add(part, k)
	}
	return ob, nil
}

func (ob *outbox) add(text string, kb *inlineKeyboard) {
	ob.msgs = append(ob.msgs, outMsg{text: text, kb: kb})
}

// deliver sends what is left of ob. A transient failure (network, 5xx,
// 429) keeps ob for the retry and returns the error. A permanent one is
// logged and that message skipped, or all of them when the bot may not write
// to the chat (403: blocked, removed); repeating cannot help.
func (c *Channel) deliver(ctx context.Context, itemID string, ob *outbox) error {
	// The turn has happened; sending must not stop half-way at shutdown.
	ctx = context.WithoutCancel(ctx)
	for ob.next < len(ob.msgs) {
		m := ob.msgs[ob.next]
		p := sendMessageParams{ChatID: ob.chatID, MessageThreadID: ob.threadID, Text: escapeHTML(m.text), ParseMode: "HTML", ReplyMarkup: m.kb}
		if ob.replyTo != 0 {
			p.ReplyParameters = &replyParameters{MessageID: ob.replyTo, AllowSendingWithoutReply: true}
		}
		id, err := c.api.sendMessage(ctx, p)
		var ae *apiError
		if err != nil && errors.As(err, &ae) && ae.Code == http.StatusBadRequest && strings.Contains(strings.ToLower(ae.Description), "parse entities") {
			p.Text, p.ParseMode = m.text, ""
			id, err = c.api.sendMessage(ctx, p)
		}
		if err != nil {
			if retry, _ := transient(err); retry {
				c.mu.Lock()
				c.unsent[itemID] = ob
				c.mu.Unlock()
				return err
			}
			c.cfg.Logger.Error("telegram: reply not delivered", "item", itemID, "chat", ob.chatID, "err", err)
			if errors.As(err, &ae) && ae.Code == http.StatusForbidden {
				return nil // the bot cannot write to this chat at all
			}
			ob.next++
			continue
		}
		if m.kb != nil && ob.group {
			c.mu.Lock()
			c.owners[msgRef{ob.chatID, id}] = ownerRecord{user: ob.owner, at: c.cfg.Now()}
			c.mu.Unlock()
		}
		ob.next++
	}
	return nil
}

// typing shows "typing" while a turn runs longer than TypingDelay; the
// returned func stops it.
func (c *Channel) typing(ctx context.Context, chatID, threadID int64) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTimer(c.cfg.TypingDelay)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := c.api.sendTyping(ctx, chatID, threadID); err != nil && ctx.Err() == nil {
					c.cfg.Logger.Debug("telegram: sendChatAction failed", "chat", chatID, "err", err)
				}
				t.Reset(typingEvery)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// refuseNow reports whether an unknown user should get a refusal now (at
// most one per RefusalEvery) and records it.
func (c *Channel) refuseNow(userID int64) bool {
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if at, ok := c.refused[userID]; ok && now.Sub(at) < c.cfg.RefusalEvery {
		return false
	}
	c.refused[userID] = now
	return true
}

// Button presses.

type verdict int

const (
	pressOK verdict = iota
	pressForeign
	pressStale
	pressUnknownUser
	pressNoData
)

// buttonVerdict decides whether a press may reach the handler. In a
// private chat the only user may press. In a group a keyboard belongs to
// the user its message answers: group replies are sent as replies to the
// user's message, and the owners the channel remembers back that up.
func (c *Channel) buttonVerdict(q *callbackQuery) verdict {
	if _, ok := c.cfg.Identify(q.From.ID); !ok {
		return pressUnknownUser
	}
	if q.Data == "" {
		return pressNoData
	}
	m := q.Message
	if m.Chat.Type == "private" {
		if m.Chat.ID != q.From.ID {
			return pressForeign
		}
		return pressOK
	}
	var owner int64
	if m.Date != 0 && m.ReplyToMessage != nil && m.ReplyToMessage.From != nil {
		owner = m.ReplyToMessage.From.ID
	}
	if owner == 0 {
		c.mu.Lock()
		owner = c.owners[msgRef{m.Chat.ID, m.MessageID}].user
		c.mu.Unlock()
	}
	switch owner {
	case 0:
		return pressStale
	case q.From.ID:
		return pressOK
	}
	return pressForeign
}

func verdictText(v verdict, lang string) string {
	switch v {
	case pressForeign:
		return say(lang, txtForeignButton)
	case pressStale:
		return say(lang, txtStaleButton)
	case pressUnknownUser:
		return say(lang, txtRefusal)
	}
	return ""
}

// answerEarly answers a callback query as soon as it is read, so the
// button stops spinning even while an earlier turn of the user runs. The
// caller has marked the item answered (see fetch).
func (c *Channel) answerEarly(ctx context.Context, itemID string, q *callbackQuery) {
	lang := pickLang(q.From.LanguageCode, c.cfg.Language)
	if id, ok := c.cfg.Identify(q.From.ID); ok {
		lang = pickLang(id.Language, q.From.LanguageCode, c.cfg.Language)
	}
	c.answerCallback(ctx, itemID, q.ID, verdictText(c.buttonVerdict(q), lang))
}

// answerOnce calls answerCallbackQuery unless the item was answered
// already.
func (c *Channel) answerOnce(ctx context.Context, itemID, queryID, text string) {
	c.mu.Lock()
	done := c.answered[itemID]
	c.answered[itemID] = true
	c.mu.Unlock()
	if !done {
		c.answerCallback(ctx, itemID, queryID, text)
	}
}

// answerCallback calls answerCallbackQuery. Errors (an old query) are
// only logged: the answer is cosmetic.
func (c *Channel) answerCallback(ctx context.Context, itemID, queryID, text string) {
	if err := c.api.answerCallback(ctx, queryID, text); err != nil {
		c.cfg.Logger.Debug("telegram: answerCallbackQuery failed", "item", itemID, "err", err)
	}
}

// press handles a button press: answer it, check who pressed it and
// whether its keyboard was used already, and take the keyboard off the
// message. It reports whether the press goes to the handler.
func (c *Channel) press(ctx context.Context, itemID string, p turnPlan) bool {
	q := p.callback
	v := c.buttonVerdict(q)
	ref := msgRef{q.Message.Chat.ID, q.Message.MessageID}
	if v == pressOK {
		c.mu.Lock()
		if prev, ok := c.pressed[ref]; ok && prev.item != itemID {
			c.mu.Unlock()
			c.answerOnce(ctx, itemID, q.ID, say(p.lang, txtUsedButton))
			return false
		}
		c.pressed[ref] = pressRecord{item: itemID, at: c.cfg.Now()}
		c.mu.Unlock()
	}
	c.answerOnce(ctx, itemID, q.ID, verdictText(v, p.lang))
	if v != pressOK {
		return false
	}
	if q.Message.Date != 0 {
		if err := c.api.removeKeyboard(ctx, ref.chat, ref.msg); err != nil {
			c.cfg.Logger.Debug("telegram: removing a keyboard failed", "chat", ref.chat, "message", ref.msg, "err", err)
		}
	}
	return true
}

// giveUp answers an entry that kept failing with an apology and drops it.
func (c *Channel) giveUp(ctx context.Context, e *entry) {
	p := c.planHeader(e)
	ob := &outbox{chatID: p.chatID, threadID: p.threadID, group: p.group}
	if p.group {
		ob.replyTo = p.replyTo
	}
	ob.add(say(p.lang, txtGiveUp), nil)
	if err := c.deliver(ctx, e.id, ob); err != nil {
		c.cfg.Logger.Warn("telegram: apology not delivered", "item", e.id, "err", err)
	}
	c.finish(ctx, e)
}

// planHeader is the addressing part of a plan, with no downloads.
func (c *Channel) planHeader(e *entry) turnPlan {
	var p turnPlan
	u := e.members[len(e.members)-1].u
	var m *message
	var from *tgUser
	switch {
	case u.CallbackQuery != nil:
		m, from = u.CallbackQuery.Message, &u.CallbackQuery.From
	case u.EditedMessage != nil:
		m, from = u.EditedMessage, u.EditedMessage.From
	default:
		m, from = u.Message, u.Message.From
		p.replyTo = m.MessageID
	}
	p.chatID, p.group = m.Chat.ID, m.Chat.Type != "private"
	if m.IsTopicMessage {
		p.threadID = m.MessageThreadID
	}
	id, _ := c.cfg.Identify(from.ID)
	p.lang = pickLang(id.Language, from.LanguageCode, c.cfg.Language)
	return p
}
