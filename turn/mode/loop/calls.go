package loop

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"

	"github.com/arbiterhq/arbiter/decision"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/turn"
)

// call is one call of a model answer on its way through the guards and
// the tool.
type call struct {
	call llm.ToolCall
	c    turn.Cleared
	key  string // c.Key(), once
	veto *turn.Veto
	x    turn.Executed
	// proposed is what the model reads of the action stored for the
	// call's approvers, which runs nothing now.
	proposed string
	// dropped: the call repeats a write of the task, and is not made.
	dropped bool
}

// runs tells a call that is to be made now: not refused, not put to
// approvers, not a repeat.
func (c *call) runs() bool { return c.veto == nil && c.proposed == "" && !c.dropped }

// answerCalls reads the calls and the text of an answer: native tool calls
// as they are, with IDs unique within the task's transcript (see
// transcriptIDs), a JSON decision as at most one call.
func (k *task) answerCalls(resp llm.Response) ([]llm.ToolCall, string, bool, []decision.Problem) {
	if resp.Protocol == llm.ProtocolTools {
		return transcriptIDs(k.t, k.msgs, resp.ToolCalls), resp.Text, true, nil
	}
	d, err := k.t.Model().ParseDecision(resp.Text)
	if err != nil {
		if pe, ok := err.(*decision.ParseError); ok {
			return nil, "", false, pe.Problems
		}
		return nil, "", false, []decision.Problem{{Message: err.Error()}}
	}
	if d.Tool == "" {
		return nil, d.Say, false, nil
	}
	return []llm.ToolCall{{ID: "call_1", Name: d.Tool, Arguments: d.Args}}, d.Say, false, nil
}

// transcriptIDs gives a model's calls IDs unique within msgs. The IDs are
// the provider's, and a provider may use one again later in a
// conversation (or give none): that is no fault of the answer, so the call
// goes on under an ID of the transcript, and the trace maps it back to
// the provider's.
func transcriptIDs(t *turn.Turn, msgs []llm.Message, calls []llm.ToolCall) []llm.ToolCall {
	out := llm.UniqueCallIDs(msgs, calls)
	for i := range out {
		if out[i].ID != calls[i].ID && calls[i].ID != "" {
			t.Note("tool call id " + strconv.Quote(turn.Clip(calls[i].ID, 64)) + " of the provider was used before in this transcript; it is " + strconv.Quote(out[i].ID) + " here")
		}
	}
	return out
}

// runCalls takes one answer's calls through the guards and the tools and
// puts the results in the transcript. It reports whether the loop goes
// on: false when the task ended here (a confirmation, a hand-off).
func (k *task) runCalls(turnCtx, taskCtx context.Context, calls []llm.ToolCall, native bool, said string) bool {
	if k.handsOff(calls) {
		return false
	}
	cs, ok := k.guardCalls(turnCtx, taskCtx, calls)
	if !ok {
		return false
	}
	// Reads in parallel, matched to their calls by position; writes after
	// them, one by one, under the turn's context so that the task's
	// deadline never cuts a write in flight.
	var wg sync.WaitGroup
	for i := range cs {
		if c := &cs[i]; c.runs() && !c.c.Writes() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.x, _ = k.t.Calls().Execute(taskCtx, c.c)
			}()
		}
	}
	wg.Wait()
	for i := range cs {
		if c := &cs[i]; c.runs() && c.c.Writes() {
			c.x, _ = k.t.Calls().Execute(turnCtx, c.c)
		}
	}
	assistant := llm.Message{Role: llm.RoleAssistant, Content: said}
	if native {
		assistant.ToolCalls = calls
	}
	k.msgs = append(k.msgs, assistant)
	return k.tellResults(cs, native)
}

// handsOff ends the task when the model called the hand-off tool the
// assistant offers (and no registered tool has its name).
func (k *task) handsOff(calls []llm.ToolCall) bool {
	t := k.t
	if !settingsOf(t.Facts().Assistant()).HandOff {
		return false
	}
	for _, c := range calls {
		if c.Name == handOffTool && !t.Facts().Registered(handOffTool) {
			var a struct {
				Reason string `json:"reason"`
			}
			_ = json.Unmarshal(c.Arguments, &a)
			t.HandOff(turn.ReviewMissingFacts, turn.Clip(strings.TrimSpace(a.Reason), 500), k.draft)
			return true
		}
	}
	return false
}

