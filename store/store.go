// Package store defines the persistence contracts of the turn engine:
// conversation memory, pending confirmations, the inbox that makes message
// delivery idempotent, execution records that make tool side effects happen
// at most once, the per-conversation lock, and the journal.
//
// Backends live in sub-packages (store/sqlitestore is the embedded default)
// and must pass the conformance suite in store/storetest. This package holds
// contracts and plain data only; it knows nothing of models or tools.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/arbiterhq/arbiter/chat"
)

// Errors every backend returns (possibly wrapped) so callers can branch on
// them with errors.Is.
var (
	// ErrNotFound: the record does not exist or has expired.
	ErrNotFound = errors.New("not found")
	// ErrConflict: an update's precondition no longer holds (an action
	// someone else decided first).
	ErrConflict = errors.New("conflict")
	// ErrLockTimeout: the conversation lock was not granted within the wait.
	ErrLockTimeout = errors.New("conversation lock wait timed out")
	// ErrFenced: a newer lock holder exists; the commit was refused.
	ErrFenced = errors.New("lock lost to a newer holder")
	// ErrUnavailable: the backend cannot be reached; retry later.
	ErrUnavailable = errors.New("store unavailable")
)

// Message roles kept in conversation memory.
const (
	RoleUser      = "user"      // the user's own words (or pressed button)
	RoleAssistant = "assistant" // what the assistant said
	RoleEvidence  = "evidence"  // forwarded, attached or quoted material
	RoleTool      = "tool"      // a tool result, as data
)

// Message is one entry of conversation memory.
type Message struct {
	Role string `json:"role"`
	Text string `json:"text"`
	// Name is the tool name (RoleTool) or the evidence kind (RoleEvidence).
	Name   string    `json:"name,omitempty"`
	Source string    `json:"source,omitempty"`
	At     time.Time `json:"at"`
}

