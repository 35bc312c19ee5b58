package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/internal/wait"
)

// Streamed answers. Both fake servers answer a request that asks for a
// stream with server-sent events in their API's format, cut as a Chunking
// says: the text into delta events of Piece runes, the encoded body into
// writes (each flushed at once) at event boundaries, every WriteSize bytes
// or at the offsets Splits gives — so a write may end inside a UTF-8
// sequence or a JSON string escape — with Delay before each write after
// the first.

// DefaultPiece is the number of runes of text per delta event when
// Chunking.Piece is 0.
const DefaultPiece = 16

// Chunking says how a fake server cuts a streamed answer. The zero value
// sends DefaultPiece runes per delta, one write per event, without delay.
type Chunking struct {
	// Piece is the number of runes of text, and of tool arguments, per
	// delta event.
	Piece int
	// WriteSize, if not zero, cuts the body into writes of that many
	// bytes, whatever the events.
	WriteSize int
	// Splits, if not empty, are the byte offsets into the body where a
	// write ends (ascending); they win over WriteSize.
	Splits []int
	// Delay is the wait before each write after the first; FirstDelay the
	// wait, after the headers went out, before the first. Both end early
	// if the client goes away.
	Delay      time.Duration
	FirstDelay time.Duration
	// StallAfter, if not zero, adds a wait of Stall after that many
	// writes: a model gone silent midway.
	StallAfter int
	Stall      time.Duration
	// CutAfter, if not zero, sends only the first CutAfter bytes of the
	// body and then breaks the connection (a stream cut halfway).
	CutAfter int
	// ErrorAfter, if not zero, sends an error event of the API's format
	// after that many events, in place of the rest (ErrorType and
	// ErrorMessage of the reply say which error; default an overload).
	ErrorAfter int
}

// pieces cuts s into pieces of n runes (n <= 0: DefaultPiece); empty s
// gives none.
func pieces(s string, n int) []string {
	if n <= 0 {
		n = DefaultPiece
	}
	var out []string
	for len(s) > 0 {
		i, k := 0, 0
		for i < len(s) && k < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			k++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// sseEvent encodes v as one server-sent event; an empty name sends only
// the data line.
func sseEvent(name string, v any) []byte {
	var b []byte
	if name != "" {
		b = append(b, "event: "+name+"\n"...)
	}
	b = append(b, "data: "...)
	b = append(b, anthMarshal(v)...)
	return append(b, "\n\n"...)
}

// writeStream writes events as a text/event-stream answer cut as c says.
func writeStream(w http.ResponseWriter, r *http.Request, events [][]byte, c *Chunking) {
	var body []byte
	var cuts []int
	for _, ev := range events {
		body = append(body, ev...)
		cuts = append(cuts, len(body))
	}
	switch {
	case len(c.Splits) > 0:
		cuts = append(append([]int(nil), c.Splits...), len(body))
	case c.WriteSize > 0:
		cuts = cuts[:0]
		for i := c.WriteSize; i < len(body); i += c.WriteSize {
			cuts = append(cuts, i)
		}
		cuts = append(cuts, len(body))
	}
	cut := c.CutAfter > 0 && c.CutAfter < len(body)
	if cut {
		body = body[:c.CutAfter]
	}
	h := w.Header()
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "text/event-stream")
	}
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flush(w)
	from := 0
	for i, to := range cuts {
		to = min(to, len(body))
		if to <= from {
			continue
		}
		delay := c.Delay
		switch {
		case i == 0:
			delay = c.FirstDelay
		case i == c.StallAfter:
			delay += c.Stall
		}
		if wait.Sleep(r.Context(), delay) != nil {
			return
		}
		_, _ = w.Write(body[from:to])
		flush(w)
		from = to
	}
	if cut {
		// Abort the connection: the client sees the body end early, with
		// no end of the chunked encoding.
		panic(http.ErrAbortHandler)
	}
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// chunkEvents is a Chat Completions stream of reply: a first chunk with
// the role, the content (or refusal) in pieces, each tool call's id and
// name then its arguments in pieces, a chunk with the finish reason, a
// usage chunk when the request asked for it, and [DONE].
func chunkEvents(req *ChatRequest, reply *HTTPReply, c *Chunking) [][]byte {
	id := "chatcmpl-llmtest-" + strconv.FormatInt(completionSeq.Add(1), 10)
	model := reply.Model
	if model == "" {
		model = req.Model
	}
	created := time.Now().Unix()
	chunk := func(choices []map[string]any, usage *completionUsage) []byte {
		v := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model, "choices": choices}
		if usage != nil {
			v["usage"] = usage
		}
		if choices == nil {
			v["choices"] = []any{}
		}
		return sseEvent("", v)
	}
	delta := func(d map[string]any, finish *string) []map[string]any {
		return []map[string]any{{"index": 0, "delta": d, "finish_reason": finish}}
	}
	var events [][]byte
	if !reply.NoChoices {
		events = append(events, chunk(delta(map[string]any{"role": "assistant", "content": ""}, nil), nil))
		field, text := "content", reply.Content
		if reply.Refusal != "" {
			field, text = "refusal", reply.Refusal
		}
		for _, p := range pieces(text, c.Piece) {
			events = append(events, chunk(delta(map[string]any{field: p}, nil), nil))
		}
		for i, tc := range reply.ToolCalls {
			if tc.ID == "" {
				tc.ID = "call_llmtest_" + strconv.FormatInt(toolCallSeq.Add(1), 10)
			}
			first := map[string]any{"index": i, "id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": ""}}
			events = append(events, chunk(delta(map[string]any{"tool_calls": []any{first}}, nil), nil))
			for _, p := range pieces(tc.Arguments, c.Piece) {
				frag := map[string]any{"index": i, "function": map[string]any{"arguments": p}}
				events = append(events, chunk(delta(map[string]any{"tool_calls": []any{frag}}, nil), nil))
			}
		}
		finish := reply.FinishReason
		switch {
		case finish != "":
		case len(reply.ToolCalls) > 0:
			finish = "tool_calls"
		default:
			finish = "stop"
		}
		events = append(events, chunk(delta(map[string]any{}, &finish), nil))
	}
	if req.IncludeUsage {
		u := usageOf(req, reply)
		events = append(events, chunk(nil, &u))
	}
	events = append(events, []byte("data: [DONE]\n\n"))
	if c.ErrorAfter > 0 && c.ErrorAfter < len(events) {
		typ, msg := reply.ErrorType, reply.ErrorMessage
		if typ == "" {
			typ, msg = "server_error", "The server is overloaded."
		}
		var e wireError
		if err := json.Unmarshal(errorBody(msg, typ, reply.ErrorCode, ""), &e); err != nil {
			panic(fmt.Sprintf("llmtest: error event: %v", err))
		}
		events = append(events[:c.ErrorAfter], sseEvent("", &e))
	}
	return events
}

