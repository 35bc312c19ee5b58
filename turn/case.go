package turn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/decision"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
)

// caseSlot keeps, in the conversation's state, the case it is bound to.
const caseSlot = "case"

// Veto reasons of case binding.
const (
	reasonOutsideCase = "outside_case" // a bound argument names another case
	reasonNoCase      = "no_case"      // a bound argument, and the conversation has no case
)

// checkCase refuses a message whose case contradicts the one its
// conversation is bound to, before anything of it is recorded: the first
// values bind for the case's lifetime (Lifetimes.Case), new keys may join
// them. A message that closes the case (chat.Inbound.CloseCase) contradicts
// nothing.
func (e *Engine) checkCase(ctx context.Context, s *state) error {
	if len(s.in.Case) == 0 || s.in.CloseCase {
		return nil
	}
	conv, err := e.cfg.State.LoadConversation(ctx, s.key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("load case of %s: %w", s.key, err)
	}
	bound := caseOf(conv)
	for _, k := range slices.Sorted(maps.Keys(s.in.Case)) {
		if b, ok := bound[k]; ok && b != s.in.Case[k] {
			return fmt.Errorf("%w: %s is %q here, not %q", chat.ErrCaseConflict, k, b, s.in.Case[k])
		}
	}
	return nil
}

// bindCase sets the turn's case, the conversation's binding with this
// message's new values added, and stores it with the conversation. A
// message that closes the case first ends the binding and everything the
// conversation held in it: the messages, the pending confirmation, the
// modes' tasks and the offers.
func (e *Engine) bindCase(s *state) {
	if s.in.CloseCase {
		s.trace.Notes = append(s.trace.Notes, "case closed")
		s.conv.Messages, s.pending, s.dropPending = nil, nil, true
		for _, slot := range append(e.taskSlots(), caseSlot, draftSlot, buttonSlot) {
			delete(s.conv.Slots, slot)
		}
	}
	s.caseVals = caseOf(s.conv)
	added := false
	for k, v := range s.in.Case {
		if _, ok := s.caseVals[k]; !ok {
			if s.caseVals == nil {
				s.caseVals = map[string]string{}
			}
			s.caseVals[k], added = v, true
		}
	}
	if added {
		setSlot(s, caseSlot, s.caseVals)
	}
}

// runCaseClosed answers a message that only closed its case.
func (e *Engine) runCaseClosed(s *state) bool {
	if !s.in.CloseCase || s.route.kind != routeEmpty {
		return false
	}
	s.trace.Route = RouteCaseClosed
	e.replyText(s, say(s.lang, txtCaseClosed), nil)
	return true
}

func caseOf(conv store.Conversation) map[string]string {
	var c map[string]string
	if raw, ok := conv.Slots[caseSlot]; ok {
		_ = json.Unmarshal(raw, &c)
	}
	return c
}

// bindArgs fills the arguments spec declares bound from the turn's case.
// A call that names another value, or a bound argument in a conversation
// without a case, is refused before anything runs. Arguments that are not
// a JSON object are left to the schema check.
func (e *Engine) bindArgs(s *state, spec tool.Spec, args []byte) ([]byte, *Veto) {
	if len(spec.BoundArgs) == 0 {
		return args, nil
	}
	var m map[string]json.RawMessage
	if len(bytes.TrimSpace(args)) > 0 && json.Unmarshal(args, &m) != nil {
		return args, nil
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	for _, name := range spec.BoundArgs {
		refuse := func(reason, why string) ([]byte, *Veto) {
			return nil, &Veto{Guard: "case", Tool: spec.Name, Reason: reason, say: txtOutsideCase,
				Problems: []decision.Problem{{Location: "/" + name, Message: why}}}
		}
		want, ok := s.caseVals[name]
		if !ok {
			return refuse(reasonNoCase, "the conversation is bound to no case")
		}
		if got, given := m[name]; given && string(got) != "null" {
			var v string
			if json.Unmarshal(got, &v) != nil || strings.TrimSpace(v) != want {
				return refuse(reasonOutsideCase, "outside the current case")
			}
		}
		m[name], _ = json.Marshal(want)
	}
	out, _ := json.Marshal(m)
	return out, nil
}
