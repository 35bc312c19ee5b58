// Package llmtest holds test doubles for the llm package: Scripted, an
// in-process llm.Provider that plays back a queue of replies, and Server, a
// loopback HTTP server speaking the OpenAI Chat Completions wire format for
// exercising real HTTP providers.
//
// Both record what they received so tests can assert on it, and both
// stream when asked (Scripted through Request.OnText, the servers with
// server-sent events cut as a Chunking says). Both speak
// the two decision protocols of llm (a JSON answer, or text plus native
// tool calls) but know nothing of chats or of what a decision means, and
// neither is meant for production traffic.
package llmtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/llm"
)

// Defaults used by Scripted when its fields are left empty.
const (
	DefaultProviderName = "scripted"
	DefaultModelName    = "scripted-model"
)

// ErrScriptExhausted is wrapped by the error Scripted returns when a
// Complete call finds no reply left in the script.
var ErrScriptExhausted = errors.New("llmtest: script exhausted")

// Reply is one scripted answer of a Scripted provider. Build it with Text,
// ToolCalls, Fail, FailKind or Func.
type Reply struct {
	text  string
	calls []llm.ToolCall
	tools bool // answer in llm.ProtocolTools
	err   error
	fn    func(context.Context, llm.Request) (llm.Response, error)
}

// Text is a reply that completes successfully in llm.ProtocolJSON with s as
// the response text.
func Text(s string) Reply { return Reply{text: s} }

// ToolCalls is a reply that completes successfully in llm.ProtocolTools
// with text as the response text and calls as its tool calls (none: a
// plain text answer). The calls are copied; each Complete returns a fresh
// copy.
func ToolCalls(text string, calls ...llm.ToolCall) Reply {
	return Reply{text: text, calls: cloneCalls(calls), tools: true}
}

// Fail is a reply that fails with err, returned verbatim (normally an
// *llm.Error, so callers can exercise error kinds).
func Fail(err error) Reply {
	if err == nil {
		err = errors.New("llmtest: Fail(nil)")
	}
	return Reply{err: err}
}

// FailKind is a reply that fails with a fresh *llm.Error of the given kind.
func FailKind(kind llm.ErrorKind, message string) Reply {
	return Reply{err: &llm.Error{Kind: kind, Message: message}}
}

// Func is a reply computed by f from the request; its results are returned
// verbatim. f may block on ctx to simulate a slow model.
func Func(f func(ctx context.Context, req llm.Request) (llm.Response, error)) Reply {
	return Reply{fn: f}
}

// Scripted is a fake llm.Provider that answers each Complete call with the
// next reply of its script, in order, and records every request.
//
// Set the exported fields before the first call; after that, Scripted is
// safe for concurrent use. When the script is empty, Complete returns an
// *llm.Error of kind bad_request wrapping ErrScriptExhausted. A context that
// is already done yields an *llm.Error of kind canceled without consuming a
// reply; the request is still recorded.
type Scripted struct {
	// ProviderName and ModelName are reported by Name, Model and successful
	// Text and ToolCalls replies; empty means DefaultProviderName /
	// DefaultModelName.
	ProviderName string
	ModelName    string
	// Usage is reported by Text and ToolCalls replies.
	Usage llm.Usage
	// Piece is the number of runes of a Text or ToolCalls reply's text per
	// call of a streamed request's OnText; 0 means DefaultPiece. PieceDelay
	// is the wait before each piece after the first (a slow model); the
	// wait ends with ctx, failing the call as canceled.
	Piece      int
	PieceDelay time.Duration

	mu       sync.Mutex
	script   []Reply
	requests []llm.Request
}

var (
	_ llm.Provider = (*Scripted)(nil)
	_ llm.Streamer = (*Scripted)(nil)
)

// Streams reports true: a request with OnText gets the text of Text and
// ToolCalls replies in pieces (Func replies do as their function does).
func (s *Scripted) Streams() bool { return true }

// NewScripted returns a Scripted provider with the given script.
func NewScripted(replies ...Reply) *Scripted {
	s := &Scripted{}
	s.Push(replies...)
	return s
}