// Conversation is the memory of one conversation key.
type Conversation struct {
	Messages  []Message `json:"messages"`
	StartedAt time.Time `json:"started_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Slots hold small named state of later features (drafts, modes,
	// queued forwards) so backends need no schema change for them.
	Slots map[string]json.RawMessage `json:"slots,omitempty"`
	// MessagesUntil and SlotsUntil are the parts' lifetimes: the messages
	// are kept until MessagesUntil, each slot until its entry. A part
	// with no time of its own is kept for the backend's ConversationTTL
	// past UpdatedAt. A backend keeps the record until the latest of these
	// times and returns of it only the parts whose time has not passed
	// (inclusive: a part is there at exactly its time), with their times;
	// when no part is left, the conversation is not found. One part's end
	// never takes another with it (see Conversation.Prune).
	MessagesUntil time.Time            `json:"messages_until,omitzero"`
	SlotsUntil    map[string]time.Time `json:"slots_until,omitempty"`
}

// PendingAction is a proposal waiting for the user's confirmation. After
// "yes" exactly this tool and these arguments run, under IdempotencyKey.
type PendingAction struct {
	ID             string               `json:"id"`
	Key            chat.ConversationKey `json:"key"`
	Tool           string               `json:"tool"`
	Args           json.RawMessage      `json:"args"`
	ArgsHash       string               `json:"args_hash"`
	IdempotencyKey string               `json:"idempotency_key"`
	TurnID         string               `json:"turn_id"` // the turn that proposed it
	CreatedAt      time.Time            `json:"created_at"`
	ExpiresAt      time.Time            `json:"expires_at"`
}

// InboxRecord remembers that a message id was accepted for a conversation,
// and the reply once its turn completed.
type InboxRecord struct {
	MessageID string          `json:"message_id"`
	TurnID    string          `json:"turn_id"`
	Done      bool            `json:"done"`
	Reply     json.RawMessage `json:"reply,omitempty"`
	At        time.Time       `json:"at"`
}

// Execution states.
const (
	ExecStarted = "started" // the call may or may not have reached the tool
	ExecDone    = "done"    // the tool returned; Result holds what it said
)

// ExecutionRecord is the at-most-once ledger entry of one stored action,
// keyed by (tenant, idempotency key).
type ExecutionRecord struct {
	Tenant         string `json:"tenant"`
	IdempotencyKey string `json:"idempotency_key"`
	Tool           string `json:"tool"`
	ArgsHash       string `json:"args_hash"`
	// Args are the arguments as run, so a turn that finds the record of an
	// interrupted attempt can finish exactly that call, whatever a model
	// would propose now.
	Args   json.RawMessage `json:"args,omitempty"`
	TurnID string          `json:"turn_id"`
	// Key and MessageID name the conversation and the accepted message the
	// call serves, when it serves one. BeginExecution then also makes that
	// message's claim durable (if it is not already): after a crash, a
	// redelivery of the message finds it accepted and not done, and so
	// looks for this record instead of deciding afresh.
	Key        chat.ConversationKey `json:"key"`
	MessageID  string               `json:"message_id,omitempty"`
	State      string               `json:"state"`
	Result     json.RawMessage      `json:"result,omitempty"`
	StartedAt  time.Time            `json:"started_at"`
	FinishedAt time.Time            `json:"finished_at"`
}

// Commit is every state change of one turn, applied atomically: either all
// of it is visible afterwards or none of it.
type Commit struct {
	Key   chat.ConversationKey
	Fence int64 // the lease's fence; older fences are refused with ErrFenced
	// Conversation replaces the memory when non-nil, with its parts'
	// times (a part without one ends the backend's ConversationTTL after
	// UpdatedAt).
	Conversation *Conversation
	// PutPending stores the conversation's pending action (replacing any);
	// DropPending removes it. PutPending wins when both are set.
	PutPending  *PendingAction
	DropPending bool
	// MessageID, when set, marks that inbox record done with Reply.
	MessageID string
	Reply     json.RawMessage
	// Turn, when set, is appended to the journal in the same transaction,
	// saving a second one per turn. Only a backend that is also the
	// journal accepts it; others refuse the commit with an error.
	Turn *TurnRecord
	// Release, when set, lets a backend whose Locker is itself release the
	// caller's lease on Key.String() (granted under Fence) together with a
	// commit that applied, saving the release its own round trip. The
	// caller still calls the lease's Release, which is then free; a
	// backend may ignore the field.
	Release bool
}

// State is conversation state: memory, pending actions, inbox and execution
// records. Implementations are safe for concurrent use; callers serialize
// the turns of one conversation with a Locker. Every method returns
// ErrUnavailable (wrapped) when the backend cannot be reached.
type State interface {
	// LoadConversation returns the memory of key with the parts whose
	// time has not passed (see Conversation.MessagesUntil), or ErrNotFound
	// when there is none or no part is left.
	LoadConversation(ctx context.Context, key chat.ConversationKey) (Conversation, error)
	// GetPending returns the pending action of key, or ErrNotFound.
	GetPending(ctx context.Context, key chat.ConversationKey) (PendingAction, error)
	// TakePending atomically removes and returns the pending action of key
	// if its id is id; otherwise ErrNotFound and nothing changes. Two
	// concurrent takes of one action never both succeed.
	TakePending(ctx context.Context, key chat.ConversationKey, id string) (PendingAction, error)
	// ClaimMessage records messageID for key under turnID. If the id was
	// recorded before, it returns that record and claimed=false.
	ClaimMessage(ctx context.Context, key chat.ConversationKey, messageID, turnID string, now time.Time) (rec InboxRecord, claimed bool, err error)
	// BeginExecution records rec (State ExecStarted) unless a record with the
	// same tenant and idempotency key exists, in which case it returns that
	// record and fresh=false. When rec.MessageID is set, the claim of that
	// message (rec.Key) is durable once BeginExecution returns: a
	// ClaimMessage of it, even after a restart, returns it not done unless
	// a Commit completed it.
	BeginExecution(ctx context.Context, rec ExecutionRecord) (existing ExecutionRecord, fresh bool, err error)
	// GetExecution returns the record of tenant's idempotency key, or
	// ErrNotFound.
	GetExecution(ctx context.Context, tenant, idempotencyKey string) (ExecutionRecord, error)
	// FinishExecution marks the record done with its result.
	FinishExecution(ctx context.Context, tenant, idempotencyKey string, result json.RawMessage, at time.Time) error
	// Commit applies a turn's changes atomically.
	Commit(ctx context.Context, c Commit) error
}

// Lease is a granted conversation lock.
type Lease interface {
	// Fence is a number that grows with every grant of the same key.
	Fence() int64
	// Lost is closed when the lease expired or was taken over; a holder
	// must not commit after that.
	Lost() <-chan struct{}
	// Release gives the lock back; only the owner's lease can release it,
	// and releasing twice is harmless.
	Release()
}

// Extender is a Lease that does not renew itself while its holder runs
// (an in-process lock, whose holder cannot stall apart from the process
// that judges it): taken over once its TTL has passed, unless the holder
// says how long its work may take. Extend protects the lease from
// takeover for d from now (never for less than its TTL); a holder stuck
// past that is taken over as before. A lease that renews itself needs
// no Extend.
type Extender interface {
	Lease
	Extend(d time.Duration)
}

// Locker serializes the turns of one conversation, across every process
// sharing the backend. Safe for concurrent use.
type Locker interface {
	// Lock waits until the key is free (bounded by the backend's wait and by
	// ctx) and returns the lease, or ErrLockTimeout.
	Lock(ctx context.Context, key string) (Lease, error)
}

// LLMCall is one journaled model call (one attempt).
type LLMCall struct {
	Provider  string `json:"provider"`
	Model     string `json:"model"`
	Operation string `json:"operation"`
	Strategy  string `json:"strategy"`
	// Attempt is first, retry, fallback or skipped (a blocked provider).
	Attempt           string  `json:"attempt"`
	InputTokens       int     `json:"input_tokens"`
	CachedInputTokens int     `json:"cached_input_tokens"`
	OutputTokens      int     `json:"output_tokens"`
	CostUSD           float64 `json:"cost_usd"`
	// CostUnknown: no price is known for this model on this provider (a
	// self-hosted or custom endpoint not named in prices); CostUSD is 0.
	CostUnknown bool   `json:"cost_unknown,omitempty"`
	DurationMS  int64  `json:"duration_ms"`
	Status      string `json:"status"`
	Error       string `json:"error"`
	// Note says what the retry and fallback policy did ("blocked provider
	// fireworks for 5m0s").
	Note string `json:"note,omitempty"`
	// At is when the call started.
	At time.Time `json:"at"`
}

// ToolCall is one journaled tool execution, with what an audit asks of
// it: which tool on which server, the arguments' hash, the risk and the
// caller's scope that allowed it, and the confirmation it ran under.
type ToolCall struct {
	Tool string `json:"tool"`
	// Server and RemoteTool name a tool of another process (an MCP
	// server's name and its own name for the tool); empty otherwise.
	Server         string `json:"server,omitempty"`
	RemoteTool     string `json:"remote_tool,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// ArgsHash is the SHA-256 (hex) of the arguments as run (canonical:
	// sorted keys), so equal calls hash equally.
	ArgsHash string `json:"args_hash,omitempty"`
	Risk     string `json:"risk,omitempty"`
	// Scope is the caller's scope the call ran under.
	Scope string `json:"scope,omitempty"`
	// ConfirmationID is the pending action the user confirmed; empty for
	// a call that needed no confirmation.
	ConfirmationID string    `json:"confirmation_id,omitempty"`
	Status         string    `json:"status"`
	Error          string    `json:"error,omitempty"`
	DurationMS     int64     `json:"duration_ms"`
	At             time.Time `json:"at"`
}

