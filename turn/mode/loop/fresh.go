package loop

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/turn"
)

// A status is true when it was read, not when the answer is sent: a
// subscription seen inactive may have been activated by another process
// since. A read that declares how long its result stands
// (tool.Spec.FreshFor) is critical state: before a loop's final answer,
// each such result older than that — by the engine's clock, from when
// the result arrived — is read again, and when the system now says
// something else, the model reads the new result and answers again
// instead of the stale answer being sent.

// freshRead is a read of the task whose result ages.
type freshRead struct {
	x  turn.Executed
	at time.Time // when the result arrived
}

// noteRead keeps a read whose tool declares FreshFor, with its result.
func (k *task) noteRead(x turn.Executed) {
	if x.Spec().FreshFor <= 0 || x.Writes() {
		return
	}
	if k.fresh == nil {
		k.fresh = map[string]*freshRead{}
	}
	k.fresh[x.Key()] = &freshRead{x: x, at: k.t.Facts().Clock()}
}

// refreshStale reads again, before the final answer said (the model's
// raw answer), every result older than its tool's FreshFor. again is true
// when one changed: the model's answer and the new results are in the
// transcript, and the loop asks the model again. ok is false when the
// task ended here (the re-reads would pass the tool calls' limit).
func (k *task) refreshStale(ctx context.Context, said string) (again, ok bool) {
	t := k.t
	var changed []string
	for _, key := range slices.Sorted(maps.Keys(k.fresh)) {
		r := k.fresh[key]
		now, spec := t.Facts().Clock(), r.x.Spec()
		if now.Sub(r.at) <= spec.FreshFor {
			continue
		}
		if k.trace.ToolCalls >= k.lim.ToolCalls {
			t.HandOff(turn.ReviewToolCalls, "reading "+spec.Name+" again before the answer would pass "+strconv.Itoa(k.lim.ToolCalls)+" tool calls", k.draft)
			return false, false
		}
		k.trace.ToolCalls++
		x, _ := t.Calls().Execute(ctx, r.x.Cleared)
		content := t.Calls().ResultContent(x)
		t.Calls().Show(x, content)
		t.Note("read " + spec.Name + " again before the answer: its result was " +
			now.Sub(r.at).Round(time.Second).String() + " old, over " + spec.FreshFor.String())
		if turn.ResultsDiffer(r.x.Result, x.Result) {
			changed = append(changed, t.Model().ResultBlock(spec.Name, content))
			k.trace.ResultBytes += len(content)
		}
		r.x, r.at = x, t.Facts().Clock()
	}
	if len(changed) == 0 {
		return false, true
	}
	t.Note(strconv.Itoa(len(changed)) + " result(s) changed since they were read; the model answers again")
	k.msgs = append(k.msgs, llm.Message{Role: llm.RoleAssistant, Content: said})
	for _, block := range changed {
		k.msgs = append(k.msgs, llm.Message{Role: llm.RoleUser, Content: block})
	}
	return true, true
}
