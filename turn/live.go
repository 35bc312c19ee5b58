package turn

import (
	"context"
	"errors"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/tool"
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

// toolSession is the tool.Session of one tool call: the channel's Live as
// the tool sees it — updates named after the tool, every update and
// question traced — and the turn's model.
type toolSession struct {
	inner chat.Live // nil when the channel offers none
	trace *Trace
	step  string
	scope chat.Scope // what answering the call's questions takes (its risk)
	model toolModel  // in the session's own allocation: one per call
	ended bool       // under trace.mu: the call returned; nothing more is passed on
}

var _ tool.Session = (*toolSession)(nil)

// sessionFor is the session of a call of spec. Its end, called once the
// call returned, cuts it off, so a late update or question of the tool's
// goroutines neither reaches the user nor the sealed trace.
func (e *Engine) sessionFor(s *state, spec tool.Spec) *toolSession {
	return &toolSession{inner: s.in.Live, trace: &s.trace, step: spec.Title, scope: chat.Scope(spec.Risk), model: toolModel{e: e, s: s}}
}

// end cuts the session off once its call returned.
func (l *toolSession) end() {
	l.trace.mu.Lock()
	l.ended = true
	l.trace.mu.Unlock()
}

// toolModel is the turn's model as a tool uses it (an MCP server's
// approved sampling request): the tenant's strategy, with every attempt
// journaled in the turn's record and counted in its cost.
type toolModel struct {
	e *Engine
	s *state
}

// Model returns the turn's model, or nil when none is configured.
func (l *toolSession) Model() llm.Provider {
	if p, _ := l.model.e.providerFor(l.model.s.tenant); p == nil {
		return nil
	}
	return &l.model
}

func (m *toolModel) Name() string  { return "turn" }
func (m *toolModel) Model() string { return "" }

func (m *toolModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	p, strategy := m.e.providerFor(m.s.tenant)
	if p == nil {
		return llm.Response{}, errors.New("no model is configured")
	}
	if req.Strategy == "" {
		req.Strategy = strategy
	}
	return m.e.callModel(ctx, m.s, p, req)
}

func (l *toolSession) Progress(p chat.Progress) {
	if p.Step == "" {
		p.Step = l.step
	}
	l.trace.mu.Lock()
	defer l.trace.mu.Unlock()
	if l.ended {
		return
	}
	l.trace.Progress = append(l.trace.Progress, p)
	if n := len(l.trace.Progress); n > maxProgressTrace {
		l.trace.Progress = l.trace.Progress[n-maxProgressTrace:]
	}
	if l.inner != nil {
		l.inner.Progress(p) // must not block: see chat.Live
	}
}

// errCallEnded: a question came after its tool call returned.
var errCallEnded = errors.New("the tool call has ended")

func (l *toolSession) Ask(ctx context.Context, q chat.Question) (chat.Answer, error) {
	l.trace.mu.Lock()
	ended := l.ended
	l.trace.mu.Unlock()
	if ended {
		return chat.Answer{}, errCallEnded
	}
	var a chat.Answer
	err := chat.ErrNoLive
	q.Scope = l.scope // never the tool's say: the engine knows what the call may do
	if l.inner != nil {
		a, err = l.inner.Ask(ctx, q)
	}
	qt := QuestionTrace{Step: l.step, Text: Clip(q.Text, 500), Choice: a.Choice, Typed: a.Text != ""}
	if err != nil {
		qt.Error = err.Error()
	}
	l.trace.mu.Lock()
	defer l.trace.mu.Unlock()
	if !l.ended {
		l.trace.Questions = append(l.trace.Questions, qt)
	}
	return a, err
}
