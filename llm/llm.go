// Package llm defines the model-provider contract: a Provider completes a
// Request (messages plus an optional output schema) into a Response, and
// reports failures as *Error with a Kind that says whether a retry or a
// fallback makes sense. A request may ask for its answer as it is written
// (Request.OnText); StreamLimits bound such streamed calls, and a provider
// that cannot stream says so (Streamer).
//
// Providers never retry; retry and fallback policy belongs to whoever wraps
// them. Wire formats live in sub-packages (llm/openaicompat), the scripted
// fake for tests in llm/llmtest. This package knows nothing of chats, tools
// or the decision contract.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	// RoleTool is the result of one tool call the model made, answering
	// the call Message.ToolCallID names.
	RoleTool = "tool"
)

// Message is one chat message sent to a model.
type Message struct {
	Role    string
	Content string
	// ToolCalls, on an assistant message, are the tool calls the model made
	// in that answer, in order (Content may then be empty). The messages
	// right after it must answer every one of them, each by a RoleTool
	// message.
	ToolCalls []ToolCall
	// ToolCallID, on a RoleTool message, is the ID of the call it answers.
	ToolCallID string
	// IsError, on a RoleTool message, says the call failed and Content
	// says why.
	IsError bool
	// Cache asks providers with explicit prompt caching to cache the
	// prompt up to and including this message (a heavy first input that
	// every later request repeats); others cache prefixes on their own.
	Cache bool
	// Images, on a user message, are pictures shown to the model after
	// Content. A provider whose model does not accept images leaves them
	// out: Content must describe them well enough on its own.
	Images []Image
}

// ImagesLeftOut is what a provider whose model takes no images adds to a
// message's text in place of its images, so the model knows it was not
// shown them.
const ImagesLeftOut = "\n[the image is not shown: this model does not take images]"

// Image is a picture sent to a model inside a message.
type Image struct {
	MediaType string // "image/jpeg", "image/png", "image/gif" or "image/webp"
	Data      []byte
}

// OutputMode says how a provider constrains the model's output format.
type OutputMode string

// Output modes, from strongest to weakest guarantee.
const (
	// OutputJSONSchemaStrict sends the schema as strict structured output.
	OutputJSONSchemaStrict OutputMode = "json_schema_strict"
	// OutputJSONSchema sends the schema as non-strict structured output.
	OutputJSONSchema OutputMode = "json_schema"
	// OutputJSONObject asks for any JSON object; the schema is only in the
	// prompt.
	OutputJSONObject OutputMode = "json_object"
)

// Schema is a JSON Schema the output must follow.
type Schema struct {
	Name string
	// JSON is the schema document. Strict is a variant fit for strict mode
	// (every property required, no additional properties); when empty,
	// strict mode is not possible and the provider falls back to JSON.
	JSON   []byte
	Strict []byte
}

// Protocol is how a model expresses its decision.
type Protocol string

// Decision protocols.
const (
	// ProtocolJSON: the answer text is one JSON object following
	// Request.Schema (structured output or JSON mode).
	ProtocolJSON Protocol = "json"
	// ProtocolTools: native tool calling over Request.Tools; the text is
	// what to say and at most one tool call is the proposal.
	ProtocolTools Protocol = "tools"
)

// ToolDef is a tool offered to a model that decides by native tool calling.
type ToolDef struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema of the arguments (an object)
}

// ToolCall is a tool call in a model's answer.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage
}

// ToolMode says whether the model may, must or must not call a tool.
type ToolMode string

// Tool modes.
const (
	ToolAuto     ToolMode = "auto"     // the model chooses (the zero ToolChoice)
	ToolRequired ToolMode = "required" // at least one call, to any offered tool
	ToolNone     ToolMode = "none"     // no call: a text answer
	ToolNamed    ToolMode = "named"    // a call of the tool ToolChoice.Name
)

// ToolChoice constrains the tool calls of an answer in the tools protocol.
// The zero value is ToolAuto.
type ToolChoice struct {
	Mode ToolMode
	Name string // with ToolNamed: the tool to call, one of Request.Tools
}

// Request is one completion request. It carries both forms of the decision
// contract: Schema for models that answer in JSON and Tools for models that
// decide by native tool calling; each provider uses the one its protocol
// needs (a request without Tools is always answered in JSON).
type Request struct {
	Messages []Message
	Schema   *Schema
	Tools    []ToolDef
	// ToolChoice and ParallelToolCalls apply in the tools protocol: what
	// the model may call, and whether one answer may hold several calls
	// (false: at most one).
	ToolChoice        ToolChoice
	ParallelToolCalls bool
	Temperature       float64
	MaxTokens         int
	// Operation and Strategy label the call in the journal ("turn",
	// "repair"; "balanced").
	Operation string
	Strategy  string
	// OnText, when set, asks for a streamed answer: it is called with each
	// piece of the answer's text content as it arrives, in order (for a JSON
	// decision, the raw JSON text). It is never called for tool-call
	// arguments. A chain does not retry or fall back once it has been called.
	OnText func(text string)
}

