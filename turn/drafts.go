package turn

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/tool"
)

// Drafts and long buttons live in the conversation's durable state, not in
// the model's memory: a button completes exactly what the server offered.
const (
	// draftSlot keeps the latest offer whose choices are whole calls
	// (tool.Result.Choices): the meeting awaiting a slot, the idea awaiting
	// a platform.
	draftSlot = "draft"
	// buttonSlot maps short ids to button values too long for a channel's
	// button data (Telegram's callback_data holds 64 bytes).
	buttonSlot = "buttons"
	// choicePrefix marks a press of a draft's choice: "choice:<draft>:<n>".
	choicePrefix = "choice:"
	// longButtonPrefix marks a button whose value is kept in buttonSlot.
	longButtonPrefix = "b:"
	// maxButtonBytes is the longest value a button carries itself.
	maxButtonBytes = 64
	// keptLongButtons bounds buttonSlot: the newest keyboards' values.
	keptLongButtons = 32
	// maxChoices is the most buttons one offer shows.
	maxChoices = 8
	// guardChoice names the path of a call a draft's button runs.
	guardChoice = "choice"
)

// draft is an offer the user completes with a button: choices among whole
// calls, or a shown draft (Text) whose one choice publishes it.
type draft struct {
	ID      string        `json:"id"`
	Created time.Time     `json:"created"`
	Choices []tool.Choice `json:"choices"`
	// Text is the shown draft (tool.Result.Draft); Editing says its edit
	// button was pressed, so the next message revises it.
	Text    string `json:"text,omitempty"`
	Editing bool   `json:"editing,omitempty"`
}

// The presses of a shown draft besides its publish choice (0).
const (
	draftEdit   = "edit"
	draftCancel = "cancel"
)

// drafted reports whether res is a draft to show: one with text.
func drafted(res tool.Result) bool {
	return res.Status == tool.StatusOK && res.Draft != nil && strings.TrimSpace(res.Draft.Text) != ""
}

// showDraft keeps res's draft as the conversation's draft, in place of any
// earlier one, and replies with its text and buttons (publish, edit,
// cancel): the server shows what it keeps, never a model's copy of it.
func (e *Engine) showDraft(s *state, res tool.Result) {
	d := draft{ID: s.id, Created: s.now, Choices: []tool.Choice{res.Draft.Publish}, Text: res.Draft.Text}
	setSlot(s, draftSlot, d)
	publish := res.Draft.Publish.Label
	if publish == "" {
		publish = say(s.lang, txtDraftPublish)
	}
	ref := choicePrefix + d.ID + ":"
	e.replyText(s, d.Text, []chat.Button{{Label: publish, Value: ref + "0"},
		{Label: say(s.lang, txtDraftEdit), Value: ref + draftEdit}, {Label: say(s.lang, txtDraftCancel), Value: ref + draftCancel}})
}

// draftShown reports whether the conversation's draft d is one the user
// sees now and can still publish.
func (e *Engine) draftShown(s *state, d draft) bool {
	return d.Text != "" && s.now.Before(d.Created.Add(e.lifetimesFor(s.assistant).Offer))
}

// offerChoices keeps res's choices as the conversation's draft and returns
// their buttons; nil when res offers no whole calls.
func offerChoices(s *state, res tool.Result) []chat.Button {
	if len(res.Choices) == 0 {
		return nil
	}
	d := draft{ID: s.id, Created: s.now, Choices: res.Choices}
	if len(d.Choices) > maxChoices {
		d.Choices = d.Choices[:maxChoices]
	}
	buttons := make([]chat.Button, len(d.Choices))
	for i, c := range d.Choices {
		buttons[i] = chat.Button{Label: c.Label, Value: choicePrefix + d.ID + ":" + strconv.Itoa(i)}
	}
	setSlot(s, draftSlot, d)
	return buttons
}

