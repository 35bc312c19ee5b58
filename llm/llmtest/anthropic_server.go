package llmtest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/arbiterhq/arbiter/internal/wait"
)

// AnthropicMessagesPath is the only path AnthropicServer answers.
const AnthropicMessagesPath = "/v1/messages"

// anthropicNoSamplingVersion is the first anthropic-version that rejects
// temperature, top_p and top_k.
const anthropicNoSamplingVersion = "2026-10-21"

// AnthropicServerConfig configures an AnthropicServer. The zero value
// accepts any key, requires only that some anthropic-version be sent,
// records every request and answers HTTP 500 once the script is empty.
type AnthropicServerConfig struct {
	// APIKey, if set, must arrive as the x-api-key header; other requests
	// get a 401 authentication_error.
	APIKey string
	// APIVersion, if set, must be the anthropic-version header; otherwise
	// any non-empty version is accepted. Requests without the header, or
	// with another version, get a 400 invalid_request_error.
	APIVersion string
	// Respond answers requests once the queue of Enqueue'd replies is empty.
	// It is called concurrently. Nil means an HTTP 500 api_error with
	// error code "llmtest_script_exhausted".
	Respond func(*AnthropicRequest) AnthropicReply
	// SkipRecording stops the server from keeping the decoded requests
	// (Count still counts them), so long benchmarks run in constant memory.
	SkipRecording bool
	// PromptCache makes estimated usage follow the API's prompt cache: a
	// prefix up to a cache_control breakpoint that an earlier request
	// wrote is reported as cache reads (see promptCache).
	PromptCache bool
	// Chunking cuts streamed answers of replies that set none; the zero
	// value is one write per event, without delay.
	Chunking Chunking
}

// AnthropicReply scripts one answer of AnthropicServer. The zero value is a
// 200 with empty content and stop_reason "end_turn".
type AnthropicReply struct {
	// Text, if not empty, is sent as a text block.
	Text string
	// ToolUses are sent as tool_use blocks after the text.
	ToolUses []AnthropicToolUse
	// Content, if not nil, is sent as the content array instead of the
	// blocks Text and ToolUses make.
	Content []AnthropicBlock
	// Model is the model named in the answer; empty echoes the request's.
	Model string
	// StopReason defaults to "tool_use" when the content has a tool_use
	// block and "end_turn" otherwise.
	StopReason string
	// Usage is reported as is; nil means a rough estimate from the sizes of
	// the prompt and the content, with no cache use.
	Usage *AnthropicUsage

	// Status, if not 200, makes this an error answer with the API's body
	// {"type":"error","error":{"type","message","details"}} built from the
	// Error* fields (unless Body is set). ErrorType defaults to the type
	// the API uses for Status (AnthropicErrorType).
	Status       int
	ErrorType    string
	ErrorMessage string
	// ErrorCode, if set, is sent as error.details.error_code.
	ErrorCode string
	// RetryAfter is sent verbatim as the Retry-After header, if set.
	RetryAfter string
	// Header holds extra response headers.
	Header http.Header

	// Body, if not nil, is sent verbatim (with Status, default 200) instead
	// of an encoded answer.
	Body []byte
	// Truncate sends only the first half of the body while declaring its
	// full length, so the client sees an unexpected EOF.
	Truncate bool
	// Hangup closes the connection without sending any response.
	Hangup bool
	// Delay waits before answering; the wait ends early if the client goes
	// away.
	Delay time.Duration
	// Chunking cuts the answer to a streamed request ("stream":true); nil
	// means AnthropicServerConfig.Chunking.
	Chunking *Chunking
}

// AnthropicToolUse is a tool_use block of a scripted answer. An empty ID is
// generated; an empty Input is sent as {}.
type AnthropicToolUse struct {
	ID    string
	Name  string
	Input json.RawMessage
}

// AnthropicUsage is the usage object of a Messages API answer.
type AnthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// AnthropicBlock is a content block, of a request (system, messages) or of
// an answer: text, tool_use, tool_result, or any other type with its
// fields left out.
type AnthropicBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// ToolUseID, Content and IsError are a tool_result's: the call it
	// answers, its content (a string or an array of blocks) and whether
	// the call failed.
	ToolUseID    string                 `json:"tool_use_id,omitempty"`
	Content      json.RawMessage        `json:"content,omitempty"`
	IsError      bool                   `json:"is_error,omitempty"`
	CacheControl *AnthropicCacheControl `json:"cache_control,omitempty"`
	// Source is an image block's picture.
	Source *AnthropicImageSource `json:"source,omitempty"`
}

