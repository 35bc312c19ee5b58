// Package openaicompat is an llm.Provider for OpenAI-compatible Chat
// Completions APIs (OpenAI, Fireworks, Mistral, xAI, Ollama, vLLM,
// OpenRouter, ...), on net/http alone.
//
// It translates one llm.Request into one HTTP call and the answer, or the
// failure, back into an llm.Response or a classified *llm.Error. The model
// decides either in JSON (structured output) or by native tool calling
// (Config.Protocol). A request with llm.Request.OnText is streamed
// (server-sent events, see stream.go) under Config.Stream's limits; others
// are one plain call under Config.Timeout, their bytes the same as if
// streaming did not exist. It does not retry, run tools or count tokens
// itself: retry and fallback belong to the caller, tool calls are only
// reported, usage comes from the API.
package openaicompat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/internal/jsonstr"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/internal/wire"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultName    = "openai"
	DefaultBaseURL = "https://api.openai.com/v1"
	// DefaultTimeout bounds a call that is not streamed: the whole answer
	// must arrive within it. Streamed calls are bounded by Config.Stream
	// instead.
	DefaultTimeout = 60 * time.Second
	// DefaultSchemaName names the output schema when llm.Schema.Name is
	// empty.
	DefaultSchemaName = "output"
)

// Config configures a Provider. Zero fields take the documented defaults.
type Config struct {
	// Name is the provider name reported to the journal, e.g. "openai",
	// "fireworks". Default DefaultName.
	Name string
	// BaseURL is the API root, the part before "/chat/completions".
	// Default DefaultBaseURL.
	BaseURL string
	// APIKey is sent in the AuthHeader header; empty sends no key (local
	// servers).
	APIKey string
	// AuthHeader names the header that carries APIKey. Empty or
	// "Authorization" (any case) sends "Authorization: Bearer <APIKey>";
	// any other name, e.g. "api-key" or "x-api-key", sends the raw key in
	// that header and no Authorization header.
	AuthHeader string
	// Model is the model requested. Required.
	Model string
	// Protocol is how the model is asked to decide: llm.ProtocolJSON, an
	// answer in JSON following llm.Request.Schema, sent per Output; or
	// llm.ProtocolTools, native tool calling over llm.Request.Tools. A
	// request without Tools is sent and answered in JSON under either.
	// Default llm.ProtocolJSON.
	Protocol llm.Protocol
	// Output says how a request's schema is sent in the JSON protocol.
	// Default llm.OutputJSONSchemaStrict.
	Output llm.OutputMode
	// Timeout bounds each call that is not streamed, from sending the
	// request to reading the whole answer. Default DefaultTimeout.
	Timeout time.Duration
	// Stream bounds each streamed call (a request with OnText): the wait
	// for the first token, the longest silence between chunks and the
	// ceiling derived from max_tokens; zero fields take llm's defaults
	// (60 s, 30 s, 10 tokens/s).
	Stream llm.StreamLimits
	// NoStream says the endpoint cannot stream: requests with OnText are
	// then sent as plain calls (Streams reports false, and a chain hands
	// OnText the whole text at once).
	NoStream bool
	// Images says the model accepts images: a user message's
	// llm.Message.Images are sent as image_url parts (data URLs). Without
	// it they are left out and the message's text stands alone.
	Images bool
	// HTTPClient carries the calls. Default: a client shared by all
	// providers of this package, with a connection pool sized for
	// concurrent calls (see SharedHTTPClient).
	HTTPClient *http.Client
	// Headers are extra request headers, e.g. for a gateway.
	Headers map[string]string
	// UseMaxCompletionTokens sends llm.Request.MaxTokens as
	// max_completion_tokens (newer OpenAI models) instead of max_tokens.
	UseMaxCompletionTokens bool
	// OmitParallelToolCalls leaves "parallel_tool_calls":false out of tool
	// requests, for endpoints and models that reject the field. The model
	// may then answer with several calls, all of which are reported.
	OmitParallelToolCalls bool
}

