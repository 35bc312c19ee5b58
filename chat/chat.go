// Package chat holds the leaf types that channels and the turn engine share:
// who is speaking (Identity), what arrived (Inbound, Evidence), what goes back
// (Outbound, Button) and the Handler contract a channel calls.
//
// It holds no behaviour beyond small helpers on those types; routing,
// memory, models and tools live in other packages. It imports nothing from
// this module.
package chat

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// ErrCaseConflict is wrapped by a Handler's error for a message whose Case
// names another case than the one its conversation is bound to; nothing of
// the message was handled.
var ErrCaseConflict = errors.New("the conversation is bound to another case")

// Scope is a permission carried by an API key or channel identity. A tool
// may run only when the caller holds the scope of its risk level.
type Scope string

// The scopes known to the engine, in increasing order of power.
const (
	ScopeRead      Scope = "read"
	ScopeWriteSafe Scope = "write:safe"
	ScopeWriteFull Scope = "write:full"
	// ScopeContextBind lets a trusted integration (a helpdesk) bind a
	// conversation to its case (Inbound.Case); it runs no tool.
	ScopeContextBind Scope = "context:bind"
	// ScopeTurnsReadAll lets a key read every turn and question of its
	// tenant (an operator); without it a user reads only their own.
	ScopeTurnsReadAll Scope = "turns:read_all"
)

// Identity is an authenticated caller, resolved by the channel from its own
// credentials (an API key, a Telegram user id). The engine trusts it as given.
type Identity struct {
	TenantID string
	UserID   string
	Name     string // display name, e.g. "Дмитрий"
	Role     string
	Scopes   []Scope
	Timezone string // IANA zone; empty means the tenant's zone
	Language string // reply language ("ru", "en"); empty means the tenant's (see Language)
	// Connected are the integrations this user has connected ("google",
	// "trello"): tools that require one are shown only with it.
	Connected []string
}

// Connects reports whether the identity has the integration connected.
func (id Identity) Connects(integration string) bool {
	for _, c := range id.Connected {
		if c == integration {
			return true
		}
	}
	return false
}

// HasScope reports whether the identity holds s.
func (id Identity) HasScope(s Scope) bool {
	for _, have := range id.Scopes {
		if have == s {
			return true
		}
	}
	return false
}

// ConversationKey names one conversation: tenant + chat + user, as in the
// seed system. Two users in one group chat have two conversations.
type ConversationKey struct {
	Tenant string
	Chat   string
	User   string
}

// String renders the key as "tenant/chat/user" with "/" and "%" escaped
// inside parts, so distinct keys never collide.
func (k ConversationKey) String() string {
	var buf [128]byte // most keys fit: one allocation, the string's
	return string(k.AppendTo(buf[:0]))
}

// AppendTo appends the key as String renders it to b, for lookups that
// need no string of their own.
func (k ConversationKey) AppendTo(b []byte) []byte {
	b = appendPart(b, k.Tenant)
	b = append(b, '/')
	b = appendPart(b, k.Chat)
	b = append(b, '/')
	return appendPart(b, k.User)
}

func appendPart(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '%':
			b = append(b, "%25"...)
		case '/':
			b = append(b, "%2F"...)
		default:
			b = append(b, s[i])
		}
	}
	return b
}

// Evidence kinds. Evidence is data shown to the model, labelled with its
// origin; it never authorizes, confirms or adds an action.
const (
	EvidenceForward    = "forward"
	EvidenceAttachment = "attachment"
	EvidenceQuote      = "quote"
)

// Evidence is material that arrived with a message but is not the user's own
// words: a forwarded message, an attachment's text, a quoted reply.
type Evidence struct {
	Kind   string `json:"kind" yaml:"kind"`
	Text   string `json:"text" yaml:"text"`
	Source string `json:"source,omitempty" yaml:"source,omitempty"`
	// MediaType is an attachment's type as the channel knows it
	// ("image/jpeg" for a photo), empty when unknown.
	MediaType string `json:"media_type,omitempty" yaml:"media_type,omitempty"`
	// Data is an attachment's content when the channel fetched it (a
	// photo, a PDF): the engine reads it for the model and keeps it
	// nowhere — never in memory, the journal or a trace. Text still
	// describes the file (its first line names it) should it not be read.
	Data []byte `json:"-" yaml:"-"`
}

