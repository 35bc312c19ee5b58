// Package llmtest holds test doubles for the llm package: Scripted, an
// in-process llm.Provider that plays back a queue of replies, and Server, a
// loopback HTTP server speaking the OpenAI Chat Completions wire format for
// exercising real HTTP providers.
//
// Both record what they received so tests can assert on it. Neither knows
// anything about chats, tools or decisions, and neither is meant for
// production traffic.
package llmtest

import (
	"context"
	"errors"
	"fmt"
	"sync"

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
// Fail or Func.
type Reply struct {
	text string
	err  error
	fn   func(context.Context, llm.Request) (llm.Response, error)
}

// Text is a reply that completes successfully with s as the response text.
func Text(s string) Reply { return Reply{text: s} }

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
	// Text replies; empty means DefaultProviderName / DefaultModelName.
	ProviderName string
	ModelName    string
	// Usage is reported by Text replies.
	Usage llm.Usage

	mu       sync.Mutex
	script   []Reply
	requests []llm.Request
}

var _ llm.Provider = (*Scripted)(nil)

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
		return llm.Response{
			Text:         r.text,
			Provider:     s.Name(),
			Model:        s.Model(),
			Usage:        s.Usage,
			FinishReason: "stop",
		}, nil
	}
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
	return req
}
