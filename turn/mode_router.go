package turn

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/decision"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
)

// opRoute labels the router's model call in the journal; the answer
// keeps opTurn.
const opRoute = "route"

// skillButtonPrefix is the value of a button that switches the chat's
// skill ("skill:health", "skill:none" — the × on the skill's badge).
const skillButtonPrefix = "skill:"

// RouterTrace is what the router step did in a turn.
type RouterTrace struct {
	// Intercept names the pre-model rule that took the message, if any.
	Intercept string `json:"intercept,omitempty"`
	// WebSearch is the detector's pattern when it fired.
	WebSearch string `json:"web_search,omitempty"`
	// Proposed are the router's calls (name and arguments), in order.
	Proposed []string `json:"proposed,omitempty"`
	// Failed says why the router gave no decision; a plain answer
	// followed, with no sign of it to the user.
	Failed string `json:"failed,omitempty"`
	// Switched is a skill change: the new skill, "none", or a refused id.
	Switched string `json:"switched,omitempty"`
	Skill    string `json:"skill,omitempty"` // the skill after the turn
}

// runRouter is ModeRouter: the seed's three-part pipeline. Before the
// model, deterministic rules: a skill switched by its button or left by
// words, then the intercepts (a reply to a skill's question goes straight
// to the skill; a generation mode takes the text as the prompt; an
// unambiguous edit of the open document goes to the edit tool). Then the
// router call — the last messages, the skill, whether a draft waits and
// the client's hint, answered by one or two calls or none — OR-ed with the
// web-search detector; any failure of it is a plain answer. After it, the
// guards veto what the text does not support, and every remaining call
// goes through authorize in order. The answer comes last, by the skill
// when one is on, with "answer in words" a tool of its own.
func (e *Engine) runRouter(ctx context.Context, s *state) {
	r := s.assistant.Router
	rt := &RouterTrace{}
	s.trace.Router = rt
	skill := currentSkill(s)
	defer func() {
		rt.Skill = skill
		if skill != "" {
			id := skill
			s.out.Skill, s.out.SkillLabel = &id, findSkill(r, skill).Label
		}
	}()
	text := s.route.input

	if id, ok := strings.CutPrefix(s.in.Button, skillButtonPrefix); ok {
		skill = e.pressSkill(s, r, rt, id, skill)
		return
	}
	if skill != "" && r.Words.LeaveSkill(text) {
		skill, rt.Switched = setSkill(s, "none"), "none"
	}
	e.recordUserInput(s)
	s.model, s.strategy = e.providerFor(s.tenant)
	if s.model == nil {
		s.trace.Route = RouteNoModel
		e.replyText(s, e.noModelText(s.lang), nil)
		return
	}
	for _, name := range r.Intercepts {
		if intercepts[name](e, ctx, s, skill) {
			rt.Intercept = name
			return
		}
	}
	search := ""
	if r.WebSearch != "" && skill == "" {
		if fired, why := r.Words.WebSearch(text); fired {
			search = why
		}
	}
	var calls []llm.ToolCall
	s.showStep(chat.StepRoute, "", txtRouting, false)
	routed := e.routeCall(ctx, s, skill, rt)
	s.showStep(chat.StepRoute, "", txtRouting, true)
	for _, c := range routed {
		if c.Name == useSkillTool {
			s.showStep(chat.StepSkill, "", txtSwitchingMode, false)
			skill = e.switchSkill(s, r, c, skill, rt)
			s.showStep(chat.StepSkill, skill, txtSwitchingMode, true)
			continue
		}
		calls = append(calls, c)
	}
	if search != "" && skill == "" && !callsTool(calls, r.WebSearch) {
		rt.WebSearch = search
		args, _ := json.Marshal(map[string]string{"query": text})
		calls = append(calls, llm.ToolCall{ID: "detector", Name: r.WebSearch, Arguments: args})
	}
	if !e.runRouterCalls(ctx, s, r, calls) {
		return
	}
	e.answer(ctx, s, skill)
}

// pressSkill answers a skill's button: the chat switches to skill id (or
// leaves its skill for "none"); an id the router lacks is refused. It
// returns the chat's skill after it.
func (e *Engine) pressSkill(s *state, r *Router, rt *RouterTrace, id, skill string) string {
	e.recordUserInput(s)
	if id != "none" && findSkill(r, id) == nil {
		rt.Switched = "refused:" + id
		e.replyText(s, say(s.lang, txtNotAvailable), nil)
		return skill
	}
	skill = setSkill(s, id)
	rt.Switched, rt.Intercept = id, "skill_button"
	if skill == "" {
		e.replyText(s, say(s.lang, txtSkillOff), nil)
	} else {
		e.replyText(s, say(s.lang, txtSkillOn, findSkill(r, id).Label), nil)
	}
	return skill
}

// runRouterCalls takes the router's calls through the guards, in order: a
// write for approvers is proposed, one for the user's yes is put to them
// (and answers the turn), any other runs; a repeated write is dropped. It
// reports false when the turn was answered here.
func (e *Engine) runRouterCalls(ctx context.Context, s *state, r *Router, calls []llm.ToolCall) bool {
	writes := map[string]bool{}
	for _, c := range calls {
		if v := e.guardCall(s, r, c); v != nil {
			s.trace.Vetoes = append(s.trace.Vetoes, *v)
			continue
		}
		a, v := e.authorize(ctx, s, callRequest{guard: "router", name: c.Name, args: c.Arguments, attach: true})
		switch {
		case v != nil:
			s.trace.Vetoes = append(s.trace.Vetoes, *v)
		case dropRepeat(s, writes, "router", a):
		case a.approve:
			if act, ok := e.proposeApproval(ctx, s, a); ok {
				e.rememberResult(s, a.tg.spec.Name, act.Status, tool.Result{Status: tool.StatusOK, Text: proposedContent(act)})
			} else {
				return false
			}
		case a.confirm:
			// A write that waits for the user's yes is put to them now;
			// the answer is its confirmation.
			e.propose(ctx, s, a.tg, a.args, a.why)
			return false
		default:
			res, tr := e.execute(ctx, s, a.tg, a.args, e.directKey(s, a.tg.spec))
			e.noteRun(s, a.tg.entry.Spec.Name, a.args, res, tr)
			if res.Status == tool.StatusOK {
				rememberDone(s, a.tg.spec.Name, a.args)
			}
			if drafted(res) {
				// A draft is shown as the server keeps it, with its
				// buttons; only the publish button writes.
				e.showDraft(s, res)
				return false
			}
		}
	}
	return true
}

