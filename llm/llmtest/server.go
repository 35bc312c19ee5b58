package llmtest

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/arbiterhq/arbiter/internal/wait"
)

// CompletionsPath is the only path Server answers.
const CompletionsPath = "/v1/chat/completions"

// ServerConfig configures a Server. The zero value accepts any caller,
// records every request and answers HTTP 500 once the script is empty.
type ServerConfig struct {
	// APIKey, if set, must arrive as "Authorization: Bearer <APIKey>" (or
	// as AuthHeader says); other requests get a 401 with an OpenAI-style
	// error body.
	APIKey string
	// AuthHeader names the header that must carry APIKey. Empty or
	// "Authorization" (any case) means "Authorization: Bearer <APIKey>";
	// any other name, e.g. "api-key", means the raw key in that header.
	AuthHeader string
	// Respond answers requests once the queue of Enqueue'd replies is empty.
	// It is called concurrently. Nil means an HTTP 500 error with code
	// "llmtest_script_exhausted".
	Respond func(*ChatRequest) HTTPReply
	// SkipRecording stops Server from keeping the decoded requests (Count
	// still counts them), so long benchmarks run in constant memory.
	SkipRecording bool
	// Chunking cuts streamed answers of replies that set none; the zero
	// value is one write per event, without delay.
	Chunking Chunking
}

// HTTPReply scripts one answer of Server. The zero value is a 200 with an
// empty message content.
type HTTPReply struct {
	// Content is the assistant message content of a successful answer.
	// With ToolCalls, an empty Content is sent as null.
	Content string
	// ToolCalls are sent as the message's tool_calls, in order.
	ToolCalls []WireToolCall
	// Model is the model named in the answer; empty echoes the request's.
	Model string
	// FinishReason defaults to "tool_calls" with ToolCalls, else "stop".
	FinishReason string
	// Refusal, if set, is sent as the message's refusal field.
	Refusal string
	// Usage is reported as is; nil means a rough estimate from the sizes of
	// the prompt and the answer.
	Usage *WireUsage
	// CachedTokens, if not zero, is reported as
	// usage.prompt_tokens_details.cached_tokens.
	CachedTokens int
	// NoChoices sends an empty choices array.
	NoChoices bool

	// Status, if not 200, makes this an error answer with an OpenAI-style
	// body {"error":{"message","type","code","param"}} built from the
	// Error* fields (unless Body is set).
	Status       int
	ErrorMessage string
	ErrorType    string
	ErrorCode    string
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
	// Reset aborts the connection with a TCP reset (RST) without sending
	// any response, so the client sees "connection reset by peer".
	Reset bool
	// Delay waits before answering; the wait ends early if the client goes
	// away.
	Delay time.Duration
	// Chunking cuts the answer to a streamed request ("stream":true); nil
	// means ServerConfig.Chunking.
	Chunking *Chunking
}

// WireUsage is the usage object of a Chat Completions answer.
type WireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// WireToolCall is one tool call of a scripted answer, sent as
// {"id","type":"function","function":{"name","arguments"}}.
type WireToolCall struct {
	// ID defaults to a generated "call_llmtest_<n>".
	ID   string
	Name string
	// Arguments is sent verbatim as the arguments string, whether or not
	// it holds valid JSON.
	Arguments string
}

