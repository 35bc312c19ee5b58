package turn

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/tool"
)

// countingLive records what reaches the channel.
type countingLive struct {
	mu       sync.Mutex
	progress int
	asked    int
}

func (c *countingLive) Progress(chat.Progress) { c.mu.Lock(); c.progress++; c.mu.Unlock() }

func (c *countingLive) Ask(context.Context, chat.Question) (chat.Answer, error) {
	c.mu.Lock()
	c.asked++
	c.mu.Unlock()
	return chat.Answer{Choice: "accept"}, nil
}

// TestToolLiveEndsWithTheCall: while the call runs, updates and questions
// reach the channel and the trace, named after the tool; once it
// returned, a late one from the tool's goroutines reaches neither.
func TestToolLiveEndsWithTheCall(t *testing.T) {
	e := &Engine{}
	s := &state{}
	channel := &countingLive{}
	ctx := context.Background()
	s.in.Live = channel
	live := e.sessionFor(s, tool.Spec{Title: "Отчёт", Policy: tool.Policy{Risk: tool.RiskRead}})
	live.Progress(chat.Progress{Done: 1, Total: 2})
	if a, err := live.Ask(ctx, chat.Question{Text: "?", Choices: []chat.Button{{Label: "ok", Value: "accept"}}}); err != nil || a.Choice != "accept" {
		t.Fatalf("Ask = %+v, %v", a, err)
	}
	live.end()
	live.Progress(chat.Progress{Done: 2, Total: 2})
	if _, err := live.Ask(ctx, chat.Question{Text: "late?"}); !errors.Is(err, errCallEnded) {
		t.Errorf("a late Ask = %v", err)
	}
	if channel.progress != 1 || channel.asked != 1 {
		t.Errorf("channel got %d updates and %d questions, want 1 and 1", channel.progress, channel.asked)
	}
	if len(s.trace.Progress) != 1 || s.trace.Progress[0].Step != "Отчёт" || len(s.trace.Questions) != 1 || s.trace.Questions[0].Choice != "accept" {
		t.Errorf("trace: progress %+v, questions %+v", s.trace.Progress, s.trace.Questions)
	}

	// Without a channel the question is refused and traced as such.
	s = &state{}
	live = e.sessionFor(s, tool.Spec{Title: "Форма", Policy: tool.Policy{Risk: tool.RiskRead}})
	defer live.end()
	if _, err := live.Ask(ctx, chat.Question{Text: "?"}); !errors.Is(err, chat.ErrNoLive) {
		t.Errorf("Ask without a channel = %v", err)
	}
	if len(s.trace.Questions) != 1 || s.trace.Questions[0].Error != chat.ErrNoLive.Error() {
		t.Errorf("trace: %+v", s.trace.Questions)
	}
}
