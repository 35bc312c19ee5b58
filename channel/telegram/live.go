package telegram

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/channel/internal/questions"
	"github.com/arbiterhq/arbiter/chat"
)

// progressEvery spaces the edits of a status message: Telegram limits how
// often a bot may edit messages in one chat.
const progressEvery = time.Second

// questionPrefix starts the callback data of a question's buttons:
// "aq:<question id>:<choice index>".
const questionPrefix = "aq:"

var questionData = regexp.MustCompile(`^aq:([A-Z2-7]{10}):(\d{1,2})$`)

// questionOwner ties a question to one user in one chat.
func questionOwner(chatID, userID int64) string { return idString(chatID) + ":" + idString(userID) }

// liveChat is the chat.Live of one turn: tool progress as one status
// message edited in place, and questions as messages with buttons whose
// answers the accept path takes straight to the waiting turn.
type liveChat struct {
	c                        *Channel
	chatID, threadID, userID int64
	lang                     string

	mu       sync.Mutex
	latest   string // the status text to show
	shown    string // the status text Telegram has
	statusID int64  // the status message, once sent
	kick     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	started  bool
}

func (c *Channel) newLive(p turnPlan) *liveChat {
	return &liveChat{c: c, chatID: p.chatID, threadID: p.threadID, userID: p.userID, lang: p.lang,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// Progress records the update and wakes the sender; it never blocks.
func (l *liveChat) Progress(p chat.Progress) {
	text := p.Step
	switch {
	case p.Total > 0:
		text += fmt.Sprintf(": %d%%", int(100*p.Done/p.Total))
	case p.Done > 0:
		text += ": " + strconv.FormatFloat(p.Done, 'f', -1, 64)
	}
	if p.Message != "" {
		text += " — " + p.Message
	}
	l.mu.Lock()
	l.latest = fmt.Sprintf(say(l.lang, txtWorking), oneLine(text, 300))
	if !l.started {
		l.started = true
		go l.send()
	}
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// send shows the latest status, at most once per progressEvery, until
// close; then it shows the last one once more if it changed.
func (l *liveChat) send() {
	defer close(l.done)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var last time.Time
	for {
		select {
		case <-l.kick:
		case <-l.stop:
			l.show(ctx)
			return
		}
		if wait := progressEvery - time.Since(last); wait > 0 {
			select {
			case <-time.After(wait):
			case <-l.stop:
				l.show(ctx)
				return
			}
		}
		l.show(ctx)
		last = time.Now()
	}
}

// show sends or edits the status message to the latest text.
func (l *liveChat) show(ctx context.Context) {
	l.mu.Lock()
	text, id := l.latest, l.statusID
	l.mu.Unlock()
	if text == "" || text == l.shown {
		return
	}
	var err error
	if id == 0 {
		id, err = l.c.api.sendMessage(ctx, sendMessageParams{ChatID: l.chatID, MessageThreadID: l.threadID, Text: text})
		l.mu.Lock()
		l.statusID = id
		l.mu.Unlock()
	} else {
		err = l.c.api.editMessageText(ctx, l.chatID, id, text)
	}
	if err != nil {
		l.c.cfg.Logger.Debug("telegram: status message not updated", "chat", l.chatID, "err", err)
		return
	}
	l.shown = text
}

// close stops the sender after it showed the last status.
func (l *liveChat) close() {
	l.mu.Lock()
	started := l.started
	l.mu.Unlock()
	if !started {
		return
	}
	close(l.stop)
	<-l.done
}

// Ask sends the question with its choices as buttons and waits for the
// press (or, where the question takes text, the user's next message).
func (l *liveChat) Ask(ctx context.Context, q chat.Question) (chat.Answer, error) {
	var msgID int64
	a, err := l.c.questions.Ask(ctx, questionOwner(l.chatID, l.userID), "", q, func(id string) error {
		buttons := make([]chat.Button, 0, len(q.Choices))
		for i, ch := range q.Choices {
			buttons = append(buttons, chat.Button{Label: ch.Label, Value: questionPrefix + id + ":" + strconv.Itoa(i)})
		}
		kb, _ := keyboard(buttons)
		text := q.Text
		if q.FreeText {
			text += "\n" + say(l.lang, txtOrType)
		}
		text = text[:prefixWithin(text, maxMessageLen)]
		var err error
		msgID, err = l.c.api.sendMessage(ctx, sendMessageParams{ChatID: l.chatID, MessageThreadID: l.threadID,
			Text: escapeHTML(text), ParseMode: "HTML", ReplyMarkup: kb})
		return err
	})
	if msgID != 0 && len(q.Choices) > 0 {
		// The buttons go once the question is closed, answered or not.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if err := l.c.api.removeKeyboard(rctx, l.chatID, msgID); err != nil {
			l.c.cfg.Logger.Debug("telegram: question keyboard not removed", "chat", l.chatID, "err", err)
		}
		cancel()
	}
	return a, err
}

// answerQuestion takes an update that answers an open question — a press
// of its button, or the asked user's next message where text is accepted
// — to the waiting turn. It reports whether the update was used up so; a
// press on a closed question is answered as such and used up too.
func (c *Channel) answerQuestion(u *update, rt routing) bool {
	owner := questionOwner(rt.chatID, rt.userID)
	var scopes []chat.Scope
	if id, known := c.cfg.Identify(rt.userID); known {
		scopes = id.Scopes
	}
	if q := u.CallbackQuery; q != nil {
		m := questionData.FindStringSubmatch(q.Data)
		if m == nil {
			return false
		}
		idx, _ := strconv.Atoi(m[2])
		lang := pickLang(q.From.LanguageCode, c.cfg.Language)
		text := say(lang, txtQuestionClosed)
		if choice, ok := c.questions.ChoiceAt(m[1], idx); ok {
			switch err := c.questions.Answer(m[1], owner, scopes, chat.Answer{Choice: choice}); {
			case err == nil:
				text = ""
			case errors.Is(err, questions.ErrNotYours):
				text = say(lang, txtForeignButton)
			}
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := c.api.answerCallback(ctx, q.ID, text); err != nil {
				c.cfg.Logger.Debug("telegram: answerCallbackQuery failed", "err", err)
			}
		}()
		return true
	}
	m := u.Message
	if m == nil || rt.kind != kindWords || m.ForwardOrigin != nil || strings.TrimSpace(m.Text) == "" {
		return false
	}
	id, ok := c.questions.Typing(owner, scopes)
	return ok && c.questions.Answer(id, owner, scopes, chat.Answer{Text: strings.TrimSpace(m.Text)}) == nil
}

var _ chat.Live = (*liveChat)(nil)