// TurnRecord is one journaled turn: indexed columns plus the full trace as
// JSON (Trace), which is what GET /v1/turns/{id} shows.
type TurnRecord struct {
	TurnID     string          `json:"turn_id"`
	Tenant     string          `json:"tenant"`
	Chat       string          `json:"chat"`
	UserID     string          `json:"user_id"`
	Route      string          `json:"route"`
	Status     string          `json:"status"`
	StartedAt  time.Time       `json:"started_at"`
	DurationMS int64           `json:"duration_ms"`
	LLMCalls   []LLMCall       `json:"llm_calls"`
	ToolCalls  []ToolCall      `json:"tool_calls"`
	Trace      json.RawMessage `json:"trace"`
	// CostUnknown says a model call of the turn has no known price, so
	// its cost is not the sum of the calls'. ListTurns fills it from the
	// trace (whose "cost_unknown" the engine sets); AppendTurn ignores it.
	CostUnknown bool `json:"cost_unknown,omitempty"`
}

// Journal is the append-only record of turns, model calls and tool
// executions. Safe for concurrent use. AppendTurn returns only after the
// record is durable; it never drops records silently.
type Journal interface {
	AppendTurn(ctx context.Context, rec TurnRecord) error
	// GetTurn returns the turn of tenant with id turnID, or ErrNotFound
	// (also when the turn belongs to another tenant).
	GetTurn(ctx context.Context, tenant, turnID string) (TurnRecord, error)
}

