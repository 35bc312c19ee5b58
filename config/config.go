// Package config reads and validates arbiter's YAML configuration (plus the
// environment variables it names) into plain structs. Every error carries
// the line of the offending value. It builds nothing: turning a Config into
// stores, providers and channels is package server's job.
package config

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config is the whole configuration file.
type Config struct {
	Listen string `yaml:"listen"`
	// PublicURL is how users reach this server (card links); default
	// "http://" + Listen.
	PublicURL string `yaml:"public_url"`
	// LinkHosts are hosts, besides public_url's and the integrations', that
	// replies may link to with parameters; links elsewhere lose their query
	// and images from elsewhere are removed.
	LinkHosts []string `yaml:"link_hosts"`
	Store     Store    `yaml:"store"`
	Journal   Journal  `yaml:"journal"`
	Models    []Model  `yaml:"models"`
	// Strategies name chains of models (by model name); "balanced" is the
	// models list in order unless given here.
	Strategies map[string][]string `yaml:"strategies"`
	// Strategy is the default strategy; default "balanced".
	Strategy     string           `yaml:"strategy"`
	Retry        Retry            `yaml:"retry"`
	Prices       map[string]Price `yaml:"prices"`
	Memory       Memory           `yaml:"memory"`
	Lifetimes    Lifetimes        `yaml:"lifetimes"`
	Retention    Retention        `yaml:"retention"`
	Confirmation Confirmation     `yaml:"confirmation"`
	Limits       Limits           `yaml:"limits"`
	Tenants      []Tenant         `yaml:"tenants"`
	// Assistants are named assistant profiles; a tenant picks one with
	// its assistant field.
	Assistants    map[string]Assistant `yaml:"assistants"`
	Tools         Tools                `yaml:"tools"`
	Commands      map[string]Command   `yaml:"commands"`
	Log           Log                  `yaml:"log"`
	Observability Observability        `yaml:"observability"`
	Redaction     Redaction            `yaml:"redaction"`
	Channels      Channels             `yaml:"channels"`

	// UnconfirmableOutcomes are outcomes (intent's names, or a tool's
	// own) that no tool of this deployment confirms: a reply asserting
	// one always goes to a person («доступ восстановлен» where no tool
	// restores access).
	UnconfirmableOutcomes []string `yaml:"unconfirmable_outcomes"`

	// lines maps a value's path ("tenants[0].users[1].role") to its line
	// in the file it was parsed from.
	lines map[string]int
	// Dir is the directory of the file the configuration was loaded from
	// (empty for one parsed from elsewhere): files it names, such as an
	// assistant's prompt_file, are relative to it.
	Dir string `yaml:"-"`
}

// Problem formats a problem of the value at path the way Parse reports
// them: "line N: path: message", with the line of the value or of its
// nearest enclosing value in the parsed file (none for a Config built in
// code).
func (c *Config) Problem(path, format string, args ...any) string {
	p := path
	line, ok := c.lines[p]
	for !ok && p != "" {
		if i := strings.LastIndexAny(p, ".["); i >= 0 {
			p = p[:i]
		} else {
			p = ""
		}
		line, ok = c.lines[p]
	}
	msg := fmt.Sprintf(format, args...)
	if line > 0 {
		return fmt.Sprintf("line %d: %s: %s", line, path, msg)
	}
	return fmt.Sprintf("%s: %s", path, msg)
}

// Store selects the state backend: conversations, pending actions,
// inbox, execution records and conversation locks.
type Store struct {
	Kind string `yaml:"kind"` // sqlite (default) or redis
	// Path is the SQLite file (kind sqlite); default data/arbiter.db.
	Path string `yaml:"path"`
	// URL and Prefix locate the shared Redis (kind redis).
	URL    string `yaml:"url"`
	Prefix string `yaml:"prefix"`
	// LockWait bounds the wait for a conversation's lock (default 30s);
	// LockTTL is how long a lock outlives a holder that stopped renewing
	// it (default 45s).
	LockWait Duration `yaml:"lock_wait"`
	LockTTL  Duration `yaml:"lock_ttl"`
	// Reader opens the embedded file beside the process that holds it,
	// without claiming it: for a process that only reads the file (a
	// report, a backup). Without it a second process on the same file
	// refuses to start, naming the holder.
	Reader bool `yaml:"reader"`
}