// ChatRequest is a decoded Chat Completions request body, plus what the
// server saw around it.
type ChatRequest struct {
	Model               string          `json:"model"`
	Messages            []ChatMessage   `json:"messages"`
	ResponseFormat      *ResponseFormat `json:"response_format,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	MaxTokens           *int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int            `json:"max_completion_tokens,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
	// IncludeUsage is stream_options.include_usage: a streamed answer
	// ends with a usage chunk.
	IncludeUsage bool `json:"-"`
	// Tools are the offered tools; ToolChoice is tool_choice as sent (a
	// JSON string such as "auto", or an object); ParallelToolCalls is
	// parallel_tool_calls, nil when absent.
	Tools             []ChatTool      `json:"tools,omitempty"`
	ToolChoice        json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`

	// Header is the request header as received.
	Header http.Header `json:"-"`
	// Body is the raw request body.
	Body []byte `json:"-"`
}

// ChatMessage is one message of a request. Content given as an array of
// parts is flattened to the concatenation of its text parts; its
// image_url parts are Images.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Images are the message's image_url parts, in order.
	Images []ChatImage `json:"images,omitempty"`
	// ToolCalls are an assistant message's tool calls; ToolCallID is the
	// call a tool message answers.
	ToolCalls  []ChatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// ChatToolCall is one tool call of an assistant message in a request.
type ChatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// ChatTool is one element of a request's tools.
type ChatTool struct {
	Type     string       `json:"type"`
	Function ChatFunction `json:"function"`
}

// ChatFunction is the function of a ChatTool.
type ChatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type wireInMessage struct {
	Role       string         `json:"role"`
	Content    messageContent `json:"content"`
	ToolCalls  []ChatToolCall `json:"tool_calls"`
	ToolCallID string         `json:"tool_call_id"`
}

// ChatImage is one image_url part of a message: a data URL decoded into
// its media type and bytes.
type ChatImage struct {
	MediaType string `json:"media_type"`
	Data      []byte `json:"data"`
}

// messageContent decodes from a JSON string, null, or an array of content
// parts (whose text parts are concatenated, image_url parts decoded).
type messageContent struct {
	text   string
	images []ChatImage
}

func (c *messageContent) UnmarshalJSON(data []byte) error {
	switch {
	case len(data) == 0 || data[0] == 'n':
		*c = messageContent{}
		return nil
	case data[0] == '"':
		return json.Unmarshal(data, &c.text)
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL *struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(data, &parts); err != nil {
		return fmt.Errorf("message content: %w", err)
	}
	for i, p := range parts {
		switch p.Type {
		case "text":
			c.text += p.Text
		case "image_url":
			if p.ImageURL == nil {
				return fmt.Errorf("message content part %d: image_url part without image_url", i)
			}
			img, err := decodeDataURL(p.ImageURL.URL)
			if err != nil {
				return fmt.Errorf("message content part %d: %w", i, err)
			}
			c.images = append(c.images, img)
		default:
			return fmt.Errorf("message content part %d: unknown type %q", i, p.Type)
		}
	}
	return nil
}

// decodeDataURL reads a "data:<type>;base64,<data>" image URL; the fake
// fetches nothing, so any other URL is refused.
func decodeDataURL(url string) (ChatImage, error) {
	head, payload, ok := strings.Cut(url, ",")
	mediaType, isBase64 := strings.CutSuffix(strings.TrimPrefix(head, "data:"), ";base64")
	if !ok || !strings.HasPrefix(head, "data:image/") || !isBase64 {
		return ChatImage{}, fmt.Errorf("image url is not a base64 data URL of an image: %.40q", url)
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil || len(data) == 0 {
		return ChatImage{}, fmt.Errorf("image data URL: invalid base64 data")
	}
	return ChatImage{MediaType: mediaType, Data: data}, nil
}

func decodeRequest(body []byte) (*ChatRequest, error) {
	req := &ChatRequest{}
	// The fields of ChatRequest decode as they are; messages and
	// stream_options, shadowing them, need their wire forms.
	var w struct {
		*ChatRequest
		Messages      []wireInMessage `json:"messages"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	w.ChatRequest = req
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, err
	}
	req.IncludeUsage = w.StreamOptions != nil && w.StreamOptions.IncludeUsage
	req.Messages = make([]ChatMessage, len(w.Messages))
	for i, m := range w.Messages {
		req.Messages[i] = ChatMessage{Role: m.Role, Content: m.Content.text, Images: m.Content.images, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID}
	}
	return req, nil
}

// validate checks the tool transcript and tool_choice of req as the API
// does, returning the message and param of its 400 invalid_request_error,
// or "".
func (req *ChatRequest) validate() (message, param string) {
	var open []string // calls of the last assistant message not yet answered
	for i, m := range req.Messages {
		at := func() string { return fmt.Sprintf("messages.[%d].role", i) }
		if m.Role != "tool" && len(open) > 0 {
			return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
				"The following tool_call_ids did not have response messages: " + strings.Join(open, ", "), at()
		}
		if len(m.Images) > 0 && m.Role != "user" {
			return "Invalid content: image_url parts are only allowed in messages with role 'user'.", fmt.Sprintf("messages.[%d].content", i)
		}
		switch m.Role {
		case "assistant":
			open = open[:0]
			for _, c := range m.ToolCalls {
				if c.ID == "" || c.Function.Name == "" || c.Type != "function" {
					return "Invalid tool call: id, type 'function' and function.name are required.", fmt.Sprintf("messages.[%d].tool_calls", i)
				}
				open = append(open, c.ID)
			}
		case "tool":
			k := slices.Index(open, m.ToolCallID)
			if k < 0 {
				return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", at()
			}
			open = slices.Delete(open, k, k+1)
		case "system", "user", "developer":
		default:
			return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", m.Role), at()
		}
	}
	if len(open) > 0 {
		return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
			"The following tool_call_ids did not have response messages: " + strings.Join(open, ", "), "messages"
	}
	if len(req.ToolChoice) == 0 {
		return "", ""
	}
	if len(req.Tools) == 0 {
		return "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", "tool_choice"
	}
	var named struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	switch string(req.ToolChoice) {
	case `"auto"`, `"required"`, `"none"`:
		return "", ""
	}
	if json.Unmarshal(req.ToolChoice, &named) != nil || named.Function.Name == "" {
		return "Invalid value for 'tool_choice': expected 'auto', 'required', 'none' or a named function.", "tool_choice"
	}
	for _, t := range req.Tools {
		if t.Function.Name == named.Function.Name {
			return "", ""
		}
	}
	return fmt.Sprintf("Invalid value for 'tool_choice': function '%s' not found in 'tools'.", named.Function.Name), "tool_choice"
}

