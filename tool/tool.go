// Package tool defines the contract between the turn engine and the systems
// it acts on: a Tool describes itself with a Spec (schema, risk, confirmation
// policy, limits) and runs a Call, returning a Result that separates "ok",
// "not found", "ambiguous" and "error".
//
// It also holds the Registry (tools by name with their compiled input
// schemas) and the loader that maps third-party function definitions onto
// JSON Schema. Concrete tools live in sub-packages (tool/taskboard, ...);
// this package knows none of them, and it knows nothing of models or chats.
package tool

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
)

// Risk is a tool's side-effect level; the caller needs the scope of the same
// name to run it.
type Risk string

// Risk levels.
const (
	RiskRead      Risk = "read"       // observes state only
	RiskWriteSafe Risk = "write:safe" // changes state, reversible or internal
	RiskWriteFull Risk = "write:full" // public, external or irreversible
)

// Valid reports whether r is a known level.
func (r Risk) Valid() bool {
	return r == RiskRead || r == RiskWriteSafe || r == RiskWriteFull
}

// Writes reports whether the level changes state.
func (r Risk) Writes() bool { return r == RiskWriteSafe || r == RiskWriteFull }

// Confirm is a tool's confirmation policy.
type Confirm string

// Confirmation policies.
const (
	ConfirmNever  Confirm = "never"
	ConfirmAlways Confirm = "always"
)

// Defaults applied by the registry when a Spec leaves a limit zero.
const (
	DefaultTimeout        = 15 * time.Second
	DefaultMaxResultBytes = 16 << 10
)

