package turn

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/intent"
	"github.com/arbiterhq/arbiter/llm"
)

// ModeRouter: before any answer a router model decides between a plain
// answer, switching a skill and calling tools, with deterministic
// intercepts before it and guards after it (mode_router.go).
const ModeRouter ModeName = "router"

// routerMode is ModeRouter. While a skill's question waits, a yes is the
// skill's answer.
type routerMode struct{}

func (routerMode) Check(a *Assistant, in CheckInput) error { return checkRouter(*a, in) }

// routerPrompts are a router's own prompt and tool definitions, besides
// the answer's.
type routerPrompts struct {
	prompt string
	defs   []llm.ToolDef
}

func (routerMode) Prompts(in PromptInput) Prompts {
	r := in.Assistant.Router
	own := routerPrompts{prompt: routerPrompt(in.Tenant, r.Prompt), defs: in.Defs}
	if slices.ContainsFunc(r.Skills, func(s Skill) bool { return s.Auto }) {
		own.defs = append(slices.Clip(in.Defs), useSkillDef(r.Skills))
	}
	return Prompts{System: answerPrompt(in.Tenant, in.Language, in.Assistant.Prompt, ""), Extra: own}
}

func (routerMode) Run(ctx context.Context, t *Turn) { t.e.runRouter(ctx, t.s) }

// Slots: the chat's skill, which lasts its lifetime.
func (routerMode) Slots() []ModeSlot {
	return []ModeSlot{{Name: skillSlot, Lifetime: func(l Lifetimes) time.Duration { return l.Skill }}}
}

// AwaitsAnswer: a skill is on and its last message asked the user
// something, which "да" answers.
func (routerMode) AwaitsAnswer(t *Turn) bool {
	return currentSkill(t.s) != "" && lastAskedQuestion(t.s)
}

// Router limits, as in the seed system.
const (
	RouterMessages  = 6 // of the conversation the router sees
	RouterMaxTokens = 500
	RouterTimeout   = 15 * time.Second
	RouterMaxCalls  = 2
	// interviewReplyRunes: a reply shorter than this to a skill's
	// question (with no marker word) continues the skill's interview.
	interviewReplyRunes = 240
)

// Router is a router assistant's setup (Assistant.Router).
type Router struct {
	// Prompt is the router's own instructions — mostly what not to
	// confuse with what.
	Prompt string
	// Skills are the conversational modes a chat may switch to.
	Skills []Skill
	// WebSearch names the tool the web-search detector runs with the
	// user's text as its query, OR-ed with the router's decision; empty:
	// no detector.
	WebSearch string
	// Intercepts are the pre-model rules, by name, in order (see
	// Intercepts); Guards the post-model ones (see Guards).
	Intercepts []string
	Guards     []GuardRule
	// Generation maps a client's active mode (image, video, music,
	// voice) to the tool that takes the text as its prompt.
	Generation map[string]string
	// EditTool is the tool that edits an open document, with arguments
	// document and change (the open-document intercept and the named-
	// document guard).
	EditTool string
	// Timeout bounds the router's call; zero means RouterTimeout.
	Timeout time.Duration
	// Words are the word lists of the intercepts, guards and detector —
	// the deployment's, as the engine knows no words of its own.
	Words *intent.Lexicon
}

// Skill is a conversational mode a chat switches to: while it is on, the
// skill's assistant profile answers, with no router in between for the
// replies to its questions and no web search.
type Skill struct {
	ID        string
	Assistant string // the profile in Config.Assistants whose prompt answers
	Label     string
	// Auto: the router may switch to it (use_skill); otherwise only a
	// button does (the seed's Документы: a file is not a mode).
	Auto bool
}

// GuardRule applies a named guard to the router's calls of some tools
// (all tools when Tools is empty).
type GuardRule struct {
	Guard string
	Tools []string
}

func (g GuardRule) applies(tool string) bool {
	return len(g.Tools) == 0 || slices.Contains(g.Tools, tool)
}

// Server tools of a router: switching skills, and answering in words.
const (
	useSkillTool = "use_skill"
	respondTool  = "respond"
	// skillSlot keeps the chat's active skill in its durable state;
	// doneSlot the successful calls of the chat (the repeated-call guard).
	skillSlot = "skill"
	doneSlot  = "done_calls"
)

// useSkillDef offers the router the skills it may switch to, and "none"
// to leave one; the enum is the allow-list the server checks again.
func useSkillDef(skills []Skill) llm.ToolDef {
	ids := []string{}
	var lines []string
	for _, s := range skills {
		if s.Auto {
			ids = append(ids, s.ID)
			lines = append(lines, s.ID+" ("+s.Label+")")
		}
	}
	ids = append(ids, "none")
	enum, _ := json.Marshal(ids)
	return llm.ToolDef{Name: useSkillTool,
		Description: "Switch the chat to a conversational skill when the user turns to its subject: " + strings.Join(lines, ", ") +
			`; "none" returns to the ordinary conversation. Leaving is a decision like entering.`,
		Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["skill"],"properties":{"skill":{"type":"string","enum":` + string(enum) + `}}}`)}
}

var respondDef = llm.ToolDef{Name: respondTool, Description: "Answer the user in words.",
	Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["text"],"properties":{"text":{"type":"string"}}}`)}

// checkRouter validates a router assistant against the configuration.
func checkRouter(a Assistant, in CheckInput) error {
	r := a.Router
	if r == nil {
		return in.Errorf("mode router needs a router section")
	}
	seen := map[string]bool{}
	for _, s := range r.Skills {
		switch {
		case s.ID == "" || s.ID == "none" || seen[s.ID]:
			return in.Errorf("skill id %q is empty, reserved or used twice", s.ID)
		case in.Assistants[s.Assistant].Mode == ModeRouter:
			return in.Errorf("skill %s: assistant %q is missing or itself a router", s.ID, s.Assistant)
		}
		if _, ok := in.Assistants[s.Assistant]; !ok {
			return in.Errorf("skill %s: no assistant %q", s.ID, s.Assistant)
		}
		seen[s.ID] = true
	}
	for _, n := range r.Intercepts {
		if _, ok := intercepts[n]; !ok {
			return in.Errorf("unknown intercept %q", n)
		}
		if n == "photo" && r.Generation[imageMode] == "" {
			return in.Errorf("intercept photo needs generation.%s, the tool that draws", imageMode)
		}
	}
	for _, g := range r.Guards {
		if _, ok := guards[g.Guard]; !ok {
			return in.Errorf("unknown guard %q", g.Guard)
		}
	}
	for _, tool := range append([]string{r.WebSearch, r.EditTool}, mapValues(r.Generation)...) {
		if _, ok := in.Tools.Lookup(tool); tool != "" && !ok {
			return in.Errorf("router tool %q is not registered", tool)
		}
	}
	if err := checkRouterWords(r); err != nil {
		return in.Errorf("%v", err)
	}
	return nil
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// checkRouterWords: every rule the router uses has the word lists it
// cannot do without.
func checkRouterWords(r *Router) error {
	rules := slices.Clone(r.Intercepts)
	for _, g := range r.Guards {
		rules = append(rules, g.Guard)
	}
	if r.WebSearch != "" {
		rules = append(rules, "web_search")
	}
	if len(r.Skills) > 0 {
		rules = append(rules, "skills")
	}
	for _, rule := range rules {
		if missing := r.Words.Missing(rule); len(missing) > 0 {
			return errors.New(rule + " needs the word lists " + strings.Join(missing, ", ") + " (router words)")
		}
	}
	return nil
}
