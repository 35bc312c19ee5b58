package telegram

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/chat"
)

// draftEvery spaces the drafts of a streamed reply.
const draftEvery = 400 * time.Millisecond

// draftChat is the chat.Streamer of a turn in a private chat: the reply
// as it is written, and the running step (a tool's chip) as a short
// status line under it, in one message draft (sendMessageDraft). The
// draft is ephemeral: the reply's sendMessage replaces it. A tool's own
// progress and questions go as liveChat sends them. A draft Telegram
// refuses is not tried again in the turn; the typing action goes on.
type draftChat struct {
	*liveChat
	id   int64 // the draft's id, non-zero, unique per turn
	pace *pacer

	// under liveChat.mu
	text, status, shown string
	refused             bool
}

var _ chat.Streamer = (*draftChat)(nil)

func newDraft(l *liveChat) *draftChat {
	d := &draftChat{liveChat: l, id: l.c.drafts.Add(1)}
	d.pace = newPacer(draftEvery, d.showDraft)
	return d
}

func (d *draftChat) Step(s chat.Step) {
	if s.Done {
		d.setStatus("")
		return
	}
	d.setStatus(oneLine(s.Text, 200))
}

func (d *draftChat) Text(piece string) {
	d.mu.Lock()
	d.text += piece
	d.mu.Unlock()
	d.pace.poke()
}

func (d *draftChat) setStatus(status string) {
	d.mu.Lock()
	d.status = status
	d.mu.Unlock()
	d.pace.poke()
}

// draftText is what the draft shows: the reply so far, then the status.
func (d *draftChat) draftText() string {
	text := d.text
	if d.status != "" {
		if text != "" {
			text += "\n\n"
		}
		text += fmt.Sprintf(say(d.lang, txtWorking), d.status)
	}
	text = strings.TrimSpace(text)
	return text[:prefixWithin(text, maxMessageLen)]
}

// showDraft sends the draft when it changed.
func (d *draftChat) showDraft(ctx context.Context) {
	d.mu.Lock()
	text := d.draftText()
	skip := text == "" || text == d.shown || d.refused
	d.mu.Unlock()
	if skip {
		return
	}
	err := d.c.api.sendMessageDraft(ctx, d.chatID, d.threadID, d.id, text)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		if retry, _ := transient(err); !retry {
			d.refused = true
		}
		d.c.cfg.Logger.Debug("telegram: draft not sent", "chat", d.chatID, "err", err)
		return
	}
	d.shown = text
}
