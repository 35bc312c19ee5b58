package turn

import (
	"context"

	"github.com/arbiterhq/arbiter/chat"
)

// maxProgressTrace bounds the progress updates a trace keeps (the latest).
const maxProgressTrace = 20

// QuestionTrace is one question a tool asked the user during the turn
// (an MCP server's sampling or elicitation request) and its outcome. A
// typed answer is recorded as typed, not by its text.
type QuestionTrace struct {
	Step   string `json:"step"`
	Text   string `json:"text"`
	Choice string `json:"choice,omitempty"`
	Typed  bool   `json:"typed,omitempty"`
	Error  string `json:"error,omitempty"`
}

// toolLive is the channel's chat.Live as one tool call sees it: updates
// are named after the tool, and every update and question is traced.
type toolLive struct {
	inner chat.Live // nil when the channel offers none
	trace *Trace
	step  string
}

func (e *Engine) liveFor(ctx context.Context, s *state, step string) context.Context {
	return chat.WithLive(ctx, &toolLive{inner: chat.LiveFrom(ctx), trace: &s.trace, step: step})
}

func (l *toolLive) Progress(p chat.Progress) {
	if p.Step == "" {
		p.Step = l.step
	}
	l.trace.mu.Lock()
	l.trace.Progress = append(l.trace.Progress, p)
	if n := len(l.trace.Progress); n > maxProgressTrace {
		l.trace.Progress = l.trace.Progress[n-maxProgressTrace:]
	}
	l.trace.mu.Unlock()
	if l.inner != nil {
		l.inner.Progress(p)
	}
}

func (l *toolLive) Ask(ctx context.Context, q chat.Question) (chat.Answer, error) {
	var a chat.Answer
	err := chat.ErrNoLive
	if l.inner != nil {
		a, err = l.inner.Ask(ctx, q)
	}
	qt := QuestionTrace{Step: l.step, Text: clip(q.Text, 500), Choice: a.Choice, Typed: a.Text != ""}
	if err != nil {
		qt.Error = err.Error()
	}
	l.trace.mu.Lock()
	l.trace.Questions = append(l.trace.Questions, qt)
	l.trace.mu.Unlock()
	return a, err
}
