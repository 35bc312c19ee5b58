package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/internal/wire"
)

// A streamed call: the request carries "stream":true and the answer is a
// text/event-stream of message stream events — message_start (the message
// without content, with the input usage), for each content block
// content_block_start, content_block_delta events (text_delta,
// input_json_delta; thinking deltas only count as progress) and
// content_block_stop, then message_delta (stop_reason, output usage) and
// message_stop, with ping events anywhere. Text deltas go to OnText as
// they arrive, except in ProtocolJSON with a schema, where the decision
// tool's input JSON does (the raw pieces; the Response's Text is their
// compact form). Tool inputs are never streamed to OnText. The pieces are
// put together into the message a plain call would have decoded, so the
// Response is the same either way.
//
// A stream is complete only at message_stop: a body that ends before it (a
// cut connection) is truncated, hence transient; an event that is not JSON
// is bad_response; an error event maps by its error type as an error in a
// 2xx body does (overloaded_error, api_error: transient). A 200 answer that
// is not an event stream is decoded as a plain answer and its text handed
// to OnText at once.

// streamEvent is the part of a message stream event this package uses.
type streamEvent struct {
	Type         string        `json:"type"`
	Message      *message      `json:"message"`
	Index        int           `json:"index"`
	ContentBlock *contentBlock `json:"content_block"`
	Delta        struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *usage       `json:"usage"`
	Error *errorObject `json:"error"`
}

// streamAssembly collects the pieces of a streamed message.
type streamAssembly struct {
	msg    message
	texts  [][]byte // by block index
	inputs [][]byte
	// forced says the decision tool's input goes to OnText.
	forced bool
	onText func(string)
}

func (p *Provider) completeStreamed(ctx context.Context, req *llm.Request, body []byte, protocol llm.Protocol, forced bool) (llm.Response, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = p.maxTokens
	}
	callCtx, watch, stop := wire.WatchStream(ctx, p.stream, maxTokens)
	defer stop()
	var httpResp *http.Response
	err := p.client.Post(callCtx, "v1/messages", body, &httpResp, option.WithHeader("Accept", "text/event-stream"))
	if err != nil {
		return llm.Response{}, p.classifyStream(ctx, callCtx, httpResp, err)
	}
	defer httpResp.Body.Close()
	a := streamAssembly{forced: forced, onText: req.OnText}
	mt, _, _ := mime.ParseMediaType(httpResp.Header.Get("Content-Type"))
	if mt != "text/event-stream" {
		if err := json.NewDecoder(httpResp.Body).Decode(&a.msg); err != nil {
			return llm.Response{}, p.classifyStream(ctx, callCtx, httpResp, fmt.Errorf("decode message: %w", err))
		}
		out, err := p.response(&a.msg, protocol, forced)
		if err == nil && out.Text != "" {
			req.OnText(out.Text)
		}
		return out, err
	}
	if err := p.readStream(httpResp.Body, &a, watch); err != nil {
		return llm.Response{}, p.classifyStream(ctx, callCtx, httpResp, err)
	}
	wire.Drain(httpResp.Body)
	a.finish()
	return p.response(&a.msg, protocol, forced)
}

// readStream reads events until message_stop, adding each to a.
func (p *Provider) readStream(body io.Reader, a *streamAssembly, watch *wire.StreamWatch) error {
	events := wire.NewEventReader(body)
	for {
		ev, err := events.Next()
		if err == io.EOF {
			return fmt.Errorf("stream ended before message_stop: %w", io.ErrUnexpectedEOF)
		}
		if err != nil {
			return err
		}
		var se streamEvent
		if err := json.Unmarshal(ev.Data, &se); err != nil {
			return fmt.Errorf("decode stream event %s: %w", ev.Name, err)
		}
		switch se.Type {
		case "message_stop":
			return nil
		case "error":
			ae := &APIError{}
			if se.Error != nil {
				ae.Type, ae.Message = se.Error.Type, wire.Redact(se.Error.Message, p.apiKey)
			}
			return p.apiError(ae, nil)
		}
		if a.add(&se) {
			watch.Progress()
		}
	}
}

// add adds one event and reports whether it held a piece of the answer.
func (a *streamAssembly) add(se *streamEvent) bool {
	switch se.Type {
	case "message_start":
		if se.Message != nil {
			a.msg.Type, a.msg.Model, a.msg.Usage = "message", se.Message.Model, se.Message.Usage
		}
	case "content_block_start":
		if se.ContentBlock == nil || !a.grow(se.Index) {
			return false
		}
		a.msg.Content[se.Index] = *se.ContentBlock
		return true
	case "content_block_delta":
		if !a.grow(se.Index) {
			return false
		}
		return a.delta(se)
	case "message_delta":
		if se.Delta.StopReason != "" {
			a.msg.StopReason = se.Delta.StopReason
		}
		if u := se.Usage; u != nil {
			mu := &a.msg.Usage
			mu.OutputTokens = u.OutputTokens
			// Later versions repeat the input usage here; a count given
			// wins over the one message_start gave.
			mu.InputTokens = max(mu.InputTokens, u.InputTokens)
			mu.CacheCreationInputTokens = max(mu.CacheCreationInputTokens, u.CacheCreationInputTokens)
			mu.CacheReadInputTokens = max(mu.CacheReadInputTokens, u.CacheReadInputTokens)
		}
	}
	return false
}

// delta adds a content_block_delta to its block.
func (a *streamAssembly) delta(se *streamEvent) bool {
	b, d := &a.msg.Content[se.Index], &se.Delta
	switch d.Type {
	case "text_delta":
		a.texts[se.Index] = append(a.texts[se.Index], d.Text...)
		if !a.forced && d.Text != "" {
			a.onText(d.Text)
		}
		return d.Text != ""
	case "input_json_delta":
		a.inputs[se.Index] = append(a.inputs[se.Index], d.PartialJSON...)
		if a.forced && b.Type == "tool_use" && b.Name == DecisionTool && d.PartialJSON != "" {
			a.onText(d.PartialJSON)
		}
		return d.PartialJSON != ""
	case "thinking_delta":
		return d.Thinking != ""
	}
	return false
}

// grow makes room for block i; a nonsensical index is ignored.
func (a *streamAssembly) grow(i int) bool {
	if i < 0 || i > 1024 {
		return false
	}
	for len(a.msg.Content) <= i {
		a.msg.Content = append(a.msg.Content, contentBlock{})
		a.texts = append(a.texts, nil)
		a.inputs = append(a.inputs, nil)
	}
	return true
}

// finish puts the joined pieces into the blocks.
func (a *streamAssembly) finish() {
	for i := range a.msg.Content {
		b := &a.msg.Content[i]
		b.Text += string(a.texts[i])
		if len(a.inputs[i]) > 0 {
			b.Input = a.inputs[i]
		}
	}
}

// classifyStream turns a failed streamed call into an *llm.Error, as
// classify does for plain calls.
func (p *Provider) classifyStream(ctx, callCtx context.Context, resp *http.Response, err error) *llm.Error {
	if kind, msg, cause, ok := wire.StreamInterrupted(ctx, callCtx); ok {
		return p.newError(kind, msg, cause)
	}
	if le, ok := err.(*llm.Error); ok {
		return le
	}
	return p.classify(ctx, callCtx, resp, err)
}
