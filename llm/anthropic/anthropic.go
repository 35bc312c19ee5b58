// Package anthropic is an llm.Provider for the Anthropic Messages API
// (POST /v1/messages), built on github.com/anthropics/anthropic-sdk-go/v2.
//
// It translates one llm.Request into one HTTP call and the answer, or the
// failure, back into an llm.Response or a classified *llm.Error. Both
// decision protocols are supported: ProtocolJSON forces a single "decision"
// tool whose input schema is the request's schema, ProtocolTools offers the
// request's tools and lets the model choose. A request with
// llm.Request.OnText is streamed (message stream events, see stream.go)
// under Config.Stream's limits; others are one plain call under
// Config.Timeout, their bytes the same as if streaming did not exist. The
// package does not retry, run tools, enable extended thinking or count
// tokens itself: retry and fallback belong to the caller, usage comes from
// the API.
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/textproto"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/arbiterhq/arbiter/internal/jsonstr"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/internal/wire"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultName    = "anthropic"
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultTimeout bounds a call that is not streamed: the whole answer
	// must arrive within it. Streamed calls are bounded by Config.Stream
	// instead.
	DefaultTimeout   = 60 * time.Second
	DefaultMaxTokens = 1024
	// DefaultAPIVersion is the anthropic-version header sent by default, the
	// version the SDK's types describe.
	DefaultAPIVersion = "2026-10-21"
	// LegacyAPIVersion is the previous API version. It still accepts the
	// sampling parameters that DefaultAPIVersion rejects (see
	// Config.APIVersion).
	LegacyAPIVersion = "2023-06-01"
)

// DecisionTool names the tool forced in ProtocolJSON: its input is the
// decision object.
const DecisionTool = "decision"

// decisionDescription describes DecisionTool to the model.
const decisionDescription = "Record your decision. Call this tool exactly once; its input is your complete answer."

// firstVersionWithoutSampling is the first API version that rejects
// temperature, top_p and top_k with a 400, even at default values.
const firstVersionWithoutSampling = "2026-10-21"

// Config configures a Provider. Zero fields take the documented defaults.
type Config struct {
	// Name is the provider name reported to the journal. Default
	// DefaultName.
	Name string
	// BaseURL is the API root, the part before "/v1/messages". Default
	// DefaultBaseURL.
	BaseURL string
	// APIKey is sent as the x-api-key header; empty sends none (a gateway
	// that adds its own credentials).
	APIKey string
	// Model is the model requested. Required.
	Model string
	// Protocol is how the model expresses its decision: llm.ProtocolJSON
	// (default) or llm.ProtocolTools. A request without Tools is always
	// answered in JSON.
	Protocol llm.Protocol
	// Timeout bounds each call that is not streamed, from sending the
	// request to reading the whole answer. Default DefaultTimeout.
	Timeout time.Duration
	// Stream bounds each streamed call (a request with OnText): the wait
	// for the first token, the longest silence between events and the
	// ceiling derived from max_tokens; zero fields take llm's defaults
	// (60 s, 30 s, 10 tokens/s).
	Stream llm.StreamLimits
	// NoStream says the endpoint (a gateway) cannot stream: requests with
	// OnText are then sent as plain calls (Streams reports false, and a
	// chain hands OnText the whole text at once).
	NoStream bool
	// Images says the model accepts images: a user message's
	// llm.Message.Images are sent as base64 image blocks. Without it they
	// are left out and the message's text stands alone.
	Images bool
	// HTTPClient carries the calls. Default: a client shared by all
	// providers of this package, with a connection pool sized for
	// concurrent calls (see SharedHTTPClient).
	HTTPClient *http.Client
	// MaxTokens is the max_tokens sent when llm.Request.MaxTokens is 0 (the
	// API requires one). Default DefaultMaxTokens.
	MaxTokens int
	// APIVersion is the anthropic-version header. Default
	// DefaultAPIVersion, which rejects sampling parameters, so
	// llm.Request.Temperature is not sent; with an earlier version such as
	// LegacyAPIVersion it is sent as temperature.
	APIVersion string
	// Headers are extra request headers, e.g. for a gateway or an
	// anthropic-beta flag. They may not set x-api-key, anthropic-version or
	// authorization: use APIKey and APIVersion.
	Headers map[string]string
}