// Journal selects where turn records go.
type Journal struct {
	// Kind is sqlite (default: the store's file, or data/journal.db when
	// the store is Redis) or postgres.
	Kind   string `yaml:"kind"`
	Path   string `yaml:"path"`
	URL    string `yaml:"url"`
	Schema string `yaml:"schema"`
}

// Model is one model endpoint.
type Model struct {
	// Name identifies the model in strategies; unique.
	Name string `yaml:"name"`
	// Kind is a preset: openai, fireworks, mistral, xai, openrouter,
	// ollama, vllm, llamacpp (OpenAI-compatible wire format) or anthropic.
	Kind string `yaml:"kind"`
	// Provider labels the model in the journal and groups models of one
	// account: an auth or billing error blocks the whole group. Default:
	// the preset's vendor name (the model's name for local servers).
	Provider  string `yaml:"provider"`
	BaseURL   string `yaml:"base_url"`
	Model     string `yaml:"model"`
	APIKey    string `yaml:"api_key"`
	APIKeyEnv string `yaml:"api_key_env"`
	// Output is json_schema_strict, json_schema or json_object; default
	// from the preset.
	Output string `yaml:"output"`
	// Protocol is json (structured output) or tools (native tool calling);
	// default from the preset.
	Protocol string `yaml:"protocol"`
	// AuthHeader sends the key in this header instead of
	// "Authorization: Bearer" (e.g. api-key).
	AuthHeader string            `yaml:"auth_header"`
	Headers    map[string]string `yaml:"headers"`
	// Timeout bounds a call that is not streamed, the whole answer
	// included; default 60s.
	Timeout Duration `yaml:"timeout"`
	// FirstTokenTimeout, ChunkTimeout and MinTokenRate bound a streamed
	// call: the wait for the first token (default 60s), the longest
	// silence between chunks (30s), and the output tokens per second the
	// call's ceiling allows for (10): first_token_timeout + max_tokens /
	// min_token_rate seconds.
	FirstTokenTimeout Duration `yaml:"first_token_timeout"`
	ChunkTimeout      Duration `yaml:"chunk_timeout"`
	MinTokenRate      float64  `yaml:"min_token_rate"`
	// Stream: false sends every call as a plain one, for an endpoint that
	// cannot stream (the reader then gets the reply whole); default true.
	Stream *bool `yaml:"stream"`
	// Images says the model accepts images: a photo the user sends is
	// shown to it, not only named. Default from the preset (true for
	// openai and anthropic, false for the rest).
	Images *bool `yaml:"images"`
}

// Retry is the provider chain's retry and fallback policy.
type Retry struct {
	// Delay before the first model's one retry on a transient error;
	// default 2s.
	Delay Duration `yaml:"delay"`
	// CoolDown is how long an auth or billing error blocks a provider for
	// all conversations (a bad request blocks nothing); default 5m.
	CoolDown Duration `yaml:"cool_down"`
	// InvalidFallback asks the next model when a model's output is still
	// invalid after its repair; default false.
	InvalidFallback bool `yaml:"invalid_fallback"`
}

// Price is a model's cost in US dollars per million tokens.
type Price struct {
	Input       float64 `yaml:"input"`
	Output      float64 `yaml:"output"`
	CachedInput float64 `yaml:"cached_input"`
}

// Memory is the conversation memory policy.
type Memory struct {
	Window int      `yaml:"window"`
	TTL    Duration `yaml:"ttl"`
	Pause  Duration `yaml:"pause"`
}

// Lifetimes are how long each part of a conversation's state beside its
// memory is kept after the conversation's last turn; zero is the default.
// Messages follow memory, a pending confirmation confirmation.ttl, and an
// action waiting for approvers is kept until it ends.
type Lifetimes struct {
	// Case: the binding to a case (a message's context); another case is
	// refused for as long. Default 30d; at least memory.ttl.
	Case Duration `yaml:"case"`
	// Skill: an active skill while the chat is idle. Default 30d.
	Skill Duration `yaml:"skill"`
	// Interview: an interview waiting for its answer. Default 24h.
	Interview Duration `yaml:"interview"`
	// Offer: an offer of choices (a draft) and long buttons. Default 24h.
	Offer Duration `yaml:"offer"`
}