// Spec describes a tool: what the model sees of it (Name, Description,
// InputSchema: the function definition it may call), how people read it
// (the titles, labels and sentences of its confirmations, receipts and
// progress), where it runs, and the server's Policy for it — what a call
// needs and what the engine enforces around it, none of which the model
// is shown. Policy is embedded: its fields read as the Spec's own
// (spec.Risk), and a Spec encodes as one JSON object.
type Spec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`

	Title string `json:"title,omitempty"` // human name used in confirmations
	// Titles are Title in each language people read it in; Labels name
	// the arguments for people, per argument and language — a
	// confirmation shows «Срок» / "Due", not dueIso. Without a label the
	// schema property's title is used, then the argument's name.
	Titles Localized            `json:"titles,omitempty"`
	Labels map[string]Localized `json:"labels,omitempty"`
	// Doing names a call as an activity, per language, for a sentence
	// about it: «Создание задачи», "Creating the task" (a pending call a
	// new message replaced is reported as «Создание задачи «…» отменено»).
	// Without one in a language, the sentence names the call by its title.
	Doing Localized `json:"doing,omitempty"`
	// Receipt names one call of a write in the line the server adds to a
	// reply about it, per language, with {argument} placeholders: «Возврат
	// {amount} ₽ по платежу {payment_id}». Empty: the title in quotes.
	Receipt Localized `json:"receipt,omitempty"`
	// Chip is what a person reads while a call runs, per language: «Ищу
	// в вашей почте…», "Searching your mail…". Empty: the engine's
	// sentence naming the call by its title.
	Chip Localized `json:"chip,omitempty"`

	// Server and RemoteName say where a tool of another process runs —
	// an MCP server's name and its own name for the tool — so the journal
	// can record every remote call by server and tool. Empty for tools of
	// this process.
	Server     string `json:"server,omitempty"`
	RemoteName string `json:"remote_name,omitempty"`

	Policy
}

// Policy is what the server enforces for a tool, beside what the model
// sees of it: its risk and confirmation, its limits, where its values may
// come from, who approves it and what a reply may claim of it (the MCP
// analogue is a tool's annotations, which arbiter does not take on
// trust).
type Policy struct {
	Risk    Risk    `json:"risk"`
	Confirm Confirm `json:"confirm"`
	// Timeout bounds one call; zero means DefaultTimeout.
	Timeout time.Duration `json:"timeout,omitempty"`
	// MaxResultBytes caps the encoded Result.Data; zero means
	// DefaultMaxResultBytes. Larger data is replaced by a truncation notice.
	MaxResultBytes int `json:"max_result_bytes,omitempty"`
	// Idempotent declares that the tool applies each IdempotencyKey at most
	// once, so a call whose outcome is unknown (a crash or timeout after
	// sending) may be repeated with the same key to learn the outcome.
	Idempotent bool `json:"idempotent,omitempty"`
	// AttachmentArg names an argument that can carry a file the user sent
	// earlier in the conversation. The model may only set it to the string
	// "last"; the server replaces that with the stored attachment (an
	// Attachment object), so a file reference never comes from model text.
	// The input schema must accept both forms.
	AttachmentArg string `json:"attachment_arg,omitempty"`
	// ExternalResults says the tool's results carry what others wrote
	// even when it writes — a fetched page, a record of a system this
	// process does not own — so the engine weighs them as it weighs what
	// a read returns. A local write, whose acknowledgement echoes its
	// arguments, leaves it false; tools of another process count as
	// external anyway.
	ExternalResults bool `json:"external_results,omitempty"`
	// Outcomes are what a reply may say happened only after a successful
	// call of this tool in its turn — "refund_done", "access_restored".
	// A model's reply that asserts one while no call of a tool declaring
	// it succeeded is not sent: the task goes to a person. See Outcome.
	Outcomes []Outcome `json:"outcomes,omitempty"`
	// Claims are phrases (any language, any letter case) with which a
	// reply would say this tool's action happened — "оплата проведена".
	// The older form of Outcomes: each phrase is an outcome of its own
	// whose pattern is the phrase's words, read as Outcomes are.
	Claims []string `json:"claims,omitempty"`
	// BoundArgs are arguments that belong to the conversation's case
	// (chat.Inbound.Case), such as "ticket_id": the server fills them from
	// the case and refuses a call that names another value, or that comes
	// from a conversation bound to no case.
	BoundArgs []string `json:"bound_args,omitempty"`
	// Sensitive are arguments that say where data goes or what unlocks
	// it (a recipient, an account, an amount) besides those the engine
	// knows by name and form (links, addresses, IBANs, phone numbers): a
	// read holding a value of one that came from content of others waits
	// for the user's yes, which names the value's source.
	Sensitive []string `json:"sensitive,omitempty"`
	// Approve names the roles whose members approve a call of this write
	// tool (a staff member for a refund): the call becomes an action that
	// waits for one of them, and the requesting user's own "yes" does not
	// run it.
	Approve []string `json:"approve,omitempty"`
	// PublishesDraft says the tool writes what a drafting tool prepared
	// (Result.Draft.Publish names it): it runs only from that draft's
	// publish button, is never offered to a model and refuses any other
	// caller.
	PublishesDraft bool `json:"publishes_draft,omitempty"`
	// Redact names fields of the arguments and results (at any depth)
	// whose values are never written down as they are — a card number, an
	// e-mail: the journal and the traces hold a keyed hash of each value
	// the turn saw, wherever it appears. What must be executed keeps them
	// (an action's arguments). Sensitive, unrelated, is about provenance.
	Redact []string `json:"redact,omitempty"`
	// FreshFor is how long a read's result stands for the current state
	// (zero: for the whole task). A loop's final answer given after a
	// result of it older than this waits for the read to be made again;
	// a result that changed goes back to the model before it answers.
	FreshFor time.Duration `json:"fresh_for,omitempty"`
	// Basis names the reads an approved call of this write rests on
	// ("get_payment_status"): the action shows their results to its
	// approvers as they were read (source, observed_at), and right before
	// the write they are read again; a result that changed sends the
	// action back to its approvers with the new facts instead of writing.
	Basis []string `json:"basis,omitempty"`
	// Requires names the integration the user must have connected for
	// the tool to be shown or run at all ("google"); empty: none.
	Requires string `json:"requires,omitempty"`
}

// Outcome is something a reply can say happened. Name is one of the
// outcomes the engine knows by its words (intent.Outcomes: refund_done,
// access_restored, subscription_active, payment_confirmed) or the
// deployment's own; Patterns are word patterns in intent's syntax
// ("возврат* ... выполнен~", "refunded") — a name the engine does not
// know needs them; for one it knows they are added to its own.
//
// When, if set, narrows what confirms it: a successful call whose result
// data holds each field with the value given (a dotted path such as
// "payment.status", the value as text) — get_subscription_status
// confirms "subscription_active" only when it answered {"status":
// "active"}.
type Outcome struct {
	Name     string            `json:"name"`
	Patterns []string          `json:"patterns,omitempty"`
	When     map[string]string `json:"when,omitempty"`
}

// Localized is one text in several languages, by code ("ru", "en").
type Localized map[string]string

// In returns the text in lang, else in the default language
// (chat.DefaultLanguage), else in any of chat.Languages, else any.
func (l Localized) In(lang string) string {
	for _, k := range append([]string{lang, chat.DefaultLanguage}, chat.Languages...) {
		if v := l[k]; v != "" {
			return v
		}
	}
	for _, v := range l {
		return v
	}
	return ""
}

// TitleIn is the tool's title in lang.
func (s Spec) TitleIn(lang string) string {
	if t := s.Titles.In(lang); t != "" {
		return t
	}
	if s.Title != "" {
		return s.Title
	}
	return s.Name
}

// Attachment is a file the user sent, as the server stored it: how it was
// described and either a link to it or the channel's reference to it.
type Attachment struct {
	Name string `json:"name,omitempty"`
	URL  string `json:"url,omitempty"`  // an http(s) link
	File string `json:"file,omitempty"` // a channel's file reference, e.g. "telegram-file:<file_id>"
}

// AttachmentSchema is the JSON Schema of an argument named by
// Spec.AttachmentArg: the model's "last", the stored Attachment the server
// puts in its place, or null.
const AttachmentSchema = `{"anyOf": [
  {"const": "last", "description": "the file the user sent in this conversation"},
  {"type": "object", "additionalProperties": false, "properties": {
    "name": {"type": "string", "maxLength": 256},
    "url": {"type": "string", "maxLength": 2000},
    "file": {"type": "string", "maxLength": 300}}},
  {"type": "null"}]}`

// Caller is who a call runs for, taken from the authenticated identity and
// never from model output.
type Caller struct {
	TenantID string
	UserID   string
	Name     string
	Role     string
	Timezone string
	Language string
}

// Session is what a tool may do while its call runs, besides returning a
// result: show progress, ask the call's user, and ask the model of the
// turn the call runs in (an MCP server's approved sampling request, say).
// The engine hands one to every call as Call.Session; it ends when the
// call returns, after which progress is dropped and questions fail. Safe
// for concurrent use.
type Session interface {
	// Progress shows an update; it never blocks for long.
	Progress(p chat.Progress)
	// Ask shows q to the call's user and waits for the answer until ctx
	// ends; chat.ErrNoLive when the channel cannot ask.
	Ask(ctx context.Context, q chat.Question) (chat.Answer, error)
	// Model is the turn's model, each of its calls journaled and costed
	// with the turn; nil when none is configured.
	Model() llm.Provider
}

// Call is one invocation of a tool.
type Call struct {
	Caller Caller
	Args   json.RawMessage
	// IdempotencyKey is stable for one stored action and reused on every
	// retry; a tool that writes must not apply the same key twice.
	IdempotencyKey string
	Now            time.Time
	// Session is what the call may do while it runs; nil outside a turn
	// (a tool called directly, a test).
	Session Session
}

// Status is the outcome class of a call that ran.
type Status string

// Result statuses. A timeout or an unreachable backend is StatusError,
// never StatusNotFound.
const (
	StatusOK        Status = "ok"
	StatusNotFound  Status = "not_found"
	StatusAmbiguous Status = "ambiguous" // several matches; see Candidates
	StatusError     Status = "error"
)

// Result is what a call returned. Data is evidence for the model, never an
// instruction; Text is a short human rendering used in replies.
type Result struct {
	Status     Status          `json:"status"`
	Data       json.RawMessage `json:"data,omitempty"`
	Text       string          `json:"text,omitempty"`
	Error      string          `json:"error,omitempty"`
	Source     string          `json:"source,omitempty"`
	ObservedAt time.Time       `json:"observed_at"`
	// Field and Candidates describe an ambiguous argument: which one and the
	// live values it could mean.
	Field      string   `json:"field,omitempty"`
	Candidates []string `json:"candidates,omitempty"`
	// Choices, when given, complete the ambiguous request: one per
	// candidate, in the same order, each the whole call that picking it
	// means. The engine keeps them as the conversation's draft, so the
	// user's button runs the stored call (still authorized and confirmed
	// like any other) and no model has to copy values back from a memo.
	Choices []Choice `json:"choices,omitempty"`
	// Draft, when given, is a write prepared and not made (a post, a sell
	// card): the engine keeps it as the conversation's draft and shows its
	// text with three buttons — publish, edit, cancel. Only publish runs
	// the draft's call, once; the tool that drafts writes nothing.
	Draft *Draft `json:"draft,omitempty"`
	// OutcomeUnknown marks a failed write that may have taken effect all
	// the same: the request left, and no clear answer came back (a
	// timeout, a dropped connection, a server error). It is never
	// repeated blindly; a tool.Reconciler can tell.
	OutcomeUnknown bool `json:"outcome_unknown,omitempty"`
}

// Choice is one way to complete an ambiguous request: the call to make
// when the user picks Label.
type Choice struct {
	Label string          `json:"label"`
	Tool  string          `json:"tool"`
	Args  json.RawMessage `json:"args"`
}

// Draft is what a drafting tool prepared: the text the user sees and the
// whole call that publishing it means (Publish.Label, when set, names the
// publish button).
type Draft struct {
	Text    string `json:"text"`
	Publish Choice `json:"publish"`
}

// Tool is one operation the engine may run. Call returns a Go error only
// when the tool could not run at all (misconfiguration, a bug); a tool that
// ran and failed returns a Result with StatusError. Implementations are
// safe for concurrent use.
type Tool interface {
	Spec() Spec
	Call(ctx context.Context, call Call) (Result, error)
}

// ContextSection is a titled block of live facts for the model's prompt.
type ContextSection struct {
	Title string
	Lines []string
}

// ContextSource describes live state the model needs before deciding
// (board members, columns, the caller's open cards). The engine fetches all
// sources in parallel, each under a timeout; an error drops that source's
// sections from the prompt and is journaled. Implementations are safe for
// concurrent use.
type ContextSource interface {
	Name() string
	LiveContext(ctx context.Context, caller Caller, now time.Time) ([]ContextSection, error)
}

// Resolver is an optional capability of a tool whose effective spec depends
// on its arguments — a universal action that dispatches to other tools,
// like the seed system's "mcp" action. The engine checks role, scope,
// confirmation and the confirmation's wording against the resolved spec
// (whose Name identifies the target, e.g. "mcp:everything/echo"), never
// against the dispatcher's own. An error means the arguments name nothing
// runnable; the engine vetoes the proposal. Safe for concurrent use.
type Resolver interface {
	Resolve(ctx context.Context, caller Caller, args json.RawMessage) (Spec, error)
}

// Prechecker is a write tool that can check, right before an approved
// call runs, that it still makes sense — the payment is still confirmed
// and not refunded yet. A non-nil error (a failed precondition, or a check
// that could not be made) means the call does not run; its text says why.
// The engine asks it only of a call none of whose attempts was begun: a
// precheck after a write that may have been sent would see the write's
// own effect. Safe for concurrent use.
type Prechecker interface {
	Precheck(ctx context.Context, call Call) error
}

// Reconciler is a write tool that can tell, by reading its system, whether
// a call with call.IdempotencyKey took effect: Result status ok (with what
// happened as Data) when it did, not_found when it did not. An error means
// nothing can tell now (ErrNoReadBack: nothing ever can). The engine asks
// it when a call's outcome is unknown (a timeout after sending, a process
// that stopped with the call in flight) instead of reporting or repeating
// anything, and asks again while the system cannot answer. Safe for
// concurrent use.
type Reconciler interface {
	Reconcile(ctx context.Context, call Call) (Result, error)
}

// ErrNoReadBack is the error (or what it wraps) of a Reconciler that has
// no way to read its writes back at all, as opposed to a system that is
// unavailable for now: asking again cannot help.
var ErrNoReadBack = errors.New("this tool cannot read its writes back")

// Previewer is an optional capability of a tool whose arguments name
// objects it changes (cards, members, columns, events, files). Preview
// resolves them as the call would, changing nothing, so the confirmation
// the user answers shows the objects themselves — "«Fire Bob» (4tjszd94)",
// not the text a model wrote — and a reference that matches nothing, or
// several things, or whose words and id disagree, is settled before anyone
// is asked. Safe for concurrent use.
type Previewer interface {
	Preview(ctx context.Context, call Call) (Preview, error)
}

// Preview is what a call would change, resolved now.
type Preview struct {
	// Fields are resolved values by argument name ("card" -> "«Fire Bob
	// (HR, confidential)» (4tjszd94), column В работе"); arguments not
	// listed are shown as given.
	Fields map[string]string
	// Problem, when set, says why the call cannot go ahead as proposed
	// (StatusNotFound, StatusAmbiguous with Candidates): the user gets it
	// instead of a confirmation, and nothing waits for a "yes".
	Problem *Result
}

// LinkReader is an optional capability of a tool set that owns links, such
// as task-board cards: ReadLink answers what a link points to, read from
// the system itself (title, description, due date, status, URL), or
// ok=false when the link is not one of its own. The deterministic "what
// is this task" route a board's kind brings (turn.LinkRoute) uses it, with
// no model involved. Safe for concurrent use.
type LinkReader interface {
	ReadLink(ctx context.Context, caller Caller, link string) (res Result, ok bool)
}