// anthropicEvents is a Messages API stream of m: message_start (the
// message without content, with the input usage), a ping, each block as
// content_block_start, its text or input JSON in pieces
// (text_delta, input_json_delta) and content_block_stop, then
// message_delta with the stop reason and output usage, and message_stop.
func anthropicEvents(m *anthWireMessageOut, reply *AnthropicReply, c *Chunking) [][]byte {
	type obj = map[string]any
	start := *m
	start.Content = []AnthropicBlock{}
	startUsage := m.Usage
	startUsage.OutputTokens = min(startUsage.OutputTokens, 1)
	start.Usage = startUsage
	startJSON := obj{"id": start.ID, "type": "message", "role": "assistant", "model": start.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": start.Usage}
	events := [][]byte{
		sseEvent("message_start", obj{"type": "message_start", "message": startJSON}),
		sseEvent("ping", obj{"type": "ping"}),
	}
	for i, b := range m.Content {
		var kind, field, rest string
		switch b.Type {
		case "text":
			kind, field, rest = "text_delta", "text", b.Text
			events = append(events, sseEvent("content_block_start", obj{"type": "content_block_start", "index": i,
				"content_block": obj{"type": "text", "text": ""}}))
		case "tool_use":
			kind, field, rest = "input_json_delta", "partial_json", string(b.Input)
			events = append(events, sseEvent("content_block_start", obj{"type": "content_block_start", "index": i,
				"content_block": obj{"type": "tool_use", "id": b.ID, "name": b.Name, "input": obj{}}}))
		default:
			events = append(events, sseEvent("content_block_start", obj{"type": "content_block_start", "index": i, "content_block": b}))
		}
		for _, p := range pieces(rest, c.Piece) {
			events = append(events, sseEvent("content_block_delta", obj{"type": "content_block_delta", "index": i,
				"delta": obj{"type": kind, field: p}}))
		}
		events = append(events, sseEvent("content_block_stop", obj{"type": "content_block_stop", "index": i}))
	}
	events = append(events,
		sseEvent("message_delta", obj{"type": "message_delta", "delta": obj{"stop_reason": m.StopReason, "stop_sequence": nil},
			"usage": obj{"output_tokens": m.Usage.OutputTokens}}),
		sseEvent("message_stop", obj{"type": "message_stop"}))
	if c.ErrorAfter > 0 && c.ErrorAfter < len(events) {
		typ, msg := reply.ErrorType, reply.ErrorMessage
		if typ == "" {
			typ, msg = "overloaded_error", "Overloaded"
		}
		events = append(events[:c.ErrorAfter], sseEvent("error", obj{"type": "error", "error": obj{"type": typ, "message": msg}}))
	}
	return events
}
