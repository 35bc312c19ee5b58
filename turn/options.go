package turn

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/turn/internal/gate"
)

// Buttons a model or a tool suggests — a mode's question's options, a tool's
// candidates, a decision's quick replies — carry a value space of their
// own: a press sends "opt:<offer>:<n>", which the server answers as the
// n-th option's text, read as words the user typed. So an option whose
// text is "да", "ok" or "/reset" is an answer, never a confirmation or a
// command, and no value a model writes reaches the server's own buttons
// (confirm:, cancel:, choice:, skill:).
const (
	// optionPrefix marks a press of a suggested button.
	optionPrefix = "opt:"
	// optionSlot keeps the latest offer of suggested buttons.
	optionSlot = "options"
	// optionTTL bounds how long an offer's buttons can be pressed.
	optionTTL = 24 * time.Hour
	// maxOptions bounds an offer's buttons; maxOptionBytes an option's
	// text (its button carries only a reference).
	maxOptions     = 8
	maxOptionBytes = 512
)

// optionOffer is the latest keyboard of suggested buttons: what each
// button answers.
type optionOffer struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	Values  []string  `json:"values"`
}

// offerOptions shows values as buttons of their own text.
func (e *Engine) offerOptions(s *state, values []string) []chat.Button {
	buttons := make([]chat.Button, len(values))
	for i, v := range values {
		buttons[i] = chat.Button{Label: v, Value: v}
	}
	return offerButtons(s, buttons)
}

// offerButtons keeps the suggested buttons' values as the conversation's
// offer and returns the buttons as shown: each label inert, each value an
// "opt:" reference. An empty or overlong value, or a repeated one, is
// left to free text, which is always allowed.
func offerButtons(s *state, suggested []chat.Button) []chat.Button {
	offer := optionOffer{ID: s.id, Created: s.now}
	var out []chat.Button
	for _, b := range suggested {
		v := strings.TrimSpace(b.Value)
		label := strings.TrimSpace(b.Label)
		if label == "" {
			label = v
		}
		if v == "" || len(v) > maxOptionBytes || slices.Contains(offer.Values, v) {
			continue
		}
		out = append(out, chat.Button{Label: gate.Inert(label), Value: optionPrefix + offer.ID + ":" + strconv.Itoa(len(offer.Values))})
		if offer.Values = append(offer.Values, v); len(offer.Values) == maxOptions {
			break
		}
	}
	if len(out) > 0 {
		setSlot(s, optionSlot, offer)
	}
	return out
}

// expandOption answers a press of a suggested button with its option's
// text, as text the user typed: never re-read as a confirmation or a
// command. It reports false, after replying, when the offer is gone (a
// newer one replaced it, it was used, or it expired).
func (e *Engine) expandOption(s *state) bool {
	ref := strings.TrimPrefix(s.in.Button, optionPrefix)
	var offer optionOffer
	found := getSlot(s, optionSlot, &offer)
	id, n, _ := strings.Cut(ref, ":")
	i, err := strconv.Atoi(n)
	if !found || id != offer.ID || err != nil || i < 0 || i >= len(offer.Values) || !s.now.Before(offer.Created.Add(optionTTL)) {
		s.trace.Route = RouteStaleButton
		s.trace.Notes = append(s.trace.Notes, "option of an offer no longer open: "+Clip(ref, 64))
		e.replyText(s, say(s.lang, txtButtonGone), nil)
		return false
	}
	delete(s.conv.Slots, optionSlot) // one offer, one answer
	s.route = route{kind: routeText, input: offer.Values[i]}
	s.trace.Route = s.route.name()
	s.trace.Notes = append(s.trace.Notes, "option "+n+" of offer "+id+" pressed")
	return true
}

// retireOffer closes the conversation's offer when this turn replied
// without showing its buttons: only the latest keyboard answers, so a
// button of an earlier question cannot answer a later one.
func retireOffer(s *state) {
	if s.out.Say == "" && len(s.out.Buttons) == 0 {
		return // nothing was shown
	}
	for _, b := range s.out.Buttons {
		if strings.HasPrefix(b.Value, optionPrefix) {
			return
		}
	}
	delete(s.conv.Slots, optionSlot)
}