// Retention bounds how long records are kept; they are deleted in small
// batches in the background. Zero keeps a kind forever.
type Retention struct {
	// Turns is how long the journal keeps a turn (its trace, model and
	// tool calls); default 90 days.
	Turns Duration `yaml:"turns"`
	// Executions is how long a finished write's execution record (the
	// idempotency ledger: a redelivery older than this could run again)
	// is kept; default 400 days.
	Executions Duration `yaml:"executions"`
	// Every is how often the pruning runs; default 10m.
	Every Duration `yaml:"every"`
	// Keep turns off pruning: every record is kept.
	Keep bool `yaml:"keep"`
}

// Confirmation configures pending actions.
type Confirmation struct {
	TTL Duration `yaml:"ttl"`
	// ApprovalTTL is how long an action waits for its approvers; default
	// 24h.
	ApprovalTTL Duration `yaml:"approval_ttl"`
	// ReadBack bounds how an approved write whose answer was lost is read
	// back (reconcile_url) while its system cannot answer.
	ReadBack ReadBack `yaml:"read_back"`
}

// ReadBack is the read-back's retry policy: attempts in all, the first
// retry after wait, each later one after twice the wait before it;
// defaults 5 and 500ms.
type ReadBack struct {
	Attempts int      `yaml:"attempts"`
	Wait     Duration `yaml:"wait"`
}

// Limits bound requests and model calls.
type Limits struct {
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxFileBytes bounds an HTTP message that carries files in base64
	// (evidence data); default 28 MiB.
	MaxFileBytes int64 `yaml:"max_file_bytes"`
	// MaxImageBytes, MaxPDFBytes, MaxPDFPages and MaxPDFChars bound what
	// is read of an attached file: a picture shown to the model (10 MiB),
	// a PDF whose text is read (20 MiB, its first 50 pages, 20 000
	// characters of text).
	MaxImageBytes int      `yaml:"max_image_bytes"`
	MaxPDFBytes   int      `yaml:"max_pdf_bytes"`
	MaxPDFPages   int      `yaml:"max_pdf_pages"`
	MaxPDFChars   int      `yaml:"max_pdf_chars"`
	ModelTimeout  Duration `yaml:"model_timeout"`
	MaxTokens     int      `yaml:"max_tokens"`
	TurnTimeout   Duration `yaml:"turn_timeout"`
}

// Tenant is one isolated customer.
type Tenant struct {
	ID            string `yaml:"id"`
	Strategy      string `yaml:"strategy"`
	Timezone      string `yaml:"timezone"`
	Language      string `yaml:"language"`
	AssistantName string `yaml:"assistant_name"`
	// Assistant names the profile of assistants this tenant's turns run
	// under; empty: the single-decision assistant.
	Assistant string          `yaml:"assistant"`
	Roles     map[string]Role `yaml:"roles"`
	Users     []User          `yaml:"users"`
}

// Assistant is a named assistant profile: its instructions, the tools it
// may see (within each role's), how it decides and its limits.
type Assistant struct {
	// Prompt is the assistant's instructions; PromptFile reads them from
	// a file instead (relative to the configuration file).
	Prompt     string `yaml:"prompt"`
	PromptFile string `yaml:"prompt_file"`
	// Tools narrows what the model sees (names or globs); empty: all the
	// caller's role allows.
	Tools []string `yaml:"tools"`
	// Mode is single (one decision per turn, the default) or loop (tool
	// calls and results until a final answer or a limit).
	Mode   string          `yaml:"mode"`
	Limits AssistantLimits `yaml:"limits"`
	// HandOff offers a loop assistant's model the hand_off_to_human tool,
	// to hand the case to a person with a reason (default off).
	HandOff bool `yaml:"hand_off"`
	// LiveContext is when requests carry the live context (the user, the
	// local time, the case, the context sources): auto (default: when the
	// case or a source has something to say), always, or off.
	LiveContext string `yaml:"live_context"`
	// Preflight are reads a loop assistant runs, in order, before the
	// model sees the case (args: a JSON object; bound arguments are
	// filled from the case).
	Preflight []Command `yaml:"preflight"`
	// MaxQuestions bounds an interview (mode interview; default 3).
	MaxQuestions int `yaml:"max_questions"`
	// MaxTokens bounds one model answer (default: limits.max_tokens; an
	// interview 4000); MaxReplyChars a delivered result (default 32000).
	MaxTokens     int `yaml:"max_tokens"`
	MaxReplyChars int `yaml:"max_reply_chars"`
	// Memory overrides the memory policy for this assistant's
	// conversations (an interview's default pause and TTL are a day).
	Memory Memory `yaml:"memory"`
	// Lifetimes override the top-level lifetimes for this assistant's
	// conversations (interview only for mode interview, skill only for
	// mode router).
	Lifetimes Lifetimes `yaml:"lifetimes"`
	// Router sets up a router assistant (mode router).
	Router *Router `yaml:"router"`
	// Receipts: a reply the model wrote ends with the server's line on
	// each write of the turn (its true state). Default: on for an
	// assistant with a tool that waits for approvers.
	Receipts *bool `yaml:"receipts"`
}