// Usage is the token count the provider reported.
type Usage struct {
	InputTokens  int
	OutputTokens int
	// CachedInputTokens is the part of InputTokens the provider served from
	// its prompt cache, when it reports that (billed at a lower price).
	CachedInputTokens int
}

// Attempt kinds, as a chain reports them.
const (
	AttemptFirst    = "first"    // the first call to a model in this request
	AttemptRetry    = "retry"    // the same model again after a transient error
	AttemptFallback = "fallback" // the next model after a failure
	AttemptSkipped  = "skipped"  // not called: its provider is blocked
)

// Attempt is one call made to one model while serving a Request; wrappers
// that retry or fall back report every attempt, failed ones included.
type Attempt struct {
	Provider string
	Model    string
	Kind     string // AttemptFirst, AttemptRetry, AttemptFallback, AttemptSkipped; "" = first
	Usage    Usage
	Duration time.Duration
	Err      error // nil on success
	Started  time.Time
	// Note says what the policy did about this attempt ("blocked provider
	// fireworks for 5m0s", "no retry: ...").
	Note string
}

// Response is a completed request.
type Response struct {
	// Protocol is how this answer expresses the decision: ProtocolJSON (Text
	// holds the JSON object) or ProtocolTools (Text is what to say,
	// ToolCalls the proposal).
	Protocol     Protocol
	Text         string
	ToolCalls    []ToolCall
	Provider     string
	Model        string // the exact model that answered, as the API named it
	Usage        Usage
	FinishReason string
	// Attempts lists every attempt made, the successful one last. A plain
	// provider may leave it empty: the call itself was the only attempt.
	Attempts []Attempt
}

// Protocoled is a provider that says how its model decides, so a caller
// can write the prompt to match (no JSON contract for native tool
// calling).
type Protocoled interface {
	Protocol() Protocol
}

// ProtocolOf returns the protocol p reports, or ProtocolJSON.
func ProtocolOf(p Provider) Protocol {
	if pp, ok := p.(Protocoled); ok {
		return pp.Protocol()
	}
	return ProtocolJSON
}

// Streamer is a provider that says whether it can stream. One that
// cannot (Streams false), or that does not implement Streamer, is called
// without Request.OnText by a Chain, which then calls OnText once with the
// whole text of the answer: the reader gets it all at once instead of as
// it is written. A provider that streams calls OnText itself.
type Streamer interface {
	Streams() bool
}

// Streams reports whether p streams (see Streamer).
func Streams(p Provider) bool {
	s, ok := p.(Streamer)
	return ok && s.Streams()
}

// Defaults of StreamLimits.
const (
	// DefaultFirstTokenTimeout is the wait for the first piece of a
	// streamed answer: a reasoning model may think for tens of seconds
	// before it writes anything.
	DefaultFirstTokenTimeout = 60 * time.Second
	// DefaultChunkTimeout is the longest silence between two pieces of a
	// streamed answer.
	DefaultChunkTimeout = 30 * time.Second
	// DefaultMinTokenRate is the slowest generation, in output tokens per
	// second, the overall ceiling of a streamed call allows for.
	DefaultMinTokenRate = 10
	// DefaultCeilingTokens stands in for max_tokens in the ceiling of a
	// request that sets none.
	DefaultCeilingTokens = 4096
)

// StreamLimits bound one streamed call. Zero fields take the defaults.
//
// The call fails as a transient error when no piece of the answer arrived
// within FirstToken of sending it, when the answer then goes silent for
// longer than Chunk, or when it is still not complete at its ceiling:
//
//	ceiling = FirstToken + max_tokens / MinTokenRate seconds
//
// (max_tokens of the request, DefaultCeilingTokens when it sets none). With
// the defaults and max_tokens 1000 that is 60 s + 100 s = 160 s. Keep-alive
// events (pings, comments, a chunk with nothing in it) do not count as a
// piece of the answer.
type StreamLimits struct {
	FirstToken   time.Duration // default DefaultFirstTokenTimeout
	Chunk        time.Duration // default DefaultChunkTimeout
	MinTokenRate float64       // output tokens per second; default DefaultMinTokenRate
}

// WithDefaults returns l with zero fields set to the defaults.
func (l StreamLimits) WithDefaults() StreamLimits {
	if l.FirstToken <= 0 {
		l.FirstToken = DefaultFirstTokenTimeout
	}
	if l.Chunk <= 0 {
		l.Chunk = DefaultChunkTimeout
	}
	if l.MinTokenRate <= 0 {
		l.MinTokenRate = DefaultMinTokenRate
	}
	return l
}