// Provider completes requests against one model of the Anthropic Messages
// API. It is safe for concurrent use, makes exactly one HTTP call per
// Complete, and returns *llm.Error for every failure.
type Provider struct {
	name        string
	model       string
	apiKey      string
	protocol    llm.Protocol
	timeout     time.Duration
	stream      llm.StreamLimits
	noStream    bool
	images      bool // the model accepts images (Config.Images)
	maxTokens   int
	temperature bool // send llm.Request.Temperature
	client      *anthropic.Client
	// modelJSON, system, schemas and tools hold pre-encoded request parts;
	// sizeHint is the size of the last body, to allocate the next at once.
	modelJSON []byte
	system    wire.Cache[string, struct{}]
	schemas   wire.Cache[*llm.Schema, []byte]
	tools     wire.Cache[wire.ToolsKey, []llm.ToolDef]
	sizeHint  atomic.Int64
}

var _ llm.Provider = (*Provider)(nil)

var sharedClient = sync.OnceValue(wire.NewHTTPClient)

// SharedHTTPClient returns the client used when Config.HTTPClient is nil:
// one process-wide client whose transport keeps up to 128 idle connections
// per host, so concurrent calls reuse connections instead of redialing.
func SharedHTTPClient() *http.Client { return sharedClient() }

// New validates cfg, applies defaults and returns a Provider. It reads no
// environment variables (the SDK's ANTHROPIC_* variables included) and
// makes no network calls.
func New(cfg Config) (*Provider, error) {
	set := wire.Settings{Model: cfg.Model, Name: cfg.Name, BaseURL: cfg.BaseURL, Protocol: cfg.Protocol, Timeout: cfg.Timeout, Stream: cfg.Stream}
	if err := set.Check("anthropic", DefaultName, DefaultBaseURL, DefaultTimeout); err != nil {
		return nil, err
	}
	cfg.Name, cfg.BaseURL, cfg.Protocol, cfg.Timeout = set.Name, set.BaseURL, set.Protocol, set.Timeout
	switch {
	case cfg.MaxTokens == 0:
		cfg.MaxTokens = DefaultMaxTokens
	case cfg.MaxTokens < 0:
		return nil, fmt.Errorf("anthropic: new provider %s: negative max tokens %d", cfg.Name, cfg.MaxTokens)
	}
	if cfg.APIVersion == "" {
		cfg.APIVersion = DefaultAPIVersion
	}
	for k := range cfg.Headers {
		switch textproto.CanonicalMIMEHeaderKey(k) {
		case "X-Api-Key", "Anthropic-Version", "Authorization":
			return nil, fmt.Errorf("anthropic: new provider %s: header %q must be set with Config.APIKey or Config.APIVersion", cfg.Name, k)
		}
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = sharedClient()
	}

	// The client is built directly rather than through anthropic.NewClient,
	// which would read ANTHROPIC_* environment variables and profile files.
	// OpenTelemetry is switched off explicitly: left unset, the SDK reads
	// ANTHROPIC_OPEN_TELEMETRY on every call. The key goes in x-api-key, the
	// API's own header, rather than the SDK's bearer token.
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(0),
		option.WithoutOpenTelemetry(),
		option.WithMiddleware(wire.StripSDKHeaders),
		option.WithHeader("anthropic-version", cfg.APIVersion),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithHeader("x-api-key", cfg.APIKey))
	}
	for k, v := range cfg.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	return &Provider{
		name:        cfg.Name,
		model:       cfg.Model,
		apiKey:      cfg.APIKey,
		protocol:    cfg.Protocol,
		timeout:     cfg.Timeout,
		stream:      cfg.Stream.WithDefaults(),
		noStream:    cfg.NoStream,
		images:      cfg.Images,
		maxTokens:   cfg.MaxTokens,
		temperature: cfg.APIVersion < firstVersionWithoutSampling,
		client:      &anthropic.Client{Options: opts},
		modelJSON:   jsonstr.Append(nil, cfg.Model),
	}, nil
}

// Streams reports whether requests with OnText are streamed (not
// Config.NoStream).
func (p *Provider) Streams() bool { return !p.noStream }

// streamed reports whether req is sent as a stream.
func (p *Provider) streamed(req *llm.Request) bool { return req.OnText != nil && !p.noStream }

// Protocol returns the configured protocol (Config.Protocol).
func (p *Provider) Protocol() llm.Protocol { return p.protocol }

// Name returns the provider name from Config.Name.
func (p *Provider) Name() string { return p.name }

// Model returns the configured model (the answering model may name itself
// more exactly; see llm.Response.Model).
func (p *Provider) Model() string { return p.model }