// Provider completes requests against one model of an OpenAI-compatible
// Chat Completions API. It is safe for concurrent use, makes exactly one
// HTTP call per Complete, and returns *llm.Error for every failure.
type Provider struct {
	name    string
	model   string
	apiKey  string
	output  llm.OutputMode
	timeout time.Duration
	maxComp bool
	// stream holds the limits of streamed calls; noStream is
	// Config.NoStream.
	stream   llm.StreamLimits
	noStream bool
	images   bool // the model accepts images (Config.Images)
	// protocol is the configured protocol; omitParallel is
	// Config.OmitParallelToolCalls.
	protocol     llm.Protocol
	omitParallel bool
	// http carries the calls: a POST of the encoded body to endpoint with
	// header (content type, authentication, configured headers).
	http     *http.Client
	endpoint string
	header   http.Header
	// streamHeader is header asking for server-sent events.
	streamHeader http.Header
	// modelJSON, messages, formats and tools hold pre-encoded request parts.
	modelJSON []byte
	messages  wire.Cache[string, struct{}]
	formats   wire.Cache[*llm.Schema, struct{}]
	tools     wire.Cache[wire.ToolsKey, []llm.ToolDef]
}

var _ llm.Provider = (*Provider)(nil)

var sharedClient = sync.OnceValue(wire.NewHTTPClient)

// SharedHTTPClient returns the client used when Config.HTTPClient is nil:
// one process-wide client whose transport keeps up to 128 idle connections
// per host, so concurrent calls reuse connections instead of redialing.
func SharedHTTPClient() *http.Client { return sharedClient() }

// New validates cfg, applies defaults and returns a Provider. It reads no
// environment variables and makes no network calls.
func New(cfg Config) (*Provider, error) {
	set := wire.Settings{Model: cfg.Model, Name: cfg.Name, BaseURL: cfg.BaseURL, Protocol: cfg.Protocol, Timeout: cfg.Timeout, Stream: cfg.Stream}
	if err := set.Check("openaicompat", DefaultName, DefaultBaseURL, DefaultTimeout); err != nil {
		return nil, err
	}
	cfg.Name, cfg.BaseURL, cfg.Protocol, cfg.Timeout = set.Name, set.BaseURL, set.Protocol, set.Timeout
	bearer := cfg.AuthHeader == "" || strings.EqualFold(cfg.AuthHeader, "Authorization")
	if !bearer && !validHeaderName(cfg.AuthHeader) {
		return nil, fmt.Errorf("openaicompat: new provider %s: auth header %q is not a valid header name", cfg.Name, cfg.AuthHeader)
	}
	switch cfg.Output {
	case "":
		cfg.Output = llm.OutputJSONSchemaStrict
	case llm.OutputJSONSchemaStrict, llm.OutputJSONSchema, llm.OutputJSONObject:
	default:
		return nil, fmt.Errorf("openaicompat: new provider %s: unknown output mode %q", cfg.Name, cfg.Output)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = sharedClient()
	}

	// Every request carries these headers, set once here: the call itself
	// is a plain POST of the body this package encodes.
	header := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}
	switch {
	case cfg.APIKey == "":
	case bearer:
		header.Set("Authorization", "Bearer "+cfg.APIKey)
	default:
		header.Set(cfg.AuthHeader, cfg.APIKey)
	}
	for k, v := range cfg.Headers {
		header.Set(k, v)
	}
	streamHeader := header.Clone()
	streamHeader.Set("Accept", "text/event-stream")
	return &Provider{
		name:         cfg.Name,
		model:        cfg.Model,
		apiKey:       cfg.APIKey,
		output:       cfg.Output,
		timeout:      cfg.Timeout,
		maxComp:      cfg.UseMaxCompletionTokens,
		stream:       cfg.Stream.WithDefaults(),
		noStream:     cfg.NoStream,
		images:       cfg.Images,
		streamHeader: streamHeader,
		protocol:     cfg.Protocol,
		omitParallel: cfg.OmitParallelToolCalls,
		http:         cfg.HTTPClient,
		endpoint:     strings.TrimRight(cfg.BaseURL, "/") + "/chat/completions",
		header:       header,
		modelJSON:    jsonstr.Append(nil, cfg.Model),
	}, nil
}

// validHeaderName reports whether s is an HTTP header name (an RFC 9110
// token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// Streams reports whether requests with OnText are streamed (not
// Config.NoStream).
func (p *Provider) Streams() bool { return !p.noStream }

