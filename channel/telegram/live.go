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
	status   *pacer
	// draft, in a private chat, streams the turn (see draft.go).
	draft *draftChat
}

func (c *Channel) newLive(p turnPlan) *liveChat {
	l := &liveChat{c: c, chatID: p.chatID, threadID: p.threadID, userID: p.userID, lang: p.lang}
	l.status = newPacer(progressEvery, l.show)
	if !p.group {
		l.draft = newDraft(l)
	}
	return l
}

// forTurn is the chat.Live the turn gets: in a private chat one that
// streams the reply into a draft, elsewhere the status message.
func (l *liveChat) forTurn() chat.Live {
	if l.draft != nil {
		return l.draft
	}
	return l
}

// Progress records the update and wakes the sender; it never blocks.
func (l *liveChat) Progress(p chat.Progress) {
	l.mu.Lock()
	l.latest = fmt.Sprintf(say(l.lang, txtWorking), progressLine(p))
	l.mu.Unlock()
	l.status.poke()
}

// progressLine is a tool's update on one line: its step, how far, its
// message.
func progressLine(p chat.Progress) string {
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
	return oneLine(text, 300)
}

// pacer calls show after a poke, at most once per every, until close;
// then once more. Its goroutine starts with the first poke.
type pacer struct {
	every   time.Duration
	show    func(ctx context.Context)
	mu      sync.Mutex
	started bool
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

func newPacer(every time.Duration, show func(ctx context.Context)) *pacer {
	return &pacer{every: every, show: show, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// poke asks for a show; it never blocks.
func (p *pacer) poke() {
	p.mu.Lock()
	if !p.started {
		p.started = true
		go p.run()
	}
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *pacer) run() {
	defer close(p.done)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var last time.Time
	for {
		select {
		case <-p.kick:
		case <-p.stop:
			p.show(ctx)
			return
		}
		if wait := p.every - time.Since(last); wait > 0 {
			select {
			case <-time.After(wait):
			case <-p.stop:
				p.show(ctx)
				return
			}
		}
		p.show(ctx)
		last = time.Now()
	}
}

// close stops the goroutine after its last show.
func (p *pacer) close() {
	p.mu.Lock()
	started := p.started
	p.mu.Unlock()
	if !started {
		return
	}
	close(p.stop)
	<-p.done
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

// close stops the senders after they showed the last status and draft.
func (l *liveChat) close() {
	l.status.close()
	if l.draft != nil {
		l.draft.pace.close()
	}
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
