package router

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/intent"
	"github.com/arbiterhq/arbiter/turn"
)

// Settings are a router assistant's setup (turn.Assistant.Settings).
type Settings struct {
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
	// intercepts); Guards the post-model ones (see guards).
	Intercepts []string
	Guards     []GuardRule
	// Generation maps a client's active mode (image, video, music,
	// voice) to the tool that takes the text as its prompt.
	Generation map[string]string
	// EditTool is the tool that edits an open document, with arguments
	// document and change (the open-document intercept and the named-
	// document guard).
	EditTool string
	// Timeout bounds the router's call; zero means Timeout.
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
	Assistant string // the profile in turn.Config.Assistants whose prompt answers
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

// settingsOf is an assistant's router settings; Check made sure they
// are there.
func settingsOf(a turn.Assistant) *Settings {
	r, _ := a.Settings.(*Settings)
	return r
}

// mode is the router. While a skill's question waits, a yes is the
// skill's answer (AwaitsAnswer); the chat's skill is a slot of its own.
type mode struct{}

// TakesSettings: a router's are *Settings.
func (mode) TakesSettings(s any) bool {
	_, ok := s.(*Settings)
	return ok
}

func (mode) Check(a *turn.Assistant, in turn.CheckInput) error {
	r := settingsOf(*a)
	if r == nil {
		return in.Errorf("mode router needs a router section")
	}
	seen := map[string]bool{}
	for _, s := range r.Skills {
		switch {
		case s.ID == "" || s.ID == "none" || seen[s.ID]:
			return in.Errorf("skill id %q is empty, reserved or used twice", s.ID)
		case in.Assistants[s.Assistant].Mode == Name:
			return in.Errorf("skill %s: assistant %q is missing or itself a router", s.ID, s.Assistant)
		}
		if _, ok := in.Assistants[s.Assistant]; !ok {
			return in.Errorf("skill %s: no assistant %q", s.ID, s.Assistant)
		}
		seen[s.ID] = true
	}
	if err := checkRules(r, in); err != nil {
		return err
	}
	if err := checkWords(r); err != nil {
		return in.Errorf("%v", err)
	}
	return nil
}

// checkRules: every intercept and guard is one of the router's, and
// every tool its rules name is registered.
func checkRules(r *Settings, in turn.CheckInput) error {
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
	named := []string{r.WebSearch, r.EditTool}
	for _, v := range r.Generation {
		named = append(named, v)
	}
	for _, tool := range named {
		if _, ok := in.Tools.Lookup(tool); tool != "" && !ok {
			return in.Errorf("router tool %q is not registered", tool)
		}
	}
	return nil
}

// checkWords: every rule the router uses has the word lists it cannot do
// without.
func checkWords(r *Settings) error {
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
