package turn

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/tool"
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
	a    authorized
	res  tool.Result
	at   time.Time // when the result arrived
	name string
}

// noteRead keeps a read whose tool declares FreshFor, with its result.
func (e *Engine) noteRead(t *loopTask, a authorized, res tool.Result) {
	if a.tg.spec.FreshFor <= 0 || a.tg.spec.Risk.Writes() {
		return
	}
	if t.fresh == nil {
		t.fresh = map[string]*freshRead{}
	}
	t.fresh[a.tg.spec.Name+"\x00"+string(a.args)] = &freshRead{a: a, res: res, at: e.cfg.Now(), name: a.tg.spec.Name}
}

// refreshStale reads again, before the final answer said (the model's
// raw answer), every result older than its tool's FreshFor. again is true
// when one changed: the model's answer and the new results are in the
// transcript, and the loop asks the model again. ok is false when the
// task ended here (the re-reads would pass the tool calls' limit).
func (e *Engine) refreshStale(ctx context.Context, s *state, t *loopTask, said string) (again, ok bool) {
	var changed []string
	for _, key := range slices.Sorted(maps.Keys(t.fresh)) {
		r := t.fresh[key]
		now := e.cfg.Now()
		if now.Sub(r.at) <= r.a.tg.spec.FreshFor {
			continue
		}
		if t.trace.ToolCalls >= t.lim.ToolCalls {
			e.handOff(s, t.draft, ReviewToolCalls, "reading "+r.name+" again before the answer would pass "+strconv.Itoa(t.lim.ToolCalls)+" tool calls")
			return false, false
		}
		t.trace.ToolCalls++
		res, tr := e.execute(ctx, s, r.a.tg, r.a.args, "")
		lc := loopCall{a: r.a, res: res, tr: tr}
		content := resultContent(r.a.tg.spec, tr.Status, res, e.cfg.Now())
		e.recordLoopResult(s, &lc, content)
		s.trace.Notes = append(s.trace.Notes, "read "+r.name+" again before the answer: its result was "+
			now.Sub(r.at).Round(time.Second).String()+" old, over "+r.a.tg.spec.FreshFor.String())
		if res.Status != r.res.Status || factDiff(r.res.Data, res.Data) != "" {
			changed = append(changed, toolResultBlock(r.name, content, blockMarker(s)))
			t.trace.ResultBytes += len(content)
		}
		r.res, r.at = res, e.cfg.Now()
	}
	if len(changed) == 0 {
		return false, true
	}
	s.trace.Notes = append(s.trace.Notes, strconv.Itoa(len(changed))+" result(s) changed since they were read; the model answers again")
	t.msgs = append(t.msgs, llm.Message{Role: llm.RoleAssistant, Content: said})
	for _, block := range changed {
		t.msgs = append(t.msgs, llm.Message{Role: llm.RoleUser, Content: block})
	}
	return true, true
}