// Complete sends req as one Messages API call, bounded by Config.Timeout
// and ctx.
//
// The request: every system message, in order, becomes a text block of the
// top-level system prompt, the last block carrying an ephemeral
// cache_control breakpoint so the API's prompt cache can reuse the stable
// prefix (tools and system). User and assistant messages keep their order;
// consecutive messages of one role are merged into one message with several
// text blocks, as the API wants alternating roles, and messages with only
// whitespace are left out (the API rejects empty text blocks). Nothing is
// added: a conversation whose first message is the assistant's is sent
// starting with that assistant turn, which the Messages API accepts. A
// request with no user or assistant content, an unknown role, or a schema
// or tool parameters that are not JSON objects is bad_request and is not
// sent. max_tokens is req.MaxTokens, or Config.MaxTokens when it is 0.
//
// ProtocolJSON (the default, and any request without Tools): with a
// schema, a single tool named DecisionTool whose input_schema is
// req.Schema.JSON (Strict when JSON is empty) is sent and forced with
// tool_choice {"type":"tool"}; the Response's Text is that tool call's input
// as compact JSON. Without a schema no tool is sent and Text is the
// answer's text. ProtocolTools with Tools: req.Tools are offered with
// req.ToolChoice as tool_choice (auto, any for required, none, or the named
// tool) and parallel tool use off unless req.ParallelToolCalls; Text is
// the answer's text blocks concatenated and ToolCalls its tool_use blocks.
//
// The transcript: an assistant message's ToolCalls follow its text as
// tool_use blocks, and RoleTool messages become tool_result blocks
// (is_error with IsError) of a user message, merged with the results and
// user text that follow. A transcript llm.CheckMessages refuses, or a tool
// choice naming no offered tool, is bad_request and is not sent.
//
// On success the Response carries the model the API named (the configured
// one if it named none), the stop_reason as FinishReason, and usage:
// InputTokens counts all input (input_tokens plus cache writes and cache
// reads), CachedInputTokens the cache reads.
//
// Every failure is an *llm.Error naming the provider and configured model,
// never containing the API key. Answers with an error status wrap an
// *APIError and map, in this order:
//
//   - 401 (authentication_error): auth
//   - billing_error with any status, 402, a billing or spend-limit
//     error_code (enforced_spend_limit_reached on a 429 included), or a 400
//     or 403 whose message is about credit or billing ("Your credit
//     balance is too low"): billing
//   - 403 (permission_error), error_code organization_on_hold: auth
//   - 429 (rate_limit_error): rate_limited
//   - 408, 409 and 5xx (500 api_error, 502, 503, 504 timeout_error, 529
//     overloaded_error): transient
//   - 400 (invalid_request_error), 404 (not_found_error, e.g. an unknown
//     model), 413 (request_too_large) and other 4xx: bad_request
//
// RetryAfter is set for rate_limited and transient answers from
// retry-after-ms or Retry-After (seconds or an HTTP date). An error object
// in a 2xx body maps by its type alone. Without an error status: the end of
// ctx is canceled; Config.Timeout, network errors (refused, reset), a
// connection closed early and a truncated or empty body are transient; a
// body that is not a JSON message (bad syntax, another content type) is
// bad_response; an answer with stop_reason "refusal" is content_policy; an
// answer without usable content (in ProtocolJSON with a schema no decision
// tool call, or one cut off at max_tokens; otherwise no text and no tool
// call) is bad_response.
//
// With req.OnText (and not Config.NoStream) the call is streamed and held
// to Config.Stream instead of Config.Timeout; the Response is the same, and
// a stream that breaks, carries an error event or passes a limit fails as
// stream.go says.
func (p *Provider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	protocol, forced := p.protocolFor(&req)
	body, err := p.encodeBody(&req, protocol, forced)
	if err != nil {
		return llm.Response{}, err
	}
	if p.streamed(&req) {
		return p.completeStreamed(ctx, &req, body, protocol, forced)
	}

	callCtx, cancel := wire.CallContext(ctx, p.timeout)
	defer cancel()
	var (
		httpResp *http.Response
		msg      message
	)
	// The answer is decoded into message with plain encoding/json rather
	// than into anthropic.Message, whose decoder keeps per-field metadata
	// this package has no use for.
	err = p.client.Post(callCtx, "v1/messages", body, &msg, option.WithResponseInto(&httpResp))
	if err != nil {
		return llm.Response{}, p.classify(ctx, callCtx, httpResp, err)
	}
	return p.response(&msg, protocol, forced)
}

// protocolFor returns the protocol that answers req and whether the
// decision tool is forced (ProtocolJSON with a schema).
func (p *Provider) protocolFor(req *llm.Request) (llm.Protocol, bool) {
	if p.protocol == llm.ProtocolTools && len(req.Tools) > 0 {
		return llm.ProtocolTools, false
	}
	return llm.ProtocolJSON, req.Schema != nil
}