// AnthropicImageSource is an image block's source; Data arrives in
// base64 and is kept decoded.
type AnthropicImageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      []byte `json:"data"`
}

// AnthropicCacheControl is a block's cache_control breakpoint.
type AnthropicCacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// AnthropicMessage is one message of a request. Content given as a string
// is decoded as a single text block.
type AnthropicMessage struct {
	Role    string
	Content []AnthropicBlock
}

// Text returns the concatenated text of the message's text blocks.
func (m AnthropicMessage) Text() string {
	var b []byte
	for _, c := range m.Content {
		if c.Type == "text" {
			b = append(b, c.Text...)
		}
	}
	return string(b)
}

// Images returns the sources of the message's image blocks, in order.
func (m AnthropicMessage) Images() []AnthropicImageSource {
	var out []AnthropicImageSource
	for _, c := range m.Content {
		if c.Type == "image" && c.Source != nil {
			out = append(out, *c.Source)
		}
	}
	return out
}

// AnthropicTool is a tool definition of a request.
type AnthropicTool struct {
	Name         string                 `json:"name"`
	Description  string                 `json:"description,omitempty"`
	InputSchema  json.RawMessage        `json:"input_schema,omitempty"`
	Strict       *bool                  `json:"strict,omitempty"`
	CacheControl *AnthropicCacheControl `json:"cache_control,omitempty"`
}

// AnthropicToolChoice is the tool_choice of a request.
type AnthropicToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse *bool  `json:"disable_parallel_tool_use,omitempty"`
}

// AnthropicRequest is a decoded Messages API request body, plus what the
// server saw around it. A system prompt given as a string is decoded as a
// single text block.
type AnthropicRequest struct {
	Model       string
	MaxTokens   *int
	Temperature *float64
	TopP        *float64
	TopK        *int
	System      []AnthropicBlock
	Messages    []AnthropicMessage
	Tools       []AnthropicTool
	ToolChoice  *AnthropicToolChoice
	Stream      bool

	// Header is the request header as received.
	Header http.Header
	// Body is the raw request body.
	Body []byte
}

// anthBlocks decodes a string, null, or an array of content blocks.
type anthBlocks []AnthropicBlock

func (c *anthBlocks) UnmarshalJSON(data []byte) error {
	switch {
	case len(data) == 0 || data[0] == 'n':
		*c = nil
		return nil
	case data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*c = anthBlocks{{Type: "text", Text: s}}
		return nil
	}
	return json.Unmarshal(data, (*[]AnthropicBlock)(c))
}

type anthWireRequest struct {
	Model       string               `json:"model"`
	MaxTokens   *int                 `json:"max_tokens"`
	Temperature *float64             `json:"temperature"`
	TopP        *float64             `json:"top_p"`
	TopK        *int                 `json:"top_k"`
	System      anthBlocks           `json:"system"`
	Messages    []anthWireMessage    `json:"messages"`
	Tools       []AnthropicTool      `json:"tools"`
	ToolChoice  *AnthropicToolChoice `json:"tool_choice"`
	Stream      bool                 `json:"stream"`
}

type anthWireMessage struct {
	Role    string     `json:"role"`
	Content anthBlocks `json:"content"`
}

func decodeAnthropicRequest(body []byte) (*AnthropicRequest, error) {
	var w anthWireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, err
	}
	req := &AnthropicRequest{
		Model: w.Model, MaxTokens: w.MaxTokens, Temperature: w.Temperature, TopP: w.TopP, TopK: w.TopK,
		System: w.System, Messages: make([]AnthropicMessage, len(w.Messages)),
		Tools: w.Tools, ToolChoice: w.ToolChoice, Stream: w.Stream,
	}
	for i, m := range w.Messages {
		req.Messages[i] = AnthropicMessage{Role: m.Role, Content: m.Content}
	}
	return req, nil
}