// ChannelItem is a message a channel accepted and must process exactly
// once, kept durable from before the channel acknowledges it until it is
// processed.
type ChannelItem struct {
	Channel string `json:"channel"` // "telegram"
	// ID is unique per channel (Telegram: the chat id and update_id).
	ID string `json:"id"`
	// OrderKey groups items that must be processed in acceptance order
	// (Telegram: the chat id).
	OrderKey   string          `json:"order_key"`
	Payload    json.RawMessage `json:"payload"`
	AcceptedAt time.Time       `json:"accepted_at"`
}

// ChannelInbox is the channels' durable inbox: what a channel acknowledged
// is never lost, and a redelivered item is never accepted twice. Several
// instances may share it; processing must therefore be idempotent (the
// engine's message-id dedupe under the conversation lock makes it so).
// Safe for concurrent use; errors wrap ErrUnavailable when the backend is
// down.
type ChannelInbox interface {
	// Accept stores item unless an item with the same channel and id was
	// accepted within the dedupe window (at least 24 h), and reports
	// whether it was new. It returns only once the item is durable.
	Accept(ctx context.Context, item ChannelItem) (fresh bool, err error)
	// Pending returns accepted items of channel not yet marked done,
	// oldest first, at most n.
	Pending(ctx context.Context, channel string, n int) ([]ChannelItem, error)
	// Done marks an item processed; its id stays remembered for the
	// dedupe window. Marking an unknown or done item is harmless.
	Done(ctx context.Context, channel, id string) error
}

// TurnFilter selects turns for a list; empty fields match everything.
type TurnFilter struct {
	Chat     string
	UserID   string
	Status   string
	Provider string // turns with at least one model call to this provider
	Before   time.Time
	Limit    int // default 50, at most 500
}

// Page sizes of TurnLister.ListTurns.
const (
	DefaultTurnPage = 50
	MaxTurnPage     = 500
)

// PageSize is f.Limit with ListTurns' default and cap applied.
func (f TurnFilter) PageSize() int {
	switch {
	case f.Limit <= 0:
		return DefaultTurnPage
	case f.Limit > MaxTurnPage:
		return MaxTurnPage
	}
	return f.Limit
}

// TurnLister is an optional capability of a Journal: listing a tenant's
// turns, newest first, for trace views. The records carry their model and
// tool calls but not their Trace. Safe for concurrent use.
type TurnLister interface {
	ListTurns(ctx context.Context, tenant string, f TurnFilter) ([]TurnRecord, error)
}