// Router is a router assistant's setup: its prompt (what not to confuse
// with what), skills, web-search tool, intercepts and guards.
type Router struct {
	Prompt     string            `yaml:"prompt"`
	WebSearch  string            `yaml:"web_search"`
	Intercepts []string          `yaml:"intercepts"`
	Guards     []RouterGuard     `yaml:"guards"`
	Generation map[string]string `yaml:"generation"`
	EditTool   string            `yaml:"edit_tool"`
	Skills     []Skill           `yaml:"skills"`
	// Words are the word lists of the intercepts, guards and web-search
	// detector (intent.Lists), by name; WordsFile reads them from a YAML
	// file of the same shape instead (relative to the configuration file).
	Words     map[string][]string `yaml:"words"`
	WordsFile string              `yaml:"words_file"`
	// Timeout bounds the router's model call (default 15s).
	Timeout Duration `yaml:"timeout"`
}

// RouterGuard applies a named guard to some tools (all when empty).
type RouterGuard struct {
	Guard string   `yaml:"guard"`
	Tools []string `yaml:"tools"`
}

// Skill is a conversational mode a chat may switch to: the assistant
// profile that answers while it is on; auto lets the router switch to it.
type Skill struct {
	ID        string `yaml:"id"`
	Assistant string `yaml:"assistant"`
	Label     string `yaml:"label"`
	Auto      bool   `yaml:"auto"`
}

// AssistantLimits bound one task of a loop assistant; zero takes the
// engine's default.
type AssistantLimits struct {
	ModelCalls  int      `yaml:"model_calls"`
	ToolCalls   int      `yaml:"tool_calls"`
	Deadline    Duration `yaml:"deadline"`
	ResultBytes int      `yaml:"result_bytes"`
	TotalBytes  int      `yaml:"total_bytes"`
	// SameCall is how many times one call (tool and arguments) may run.
	SameCall int `yaml:"same_call"`
}

// LoadPrompt returns the assistant's instructions: Prompt, or the
// contents of PromptFile, relative to dir (the configuration file's
// directory) unless absolute.
func (a Assistant) LoadPrompt(dir string) (string, error) {
	if a.PromptFile == "" {
		return a.Prompt, nil
	}
	path := a.PromptFile
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("assistant prompt: %w", err)
	}
	return string(b), nil
}

// LoadWords returns the router's word lists: Words, or the contents of
// WordsFile, relative to dir unless absolute.
func (r Router) LoadWords(dir string) (map[string][]string, error) {
	if r.WordsFile == "" {
		return r.Words, nil
	}
	path := r.WordsFile
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("router words: %w", err)
	}
	var words map[string][]string
	if err := yaml.Unmarshal(b, &words); err != nil {
		return nil, fmt.Errorf("router words %s: %w", r.WordsFile, err)
	}
	return words, nil
}

// Role lists the tools a role is shown (names or globs).
type Role struct {
	Tools []string `yaml:"tools"`
}

// User is a tenant's user.
type User struct {
	ID     string      `yaml:"id"`
	Trello *UserTrello `yaml:"trello"`
	Google *UserGoogle `yaml:"google"`
	// TelegramIDs are the user's Telegram user ids.
	TelegramIDs []int64 `yaml:"telegram_ids"`
	// ChannelScopes are the scopes of the user on channels without API
	// keys (Telegram); default read, write:safe, write:full — risky
	// actions still wait for the user's own confirmation.
	ChannelScopes []string `yaml:"channel_scopes"`
	Name          string   `yaml:"name"`
	Role          string   `yaml:"role"`
	Timezone      string   `yaml:"timezone"`
	Language      string   `yaml:"language"`
	Keys          []Key    `yaml:"keys"`
}