// validate checks req as the API would, returning the message of its 400
// invalid_request_error, or "".
func (req *AnthropicRequest) validate(version string) string {
	switch {
	case req.Model == "":
		return "model: Field required"
	case req.MaxTokens == nil:
		return "max_tokens: Field required"
	case *req.MaxTokens < 0:
		return "max_tokens: Input should be greater than or equal to 0"
	case len(req.Messages) == 0:
		return "messages: Field required"
	}
	if version >= anthropicNoSamplingVersion {
		switch {
		case req.Temperature != nil:
			return "temperature: Extra inputs are not permitted"
		case req.TopP != nil:
			return "top_p: Extra inputs are not permitted"
		case req.TopK != nil:
			return "top_k: Extra inputs are not permitted"
		}
	}
	for i, b := range req.System {
		if b.Type != "text" || isBlankText(b.Text) {
			return fmt.Sprintf("system.%d: text content blocks must contain non-whitespace text", i)
		}
	}
	toolUses := map[string]bool{}
	for i, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		if len(m.Content) == 0 {
			return fmt.Sprintf("messages.%d: all messages must have non-empty content", i)
		}
		for j, b := range m.Content {
			if b.Type == "text" && isBlankText(b.Text) {
				return fmt.Sprintf("messages.%d.content.%d: text content blocks must contain non-whitespace text", i, j)
			}
			if b.Type == "image" {
				if msg := checkImageBlock(m.Role, b); msg != "" {
					return fmt.Sprintf("messages.%d.content.%d.image.source: %s", i, j, msg)
				}
			}
			if b.Type == "tool_use" {
				if toolUses[b.ID] {
					return fmt.Sprintf("messages.%d.content.%d: `tool_use` ids must be unique", i, j)
				}
				toolUses[b.ID] = true
			}
		}
		if msg := checkToolPairs(req.Messages, i); msg != "" {
			return msg
		}
	}
	names := make(map[string]bool, len(req.Tools))
	for i, t := range req.Tools {
		var schema struct {
			Type string `json:"type"`
		}
		if t.Name == "" || names[t.Name] {
			return fmt.Sprintf("tools.%d.name: tool names must be present and unique", i)
		}
		if json.Unmarshal(t.InputSchema, &schema) != nil || schema.Type != "object" {
			return fmt.Sprintf("tools.%d.input_schema.type: Field required to be 'object'", i)
		}
		names[t.Name] = true
	}
	if tc := req.ToolChoice; tc != nil {
		switch {
		case len(req.Tools) == 0 && tc.Type != "none":
			return "tool_choice: tool_choice may only be specified while providing tools"
		case tc.Type == "tool" && !names[tc.Name]:
			return fmt.Sprintf("tool_choice.name: tool %q not found in tools", tc.Name)
		case tc.Type != "auto" && tc.Type != "any" && tc.Type != "tool" && tc.Type != "none":
			return "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'"
		}
	}
	return ""
}

// checkToolPairs checks message i's tool blocks as the API does: a
// tool_use must be answered by a tool_result in the next message, which
// holds its tool_result blocks before anything else, and a tool_result
// must answer a tool_use of the message before.
func checkToolPairs(msgs []AnthropicMessage, i int) string {
	m := msgs[i]
	asked := map[string]bool{}
	if i > 0 && msgs[i-1].Role == "assistant" {
		for _, b := range msgs[i-1].Content {
			if b.Type == "tool_use" {
				asked[b.ID] = true
			}
		}
	}
	answered := map[string]bool{}
	for j, b := range m.Content {
		switch b.Type {
		case "tool_use":
			if m.Role != "assistant" || b.ID == "" || b.Name == "" {
				return fmt.Sprintf("messages.%d.content.%d: tool_use blocks need an id and a name and belong to assistant messages", i, j)
			}
			var input map[string]json.RawMessage
			if json.Unmarshal(b.Input, &input) != nil || input == nil {
				return fmt.Sprintf("messages.%d.content.%d.tool_use.input: Input should be a valid dictionary", i, j)
			}
		case "tool_result":
			switch {
			case m.Role != "user":
				return fmt.Sprintf("messages.%d.content.%d: tool_result blocks belong to user messages", i, j)
			case !asked[b.ToolUseID]:
				return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. "+
					"Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
			case j > len(answered):
				return fmt.Sprintf("messages.%d: `tool_result` blocks must come first in the content, before any other block", i)
			}
			answered[b.ToolUseID] = true
		}
	}
	if len(asked) > len(answered) || (len(asked) > 0 && m.Role != "user") {
		var missing []string
		for id := range asked {
			if !answered[id] {
				missing = append(missing, id)
			}
		}
		slices.Sort(missing)
		return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
			"Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(missing, ", "))
	}
	return ""
}

// checkImageBlock checks an image block as the API does for base64
// sources: in a user message, of a media type it takes, with data.
func checkImageBlock(role string, b AnthropicBlock) string {
	switch src := b.Source; {
	case role != "user":
		return "image blocks belong to user messages"
	case src == nil || src.Type != "base64":
		return "Input tag does not match any of the expected tags: 'base64', 'url'"
	case !slices.Contains([]string{"image/jpeg", "image/png", "image/gif", "image/webp"}, src.MediaType):
		return "media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"
	case len(src.Data) == 0:
		return "data: the image data is empty"
	}
	return ""
}

// isBlankText reports whether s has nothing but the whitespace the API
// does not count as text.
func isBlankText(s string) bool { return strings.Trim(s, " \t\n\r") == "" }