// Action statuses: a write that waits for people of other roles to
// approve it, and what became of it. proposed → approved → executing →
// confirmed | failed | unknown; proposed → rejected | expired.
const (
	ActionProposed  = "proposed"
	ActionApproved  = "approved"
	ActionRejected  = "rejected"
	ActionExpired   = "expired"
	ActionExecuting = "executing"
	ActionConfirmed = "confirmed" // the write happened (the tool said so, or reconciliation found it)
	ActionFailed    = "failed"    // it did not happen
	ActionUnknown   = "unknown"   // nothing could tell; never repeated blindly
)

// Action is a proposed write that members of other roles approve.
type Action struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	// Key is the conversation the action was proposed in; its resumed
	// turn runs there, as Requester.
	Key       chat.ConversationKey `json:"key"`
	Requester chat.Identity        `json:"requester"`
	Case      map[string]string    `json:"case,omitempty"`
	Tool      string               `json:"tool"`
	Title     string               `json:"title"`
	Args      json.RawMessage      `json:"args"`
	ArgsHash  string               `json:"args_hash"`
	// Fields are the call's values as the server rendered them for the
	// approver, resolved targets included.
	Fields []ActionField `json:"fields"`
	// Approvers are the roles whose members may decide.
	Approvers []string  `json:"approvers"`
	Status    string    `json:"status"`
	TurnID    string    `json:"turn_id"` // the turn that proposed it
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	UpdatedAt time.Time `json:"updated_at"`
	DecidedBy string    `json:"decided_by,omitempty"` // the approver's user id
	DecidedAt time.Time `json:"decided_at,omitzero"`
	// IdempotencyKey is the write's key, derived from the case, the
	// action and its approval; Result what the tool (or reconciliation)
	// said; Reason why it failed, is unknown or was rejected.
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
	Reason         string          `json:"reason,omitempty"`
	// Basis are the facts the action rests on (tool.Spec.Basis), as they
	// were read when it was proposed — or, once a re-read right before the
	// write found them changed, as they are now.
	Basis []ActionFact `json:"basis,omitempty"`
}

// ActionFact is one read an action rests on: the call and what it
// answered, from which system and when.
type ActionFact struct {
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args"`
	Source     string          `json:"source"`
	ObservedAt time.Time       `json:"observed_at"`
	Data       json.RawMessage `json:"data,omitempty"`
}

// ActionField is one value of an action as shown to its approver.
type ActionField struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Actions is an optional capability of a State: keeping actions that wait
// for approval. Safe for concurrent use.
type Actions interface {
	// PutAction stores a new action.
	PutAction(ctx context.Context, a Action) error
	// GetAction returns tenant's action id, or ErrNotFound.
	GetAction(ctx context.Context, tenant, id string) (Action, error)
	// ListActions returns tenant's actions with status (any when empty),
	// newest first, at most limit.
	ListActions(ctx context.Context, tenant, status string, limit int) ([]Action, error)
	// UpdateAction replaces the stored action a.ID with a if its status is
	// still from, and returns a. Otherwise nothing changes and it returns
	// the stored action with ErrConflict (ErrNotFound when there is none):
	// of two updates from the same status, exactly one succeeds.
	UpdateAction(ctx context.Context, a Action, from string) (Action, error)
}

// Retention bounds what a store keeps (see Pruner). A zero period keeps
// that kind forever.
type Retention struct {
	// Turns: journaled turns (with their model and tool calls) that
	// started longer ago are deleted.
	Turns time.Duration
	// Executions: finished execution records older than this are deleted.
	// A redelivery of a message older than this could run its write again,
	// so keep it well beyond any channel's redelivery window. Records of
	// writes still in progress are never deleted.
	Executions time.Duration
	// Batch is the most rows one short transaction deletes; the store's
	// default when zero.
	Batch int
}

// Pruned counts what a Prune deleted.
type Pruned struct {
	Turns      int `json:"turns"`
	Executions int `json:"executions"`
}

// Pruner is a store that deletes records past their retention. It deletes
// in small batches, each its own short transaction, so a turn waits for at
// most one batch; space freed is reused by new records.
type Pruner interface {
	Prune(ctx context.Context, now time.Time, r Retention) (Pruned, error)
}