// Key is an API key of a user with its scopes.
type Key struct {
	Token    string   `yaml:"token"`
	TokenEnv string   `yaml:"token_env"`
	Scopes   []string `yaml:"scopes"`
}

// Tools configures the built-in tools.
type Tools struct {
	Taskboard *Taskboard `yaml:"taskboard"`
	// HTTP tools call operators' own endpoints.
	HTTP []HTTPTool `yaml:"http"`
	// Trello replaces the embedded task board with a Trello board (the
	// same actions).
	Trello *Trello `yaml:"trello"`
	// Calendar enables create_event and schedule_team_meeting.
	Calendar *Calendar `yaml:"calendar"`
	// MCP connects Model Context Protocol servers.
	MCP *MCP `yaml:"mcp"`
	// Knowledge enables add_knowledge and search_knowledge.
	Knowledge *ToolSet `yaml:"knowledge"`
	// ContentIdeas enables content_idea and list_content_ideas.
	ContentIdeas *ContentIdeas `yaml:"content_ideas"`
	// Extra holds the sections of tool kinds this package does not
	// describe ("shout: {}"), by kind name, for the program's own kinds
	// (see server.Kinds).
	Extra map[string]yaml.Node `yaml:",inline"`
}

// Calendar configures the calendar tools.
type Calendar struct {
	// Backend is embedded (default) or google.
	Backend string `yaml:"backend"`
	// GoogleBaseURL points the Google backend elsewhere (tests).
	GoogleBaseURL string `yaml:"google_base_url"`
	// Requires names the integration a user must have connected (google,
	// trello) to be shown the calendar tools at all; empty: everyone.
	Requires string `yaml:"requires"`
}

// UserGoogle links a user to Google Calendar.
type UserGoogle struct {
	Email    string `yaml:"email"`
	TokenEnv string `yaml:"token_env"` // an OAuth access token with a calendar scope
}

// MCP lists the MCP servers whose tools are offered (each as
// "<server>.<tool>", and all through the universal "mcp" action).
type MCP struct {
	Servers []MCPServer `yaml:"servers"`
}

// MCPServer is one MCP server and our risk policy for its tools.
type MCPServer struct {
	Name string `yaml:"name"`
	// Command starts a stdio server (the first element is the program);
	// URL reaches a streamable HTTP server instead.
	Command    []string          `yaml:"command"`
	Dir        string            `yaml:"dir"`
	Env        map[string]string `yaml:"env"`
	InheritEnv []string          `yaml:"inherit_env"`
	URL        string            `yaml:"url"`
	Headers    map[string]string `yaml:"headers"`
	BearerEnv  string            `yaml:"bearer_env"`
	// Trusted servers show tools the config does not mention (with risk
	// from DefaultRisk and the tools' annotations, only toward caution).
	Trusted        bool                     `yaml:"trusted"`
	DefaultRisk    string                   `yaml:"default_risk"`
	DefaultConfirm string                   `yaml:"default_confirm"`
	Timeout        Duration                 `yaml:"timeout"`
	Tools          map[string]MCPToolPolicy `yaml:"tools"`
	// Sampling and Elicitation let the server ask, during a call, for a
	// completion of our model or for the user's input; each request is
	// shown to the user for approval. Off by default. AskTimeout bounds
	// the wait for the answer (default 60s).
	Sampling    bool     `yaml:"sampling"`
	Elicitation bool     `yaml:"elicitation"`
	AskTimeout  Duration `yaml:"ask_timeout"`
}

// MCPToolPolicy is the policy of the tools a name or glob matches.
type MCPToolPolicy struct {
	Risk    string   `yaml:"risk"`
	Confirm string   `yaml:"confirm"`
	Hidden  bool     `yaml:"hidden"`
	Roles   []string `yaml:"roles"`
	Title   string   `yaml:"title"`
	Timeout Duration `yaml:"timeout"`
}

// Trello configures the Trello task board.
type Trello struct {
	APIBaseURL string `yaml:"api_base_url"`
	KeyEnv     string `yaml:"key_env"`
	// TokenEnv holds the default connection's token; users may have their
	// own (users[].trello.token_env).
	TokenEnv string            `yaml:"token_env"`
	Board    string            `yaml:"board"`
	DoneList string            `yaml:"done_list"`
	Confirm  map[string]string `yaml:"confirm"`
	// Requires names the integration a user must have connected to be
	// shown the board's tools at all (trello): then every user acts with
	// their own token (users[].trello.token_env), and there is no default
	// connection acting for those who have not connected.
	Requires string `yaml:"requires"`
}