// AnthropicServer is a loopback fake of the Anthropic Messages API. It
// answers POST /v1/messages from a queue of scripted replies (then from
// AnthropicServerConfig.Respond) and records the decoded requests.
//
// It checks requests as the API does: a wrong x-api-key gets a 401
// authentication_error, a missing or other anthropic-version, and a body
// the API would reject (no model, max_tokens or messages, blank text
// blocks, unknown roles, sampling parameters on an API version without
// them, a tool_use id used twice in the conversation, a tool_choice naming
// no offered tool), a 400 invalid_request_error;
// such requests are recorded but take no scripted reply. Malformed requests
// (wrong path or method, undecodable body) get a 404, 405 or 400 and are
// counted but not recorded.
//
// All methods are safe for concurrent use.
type AnthropicServer struct {
	// URL is the base URL clients use; requests go to URL + "/v1/messages".
	URL string

	cfg AnthropicServerConfig
	ts  *httptest.Server
	seq atomic.Int64
	script[*AnthropicRequest, AnthropicReply]
	cache promptCache // guarded by script.mu
}

// NewAnthropicServer starts an AnthropicServer on a loopback port. Call
// Close when done.
func NewAnthropicServer(cfg AnthropicServerConfig) *AnthropicServer {
	s := &AnthropicServer{cfg: cfg}
	s.skipRecording = cfg.SkipRecording
	s.ts = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.ts.URL
	return s
}

// Close shuts the server down, blocking until outstanding requests finish.
func (s *AnthropicServer) Close() { s.ts.Close() }

// Client returns an http.Client configured for the server.
func (s *AnthropicServer) Client() *http.Client { return s.ts.Client() }

// anthropicScriptExhausted is the answer once the script and
// AnthropicServerConfig.Respond are out of replies.
var anthropicScriptExhausted = AnthropicReply{Status: http.StatusInternalServerError,
	ErrorCode: "llmtest_script_exhausted", ErrorMessage: "llmtest: no scripted reply left"}

func (s *AnthropicServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.count.Add(1)
	if r.URL.Path != AnthropicMessagesPath {
		s.writeError(w, http.StatusNotFound, "not_found_error", "Not found: "+r.URL.Path, "")
		return
	}
	if r.Method != http.MethodPost {
		s.writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "Method Not Allowed", "")
		return
	}
	if s.cfg.APIKey != "" && r.Header.Get("X-Api-Key") != s.cfg.APIKey {
		s.writeError(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key", "")
		return
	}
	version := r.Header.Get("Anthropic-Version")
	switch {
	case version == "":
		s.writeError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required", "")
		return
	case s.cfg.APIVersion != "" && version != s.cfg.APIVersion:
		s.writeError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: unexpected value "+strconv.Quote(version), "")
		return
	}
	req, body, err := readRequest(r, decodeAnthropicRequest)
	if err != nil {
		s.writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error(), "")
		return
	}
	if !s.cfg.SkipRecording {
		req.Header = r.Header.Clone()
		req.Body = body
	}
	if invalid := req.validate(version); invalid != "" {
		s.record(req)
		s.writeError(w, http.StatusBadRequest, "invalid_request_error", invalid, "")
		return
	}
	reply := s.take(req, s.cfg.Respond, anthropicScriptExhausted)
	s.record(req)
	s.answer(w, r, req, &reply)
}

func (s *AnthropicServer) answer(w http.ResponseWriter, r *http.Request, req *AnthropicRequest, reply *AnthropicReply) {
	if reply.Delay > 0 && wait.Sleep(r.Context(), reply.Delay) != nil {
		return
	}
	if reply.Hangup {
		closeConnection(w, false)
		return
	}
	setHeaders(w.Header(), reply.Header, reply.RetryAfter)
	status := cmp.Or(reply.Status, http.StatusOK)
	id := s.seq.Add(1)
	w.Header().Set("Request-Id", "req_llmtest_"+strconv.FormatInt(id, 10))
	if s.cfg.PromptCache && reply.Usage == nil && status == http.StatusOK && reply.Body == nil {
		s.mu.Lock()
		in, read, created := s.cache.usage(req)
		s.mu.Unlock()
		out := len(reply.Text) / 4
		for _, tu := range reply.ToolUses {
			out += len(tu.Input) / 4
		}
		reply.Usage = &AnthropicUsage{InputTokens: in, CacheReadInputTokens: read, CacheCreationInputTokens: created, OutputTokens: out + 1}
	}
	chunking := cmp.Or(reply.Chunking, &s.cfg.Chunking)
	var body []byte
	switch {
	case reply.Body != nil && req.Stream && status == http.StatusOK:
		writeStream(w, r, [][]byte{reply.Body}, chunking)
		return
	case reply.Body != nil:
		body = reply.Body
	case status != http.StatusOK:
		typ := cmp.Or(reply.ErrorType, AnthropicErrorType(status))
		body = anthropicErrorBody(typ, reply.ErrorMessage, reply.ErrorCode, id)
	case req.Stream:
		m := anthropicMessage(req, reply, id)
		writeStream(w, r, anthropicEvents(&m, reply, chunking), chunking)
		return
	default:
		body = anthropicMessageBody(req, reply, id)
	}
	writeBody(w, status, body, reply.Truncate)
}

