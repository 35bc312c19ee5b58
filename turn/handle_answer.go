package turn

import (
	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/tool"
)

// Answer: the ways a turn answers besides Reply and HandOff.

// Options are buttons for suggested answers: a press answers with the
// option's text as words the user typed, never as a confirmation or a
// command.
func (t *Answer) Options(values []string) []chat.Button { return t.e.offerOptions(t.s, values) }

// NotAvailable answers the turn with the server's line on what is not
// available to the user, so nothing was done.
func (t *Answer) NotAvailable() { t.e.replyText(t.s, say(t.s.lang, txtNotAvailable), nil) }

// Rephrase answers the turn asking the user to say it again: the model's
// answer could not be read.
func (t *Answer) Rephrase() { t.e.replyText(t.s, say(t.s.lang, txtRephrase), nil) }

// ShowSkill tells the client the conversation's skill after this turn
// (chat.Outbound.Skill): its id, "" for none, and its label.
func (t *Answer) ShowSkill(id, label string) { t.s.out.Skill, t.s.out.SkillLabel = &id, label }

// Step tells a streaming channel that a step of kind began or ended, in
// text's words; nothing is built when none listens.
func (t *Answer) Step(kind, name string, text tool.Localized, done bool) {
	if t.s.listening() {
		t.s.show(chat.Step{Kind: kind, Name: name, Text: text.In(t.s.lang), Done: done}, tool.Spec{})
	}
}

// SetFinal makes f the turn's deliverable (chat.Outbound.Final).
func (t *Answer) SetFinal(f chat.Final) { t.s.out.Final = &f }

// ModelFailed ends a turn whose model call failed: nothing runs, the
// user is told, the turn is journaled as failed.
func (t *Answer) ModelFailed(err error) { t.e.modelFailed(t.s, err) }

// ClaimsUnconfirmed checks a reply the model wrote before it is sent: one
// that asserts what no successful call of the turn confirms is handed to
// a person with the draft, and it reports true (the turn is answered).
func (t *Answer) ClaimsUnconfirmed(reply string) bool { return t.e.claimsUnconfirmed(t.s, reply) }
