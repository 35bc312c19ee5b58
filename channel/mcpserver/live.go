package mcpserver

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbiterhq/arbiter/chat"
)

// progressTimeout bounds one progress notification: updates must never
// hold up the tool that reports them.
const progressTimeout = time.Second

var errNoAnswer = errors.New("the user gave no answer")

// live is the chat.Live of one tools/call: a running tool's progress, and
// the turn's own steps (the call running, a wait for approval, with the
// tool's chip as the message), go to the client when the call carries a
// progress token, and its questions go
// to the user through elicitation when the client can be asked during a
// call. From protocol 2026-07-28 on it cannot: input is requested only by
// a call's result, and a turn in progress has none to give.
type live struct {
	session *mcp.ServerSession
	token   any
	canAsk  bool
	timeout time.Duration

	// mu orders the notifications; last is the progress sent last, which
	// each next one must exceed (MCP requires it to increase).
	mu   sync.Mutex
	last float64
}

var _ chat.Streamer = (*live)(nil)

// liveOf is the chat.Live of the turns one tools/call runs.
func (s *Server) liveOf(req *mcp.CallToolRequest) chat.Live {
	return &live{
		session: req.Session,
		token:   req.Params.GetProgressToken(),
		canAsk:  req.ProtocolVersion() < mrtrVersion && canElicit(req.ClientCapabilities()),
		timeout: s.cfg.ConfirmTimeout,
	}
}

func (l *live) Progress(p chat.Progress) {
	if l.token == nil || l.session == nil {
		return
	}
	msg := p.Message
	if p.Step != "" && msg != "" {
		msg = p.Step + ": " + msg
	} else if msg == "" {
		msg = p.Step
	}
	l.notify(p.Done, p.Total, msg)
}

// Step tells the client that a step of the turn began (its text as the
// message); its end is told by the next step or the result.
func (l *live) Step(s chat.Step) {
	if l.token == nil || l.session == nil || s.Done || s.Text == "" {
		return
	}
	l.notify(0, 0, s.Text)
}

// Text is not shown: a call's answer is its result.
func (l *live) Text(string) {}

// notify sends one progress notification; a value not above the last one
// sent (a tool's own count after the turn's steps) is moved just above it,
// and its total dropped when that no longer fits.
func (l *live) notify(progress, total float64, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if progress <= l.last {
		progress = l.last + 1
		if total != 0 && progress > total {
			total = 0
		}
	}
	l.last = progress
	ctx, cancel := context.WithTimeout(context.Background(), progressTimeout)
	defer cancel()
	_ = l.session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: l.token, Progress: progress, Total: total, Message: msg})
}

// Ask shows the question as a form: its choices as a titled enum, a text
// field when typed answers count. Only an offered choice is an answer.
func (l *live) Ask(ctx context.Context, q chat.Question) (chat.Answer, error) {
	if !l.canAsk || l.session == nil {
		return chat.Answer{}, chat.ErrNoLive
	}
	props := map[string]any{}
	if len(q.Choices) > 0 {
		options := make([]map[string]any, len(q.Choices))
		for i, c := range q.Choices {
			options[i] = map[string]any{"const": c.Value, "title": c.Label}
		}
		props["choice"] = map[string]any{"type": "string", "title": "Answer", "oneOf": options}
	}
	if q.FreeText || len(q.Choices) == 0 {
		props["text"] = map[string]any{"type": "string", "title": "Your answer"}
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	res, err := l.session.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: q.Text,
		RequestedSchema: map[string]any{"type": "object", "properties": props}})
	if err != nil {
		return chat.Answer{}, err
	}
	if res.Action != "accept" {
		return chat.Answer{}, errNoAnswer
	}
	if choice, _ := res.Content["choice"].(string); choice != "" {
		for _, c := range q.Choices {
			if c.Value == choice {
				return chat.Answer{Choice: choice}, nil
			}
		}
		return chat.Answer{}, errNoAnswer
	}
	if text, _ := res.Content["text"].(string); text != "" && (q.FreeText || len(q.Choices) == 0) {
		return chat.Answer{Text: text}, nil
	}
	return chat.Answer{}, errNoAnswer
}