// message is the part of a Messages API answer that Complete uses.
type message struct {
	Type       string         `json:"type"`
	Model      string         `json:"model"`
	Content    []contentBlock `json:"content"`
	StopReason string         `json:"stop_reason"`
	Usage      usage          `json:"usage"`
	// Error is set when a 2xx body is an error object, as streamed errors
	// are.
	Error *errorObject `json:"error"`
}

// usage is the usage object of an answer (and of stream events).
type usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// errorObject is the error member of an error body or event.
type errorObject struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// contentBlock is one block of an answer's content. Blocks other than text
// and tool_use (thinking, redacted_thinking, server tools) are ignored.
type contentBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

func (p *Provider) response(msg *message, protocol llm.Protocol, forced bool) (llm.Response, error) {
	if msg.Error != nil || msg.Type == "error" {
		ae := &APIError{Status: 0}
		if msg.Error != nil {
			ae.Type, ae.Message = msg.Error.Type, wire.Redact(msg.Error.Message, p.apiKey)
		}
		return llm.Response{}, p.apiError(ae, nil)
	}
	if msg.StopReason == "refusal" {
		m := "model refused (stop_reason refusal)"
		if t := answerText(msg); t != "" {
			m += ": " + wire.Redact(truncate(t, 200), p.apiKey)
		}
		return llm.Response{}, p.newError(llm.ErrContentPolicy, m, nil)
	}
	resp := llm.Response{
		Protocol:     protocol,
		Provider:     p.name,
		Model:        msg.Model,
		FinishReason: msg.StopReason,
		Usage: llm.Usage{
			InputTokens:       msg.Usage.InputTokens + msg.Usage.CacheCreationInputTokens + msg.Usage.CacheReadInputTokens,
			OutputTokens:      msg.Usage.OutputTokens,
			CachedInputTokens: msg.Usage.CacheReadInputTokens,
		},
	}
	if resp.Model == "" {
		resp.Model = p.model
	}

	if forced {
		if msg.StopReason == "max_tokens" {
			return llm.Response{}, p.newError(llm.ErrBadResponse, "decision cut off at max_tokens", nil)
		}
		for i := range msg.Content {
			b := &msg.Content[i]
			if b.Type == "tool_use" && b.Name == DecisionTool {
				input, err := compactInput(b.Input)
				if err != nil {
					return llm.Response{}, p.newError(llm.ErrBadResponse, "decision tool input is not JSON", err)
				}
				resp.Text = string(input)
				return resp, nil
			}
		}
		return llm.Response{}, p.newError(llm.ErrBadResponse,
			fmt.Sprintf("answer has no %s tool call (stop_reason %q)", DecisionTool, msg.StopReason), nil)
	}

	var text strings.Builder
	for i := range msg.Content {
		b := &msg.Content[i]
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			if protocol != llm.ProtocolTools {
				continue
			}
			input, err := compactInput(b.Input)
			if err != nil {
				return llm.Response{}, p.newError(llm.ErrBadResponse, "tool call "+b.Name+": input is not JSON", err)
			}
			resp.ToolCalls = append(resp.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: input})
		}
	}
	resp.Text = text.String()
	if resp.Text == "" && len(resp.ToolCalls) == 0 {
		return llm.Response{}, p.newError(llm.ErrBadResponse,
			fmt.Sprintf("answer has no content (stop_reason %q)", msg.StopReason), nil)
	}
	return resp, nil
}

// answerText returns the concatenated text blocks of msg.
func answerText(msg *message) string {
	var b strings.Builder
	for i := range msg.Content {
		if msg.Content[i].Type == "text" {
			b.WriteString(msg.Content[i].Text)
		}
	}
	return b.String()
}

// truncate shortens s to at most n runes, marking a cut with "...".
func truncate(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "..."
		}
		i++
	}
	return s
}

// compactInput returns a tool call's input as compact JSON; a missing or
// null input is the empty object.
func compactInput(in json.RawMessage) (json.RawMessage, error) {
	if len(in) == 0 || string(in) == "null" {
		return json.RawMessage("{}"), nil
	}
	var buf bytes.Buffer
	buf.Grow(len(in))
	if err := json.Compact(&buf, in); err != nil {
		return nil, err
	}
	return json.RawMessage(buf.Bytes()), nil
}

func (p *Provider) newError(kind llm.ErrorKind, msg string, err error) *llm.Error {
	return &llm.Error{Kind: kind, Provider: p.name, Model: p.model, Message: msg, Err: err}
}