// guardCalls authorizes each call of an answer: a refusal is recorded, a
// repeated write dropped, a write for approvers proposed. It reports
// false when the task ended here: a limit, an action that could not be
// proposed, or a write put to the user (nothing of the answer has run).
func (k *task) guardCalls(turnCtx, taskCtx context.Context, calls []llm.ToolCall) ([]call, bool) {
	t := k.t
	if k.writes == nil {
		k.writes, k.told = map[string]bool{}, map[string]string{}
	}
	cs := make([]call, len(calls))
	var held []turn.Cleared
	for i, tc := range calls {
		c := &cs[i]
		c.call = tc
		if c.c, c.veto = t.Calls().Authorize(taskCtx, turn.CallRequest{Tool: tc.Name, Args: tc.Arguments, Attachments: true}); c.veto != nil {
			continue
		}
		if c.key = c.c.Key(); t.Calls().Repeats(c.c, k.writes) {
			c.dropped = true
			continue
		}
		if k.runs[c.key]++; k.runs[c.key] > k.lim.SameCall {
			t.HandOff(turn.ReviewRepeatedCall, c.c.Spec().Name+" called "+strconv.Itoa(k.runs[c.key])+" times with the same arguments", k.draft)
			return nil, false
		}
		switch {
		case c.c.WaitsForApprovers():
			content, ok := t.Calls().ProposeApproval(turnCtx, c.c)
			if !ok {
				k.trace.Ended = "refused"
				return nil, false
			}
			c.proposed = content
		case c.c.WaitsForYes():
			held = append(held, c.c)
		}
	}
	if len(held) > 0 {
		// Nothing of this answer runs: its writes that wait for a yes are
		// put to the user as one confirmation, and their yes runs them
		// through the pending action; the task then goes on.
		k.trace.Ended = "confirmation"
		k.save(t.Calls().Confirm(turnCtx, held))
		return nil, false
	}
	return cs, true
}

// tellResults puts each call's outcome in the transcript, as the model
// reads it, and ends the task when a result breaks a limit.
func (k *task) tellResults(cs []call, native bool) bool {
	t := k.t
	for i := range cs {
		c := &cs[i]
		content := k.content(c)
		if c.veto == nil && !c.dropped && c.c.Writes() {
			k.told[c.key] = content
		}
		if !k.withinLimits(c, content) {
			return false
		}
		k.trace.ResultBytes += len(content)
		if native {
			k.msgs = append(k.msgs, llm.Message{Role: llm.RoleTool, ToolCallID: c.call.ID, Content: content, IsError: c.veto != nil || c.x.Failed()})
		} else {
			k.msgs = append(k.msgs, llm.Message{Role: llm.RoleUser, Content: t.Model().ResultBlock(c.call.Name, content)})
		}
	}
	return true
}

// content is what the model reads of a call's outcome; a run is recorded
// as shown.
func (k *task) content(c *call) string {
	switch {
	case c.veto != nil:
		return turn.RefusalContent(c.veto)
	case c.dropped:
		return repeatContent(c.c.Spec().Name, k.told[c.key])
	case c.proposed != "":
		return c.proposed
	}
	content := k.t.Calls().ResultContent(c.x)
	k.t.Calls().Show(c.x, content)
	k.noteRead(c.x)
	return content
}

// withinLimits ends the task, and reports false, when a result passes the
// assistant's limits or a dependency keeps failing.
func (k *task) withinLimits(c *call, content string) bool {
	t := k.t
	switch {
	case len(content) > k.lim.ResultBytes:
		t.HandOff(turn.ReviewResultBytes, c.call.Name+" returned "+strconv.Itoa(len(content))+" bytes, over the limit of "+strconv.Itoa(k.lim.ResultBytes), k.draft)
		return false
	case k.trace.ResultBytes+len(content) > k.lim.TotalBytes:
		t.HandOff(turn.ReviewTotalBytes, "tool results passed "+strconv.Itoa(k.lim.TotalBytes)+" bytes", k.draft)
		return false
	case c.veto == nil && c.x.Failed() && k.runs[c.key] >= k.lim.SameCall:
		t.HandOff(turn.ReviewDependencyDown, c.call.Name+" failed "+strconv.Itoa(k.runs[c.key])+" times: "+turn.Clip(c.x.Result.Error, 200), k.draft)
		return false
	}
	return true
}

// repeatContent tells the model that its call repeated a write of the
// task and was not made again, with what it was told of the first.
func repeatContent(name, first string) string {
	out := struct {
		Tool   string          `json:"tool"`
		Status string          `json:"status"`
		Note   string          `json:"note"`
		First  json.RawMessage `json:"first,omitempty"`
	}{name, "dropped", "the same call as an earlier one of this task (tool and arguments): not made again", nil}
	if json.Valid([]byte(first)) {
		out.First = json.RawMessage(first)
	}
	b, _ := json.Marshal(out)
	return string(b)
}