// IsImage reports whether ev is an attached image.
func (ev Evidence) IsImage() bool {
	return ev.Kind == EvidenceAttachment && strings.HasPrefix(strings.ToLower(ev.MediaType), "image/")
}

// Inbound is one message from a user as a channel accepted it.
type Inbound struct {
	Identity Identity
	// Chat is the channel's conversation id (HTTP conversation_id, Telegram
	// chat id). Together with the identity it forms the ConversationKey.
	Chat string
	// MessageID, when set, makes redelivery of the same message a no-op that
	// returns the first reply.
	MessageID string
	Text      string
	// Button is the value of a button the user pressed, if any. It is the
	// user's own input, like Text.
	Button   string
	Evidence []Evidence
	Channel  string // "http", "cli", "telegram", ...
	// Live, when the channel can reach the user while the turn runs, shows
	// progress and asks questions before the reply; nil when it cannot.
	Live Live
	// ReceivedAt is when the channel accepted the message (zero: when the
	// engine got it). A typed "yes" confirms only an action that was shown
	// before it arrived.
	ReceivedAt time.Time
	// Call, when set, is a tool call the caller's own program made (an MCP
	// client through `arbiter mcp`): it takes the place of the model's
	// decision and passes the same guards — catalog, schema, rights,
	// confirmation — with no model involved. Text and Button are ignored.
	Call *Call
	// Case is the case the conversation is about ({"ticket_id":
	// "T-4821"}), set by a trusted integration. Its first values bind the
	// conversation for good; tool arguments declared bound
	// (tool.Spec.BoundArgs) are filled from it and may not differ.
	Case map[string]string
	// CloseCase, set by the same trusted integration when the case ends
	// (the ticket is closed), ends the conversation's binding before
	// anything else of the message: the conversation starts afresh — its
	// memory, pending confirmation, interview and offers are forgotten —
	// and the message's own Case, if any, binds it anew. Actions proposed
	// in the closed case keep it.
	CloseCase bool
	// Client is what the user is doing in the client's interface, as the
	// client reports it: data for the router, never an instruction.
	Client *ClientHint
}

// Call names a tool of the catalog and its arguments.
type Call struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

// Key returns the conversation key of the message.
func (in Inbound) Key() ConversationKey {
	return ConversationKey{Tenant: in.Identity.TenantID, Chat: in.Chat, User: in.Identity.UserID}
}

// Button is a quick reply offered to the user; Value is sent back as the
// Inbound.Button when pressed.
type Button struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// PendingView shows the action waiting for the user's confirmation.
type PendingView struct {
	Tool      string          `json:"tool"`
	Args      json.RawMessage `json:"args"`
	ExpiresAt time.Time       `json:"expires_at"`
}