// Check reports a negative field as an error naming it.
func (l StreamLimits) Check() error {
	switch {
	case l.FirstToken < 0:
		return fmt.Errorf("negative first-token timeout %v", l.FirstToken)
	case l.Chunk < 0:
		return fmt.Errorf("negative chunk timeout %v", l.Chunk)
	case l.MinTokenRate < 0:
		return fmt.Errorf("negative minimum token rate %v", l.MinTokenRate)
	}
	return nil
}

// Ceiling is the overall bound of a streamed call allowed maxTokens output
// tokens (see StreamLimits), defaults applied.
func (l StreamLimits) Ceiling(maxTokens int) time.Duration {
	l = l.WithDefaults()
	if maxTokens <= 0 {
		maxTokens = DefaultCeilingTokens
	}
	return l.FirstToken + time.Duration(float64(maxTokens)/l.MinTokenRate*float64(time.Second))
}

// Provider completes requests against one model. Implementations are safe
// for concurrent use, do not retry, and return *Error for every failure.
type Provider interface {
	Name() string
	Model() string
	Complete(ctx context.Context, req Request) (Response, error)
}

// ErrorKind classifies provider failures by what the caller should do.
type ErrorKind string

// Error kinds.
const (
	ErrTransient     ErrorKind = "transient"      // timeout, reset, 5xx, truncated body: retry may help
	ErrRateLimited   ErrorKind = "rate_limited"   // 429: retry after RetryAfter
	ErrAuth          ErrorKind = "auth"           // bad or missing key: never retry
	ErrBilling       ErrorKind = "billing"        // quota or payment: never retry
	ErrBadRequest    ErrorKind = "bad_request"    // our request was wrong: never retry
	ErrContentPolicy ErrorKind = "content_policy" // refused by the provider's policy
	ErrBadResponse   ErrorKind = "bad_response"   // answered, but not in the expected shape
	ErrCanceled      ErrorKind = "canceled"       // the caller's context ended
)

// Retryable reports whether the same call may succeed if repeated.
func (k ErrorKind) Retryable() bool {
	return k == ErrTransient || k == ErrRateLimited || k == ErrBadResponse
}

// Error is a classified provider failure.
type Error struct {
	Kind       ErrorKind
	Provider   string
	Model      string
	Status     int           // HTTP status, if any
	RetryAfter time.Duration // from a Retry-After header, if any
	Message    string
	Err        error
	// Attempts is set by wrappers that tried several times before giving
	// up: every attempt, in order. Empty means this call was the only one.
	Attempts []Attempt
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s %s: %s", e.Provider, e.Model, e.Kind)
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of err: its own for *Error, ErrCanceled for a
// canceled context, and ErrTransient for anything else (a deadline is a
// timeout, which a retry may survive).
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	if errors.Is(err, context.Canceled) {
		return ErrCanceled
	}
	return ErrTransient
}

// Price is the cost of a model per million tokens, in US dollars.
type Price struct {
	InputPerMTok  float64
	OutputPerMTok float64
	// CachedInputPerMTok prices cached input tokens; zero means they cost
	// as much as other input.
	CachedInputPerMTok float64
}

// Prices are prices by model name.
type Prices map[string]Price

// Lookup finds a model's price by its exact name, then by the last path
// segment ("accounts/fireworks/models/gpt-oss-20b" -> "gpt-oss-20b").
func (ps Prices) Lookup(model string) (Price, bool) {
	if p, ok := ps[model]; ok {
		return p, true
	}
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		p, ok := ps[model[i+1:]]
		return p, ok
	}
	return Price{}, false
}

// Preset is what a model kind of a provider package brings by default:
// where its API is, how it authenticates, what it supports.
type Preset struct {
	BaseURL string
	// KeyEnv is the environment variable that holds the key by default;
	// empty for local servers that need none.
	KeyEnv string
	// Vendor is the default provider label (journal, blocking group).
	Vendor   string
	Output   OutputMode // default output mode
	Protocol Protocol   // default decision protocol
	// Images says the preset's usual models accept images (a model's
	// configuration may say otherwise).
	Images bool
}

// Cost returns the estimated cost of usage at this price.
func (p Price) Cost(u Usage) float64 {
	cached := min(max(u.CachedInputTokens, 0), u.InputTokens)
	cachedPrice := p.CachedInputPerMTok
	if cachedPrice == 0 {
		cachedPrice = p.InputPerMTok
	}
	return (float64(u.InputTokens-cached)*p.InputPerMTok + float64(cached)*cachedPrice + float64(u.OutputTokens)*p.OutputPerMTok) / 1e6
}