// UserTrello links a user to Trello.
type UserTrello struct {
	// Member is the user's Trello username or member id.
	Member   string `yaml:"member"`
	TokenEnv string `yaml:"token_env"`
}

// ToolSet is a built-in set of tools with per-action confirmation
// overrides (always|never).
type ToolSet struct {
	Confirm map[string]string `yaml:"confirm"`
}

// ContentIdeas configures content ideas.
type ContentIdeas struct {
	Platforms []string          `yaml:"platforms"`
	Confirm   map[string]string `yaml:"confirm"`
}

// Channels configures the channels besides the HTTP API.
type Channels struct {
	Telegram *Telegram `yaml:"telegram"`
	// MCP serves the configured tools to MCP clients on the HTTP listener
	// (streamable HTTP, each request with an API key), as `arbiter mcp
	// -listen` does on its own.
	MCP *MCPChannel `yaml:"mcp"`
	// Extra holds the sections of channel kinds this package does not
	// describe, by kind name, for the program's own kinds (see
	// server.Kinds).
	Extra map[string]yaml.Node `yaml:",inline"`
}

// MCPChannel configures arbiter as an MCP server inside `arbiter serve`.
type MCPChannel struct {
	// Path is where it is served; default /mcp.
	Path string `yaml:"path"`
	// ConfirmTimeout bounds the wait for the human's answer to a
	// confirmation; default 5m.
	ConfirmTimeout Duration `yaml:"confirm_timeout"`
}

// Telegram configures the Telegram bot.
type Telegram struct {
	TokenEnv string `yaml:"token_env"`
	// Mode is webhook or polling; default webhook when public_url is set.
	Mode           string `yaml:"mode"`
	SecretTokenEnv string `yaml:"secret_token_env"`
	// APIBaseURL defaults to the public Bot API; tests use a local fake.
	APIBaseURL  string `yaml:"api_base_url"`
	WebhookPath string `yaml:"webhook_path"`
	// PublicURL is where Telegram reaches this server (webhook mode).
	PublicURL string `yaml:"public_url"`
	// Tenant whose users the bot serves (matched by telegram_ids).
	Tenant string `yaml:"tenant"`
	// Transcription sends voice messages to an OpenAI-compatible
	// /audio/transcriptions endpoint; without it voice gets a clear reply.
	Transcription *Transcription `yaml:"transcription"`
}

// Transcription is an OpenAI-compatible speech-to-text endpoint.
type Transcription struct {
	BaseURL   string `yaml:"base_url"`
	Model     string `yaml:"model"`
	APIKeyEnv string `yaml:"api_key_env"`
}

// Observability configures metrics and traces.
type Observability struct {
	// Metrics serves Prometheus metrics at /metrics; default true.
	Metrics *bool `yaml:"metrics"`
	// Traces: exporter otlp, stdout or none; empty follows the OTEL_*
	// environment (OTLP when an endpoint is set).
	TracesExporter string `yaml:"traces_exporter"`
	// CaptureContent records decisions and replies on spans (off: PII).
	CaptureContent bool `yaml:"capture_content"`
}