// Execution is one tool execution of the turn as the executor reported it.
type Execution struct {
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args"`
	Status string          `json:"status"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Outbound is the engine's reply to one Inbound.
type Outbound struct {
	TurnID    string       `json:"turn_id"`
	Say       string       `json:"say"`
	Buttons   []Button     `json:"buttons"`
	Pending   *PendingView `json:"pending"`
	Executed  []Execution  `json:"executed"`
	Duplicate bool         `json:"duplicate"`
	// Final is an interview's delivered result (Say holds its content
	// too); nil otherwise.
	Final *Final `json:"final,omitempty"`
	// Skill is the skill active in the chat after this turn (a router
	// assistant's conversational mode), or null.
	Skill *string `json:"skill"`
	// SkillLabel is the active skill's name as people read it.
	SkillLabel string `json:"skill_label,omitempty"`
	// Actions are the writes of the turn — proposed, waiting for an
	// approver or the user's yes, carried out, failed — each in its true
	// state as the server recorded it, with the line the server renders
	// for it in the user's language. A person never learns the state of a
	// write only from the model.
	Actions []ActionLine `json:"actions"`
	// Approvals are the actions of the turn that wait for (or waited for)
	// approvers, as the turn's record lists them: each with the status it
	// reached in the turn.
	Approvals []ApprovalRef `json:"approvals"`
}

// ApprovalRef is an action of approvers a turn created or carried on; its
// id is what GET and POST /v1/approvals/{id} take.
type ApprovalRef struct {
	ID     string `json:"id"`
	Tool   string `json:"tool"`
	Status string `json:"status"`
}

// ActionLine is one write of a turn in its true state.
type ActionLine struct {
	// ID is the action's id when it waits for (or waited for) approvers.
	ID   string `json:"id,omitempty"`
	Tool string `json:"tool"`
	// Status is proposed, approved, executing, confirmed, failed,
	// rejected, expired or unknown for an action of approvers;
	// awaiting_confirmation for one put to the user; confirmed, failed or
	// unknown for a write that ran at once.
	Status string `json:"status"`
	// Text is the server's line: «Возврат 990 ₽ по платежу pay_4821:
	// ожидает подтверждения сотрудника.»
	Text string `json:"text"`
}

// Final is the result an interview delivered.
type Final struct {
	Content string `json:"content"`
	// ConfidenceScore is the model's own estimate (0..1) of how fully the
	// result solves the task; nil when it gave none (a fallback model
	// that answered in plain text).
	ConfidenceScore *float64 `json:"confidence_score"`
}

// Handler processes one inbound message and returns the reply. It returns
// an error only when no reply is possible at all (the store is down, the
// conversation lock could not be taken); vetoes, invalid model output and
// tool failures are replies. Implementations are safe for concurrent use;
// messages of one conversation are serialized by the handler itself.
type Handler interface {
	HandleTurn(ctx context.Context, in Inbound) (Outbound, error)
}

// ClientHint is what the user is doing in the client's interface.
type ClientHint struct {
	OpenDocument string `json:"open_document,omitempty"` // the file open in the editor
	ActiveMode   string `json:"active_mode,omitempty"`   // a mode switched on in the UI (image, video, music, voice, mail)
	Tab          string `json:"tab,omitempty"`           // the tab in front
}

// ActionView is an action that waits (or waited) for approval by members
// of other roles, as an approver sees it: every value the server rendered,
// never the model's words.
type ActionView struct {
	ID             string            `json:"id"`
	ConversationID string            `json:"conversation_id"`
	RequestedBy    string            `json:"requested_by"` // user id of the conversation
	Case           map[string]string `json:"case,omitempty"`
	Tool           string            `json:"tool"`
	Title          string            `json:"title"`
	Fields         []Field           `json:"fields"`
	// Status is proposed, approved, rejected, expired, executing,
	// confirmed, failed or unknown.
	Status    string          `json:"status"`
	CreatedAt time.Time       `json:"created_at"`
	ExpiresAt time.Time       `json:"expires_at"`
	DecidedBy string          `json:"decided_by,omitempty"`
	DecidedAt *time.Time      `json:"decided_at,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	// Basis are the facts the action rests on, as they were checked: what
	// each read answered, from which system and when.
	Basis []Fact `json:"basis,omitempty"`
}

// Fact is what a read answered, from which system and when.
type Fact struct {
	Tool       string          `json:"tool"`
	Source     string          `json:"source"`
	ObservedAt time.Time       `json:"observed_at"`
	Data       json.RawMessage `json:"data,omitempty"`
}

// Field is a named value as the server rendered it.
type Field struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Errors of an Approver, wrapped.
var (
	// ErrActionNotFound: no such action, or none the approver may see.
	ErrActionNotFound = errors.New("no such action")
	// ErrActionClosed: the action was decided already, or expired; the
	// decision changed nothing.
	ErrActionClosed = errors.New("the action is no longer waiting for a decision")
)

// Approver lists the actions an identity may decide and takes decisions.
// The engine implements it; channels expose it.
type Approver interface {
	// Actions lists the approver's tenant's actions it may decide (or
	// decided), with status (any when empty), newest first.
	Actions(ctx context.Context, approver Identity, status string) ([]ActionView, error)
	// Decide approves or rejects a proposed action, once: an action no
	// longer proposed is ErrActionClosed and nothing runs. An approved
	// action is carried out in its conversation before Decide returns; the
	// result is the action's final state and the reply that conversation
	// got.
	Decide(ctx context.Context, approver Identity, id string, approve bool) (ActionView, Outbound, error)
}
