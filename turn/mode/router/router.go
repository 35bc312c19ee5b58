// Package router is the router mode, the seed's three-part pipeline:
// deterministic rules before the model (a skill switched by its button or
// left by words, then the intercepts), a router model call that decides
// between a plain answer, switching a skill and at most two tool calls
// (OR-ed with the web-search detector), and after it the guards that veto
// what the user's text does not support. Every call that is left goes
// through the engine's guards (turn.Calls.Authorize); the answer comes
// last, by the skill's profile when one is on, with "answer in words" a
// tool of its own. Its settings are Settings, on turn.Assistant.Settings.
package router

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/decision"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn"
)

// Name is the mode's name in turn.Config.Modes.
const Name turn.ModeName = "router"

// New returns the router mode.
func New() turn.Mode { return mode{} }

// Router limits, as in the seed system.
const (
	Messages  = 6 // of the conversation the router sees
	MaxTokens = 500
	Timeout   = 15 * time.Second
	MaxCalls  = 2
)

// opRoute labels the router's model call in the journal; the answer
// keeps the engine's.
const opRoute = "route"

// skillButtonPrefix is the value of a button that switches the chat's
// skill ("skill:health", "skill:none" — the × on the skill's badge).
const skillButtonPrefix = "skill:"

// Trace is what the router did in a turn: the mode's section of the
// turn's record ("router").
type Trace struct {
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

// run is one turn of the router: the settings, the turn and its record.
type run struct {
	t     *turn.Turn
	r     *Settings
	trace *Trace
	skill string // the chat's skill as the turn goes
}

func (mode) Run(ctx context.Context, t *turn.Turn) {
	k := &run{t: t, r: settingsOf(t.Facts().Assistant()), trace: &Trace{}}
	t.RecordSection(k.trace)
	k.skill = currentSkill(t, k.r)
	defer k.showSkill()
	text := t.Input()

	if id, ok := strings.CutPrefix(t.Facts().Button(), skillButtonPrefix); ok {
		k.pressSkill(id)
		return
	}
	if k.skill != "" && k.r.Words.LeaveSkill(text) {
		k.skill, k.trace.Switched = setSkill(t, "none"), "none"
	}
	for _, name := range k.r.Intercepts {
		if intercepts[name](k, ctx) {
			k.trace.Intercept = name
			return
		}
	}
	search := ""
	if k.r.WebSearch != "" && k.skill == "" {
		if fired, why := k.r.Words.WebSearch(text); fired {
			search = why
		}
	}
	calls := k.route(ctx)
	if search != "" && k.skill == "" && !callsTool(calls, k.r.WebSearch) {
		k.trace.WebSearch = search
		args, _ := json.Marshal(map[string]string{"query": text})
		calls = append(calls, llm.ToolCall{ID: "detector", Name: k.r.WebSearch, Arguments: args})
	}
	if !k.runCalls(ctx, calls) {
		return
	}
	k.answer(ctx)
}

// showSkill ends every turn: the record and the reply carry the chat's
// skill after it.
func (k *run) showSkill() {
	k.trace.Skill = k.skill
	if k.skill != "" {
		k.t.Answer().ShowSkill(k.skill, findSkill(k.r, k.skill).Label)
	}
}

// route asks the router and takes its use_skill calls, leaving the tool
// calls in order.
func (k *run) route(ctx context.Context) []llm.ToolCall {
	var calls []llm.ToolCall
	k.t.Answer().Step(chat.StepRoute, "", routingText, false)
	routed := k.routeCall(ctx)
	k.t.Answer().Step(chat.StepRoute, "", routingText, true)
	for _, c := range routed {
		if c.Name == useSkillTool {
			k.t.Answer().Step(chat.StepSkill, "", switchingText, false)
			k.switchSkill(c)
			k.t.Answer().Step(chat.StepSkill, k.skill, switchingText, true)
			continue
		}
		calls = append(calls, c)
	}
	return calls
}

// pressSkill answers a skill's button: the chat switches to skill id (or
// leaves its skill for "none"); an id the router lacks is refused.
func (k *run) pressSkill(id string) {
	if id != "none" && findSkill(k.r, id) == nil {
		k.trace.Switched = "refused:" + id
		k.t.Answer().NotAvailable()
		return
	}
	k.skill = setSkill(k.t, id)
	k.trace.Switched, k.trace.Intercept = id, "skill_button"
	if k.skill == "" {
		k.t.Reply(skillOffText.In(k.t.Facts().Language()))
	} else {
		k.t.Reply(fmt.Sprintf(skillOnText.In(k.t.Facts().Language()), findSkill(k.r, id).Label))
	}
}

// runCalls takes the router's calls through the guards, in order: a
// write for approvers is proposed, one for the user's yes is put to them
// (and answers the turn), any other runs; a repeated write is dropped. It
// reports false when the turn was answered here.
func (k *run) runCalls(ctx context.Context, calls []llm.ToolCall) bool {
	t, writes := k.t, map[string]bool{}
	for _, call := range calls {
		if v := k.guardCall(call); v != nil {
			t.Trace().Vetoes = append(t.Trace().Vetoes, *v)
			continue
		}
		c, v := t.Calls().Authorize(ctx, turn.CallRequest{Tool: call.Name, Args: call.Arguments, Attachments: true})
		switch {
		case v != nil:
		case t.Calls().Repeats(c, writes):
		case c.WaitsForApprovers():
			if _, ok := t.Calls().ProposeApproval(ctx, c); !ok {
				return false
			}
			t.Calls().Remember(c.Spec().Name, string(store.ActionProposed))
		case c.WaitsForYes():
			// A write that waits for the user's yes is put to them now;
			// the answer is its confirmation.
			t.Calls().Confirm(ctx, []turn.Cleared{c})
			return false
		default:
			x, _ := t.Calls().Execute(ctx, c)
			t.Calls().RecordRun(x)
			if x.Result.Status == tool.StatusOK {
				rememberDone(t, c)
			}
			// A draft is shown as the server keeps it, with its
			// buttons; only the publish button writes.
			if t.Calls().ShowDraft(x) {
				return false
			}
		}
	}
	return true
}

// routeCall asks the router model what this message needs: at most
// MaxCalls calls, or none for a plain answer. Any failure — an error, a
// timeout, output it cannot use — is a plain answer, noted in the record
// only.
func (k *run) routeCall(ctx context.Context) []llm.ToolCall {
	t, rt := k.t, k.trace
	timeout := k.r.Timeout
	if timeout <= 0 {
		timeout = Timeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	own := t.Model().Prompts().Extra.(prompts)
	msgs := append([]llm.Message{{Role: llm.RoleSystem, Content: own.prompt}, {Role: llm.RoleUser, Content: k.context()}}, t.Memory().Recent(Messages)...)
	resp, err := t.Model().Ask(rctx, llm.Request{Messages: msgs, Tools: own.defs, ToolChoice: llm.ToolChoice{Mode: llm.ToolAuto},
		ParallelToolCalls: true, Temperature: 0, MaxTokens: MaxTokens, Operation: opRoute})
	if err != nil {
		rt.Failed = turn.Clip(err.Error(), 300)
		return nil
	}
	var calls []llm.ToolCall
	if resp.Protocol == llm.ProtocolTools {
		calls = resp.ToolCalls
	} else if d, err := t.Model().ParseDecision(resp.Text); err == nil && d.Tool != "" {
		calls = []llm.ToolCall{{ID: "route_1", Name: d.Tool, Arguments: d.Args}}
	} else if err != nil {
		rt.Failed = "unusable output: " + turn.Clip(err.Error(), 200)
		return nil
	}
	for i, c := range calls {
		rt.Proposed = append(rt.Proposed, c.Name+" "+turn.Clip(string(c.Arguments), 300))
		if i == MaxCalls-1 && len(calls) > MaxCalls {
			rt.Failed = "more than two calls: the rest dropped"
			return calls[:MaxCalls]
		}
	}
	return calls
}

// context is the router's view of the moment: the skill, whether a
// draft is shown to the user (and being edited), and what the client says
// the user is doing — all data.
func (k *run) context() string {
	d, kept := k.t.Memory().Draft()
	var b strings.Builder
	b.WriteString("<router_context>\nskill: ")
	skill := k.skill
	if skill == "" {
		skill = "none"
	}
	b.WriteString(skill + "\ndraft shown: ")
	switch {
	case !kept || !d.Shown:
		b.WriteString("no")
	case d.Editing:
		b.WriteString("yes, the user asked to change it\ndraft: " + turn.Neutralize(turn.Clip(d.Text, 1000)))
	default:
		b.WriteString("yes\ndraft: " + turn.Neutralize(turn.Clip(d.Text, 1000)))
	}
	if c := k.t.Facts().Client(); c != nil {
		raw, _ := json.Marshal(c)
		b.WriteString("\nclient: " + turn.Neutralize(string(raw)))
	}
	b.WriteString("\n</router_context>")
	return b.String()
}

// answer writes the reply: the skill's profile when a skill is on, else
// the assistant's, with the turn's tool results among its messages and
// "answer in words" as the one tool it must call.
func (k *run) answer(ctx context.Context) {
	t := k.t
	msgs := t.Messages(ctx)
	if k.skill != "" {
		msgs[0].Content = k.skillPrompt()
	}
	resp, err := t.Model().CompleteStreamed(ctx, llm.Request{Messages: msgs, Tools: []llm.ToolDef{respondDef}, ToolChoice: llm.ToolChoice{Mode: llm.ToolNamed, Name: respondTool},
		Temperature: t.Model().Temperature(), MaxTokens: t.Model().MaxTokens(), Operation: turn.OpTurn})
	if err != nil {
		t.Answer().ModelFailed(err)
		return
	}
	text := answerText(resp)
	if strings.TrimSpace(text) == "" {
		t.Answer().Rephrase()
		return
	}
	if t.Answer().ClaimsUnconfirmed(text) {
		return
	}
	t.Reply(text)
}

// answerText is the answer's words: its respond call's text, or for a
// model without native tool calls its JSON decision's say.
func answerText(resp llm.Response) string {
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
	return text
}

func callsTool(calls []llm.ToolCall, name string) bool {
	for _, c := range calls {
		if c.Name == name {
			return true
		}
	}
	return false
}