// HTTPTool is a tool that calls an HTTP endpoint with the arguments as its
// JSON body.
type HTTPTool struct {
	Name        string `yaml:"name"`
	Title       string `yaml:"title"`
	Description string `yaml:"description"`
	URL         string `yaml:"url"`
	Method      string `yaml:"method"`
	// InputSchema is the JSON Schema of the arguments, written in YAML.
	InputSchema map[string]any `yaml:"input_schema"`
	Risk        string         `yaml:"risk"`
	Confirm     string         `yaml:"confirm"`
	// Idempotent: the endpoint applies each Idempotency-Key at most once.
	Idempotent bool `yaml:"idempotent"`
	// Outcomes a reply may assert only after a successful call in its
	// turn (refund_done, access_restored, subscription_active,
	// payment_confirmed, or a name of OutcomePatterns); a reply asserting
	// one without it goes to a person instead.
	Outcomes []string `yaml:"outcomes"`
	// OutcomePatterns are word patterns of outcomes, by name: the
	// deployment's own, or more words for a known one.
	OutcomePatterns map[string][]string `yaml:"outcome_patterns"`
	// OutcomeWhen narrows, by outcome, which results confirm it: the
	// fields the answer's data must hold ({status: active}).
	OutcomeWhen map[string]map[string]string `yaml:"outcome_when"`
	// Claims are phrases with which a reply would say the endpoint's
	// action happened, each an outcome of its own (the older form of
	// outcomes).
	Claims []string `yaml:"claims"`
	// Receipt names one call in the line the server adds to a reply
	// about it, per language, with {argument} placeholders.
	Receipt map[string]string `yaml:"receipt"`
	// Chip is what a person reads while a call runs, per language
	// ({ru: «Ищу в вашей почте…»}); empty: «Выполняю «title»…».
	Chip map[string]string `yaml:"chip"`
	// Bound are arguments filled from the conversation's case ("context"
	// of POST /v1/messages), such as ticket_id.
	Bound []string `yaml:"bound"`
	// Sensitive are arguments that say where data goes or what unlocks
	// it, besides links, addresses, accounts and phone numbers, which
	// are known by name and form: a value of one taken from content of
	// others waits for the user's yes.
	Sensitive []string `yaml:"sensitive"`
	// ExternalResults: the endpoint answers with what others wrote even
	// when it writes (a fetched page, another system's record), so a
	// write proposed after reading its answer waits for a yes like one
	// after a read. Off: a write's answer echoes what was sent.
	ExternalResults bool `yaml:"external_results"`
	// Approve names the roles whose members approve a call (a write);
	// the requesting user's own "yes" does not run it.
	Approve []string `yaml:"approve"`
	// Basis names the reads an approved call rests on: approvers see their
	// results as they were read, and they are read again right before the
	// write; a change sends the action back to the approvers.
	Basis []string `yaml:"basis"`
	// FreshFor is how long a read's answer stands for the current state:
	// a loop's final answer after an older one reads it again first.
	FreshFor Duration `yaml:"fresh_for"`
	// Redact are fields of the arguments and the answer (at any depth)
	// the journal, traces and logs hold only as a keyed hash (the key:
	// redaction.key_env).
	Redact []string `yaml:"redact"`
	// PrecheckURL is asked right before an approved write whether it
	// still makes sense; ReconcileURL whether a write with an
	// idempotency key took effect (see tool/httptool).
	PrecheckURL  string `yaml:"precheck_url"`
	ReconcileURL string `yaml:"reconcile_url"`
	// Requires names the integration a user must have connected (google,
	// trello) to be shown the tool at all.
	Requires string   `yaml:"requires"`
	Timeout  Duration `yaml:"timeout"`
	// Headers are sent as given; HeadersEnv names environment variables
	// whose values are sent (for secrets).
	Headers    map[string]string `yaml:"headers"`
	HeadersEnv map[string]string `yaml:"headers_env"`
}

// Taskboard configures the embedded task board.
type Taskboard struct {
	Columns []string `yaml:"columns"`
	// Confirm overrides the confirmation policy per action (always|never).
	Confirm map[string]string `yaml:"confirm"`
	// Members adds board members per tenant beyond the tenant's users.
	Members map[string][]Member `yaml:"members"`
	// Disabled turns the board off.
	Disabled bool `yaml:"disabled"`
}

// Member is an extra board member.
type Member struct {
	ID   string `yaml:"id"`
	Name string `yaml:"name"`
}

// Command is a slash command routed to a tool without a model.
type Command struct {
	Tool string `yaml:"tool"`
	Args string `yaml:"args"`
}

// Redaction says where the key of the redacted fields' hashes comes from.
type Redaction struct {
	// KeyEnv names the environment variable holding the key (default
	// ARBITER_REDACTION_KEY). Unset or empty: a random key per process,
	// so a value's hashes match only within one run.
	KeyEnv string `yaml:"key_env"`
}

// Log configures logging.
type Log struct {
	Format string `yaml:"format"` // text (default) or json
	Level  string `yaml:"level"`  // debug, info (default), warn, error
}

// Duration is a time.Duration written as "30s", "10m".
type Duration time.Duration