// Push appends replies to the end of the script.
func (s *Scripted) Push(replies ...Reply) {
	s.mu.Lock()
	s.script = append(s.script, replies...)
	s.mu.Unlock()
}

// Name returns the provider name.
func (s *Scripted) Name() string {
	if s.ProviderName == "" {
		return DefaultProviderName
	}
	return s.ProviderName
}

// Model returns the model name.
func (s *Scripted) Model() string {
	if s.ModelName == "" {
		return DefaultModelName
	}
	return s.ModelName
}

// Complete records req and plays the next reply of the script.
func (s *Scripted) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	s.mu.Lock()
	s.requests = append(s.requests, cloneRequest(req))
	calls := len(s.requests)
	if err := ctx.Err(); err != nil {
		s.mu.Unlock()
		return llm.Response{}, &llm.Error{Kind: llm.ErrCanceled, Provider: s.Name(), Model: s.Model(),
			Message: "context done before the call", Err: err}
	}
	if len(s.script) == 0 {
		s.mu.Unlock()
		return llm.Response{}, &llm.Error{Kind: llm.ErrBadRequest, Provider: s.Name(), Model: s.Model(),
			Message: fmt.Sprintf("no scripted reply left for call %d", calls),
			Err:     fmt.Errorf("complete call %d: %w", calls, ErrScriptExhausted)}
	}
	r := s.script[0]
	s.script[0] = Reply{}
	s.script = s.script[1:]
	s.mu.Unlock()

	switch {
	case r.fn != nil:
		return r.fn(ctx, req)
	case r.err != nil:
		return llm.Response{}, r.err
	default:
		protocol := llm.ProtocolJSON
		if r.tools {
			protocol = llm.ProtocolTools
		}
		if err := s.stream(ctx, req.OnText, r.text); err != nil {
			return llm.Response{}, err
		}
		return llm.Response{
			Protocol:     protocol,
			Text:         r.text,
			ToolCalls:    cloneCalls(r.calls),
			Provider:     s.Name(),
			Model:        s.Model(),
			Usage:        s.Usage,
			FinishReason: "stop",
		}, nil
	}
}

// stream hands text to onText, if set, in pieces of s.Piece runes.
func (s *Scripted) stream(ctx context.Context, onText func(string), text string) error {
	if onText == nil {
		return nil
	}
	for i, p := range pieces(text, s.Piece) {
		if i > 0 && s.PieceDelay > 0 {
			t := time.NewTimer(s.PieceDelay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return &llm.Error{Kind: llm.ErrCanceled, Provider: s.Name(), Model: s.Model(),
					Message: "context done while streaming", Err: ctx.Err()}
			}
		}
		onText(p)
	}
	return nil
}

// Requests returns a copy of every request received so far, in arrival
// order.
func (s *Scripted) Requests() []llm.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]llm.Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// Calls returns the number of Complete calls so far.
func (s *Scripted) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Remaining returns the number of replies not yet played.
func (s *Scripted) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

// cloneRequest copies the slices of req so later changes by the caller do
// not alter the record.
func cloneRequest(req llm.Request) llm.Request {
	if req.Messages != nil {
		req.Messages = append([]llm.Message(nil), req.Messages...)
	}
	if req.Schema != nil {
		sc := *req.Schema
		sc.JSON = append([]byte(nil), sc.JSON...)
		sc.Strict = append([]byte(nil), sc.Strict...)
		req.Schema = &sc
	}
	if req.Tools != nil {
		tools := make([]llm.ToolDef, len(req.Tools))
		for i, t := range req.Tools {
			t.Parameters = append([]byte(nil), t.Parameters...)
			tools[i] = t
		}
		req.Tools = tools
	}
	return req
}

// cloneCalls copies calls and their arguments; nil stays nil.
func cloneCalls(calls []llm.ToolCall) []llm.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]llm.ToolCall, len(calls))
	for i, c := range calls {
		c.Arguments = append([]byte(nil), c.Arguments...)
		out[i] = c
	}
	return out
}