// ResponseFormat is the response_format of a request.
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema is the json_schema member of a response_format.
type JSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema,omitempty"`
	Strict *bool           `json:"strict,omitempty"`
}

// Server is a loopback fake of an OpenAI-compatible Chat Completions API.
// It answers POST /v1/chat/completions from a queue of scripted replies
// (then from ServerConfig.Respond) and records the decoded requests.
//
// It checks the tool transcript as the API does: an assistant message's
// tool calls must each be answered by the tool messages right after it, a
// tool message must answer such a call, and a tool_choice needs tools and
// may only name an offered one. Such requests get a 400
// invalid_request_error, are recorded and take no scripted reply.
//
// All methods are safe for concurrent use. Malformed requests (wrong path or
// method, undecodable body) get a 400 or 404 error body and are counted but
// not recorded.
type Server struct {
	// URL is the base URL clients use, ending in "/v1".
	URL string

	cfg ServerConfig
	ts  *httptest.Server
	script[*ChatRequest, HTTPReply]
}

// NewServer starts a Server on a loopback port. Call Close when done.
func NewServer(cfg ServerConfig) *Server {
	s := &Server{cfg: cfg}
	s.skipRecording = cfg.SkipRecording
	s.ts = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.ts.URL + "/v1"
	return s
}

// Close shuts the server down, blocking until outstanding requests finish.
func (s *Server) Close() { s.ts.Close() }

// Client returns an http.Client configured for the server.
func (s *Server) Client() *http.Client { return s.ts.Client() }

// scriptExhausted is the answer once the script and ServerConfig.Respond are
// out of replies.
var scriptExhausted = HTTPReply{Status: http.StatusInternalServerError, ErrorType: "server_error",
	ErrorCode: "llmtest_script_exhausted", ErrorMessage: "llmtest: no scripted reply left"}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.count.Add(1)
	if r.URL.Path != CompletionsPath {
		writeError(w, http.StatusNotFound, "unknown path "+r.URL.Path, "invalid_request_error", "unknown_url", "")
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "method not allowed", "invalid_request_error", "", "")
		return
	}
	if s.cfg.APIKey != "" && !s.authorized(r.Header) {
		writeError(w, http.StatusUnauthorized, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key", "")
		return
	}
	req, body, err := readRequest(r, decodeRequest)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), "invalid_request_error", "", "")
		return
	}
	if !s.cfg.SkipRecording {
		req.Header = r.Header.Clone()
		req.Body = body
	}
	if msg, param := req.validate(); msg != "" {
		s.record(req)
		writeError(w, http.StatusBadRequest, msg, "invalid_request_error", "", param)
		return
	}
	reply := s.take(req, s.cfg.Respond, scriptExhausted)
	s.record(req)
	s.answer(w, r, req, &reply)
}

// authorized reports whether h carries the configured API key.
func (s *Server) authorized(h http.Header) bool {
	name := s.cfg.AuthHeader
	if name == "" || strings.EqualFold(name, "Authorization") {
		return h.Get("Authorization") == "Bearer "+s.cfg.APIKey
	}
	return h.Get(name) == s.cfg.APIKey
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, req *ChatRequest, reply *HTTPReply) {
	if reply.Delay > 0 && wait.Sleep(r.Context(), reply.Delay) != nil {
		return
	}
	if reply.Hangup || reply.Reset {
		closeConnection(w, !reply.Hangup)
		return
	}
	setHeaders(w.Header(), reply.Header, reply.RetryAfter)
	status := cmp.Or(reply.Status, http.StatusOK)
	chunking := cmp.Or(reply.Chunking, &s.cfg.Chunking)
	var body []byte
	switch {
	case reply.Body != nil && req.Stream && status == http.StatusOK:
		writeStream(w, r, [][]byte{reply.Body}, chunking)
		return
	case reply.Body != nil:
		body = reply.Body
	case status != http.StatusOK:
		body = errorBody(reply.ErrorMessage, reply.ErrorType, reply.ErrorCode, "")
	case req.Stream:
		writeStream(w, r, chunkEvents(req, reply, chunking), chunking)
		return
	default:
		body = completionBody(req, reply)
	}
	writeBody(w, status, body, reply.Truncate)
}