// Protocol returns the configured protocol (Config.Protocol).
func (p *Provider) Protocol() llm.Protocol { return p.protocol }

// Name returns the provider name from Config.Name.
func (p *Provider) Name() string { return p.name }

// Model returns the configured model (the answering model may name itself
// more exactly; see llm.Response.Model).
func (p *Provider) Model() string { return p.model }

// Complete sends req as one Chat Completions call, bounded by
// Config.Timeout and ctx. On success the Response carries the first
// choice's content, the model the API named (the configured one if the API
// named none), its usage (with prompt_tokens_details.cached_tokens as
// CachedInputTokens) and finish reason.
//
// In the JSON protocol (Config.Protocol json, or a request without Tools)
// the request carries the schema as response_format, Response.Protocol is
// llm.ProtocolJSON and Text is the content. In the tools protocol
// (Config.Protocol tools and a request with Tools) the request carries the
// tools, req.ToolChoice as tool_choice ("auto", "required", "none" or the
// named function) and, unless req.ParallelToolCalls or
// Config.OmitParallelToolCalls, "parallel_tool_calls":false, and no
// response_format; Response.Protocol
// is llm.ProtocolTools, Text is the content (possibly empty) and ToolCalls
// the answer's tool calls in order. A call's Arguments is the JSON held in
// the API's arguments string; a string that is not valid JSON (e.g. cut
// short by max_tokens) is kept as a JSON string value, for the caller's
// validation to reject; empty or absent arguments are {}. The tool catalog
// is encoded once per []llm.ToolDef, found again by its first element's
// address and its length: treat a catalog as immutable once passed in.
//
// Every failure is an *llm.Error naming the provider and configured model,
// never containing the API key. Answers with an error status wrap an
// *APIError and map by status and error code or type:
// 401/403 auth, except a 403 whose code, type or message speaks of quota,
// billing, credit or payment, which is billing; 402 or a quota/billing
// code (insufficient_quota, billing_*, ...) on any 4xx billing; 429
// rate_limited; 400/404/413/422 and other 4xx bad_request, or
// content_policy for policy codes (content_filter,
// content_policy_violation, ...); 408, 409 and 5xx transient. RetryAfter
// is set for rate_limited and transient answers from retry-after-ms or
// Retry-After (seconds or an HTTP date). Without an error status: the end
// of ctx is canceled; Config.Timeout, network errors (refused, reset) and
// truncated answers (a body short of its Content-Length, or JSON that ends
// early) are transient; an otherwise undecodable body, no choices, or no
// content (and, in the tools protocol, no tool call) is bad_response,
// except a refusal or a content_filter finish, which are content_policy. A
// request the API cannot express (unknown role, schema without a document,
// a tool without a name, a tool name used twice, tool parameters that are
// not a JSON object, a tool transcript llm.CheckMessages refuses, a tool
// choice naming no offered tool) is bad_request and is not sent.
//
// With req.OnText (and not Config.NoStream) the call is streamed and held
// to Config.Stream instead of Config.Timeout; the Response is the same, and
// a stream that breaks, carries an error object or passes a limit fails as
// stream.go says.
//
// The transcript: an assistant message's ToolCalls go as its tool_calls
// (content null when it has no text), a RoleTool message as
// {"role":"tool","tool_call_id","content"}; IsError has no field in this
// API, so the content alone must say the call failed.
func (p *Provider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	tools := p.protocol == llm.ProtocolTools && len(req.Tools) > 0
	body, err := p.encodeBody(&req, tools)
	if err != nil {
		return llm.Response{}, err
	}
	defer releaseBody(body)
	if p.streamed(&req) {
		return p.completeStreamed(ctx, &req, body.Bytes(), tools)
	}

	callCtx, cancel := wire.CallContext(ctx, p.timeout)
	defer cancel()
	// The answer is decoded into completion with plain encoding/json: the
	// API's fields this package uses, content given as parts accepted.
	var cc completion
	if resp, err := p.post(callCtx, body.Bytes(), &cc); err != nil {
		return llm.Response{}, p.classify(ctx, callCtx, resp, err)
	}
	return p.response(&cc, tools)
}

// streamed reports whether req is sent as a stream.
func (p *Provider) streamed(req *llm.Request) bool { return req.OnText != nil && !p.noStream }