// AnthropicErrorType returns the error type the Messages API sends with an
// HTTP status: invalid_request_error (400 and other 4xx),
// authentication_error (401), billing_error (402), permission_error (403),
// not_found_error (404), request_too_large (413), rate_limit_error (429),
// timeout_error (504), overloaded_error (529) and api_error (other 5xx).
func AnthropicErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

type anthWireMessageOut struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []AnthropicBlock `json:"content"`
	StopReason   string           `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        AnthropicUsage   `json:"usage"`
}

func anthropicMessageBody(req *AnthropicRequest, reply *AnthropicReply, id int64) []byte {
	m := anthropicMessage(req, reply, id)
	return anthMarshal(&m)
}

// anthropicMessage is the message a reply answers with.
func anthropicMessage(req *AnthropicRequest, reply *AnthropicReply, id int64) anthWireMessageOut {
	m := anthWireMessageOut{
		ID:         "msg_llmtest_" + strconv.FormatInt(id, 10),
		Type:       "message",
		Role:       "assistant",
		Model:      reply.Model,
		Content:    reply.Content,
		StopReason: reply.StopReason,
	}
	if m.Model == "" {
		m.Model = req.Model
	}
	if m.Content == nil {
		m.Content = make([]AnthropicBlock, 0, 1+len(reply.ToolUses))
		if reply.Text != "" {
			m.Content = append(m.Content, AnthropicBlock{Type: "text", Text: reply.Text})
		}
		for i, tu := range reply.ToolUses {
			b := AnthropicBlock{Type: "tool_use", ID: tu.ID, Name: tu.Name, Input: tu.Input}
			if b.ID == "" {
				b.ID = fmt.Sprintf("toolu_llmtest_%d_%d", id, i)
			}
			if len(b.Input) == 0 {
				b.Input = json.RawMessage("{}")
			}
			m.Content = append(m.Content, b)
		}
	}
	if m.StopReason == "" {
		m.StopReason = "end_turn"
		for _, b := range m.Content {
			if b.Type == "tool_use" {
				m.StopReason = "tool_use"
			}
		}
	}
	if reply.Usage != nil {
		m.Usage = *reply.Usage
	} else {
		in, out := 0, 0
		for _, b := range req.System {
			in += len(b.Text)
		}
		for _, msg := range req.Messages {
			for _, b := range msg.Content {
				in += len(b.Text)
			}
		}
		for _, b := range m.Content {
			out += len(b.Text) + len(b.Input)
		}
		m.Usage = AnthropicUsage{InputTokens: in/4 + 1, OutputTokens: out/4 + 1}
	}
	return m
}

type anthWireError struct {
	Type      string            `json:"type"`
	Error     anthWireErrorBody `json:"error"`
	RequestID string            `json:"request_id"`
}

type anthWireErrorBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Details *struct {
		ErrorCode string `json:"error_code"`
	} `json:"details,omitempty"`
}

// anthropicErrorBody encodes the API's error body.
func anthropicErrorBody(typ, message, code string, id int64) []byte {
	e := anthWireError{Type: "error", Error: anthWireErrorBody{Type: typ, Message: message},
		RequestID: "req_llmtest_" + strconv.FormatInt(id, 10)}
	if code != "" {
		e.Error.Details = &struct {
			ErrorCode string `json:"error_code"`
		}{code}
	}
	return anthMarshal(&e)
}

func anthMarshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("llmtest: encode anthropic answer: %v", err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func (s *AnthropicServer) writeError(w http.ResponseWriter, status int, typ, message, code string) {
	id := s.seq.Add(1)
	h := w.Header()
	h.Set("Request-Id", "req_llmtest_"+strconv.FormatInt(id, 10))
	if status == http.StatusUnauthorized || status == http.StatusBadRequest {
		h.Set("X-Should-Retry", "false")
	}
	writeBody(w, status, anthropicErrorBody(typ, message, code, id), false)
}