// runChoice completes the stored draft with the pressed choice: the stored
// call goes through the same authorization as any other (a write still
// asks for a "yes"), and no model is asked to copy it.
func (e *Engine) runChoice(ctx context.Context, s *state) bool {
	ref, ok := strings.CutPrefix(s.in.Button, choicePrefix)
	if !ok {
		return false
	}
	s.trace.Route = RouteChoice
	var d draft
	found := getSlot(s, draftSlot, &d)
	id, n, _ := strings.Cut(ref, ":")
	i, err := strconv.Atoi(n)
	if d.Text != "" && (n == draftEdit || n == draftCancel) {
		i, err = 0, nil
	}
	if !found || id != d.ID || err != nil || i < 0 || i >= len(d.Choices) || !s.now.Before(d.Created.Add(e.lifetimesFor(s.assistant).Offer)) {
		s.trace.Notes = append(s.trace.Notes, "choice of an offer no longer open: "+Clip(ref, 64))
		e.replyText(s, say(s.lang, txtChoiceGone), nil)
		return true
	}
	if n == draftEdit || n == draftCancel {
		e.draftPress(s, d, n)
		return true
	}
	c := d.Choices[i]
	delete(s.conv.Slots, draftSlot) // one offer, one choice
	s.route.input = c.Label         // the user's words are the label they pressed
	e.recordUserInput(s)
	e.runFixedCall(ctx, s, callRequest{guard: guardChoice, name: c.Tool, args: c.Args, draft: true})
	return true
}

// draftPress answers the edit or cancel button of a shown draft: edit
// keeps it for the next message to revise, cancel drops it. Neither runs
// anything.
func (e *Engine) draftPress(s *state, d draft, press string) {
	if press == draftCancel {
		delete(s.conv.Slots, draftSlot)
		s.route.input = say(s.lang, txtDraftCancel)
		e.recordUserInput(s)
		e.replyText(s, say(s.lang, txtDraftCancelled), nil)
		return
	}
	d.Editing = true
	setSlot(s, draftSlot, d)
	s.route.input = say(s.lang, txtDraftEdit)
	e.recordUserInput(s)
	e.replyText(s, say(s.lang, txtDraftEditAsk), nil)
}

// keepLongButtons moves values longer than a button can carry into the
// conversation's state, behind short ids, instead of dropping the button.
func keepLongButtons(s *state) {
	var kept []keptButton
	for i := range s.out.Buttons {
		b := &s.out.Buttons[i]
		if len(b.Value) <= maxButtonBytes {
			continue
		}
		if kept == nil {
			getSlot(s, buttonSlot, &kept)
		}
		id := s.id + "." + strconv.Itoa(i)
		kept = append(kept, keptButton{ID: id, Value: b.Value})
		b.Value = longButtonPrefix + id
	}
	if kept == nil {
		return
	}
	if len(kept) > keptLongButtons {
		kept = kept[len(kept)-keptLongButtons:]
	}
	setSlot(s, buttonSlot, kept)
}

type keptButton struct {
	ID    string `json:"id"`
	Value string `json:"value"`
}

// expandButton puts a kept long value back in place of its short id and
// routes the message by it; false when the id is no longer kept.
func (e *Engine) expandButton(s *state) bool {
	if strings.HasPrefix(s.in.Button, optionPrefix) {
		return e.expandOption(s)
	}
	id, ok := strings.CutPrefix(s.in.Button, longButtonPrefix)
	if !ok {
		return true
	}
	var kept []keptButton
	getSlot(s, buttonSlot, &kept)
	for _, k := range kept {
		if k.ID == id {
			s.in.Button = k.Value
			s.route = classify(s.in, e.cfg.Commands)
			s.trace.Route = s.route.name()
			return true
		}
	}
	s.trace.Route = RouteStaleButton
	s.trace.Notes = append(s.trace.Notes, "button no longer kept: "+Clip(id, 64))
	e.replyText(s, say(s.lang, txtButtonGone), nil)
	return false
}