// post sends body and decodes a 2xx answer into out. Any other status is
// an *APIError (with the response, for its headers); a failed exchange or
// an undecodable answer is the transport's error.
func (p *Provider) post(ctx context.Context, body []byte, out *completion) (*http.Response, error) {
	resp, err := p.send(ctx, body, p.header)
	if err != nil {
		return resp, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return resp, fmt.Errorf("decode chat completion: %w", err)
	}
	return resp, nil
}

// send posts body with header and returns a 2xx answer with its body
// still to read. Any other status is an *APIError, its body read and
// closed.
func (p *Provider) send(ctx context.Context, body []byte, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	// Every request shares the provider's headers: nothing on the way
	// writes them.
	req.Header = header
	resp, err := wire.Send(p.http, req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return resp, errorBody(resp)
	}
	return resp, nil
}

// completion is the part of a Chat Completions answer that Complete uses.
type completion struct {
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   usage    `json:"usage"`
}

// usage is the usage object of an answer (and of a stream's last chunk).
type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// choice is one choice of an answer.
type choice struct {
	Message struct {
		Content   messageContent `json:"content"`
		Refusal   string         `json:"refusal"`
		ToolCalls []wireToolCall `json:"tool_calls"`
	} `json:"message"`
	FinishReason string `json:"finish_reason"`
}

// messageContent is an answer's message content: a string, null, or an
// array of parts whose "text" parts are concatenated (some compatible APIs
// answer with parts, e.g. reasoning plus text).
type messageContent string

func (c *messageContent) UnmarshalJSON(data []byte) error {
	switch {
	case len(data) == 0 || data[0] == 'n':
		*c = ""
		return nil
	case data[0] == '"':
		return json.Unmarshal(data, (*string)(c))
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(data, &parts); err != nil {
		return fmt.Errorf("message content: %w", err)
	}
	var b strings.Builder
	for _, part := range parts {
		if part.Type == "text" {
			b.WriteString(part.Text)
		}
	}
	*c = messageContent(b.String())
	return nil
}

// response converts a decoded answer; tools says the request was sent for
// native tool calling.
func (p *Provider) response(cc *completion, tools bool) (llm.Response, error) {
	if len(cc.Choices) == 0 {
		return llm.Response{}, p.newError(llm.ErrBadResponse, "answer has no choices", nil)
	}
	ch := &cc.Choices[0]
	protocol := llm.ProtocolJSON
	var calls []llm.ToolCall
	if tools {
		protocol = llm.ProtocolTools
		calls = toolCalls(ch.Message.ToolCalls)
	}
	if ch.Message.Content == "" && len(calls) == 0 {
		switch {
		case ch.Message.Refusal != "":
			return llm.Response{}, p.newError(llm.ErrContentPolicy, "model refused: "+wire.Redact(ch.Message.Refusal, p.apiKey), nil)
		case ch.FinishReason == "content_filter":
			return llm.Response{}, p.newError(llm.ErrContentPolicy, "answer withheld by content filter", nil)
		case tools:
			return llm.Response{}, p.newError(llm.ErrBadResponse,
				fmt.Sprintf("answer has neither content nor tool calls (finish_reason %q)", ch.FinishReason), nil)
		default:
			return llm.Response{}, p.newError(llm.ErrBadResponse,
				fmt.Sprintf("answer has empty content (finish_reason %q)", ch.FinishReason), nil)
		}
	}
	model := cc.Model
	if model == "" {
		model = p.model
	}
	return llm.Response{
		Protocol:  protocol,
		Text:      string(ch.Message.Content),
		ToolCalls: calls,
		Provider:  p.name,
		Model:     model,
		Usage: llm.Usage{
			InputTokens:       cc.Usage.PromptTokens,
			OutputTokens:      cc.Usage.CompletionTokens,
			CachedInputTokens: cc.Usage.PromptTokensDetails.CachedTokens,
		},
		FinishReason: ch.FinishReason,
	}, nil
}

func (p *Provider) newError(kind llm.ErrorKind, msg string, err error) *llm.Error {
	return &llm.Error{Kind: kind, Provider: p.name, Model: p.model, Message: msg, Err: err}
}
