package turn_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/turntest"
)

// watcher is a streaming channel that counts the pieces it was shown.
type watcher struct {
	mu     sync.Mutex
	pieces int
}

func (w *watcher) Progress(chat.Progress) {}
func (w *watcher) Ask(context.Context, chat.Question) (chat.Answer, error) {
	return chat.Answer{}, chat.ErrNoLive
}
func (w *watcher) Step(chat.Step) {}
func (w *watcher) Text(string)    { w.mu.Lock(); w.pieces++; w.mu.Unlock() }

// TestStreamedAnswerOutlivesTheModelTimeout: an answer someone watches
// arrive is bounded by the turn and the stream's limits, not by the model
// timeout of a plain call — a slow model that keeps writing is heard out.
// The model's pauses and the timeout run on the bubble's fake time.
func TestStreamedAnswerOutlivesTheModelTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newLoopBenchWith(t, turn.Assistant{}, func(c *turn.Config) { c.ModelTimeout = 20 * time.Millisecond })
		answer := "Hello. Tell me the number of your ticket, please, and what you expected to happen. I will look at it."
		b.model.Piece, b.model.PieceDelay = 8, 10*time.Millisecond // about 120 ms in all
		b.model.Push(turntest.Say(answer))
		w := &watcher{}
		start := time.Now()
		out, view := b.sendIn(chat.Inbound{Identity: b.id, Chat: "c", Text: "where is my refund?", Case: map[string]string{"ticket_id": "T-4821"}, Live: w})
		if !strings.HasPrefix(out.Say, answer) {
			t.Fatalf("reply %q, want the whole answer (%+v)", out.Say, view)
		}
		if took := time.Since(start); took < 100*time.Millisecond {
			t.Errorf("the answer took %v: the model's pauses did not pass", took)
		}
		if got := len(b.model.Requests()); got != 1 {
			t.Errorf("%d model requests, want 1", got)
		}
		if w.pieces == 0 {
			t.Error("nothing of the answer was streamed")
		}
	})
}
