package turn

import (
	"slices"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/tool"
)

// Facts: the moment beyond the user's words — the turn's language and
// time, the profile, the tenant, the button pressed, what the client says
// the user has open, the attachments, the deployment's other profiles.
// All of it is read-only.

// Language is the language the turn answers in.
func (t *Facts) Language() string { return t.s.lang }

// Now is the turn's time.
func (t *Facts) Now() time.Time { return t.s.now }

// Assistant is the profile the turn runs under, its defaults filled.
func (t *Facts) Assistant() Assistant { return t.s.assistant }

// Registered tells a tool the deployment registers, whoever may call it.
func (t *Facts) Registered(name string) bool {
	_, ok := t.e.cfg.Tools.Lookup(name)
	return ok
}

// Clock is the engine's clock now; Now is the turn's start.
func (t *Facts) Clock() time.Time { return t.e.cfg.Now() }

// Resuming tells a turn that carries on a task: a decided action's, or
// one the user's yes ran calls of.
func (t *Facts) Resuming() bool { return t.s.resume != "" || t.s.confirmed.id != "" }

// Confirmed is the pending action the user's yes ran in this turn, or "".
func (t *Facts) Confirmed() string { return t.s.confirmed.id }

// Tenant is the team the turn is for.
func (t *Facts) Tenant() Tenant { return t.s.tenant }

// Button is the value of the button pressed for this turn, or "".
func (t *Facts) Button() string { return t.s.in.Button }

// Client is what the user's client says they are doing (an active mode,
// an open document), or nil: a hint, never a command.
func (t *Facts) Client() *chat.ClientHint { return t.s.in.Client }

// Evidence is what came with the message (attachments, forwards,
// quotes), read as data.
func (t *Facts) Evidence() []chat.Evidence { return slices.Clip(t.s.in.Evidence) }

// Profile is the deployment's assistant profile name, its defaults
// filled as the engine runs it.
func (t *Facts) Profile(name string) (Assistant, bool) {
	a, ok := t.e.cfg.Assistants[name]
	return a, ok
}

// AttachmentOf is the stored file an attachment's evidence refers to, as
// a tool's argument names it.
func AttachmentOf(ev chat.Evidence) tool.Attachment { return attachmentOf(ev) }