// UnmarshalYAML parses Go duration syntax, and whole days ("90d").
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (e.g. 30s, 10m, 90d)", n.Line, n.Value)
	}
	if v < 0 {
		return fmt.Errorf("line %d: duration %q is negative", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// ParseDuration reads Go duration syntax ("30s", "1h30m") or a whole
// number of days ("90d"), the unit retention periods are thought in.
func ParseDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n > 100*365 {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

// Errors collects every problem of a configuration, each with its line.
type Errors []string

func (e Errors) Error() string { return strings.Join(e, "\n") }

// Load reads and validates a configuration file.
func Load(path string) (*Config, error) { return LoadEnv(path, os.Getenv) }

// LoadEnv is Load with the environment that ${NAME} references and *_env
// names read from given by getenv.
func LoadEnv(path string, getenv func(string) string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open config: %w", err)
	}
	defer f.Close()
	return parse(f, getenv, filepath.Dir(path))
}

// Parse reads and validates a configuration. getenv resolves *_env names;
// files it names are relative to the working directory.
func Parse(r io.Reader, getenv func(string) string) (*Config, error) {
	return parse(r, getenv, "")
}

// Read reads a configuration file and validates it as far as it decodes,
// for a check that reports every mistake in one run: cfg is what decoded
// (a value at fault left out, so that the rest is checked too) and
// problems are all the mistakes found, each with its line. err is set, and
// cfg nil, only when the file cannot be read or is not YAML at all.
func Read(path string, getenv func(string) string) (cfg *Config, problems Errors, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open config: %w", err)
	}
	defer f.Close()
	return read(f, getenv, filepath.Dir(path))
}

func parse(r io.Reader, getenv func(string) string, dir string) (*Config, error) {
	cfg, problems, err := read(r, getenv, dir)
	switch {
	case err != nil:
		return nil, err
	case len(problems) > 0:
		return nil, problems
	}
	return cfg, nil
}

func read(r io.Reader, getenv func(string) string, dir string) (*Config, Errors, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, fmt.Errorf("read config: %w", err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, nil, Errors{cleanYAMLError(err)}
	}
	cfg := &Config{Dir: dir}
	lines := map[string]int{}
	var shape []shapeProblem
	if len(root.Content) > 0 {
		doc := root.Content[0]
		indexLines(doc, "", lines)
		// Every mistake of shape is reported, and taken out so that the
		// rest decodes and is validated too.
		checkShape(doc, reflect.TypeOf(cfg).Elem(), "", &shape)
		if err := doc.Decode(cfg); err != nil {
			shape = append(shape, shapeProblem{0, cleanYAMLError(err)})
		}
	}
	cfg.lines = lines
	v := &validator{cfg: cfg, getenv: getenv}
	v.validate(cfg)
	if len(shape)+len(v.errs) > 0 {
		return cfg, mergeProblems(shape, v.errs), nil
	}
	return cfg, nil, nil
}

// Merge is problems in the order of their lines (those without one
// first).
func Merge(problems ...Errors) Errors {
	var all Errors
	for _, p := range problems {
		all = append(all, p...)
	}
	return mergeProblems(nil, all)
}

// mergeProblems lists the problems of shape and of meaning together, by
// line.
func mergeProblems(shape []shapeProblem, semantic Errors) Errors {
	all := append([]shapeProblem(nil), shape...)
	for _, e := range semantic {
		line := 0
		fmt.Sscanf(e, "line %d:", &line)
		all = append(all, shapeProblem{line, e})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].line < all[j].line })
	out := make(Errors, len(all))
	for i, p := range all {
		out[i] = p.text
	}
	return out
}

func cleanYAMLError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.ReplaceAll(msg, "unmarshal errors:\n  ", "")
	return strings.ReplaceAll(msg, "\n  ", "\n")
}

// indexLines maps a path such as "tenants[0].users[1].role" to the line
// of its value.
func indexLines(n *yaml.Node, path string, out map[string]int) {
	out[path] = n.Line
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			child := key
			if path != "" {
				child = path + "." + key
			}
			out[child] = n.Content[i].Line
			indexLines(n.Content[i+1], child, out)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			indexLines(c, fmt.Sprintf("%s[%d]", path, i), out)
		}
	}
}

// ResolveToken returns a key's token, reading token_env through getenv.
func ResolveToken(k Key, getenv func(string) string) string {
	if k.TokenEnv != "" {
		return getenv(k.TokenEnv)
	}
	return k.Token
}

// ResolveAPIKey returns a model's API key, reading api_key_env through getenv.
func ResolveAPIKey(m Model, getenv func(string) string) string {
	if m.APIKeyEnv != "" {
		return getenv(m.APIKeyEnv)
	}
	return m.APIKey
}
