package turn

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn/internal/gate"
)

// maxToolMemory bounds a tool result kept in conversation memory.
const maxToolMemory = 2000

// replyText sets the turn's reply and remembers it.
func (e *Engine) replyText(s *state, text string, buttons []chat.Button) {
	text, cut := e.inertLinks(s, text)
	for _, host := range cut {
		s.trace.Notes = append(s.trace.Notes, "a link to "+host+" in the reply lost its parameters (or its image): the host is not in link_hosts")
	}
	s.out.Say = text
	s.out.Buttons = buttons
	s.trace.Say = text
	if text != "" {
		s.added = append(s.added, store.Message{Role: store.RoleAssistant, Text: text, At: s.now})
	}
}

// recordUserInput remembers the user's own words and the evidence that came
// with them, labelled as such.
func (e *Engine) recordUserInput(s *state) {
	text := s.route.input
	switch {
	case strings.HasPrefix(text, confirmPrefix):
		text = say(s.lang, txtYes)
	case strings.HasPrefix(text, cancelPrefix):
		text = say(s.lang, txtNo)
	}
	if strings.TrimSpace(text) != "" {
		s.added = append(s.added, store.Message{Role: store.RoleUser, Text: text, At: s.now})
	}
	for i, ev := range s.in.Evidence {
		s.added = append(s.added, store.Message{Role: store.RoleEvidence, Name: ev.Kind, Source: ev.Source, Text: ev.Text, At: s.now})
		noteImages(s, i, len(s.added)-1)
	}
	e.rememberAttachment(s)
}

// runTool executes a call and replies from its result: the model's claim
// about what happened is never shown in place of the executor's.
func (e *Engine) runTool(ctx context.Context, s *state, tg target, args []byte, idemKey string) {
	res, tr := e.execute(ctx, s, tg, args, idemKey)
	e.noteRun(s, tg.entry.Spec.Name, args, res, tr)

	start := e.cfg.Now()
	e.replyResult(s, tg.spec.TitleIn(s.lang), tr.Status, res)
	s.trace.step(StepReply, "", start, e.cfg.Now(), "")
}

// noteRun puts a tool's run in the turn's record, its reply's executions
// and the conversation's memory.
func (e *Engine) noteRun(s *state, name string, args []byte, res tool.Result, tr ExecutionTrace) {
	s.trace.Executed = append(s.trace.Executed, tr)
	s.out.Executed = append(s.out.Executed, chat.Execution{Tool: name, Args: args, Status: tr.Status, Result: res.Data, Error: res.Error})
	e.rememberResult(s, name, tr.Status, res)
}

// rememberResult keeps what the model sees of a tool's answer next turn:
// the outcome, the data, and for anything but success the explanation and
// the live candidates.
func (e *Engine) rememberResult(s *state, toolName, status string, res tool.Result) {
	memo := resultMemo{Status: status, Data: res.Data, Error: res.Error, Field: res.Field, Candidates: res.Candidates}
	if res.Status != tool.StatusOK {
		memo.Text = res.Text
	}
	encoded, _ := json.Marshal(memo)
	s.added = append(s.added, store.Message{Role: store.RoleTool, Name: toolName, Text: Clip(string(encoded), maxToolMemory), At: s.now})
}

// replyResult tells the user what a tool said (or, for a target that did
// not resolve, would say) with the status it ended in.
func (e *Engine) replyResult(s *state, title, status string, res tool.Result) {
	switch {
	case status == gate.StatusOutcomeUnknown:
		e.replyText(s, say(s.lang, txtOutcomeUnknown, title), nil)
	case drafted(res):
		e.showDraft(s, res)
	case res.Status == tool.StatusOK:
		text := res.Text
		if text == "" {
			text = say(s.lang, txtDone, title)
		}
		e.replyText(s, text, nil)
	case res.Status == tool.StatusAmbiguous:
		text := res.Text
		if text == "" {
			text = say(s.lang, txtClarify) + " " + strings.Join(res.Candidates, ", ")
		}
		buttons := offerChoices(s, res)
		if len(res.Choices) == 0 {
			buttons = e.offerOptions(s, res.Candidates) // a candidate is answered as its text, never a command
		}
		e.replyText(s, text, buttons)
	case res.Status == tool.StatusNotFound:
		text := res.Text
		if text == "" {
			text = say(s.lang, txtToolNotFound, res.Error)
		}
		e.replyText(s, text, nil)
	default:
		detail := res.Error
		if res.Text != "" {
			detail = res.Text
		}
		e.replyText(s, say(s.lang, txtToolFailed, title, detail), nil)
	}
}

// handOff ends the task as needs_review: a person takes it over with the
// reason and the model's last draft; the user is told so, and nothing the
// model drafted is sent as the answer.
func (e *Engine) handOff(s *state, draft string, reason ReviewReason, detail string) {
	s.trace.Status = StatusNeedsReview
	s.trace.Review = &ReviewTrace{Reason: reason, Detail: detail, Draft: Clip(draft, 4000)}
	e.replyText(s, say(s.lang, txtHandedOff), nil)
}

// ReviewTrace says why a task was handed to a person instead of answered,
// with the model's last draft for them.
type ReviewTrace struct {
	Reason ReviewReason `json:"reason"`
	Detail string       `json:"detail,omitempty"`
	Draft  string       `json:"draft,omitempty"`
}