// routeCall asks the router model what this message needs: at most
// RouterMaxCalls calls, or none for a plain answer. Any failure — an
// error, a timeout, output it cannot use — is a plain answer, noted in
// the record only.
func (e *Engine) routeCall(ctx context.Context, s *state, skill string, rt *RouterTrace) []llm.ToolCall {
	timeout := s.assistant.Router.Timeout
	if timeout <= 0 {
		timeout = RouterTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: s.cat.prompts.Extra.(routerPrompts).prompt}, {Role: llm.RoleUser, Content: e.routerContext(s, skill)}}
	history := append(append([]store.Message(nil), s.conv.Messages...), s.added...)
	if len(history) > RouterMessages {
		history = history[len(history)-RouterMessages:]
	}
	marker := blockMarker(s)
	for _, m := range history {
		msgs = append(msgs, renderMessage(m, marker))
	}
	resp, err := e.callModel(rctx, s, s.model, llm.Request{Messages: msgs, Tools: s.cat.prompts.Extra.(routerPrompts).defs, ToolChoice: llm.ToolChoice{Mode: llm.ToolAuto},
		ParallelToolCalls: true, Temperature: 0, MaxTokens: RouterMaxTokens, Operation: opRoute, Strategy: s.strategy})
	if err != nil {
		rt.Failed = Clip(err.Error(), 300)
		return nil
	}
	var calls []llm.ToolCall
	if resp.Protocol == llm.ProtocolTools {
		calls = resp.ToolCalls
	} else if d, err := decision.Parse(resp.Text, s.cat.names); err == nil && d.Tool != "" {
		calls = []llm.ToolCall{{ID: "route_1", Name: d.Tool, Arguments: d.Args}}
	} else if err != nil {
		rt.Failed = "unusable output: " + Clip(err.Error(), 200)
		return nil
	}
	for i, c := range calls {
		rt.Proposed = append(rt.Proposed, c.Name+" "+Clip(string(c.Arguments), 300))
		if i == RouterMaxCalls-1 && len(calls) > RouterMaxCalls {
			rt.Failed = "more than two calls: the rest dropped"
			return calls[:RouterMaxCalls]
		}
	}
	return calls
}

// routerContext is the router's view of the moment: the skill, whether a
// draft is shown to the user (and being edited), and what the client says
// the user is doing — all data.
func (e *Engine) routerContext(s *state, skill string) string {
	d, shown := e.shownDraft(s)
	var b strings.Builder
	b.WriteString("<router_context>\nskill: ")
	if skill == "" {
		skill = "none"
	}
	b.WriteString(skill + "\ndraft shown: ")
	switch {
	case !shown:
		b.WriteString("no")
	case d.Editing:
		b.WriteString("yes, the user asked to change it\ndraft: " + neutralize(Clip(d.Text, 1000)))
	default:
		b.WriteString("yes\ndraft: " + neutralize(Clip(d.Text, 1000)))
	}
	if c := s.in.Client; c != nil {
		raw, _ := json.Marshal(c)
		b.WriteString("\nclient: " + neutralize(string(raw)))
	}
	b.WriteString("\n</router_context>")
	return b.String()
}

// answer writes the reply: the skill's profile when a skill is on, else
// the assistant's, with the turn's tool results among its messages and
// "answer in words" as the one tool it must call.
func (e *Engine) answer(ctx context.Context, s *state, skill string) {
	msgs := e.assemble(ctx, s)
	if skill != "" {
		msgs[0].Content = e.skillPrompt(s, skill)
	}
	resp, err := e.completeStreamed(ctx, s, llm.Request{Messages: msgs, Tools: []llm.ToolDef{respondDef}, ToolChoice: llm.ToolChoice{Mode: llm.ToolNamed, Name: respondTool},
		Temperature: e.cfg.Temperature, MaxTokens: e.cfg.MaxTokens, Operation: opTurn, Strategy: s.strategy})
	if err != nil {
		e.modelFailed(s, err)
		return
	}
	text := resp.Text
	for _, c := range resp.ToolCalls {
		var a struct {
			Text string `json:"text"`
		}
		if c.Name == respondTool && json.Unmarshal(c.Arguments, &a) == nil && strings.TrimSpace(a.Text) != "" {
			text = a.Text
			break
		}
	}
	if resp.Protocol != llm.ProtocolTools {
		if d, err := decision.Parse(resp.Text, nil); err == nil {
			text = d.Say
		}
	}
	if strings.TrimSpace(text) == "" {
		e.replyText(s, say(s.lang, txtRephrase), nil)
		return
	}
	if e.claimsUnconfirmed(s, text) {
		return
	}
	e.replyText(s, text, nil)
}

func callsTool(calls []llm.ToolCall, name string) bool {
	for _, c := range calls {
		if c.Name == name {
			return true
		}
	}
	return false
}
