package turn

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn/internal/gate"
)

// Assistant is a named profile a tenant's turns run under: what the model
// is told, which tools it may see, how it decides and within what limits.
type Assistant struct {
	// Prompt is the assistant's own instructions, placed at the top of
	// its system prompt.
	Prompt string
	// Tools narrows the catalog (names or globs) within what the caller's
	// role and scopes allow; a tool outside it is not shown and does not
	// run, by any path. Empty: everything the role allows.
	Tools []string
	// Mode names the assistant's mode in Config.Modes; empty means
	// Config.DefaultMode.
	Mode ModeName
	// LiveContext says when the request carries the live context (the
	// user, the local time, the case, the context sources' sections).
	// Default LiveContextAuto.
	LiveContext LiveContextPolicy
	// MaxTokens bounds one model answer of this assistant where its mode
	// reads it; zero means the engine's or the mode's default (a mode
	// whose deliverable is long has a larger one).
	MaxTokens int
	// Memory overrides the engine's memory policy where set: a
	// conversation that spans days is not cut by a short pause.
	Memory MemoryPolicy
	// Lifetimes override the engine's where set (a mode's slot in
	// Lifetimes.Slots).
	Lifetimes Lifetimes
	// Settings are the mode's own settings, of the type its package
	// declares (a pointer to it), checked by its Check (SettingsTaker).
	Settings any
	// Receipts: a reply the model wrote ends with the server's line on
	// each write of the turn, its true state (chat.Outbound.Actions holds
	// the lines either way). Nil: on for an assistant with a tool that
	// waits for approvers (tool.Spec.Approve).
	Receipts *bool
}

// LiveContextPolicy says when a turn's request carries the live context.
type LiveContextPolicy string

// Live context policies.
const (
	// LiveContextAuto: when the conversation has a case or the deployment
	// a context source (the user and the local time then go on every turn,
	// with what the sources say; a source that fails says so). The
	// default.
	LiveContextAuto LiveContextPolicy = "auto"
	// LiveContextAlways: on every turn, the user and the local time at
	// least.
	LiveContextAlways LiveContextPolicy = "always"
	// LiveContextOff: never; the context sources are not asked.
	LiveContextOff LiveContextPolicy = "off"
)

// checkAssistants validates the profiles and the tenants' choices, and
// fills the defaults: the kernel's own fields here, the rest by each
// assistant's mode (after every assistant has its mode's name, which a
// mode may look at in another).
func checkAssistants(cfg *Config) error {
	if err := checkDefaultMode(cfg); err != nil {
		return err
	}
	for name, a := range cfg.Assistants {
		if a.Mode == "" {
			a.Mode = cfg.DefaultMode
		}
		if cfg.Modes[a.Mode] == nil {
			return fmt.Errorf("assistant %s: unknown mode %q (one of: %s)", name, a.Mode, strings.Join(cfg.Modes.Names(), ", "))
		}
		switch a.LiveContext {
		case "":
			a.LiveContext = LiveContextAuto
		case LiveContextAuto, LiveContextAlways, LiveContextOff:
		default:
			return fmt.Errorf("assistant %s: unknown live context policy %q", name, a.LiveContext)
		}
		if err := checkSettings(name, a, cfg.Modes); err != nil {
			return err
		}
		if a.Receipts == nil {
			on := approvesAny(cfg.Tools, a.Tools)
			a.Receipts = &on
		}
		cfg.Assistants[name] = a
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Assistants)) {
		a := cfg.Assistants[name]
		in := CheckInput{Name: name, Tools: cfg.Tools, Assistants: cfg.Assistants}
		if err := cfg.Modes[a.Mode].Check(&a, in); err != nil {
			return err
		}
		cfg.Assistants[name] = a
	}
	for id, t := range cfg.Tenants {
		if _, ok := cfg.Assistants[t.Assistant]; t.Assistant != "" && !ok {
			return fmt.Errorf("tenant %s: unknown assistant %q", id, t.Assistant)
		}
	}
	return nil
}

// checkDefaultMode settles the mode of an assistant that names none: the
// one the configuration names, or the only one there is.
func checkDefaultMode(cfg *Config) error {
	if cfg.DefaultMode == "" && len(cfg.Modes) == 1 {
		for name := range cfg.Modes {
			cfg.DefaultMode = name
		}
	}
	if cfg.Modes[cfg.DefaultMode] == nil {
		return fmt.Errorf("turn: Config.DefaultMode %q is none of the modes (%s): name the mode of an assistant that names none (builtin.DefaultMode for the built-in ones)",
			cfg.DefaultMode, strings.Join(cfg.Modes.Names(), ", "))
	}
	return checkModeNames(cfg.Modes)
}

// memoryFor is the engine's memory policy with a's own values.
func (e *Engine) memoryFor(a Assistant) MemoryPolicy {
	m := e.cfg.Memory
	if a.Memory.Window > 0 {
		m.Window = a.Memory.Window
	}
	if a.Memory.TTL > 0 {
		m.TTL = a.Memory.TTL
	}
	if a.Memory.Pause > 0 {
		m.Pause = a.Memory.Pause
	}
	return m
}

// assistantFor returns the profile tenant t's turns run under: its
// assistant, or the default one (Config.DefaultMode, no settings).
func (e *Engine) assistantFor(t Tenant) Assistant {
	if a, ok := e.cfg.Assistants[t.Assistant]; ok && t.Assistant != "" {
		return a
	}
	return Assistant{Mode: e.cfg.DefaultMode}
}

// approvesAny reports whether a tool the patterns admit (all when empty)
// waits for approvers.
func approvesAny(reg *tool.Registry, patterns []string) bool {
	for _, name := range reg.Names() {
		entry, _ := reg.Lookup(name)
		if len(entry.Spec.Approve) > 0 && (len(patterns) == 0 || gate.Matches(patterns, name)) {
			return true
		}
	}
	return false
}