// closeConnection takes the client connection from w and closes it
// without a response: with reset, by a TCP reset (RST) instead of FIN, so
// the client sees "connection reset by peer".
func closeConnection(w http.ResponseWriter, reset bool) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

type wireCompletion struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Choices []wireChoice    `json:"choices"`
	Usage   completionUsage `json:"usage"`
}

// completionUsage is WireUsage plus the cached part of the prompt.
type completionUsage struct {
	WireUsage
	PromptTokensDetails *promptTokensDetails `json:"prompt_tokens_details,omitempty"`
}

type promptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type wireChoice struct {
	Index        int         `json:"index"`
	Message      wireMessage `json:"message"`
	FinishReason string      `json:"finish_reason"`
}

type wireMessage struct {
	Role      string               `json:"role"`
	Content   *string              `json:"content"`
	Refusal   *string              `json:"refusal"`
	ToolCalls []completionToolCall `json:"tool_calls,omitempty"`
}

type completionToolCall struct {
	ID       string             `json:"id"`
	Type     string             `json:"type"`
	Function completionFunction `json:"function"`
}

type completionFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

var (
	completionSeq atomic.Int64
	toolCallSeq   atomic.Int64
)

func completionBody(req *ChatRequest, reply *HTTPReply) []byte {
	c := wireCompletion{
		ID:      "chatcmpl-llmtest-" + strconv.FormatInt(completionSeq.Add(1), 10),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   reply.Model,
		Choices: []wireChoice{},
	}
	if c.Model == "" {
		c.Model = req.Model
	}
	if !reply.NoChoices {
		ch := wireChoice{FinishReason: reply.FinishReason, Message: wireMessage{Role: "assistant"}}
		switch {
		case ch.FinishReason != "":
		case len(reply.ToolCalls) > 0:
			ch.FinishReason = "tool_calls"
		default:
			ch.FinishReason = "stop"
		}
		switch {
		case reply.Refusal != "":
			ch.Message.Refusal = &reply.Refusal
		case reply.Content != "" || len(reply.ToolCalls) == 0:
			ch.Message.Content = &reply.Content
		}
		for _, tc := range reply.ToolCalls {
			if tc.ID == "" {
				tc.ID = "call_llmtest_" + strconv.FormatInt(toolCallSeq.Add(1), 10)
			}
			ch.Message.ToolCalls = append(ch.Message.ToolCalls, completionToolCall{ID: tc.ID, Type: "function",
				Function: completionFunction{Name: tc.Name, Arguments: tc.Arguments}})
		}
		c.Choices = append(c.Choices, ch)
	}
	c.Usage = usageOf(req, reply)
	b, err := json.Marshal(&c)
	if err != nil {
		panic(fmt.Sprintf("llmtest: encode completion: %v", err))
	}
	return b
}

// usageOf is the usage a reply reports: its own, or an estimate from the
// sizes of the prompt and the answer.
func usageOf(req *ChatRequest, reply *HTTPReply) completionUsage {
	var u completionUsage
	if reply.Usage != nil {
		u.WireUsage = *reply.Usage
	} else {
		prompt := 0
		for _, m := range req.Messages {
			prompt += len(m.Content)
		}
		answer := len(reply.Content)
		for _, tc := range reply.ToolCalls {
			answer += len(tc.Name) + len(tc.Arguments)
		}
		u.WireUsage = WireUsage{PromptTokens: prompt/4 + 1, CompletionTokens: answer/4 + 1}
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	if reply.CachedTokens != 0 {
		u.PromptTokensDetails = &promptTokensDetails{CachedTokens: reply.CachedTokens}
	}
	return u
}

type wireError struct {
	Error wireErrorBody `json:"error"`
}

type wireErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Code    *string `json:"code"`
	Param   *string `json:"param"`
}

// errorBody encodes an OpenAI-style error body; empty code and param are
// sent as null, as the real API does.
func errorBody(message, typ, code, param string) []byte {
	e := wireError{Error: wireErrorBody{Message: message, Type: typ}}
	if code != "" {
		e.Error.Code = &code
	}
	if param != "" {
		e.Error.Param = &param
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&e); err != nil {
		panic(fmt.Sprintf("llmtest: encode error: %v", err))
	}
	return buf.Bytes()
}

func writeError(w http.ResponseWriter, status int, message, typ, code, param string) {
	writeBody(w, status, errorBody(message, typ, code, param), false)
}
