package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/arbiterhq/arbiter/intent"
)

// Assistant is a named assistant profile: its instructions, the tools it
// may see (within each role's), how it decides and its limits.
type Assistant struct {
	// Prompt is the assistant's instructions; PromptFile reads them from
	// a file instead (relative to the configuration file).
	Prompt     string `yaml:"prompt"`
	PromptFile string `yaml:"prompt_file"`
	// Tools narrows what the model sees (names or globs); empty: all the
	// caller's role allows.
	Tools []string `yaml:"tools"`
	// Mode is single (one decision per turn, the default) or loop (tool
	// calls and results until a final answer or a limit).
	Mode   string          `yaml:"mode"`
	Limits AssistantLimits `yaml:"limits"`
	// HandOff offers a loop assistant's model the hand_off_to_human tool,
	// to hand the case to a person with a reason (default off).
	HandOff bool `yaml:"hand_off"`
	// LiveContext is when requests carry the live context (the user, the
	// local time, the case, the context sources): auto (default: when the
	// case or a source has something to say), always, or off.
	LiveContext string `yaml:"live_context"`
	// Preflight are reads a loop assistant runs, in order, before the
	// model sees the case (args: a JSON object; bound arguments are
	// filled from the case).
	Preflight []Command `yaml:"preflight"`
	// MaxQuestions bounds an interview (mode interview; default 3).
	MaxQuestions int `yaml:"max_questions"`
	// MaxTokens bounds one model answer (default: limits.max_tokens; an
	// interview 4000); MaxReplyChars a delivered result (default 32000).
	MaxTokens     int `yaml:"max_tokens"`
	MaxReplyChars int `yaml:"max_reply_chars"`
	// Memory overrides the memory policy for this assistant's
	// conversations (an interview's default pause and TTL are a day).
	Memory Memory `yaml:"memory"`
	// Lifetimes override the top-level lifetimes for this assistant's
	// conversations (interview only for mode interview, skill only for
	// mode router).
	Lifetimes Lifetimes `yaml:"lifetimes"`
	// Router sets up a router assistant (mode router).
	Router *Router `yaml:"router"`
	// Receipts: a reply the model wrote ends with the server's line on
	// each write of the turn (its true state). Default: on for an
	// assistant with a tool that waits for approvers.
	Receipts *bool `yaml:"receipts"`
	// Settings are the settings of a mode a program registers, which
	// its kind decodes (server.Kinds.ModeSettings); the built-in modes'
	// are the fields above.
	Settings yaml.Node `yaml:"settings"`
}

// Router is a router assistant's setup: its prompt (what not to confuse
// with what), skills, web-search tool, intercepts and guards.
type Router struct {
	Prompt     string            `yaml:"prompt"`
	WebSearch  string            `yaml:"web_search"`
	Intercepts []string          `yaml:"intercepts"`
	Guards     []RouterGuard     `yaml:"guards"`
	Generation map[string]string `yaml:"generation"`
	EditTool   string            `yaml:"edit_tool"`
	Skills     []Skill           `yaml:"skills"`
	// Words are the word lists of the intercepts, guards and web-search
	// detector (intent.Lists), by name; WordsFile reads them from a YAML
	// file of the same shape instead (relative to the configuration file).
	Words     map[string][]string `yaml:"words"`
	WordsFile string              `yaml:"words_file"`
	// Timeout bounds the router's model call (default 15s).
	Timeout Duration `yaml:"timeout"`
}

// RouterGuard applies a named guard to some tools (all when empty).
type RouterGuard struct {
	Guard string   `yaml:"guard"`
	Tools []string `yaml:"tools"`
}

// Skill is a conversational mode a chat may switch to: the assistant
// profile that answers while it is on; auto lets the router switch to it.
type Skill struct {
	ID        string `yaml:"id"`
	Assistant string `yaml:"assistant"`
	Label     string `yaml:"label"`
	Auto      bool   `yaml:"auto"`
}

// AssistantLimits bound one task of a loop assistant; zero takes the
// engine's default.
type AssistantLimits struct {
	ModelCalls  int      `yaml:"model_calls"`
	ToolCalls   int      `yaml:"tool_calls"`
	Deadline    Duration `yaml:"deadline"`
	ResultBytes int      `yaml:"result_bytes"`
	TotalBytes  int      `yaml:"total_bytes"`
	// SameCall is how many times one call (tool and arguments) may run.
	SameCall int `yaml:"same_call"`
}

// LoadPrompt returns the assistant's instructions: Prompt, or the
// contents of PromptFile, relative to dir (the configuration file's
// directory) unless absolute.
func (a Assistant) LoadPrompt(dir string) (string, error) {
	if a.PromptFile == "" {
		return a.Prompt, nil
	}
	b, err := readRelative(dir, a.PromptFile)
	if err != nil {
		return "", fmt.Errorf("assistant prompt: %w", err)
	}
	return string(b), nil
}

