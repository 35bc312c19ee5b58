package openaicompat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/internal/wire"
)

// A streamed call: the request carries "stream":true and
// "stream_options":{"include_usage":true}, and the answer is a
// text/event-stream of chat.completion.chunk objects, each a "data:" event,
// ended by "data: [DONE]". The first choice's delta.content pieces go to
// OnText as they arrive and make up the content; delta.tool_calls
// fragments are joined by their index (the id and name come with a call's
// first fragment, its arguments in pieces); finish_reason comes with the
// last choice chunk, and usage with a last chunk whose choices are empty.
// The pieces are put together into the answer a plain call would have
// decoded, so the Response is the same either way.
//
// A server that sends no usage chunk (one that ignores stream_options)
// leaves the usage at zero.
//
// A stream is complete only at [DONE]: a body that ends before it (a cut
// connection) is truncated, hence transient; an event that is not JSON is
// bad_response; an error object in the stream ({"error":{...}}) is
// classified by its code and type, transient when they say nothing more
// precise. A 200 answer that is not an event stream (a server that ignored
// "stream") is decoded as a plain answer and its content handed to OnText
// at once.

// streamChunk is the part of a chat.completion.chunk this package uses.
type streamChunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   string `json:"content"`
			Refusal   string `json:"refusal"`
			Reasoning string `json:"reasoning_content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
	Error *struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}

// assembly collects the pieces of a streamed answer.
type assembly struct {
	cc      completion
	content strings.Builder
	refusal strings.Builder
	calls   []callPieces
}

type callPieces struct {
	id, name string
	args     []byte
}

// completeStreamed sends body (encoded with the stream members) and reads
// the stream under the provider's limits.
func (p *Provider) completeStreamed(ctx context.Context, req *llm.Request, body []byte, tools bool) (llm.Response, error) {
	callCtx, watch, stop := wire.WatchStream(ctx, p.stream, req.MaxTokens)
	defer stop()
	resp, err := p.send(callCtx, body, p.streamHeader)
	if err != nil {
		return llm.Response{}, p.classifyStream(ctx, callCtx, resp, err)
	}
	defer resp.Body.Close()
	var a assembly
	if !isEventStream(resp.Header) {
		if err := json.NewDecoder(resp.Body).Decode(&a.cc); err != nil {
			return llm.Response{}, p.classifyStream(ctx, callCtx, resp, fmt.Errorf("decode chat completion: %w", err))
		}
		out, err := p.response(&a.cc, tools)
		if err == nil && out.Text != "" {
			req.OnText(out.Text)
		}
		return out, err
	}
	if err := p.readStream(resp.Body, &a, watch, req.OnText); err != nil {
		return llm.Response{}, p.classifyStream(ctx, callCtx, resp, err)
	}
	wire.Drain(resp.Body)
	a.finish()
	return p.response(&a.cc, tools)
}

// isEventStream reports whether an answer's Content-Type is
// text/event-stream.
func isEventStream(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream"
}

// errStreamAPI marks an error object sent inside a stream.
var errStreamAPI = errors.New("error in stream")

// readStream reads events until [DONE], adding each chunk to a.
func (p *Provider) readStream(body io.Reader, a *assembly, watch *wire.StreamWatch, onText func(string)) error {
	events := wire.NewEventReader(body)
	for {
		ev, err := events.Next()
		if err == io.EOF {
			return fmt.Errorf("stream ended before [DONE]: %w", io.ErrUnexpectedEOF)
		}
		if err != nil {
			return err
		}
		if string(ev.Data) == "[DONE]" {
			return nil
		}
		var ch streamChunk
		if err := json.Unmarshal(ev.Data, &ch); err != nil {
			return fmt.Errorf("decode stream chunk: %w", err)
		}
		if ch.Error != nil {
			return &APIError{Message: ch.Error.Message, Type: ch.Error.Type, Code: codeText(ch.Error.Code)}
		}
		if a.add(&ch, onText) {
			watch.Progress()
		}
	}
}

// add adds one chunk and reports whether it held a piece of the answer.
func (a *assembly) add(ch *streamChunk, onText func(string)) bool {
	if ch.Model != "" {
		a.cc.Model = ch.Model
	}
	if ch.Usage != nil {
		a.cc.Usage = *ch.Usage
	}
	progress := false
	for i := range ch.Choices {
		c := &ch.Choices[i]
		if c.Index != 0 {
			continue
		}
		if len(a.cc.Choices) == 0 {
			a.cc.Choices = make([]choice, 1)
		}
		if c.FinishReason != nil {
			a.cc.Choices[0].FinishReason = *c.FinishReason
		}
		d := &c.Delta
		if d.Content != "" {
			a.content.WriteString(d.Content)
			onText(d.Content)
		}
		a.refusal.WriteString(d.Refusal)
		for j := range d.ToolCalls {
			tc := &d.ToolCalls[j]
			if tc.Index < 0 || tc.Index > 1024 {
				continue
			}
			for len(a.calls) <= tc.Index {
				a.calls = append(a.calls, callPieces{})
			}
			cp := &a.calls[tc.Index]
			if tc.ID != "" {
				cp.id = tc.ID
			}
			cp.name += tc.Function.Name
			cp.args = append(cp.args, tc.Function.Arguments...)
		}
		progress = progress || d.Content != "" || d.Refusal != "" || d.Reasoning != "" || len(d.ToolCalls) > 0
	}
	return progress
}

// finish puts the joined pieces into the completion.
func (a *assembly) finish() {
	if len(a.cc.Choices) == 0 {
		return
	}
	m := &a.cc.Choices[0].Message
	m.Content = messageContent(a.content.String())
	m.Refusal = a.refusal.String()
	for i := range a.calls {
		cp := &a.calls[i]
		var w wireToolCall
		w.ID, w.Function.Name = cp.id, cp.name
		w.Function.Arguments = argumentsOf(string(cp.args), nil)
		m.ToolCalls = append(m.ToolCalls, w)
	}
}

// classifyStream turns a failed streamed call into an *llm.Error, as
// classify does for plain calls.
func (p *Provider) classifyStream(ctx, callCtx context.Context, resp *http.Response, err error) *llm.Error {
	if kind, msg, cause, ok := wire.StreamInterrupted(ctx, callCtx); ok {
		return p.newError(kind, msg, cause)
	}
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == 0 {
		ae.Message = wire.Redact(ae.Message, p.apiKey)
		e := p.newError(streamErrorKind(ae), ae.Message, fmt.Errorf("%w: %w", errStreamAPI, ae))
		if e.Message == "" {
			e.Message = "error in stream"
		}
		return e
	}
	return p.classify(ctx, callCtx, resp, err)
}

// streamErrorKind classifies an error object sent inside a stream, which
// has no status of its own.
func streamErrorKind(ae *APIError) llm.ErrorKind {
	switch {
	case isBilling(ae.Code, ae.Type):
		return llm.ErrBilling
	case isContentPolicy(ae.Code, ae.Type):
		return llm.ErrContentPolicy
	case strings.Contains(ae.Code, "rate_limit") || strings.Contains(ae.Type, "rate_limit"):
		return llm.ErrRateLimited
	case ae.Type == "invalid_request_error":
		return llm.ErrBadRequest
	}
	return llm.ErrTransient
}