// checkAssistants checks each assistant profile, in the order of their
// names.
func (v *validator) checkAssistants(assistants map[string]Assistant) {
	for _, name := range sortedKeys(assistants) {
		assistants[name].check(v, "assistants."+name)
	}
}

// check checks one assistant profile at path p (assistants.<name>); its
// lifetimes are checked with the top-level ones (lifetimes.go).
func (a Assistant) check(v *validator, p string) {
	if (a.Mode == "router") != (a.Router != nil) {
		v.errorf(p+".router", "a router section goes with mode router, and mode router needs one")
	}
	if a.Router != nil {
		a.Router.check(v, p+".router")
	}
	switch a.LiveContext {
	case "", "auto", "always", "off":
	default:
		v.errorf(p+".live_context", "unknown policy %q (auto, always or off)", a.LiveContext)
	}
	a.checkModeFields(v, p)
	if a.Prompt != "" && a.PromptFile != "" {
		v.errorf(p, "set prompt or prompt_file, not both")
	} else if _, err := a.LoadPrompt(v.cfg.Dir); err != nil {
		v.errorf(p+".prompt_file", "%v", err)
	}
	a.checkLimits(v, p)
}

// checkModeFields refuses the fields of one mode on an assistant of
// another: they would do nothing there.
func (a Assistant) checkModeFields(v *validator, p string) {
	for _, f := range []struct {
		field, what, mode string
		set               bool
	}{{"hand_off", "the hand-off tool goes", "loop", a.HandOff}, {"preflight", "preflight reads go", "loop", len(a.Preflight) > 0},
		{"limits", "a task's limits go", "loop", a.Limits != (AssistantLimits{})},
		{"max_questions", "max_questions goes", "interview", a.MaxQuestions != 0}, {"max_reply_chars", "max_reply_chars goes", "interview", a.MaxReplyChars != 0}} {
		if f.set && a.Mode != f.mode {
			v.errorf(p+"."+f.field, "%s with mode %s", f.what, f.mode)
		}
	}
}

// check checks that each skill's assistant is a profile of the
// configuration, and the router's word lists.
func (r *Router) check(v *validator, p string) {
	known := sortedKeys(v.cfg.Assistants)
	for i, sk := range r.Skills {
		if _, ok := v.cfg.Assistants[sk.Assistant]; !ok {
			v.errorf(fmt.Sprintf("%s.skills[%d].assistant", p, i), "no assistant named %q%s", sk.Assistant, DidYouMean(sk.Assistant, known))
		}
	}
	r.checkWords(v, p)
}

// checkWords checks a router's word lists: one source, readable, and
// lists and patterns the router knows.
func (r *Router) checkWords(v *validator, p string) {
	at := p + ".words"
	if r.WordsFile != "" {
		at = p + ".words_file"
	}
	if r.Words != nil && r.WordsFile != "" {
		v.errorf(p, "set words or words_file, not both")
	} else if words, err := r.LoadWords(v.cfg.Dir); err != nil {
		v.errorf(at, "%v", err)
	} else if _, err := intent.CompileLexicon(words); err != nil {
		v.errorf(at, "%v", err)
	}
}

// LoadWords returns the router's word lists: Words, or the contents of
// WordsFile, relative to dir unless absolute.
func (r Router) LoadWords(dir string) (map[string][]string, error) {
	if r.WordsFile == "" {
		return r.Words, nil
	}
	b, err := readRelative(dir, r.WordsFile)
	if err != nil {
		return nil, fmt.Errorf("router words: %w", err)
	}
	var words map[string][]string
	if err := yaml.Unmarshal(b, &words); err != nil {
		return nil, fmt.Errorf("router words %s: %w", r.WordsFile, err)
	}
	return words, nil
}

// readRelative reads the file name, relative to dir (the configuration
// file's directory) unless absolute or dir is empty.
func readRelative(dir, name string) ([]byte, error) {
	if !filepath.IsAbs(name) && dir != "" {
		name = filepath.Join(dir, name)
	}
	return os.ReadFile(name)
}

// checkLimits refuses the negative limits of an assistant at path p: its
// loop's (limits.*) and its own bounds (max_*); zero takes the default.
func (a Assistant) checkLimits(v *validator, p string) {
	l := a.Limits
	for _, f := range []struct {
		name string
		n    int64
	}{{"model_calls", int64(l.ModelCalls)}, {"tool_calls", int64(l.ToolCalls)}, {"deadline", int64(l.Deadline)},
		{"result_bytes", int64(l.ResultBytes)}, {"total_bytes", int64(l.TotalBytes)}, {"same_call", int64(l.SameCall)},
		{"max_questions", int64(a.MaxQuestions)}, {"max_tokens", int64(a.MaxTokens)}, {"max_reply_chars", int64(a.MaxReplyChars)}} {
		at := p + ".limits." + f.name
		if strings.HasPrefix(f.name, "max_") {
			at = p + "." + f.name
		}
		if f.n < 0 {
			v.errorf(at, "must not be negative")
		}
	}
}
