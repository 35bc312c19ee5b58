package turn

import (
	"maps"
	"slices"
	"strings"
)

// ModelSetup says how a model is configured, for the reply to a message
// that no model can answer: the environment variables that configure one
// and the model kinds a configuration may name. Empty, the reply names
// neither.
type ModelSetup struct {
	Env, Kinds []string
}

// helpText is /help: the configured commands, each with its line (its
// Help, else its tool's title), then the built-in /cancel and /reset.
func (e *Engine) helpText(lang string) string {
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(e.cfg.Commands)) {
		cmd := e.cfg.Commands[name]
		help := cmd.Help.In(lang)
		if help == "" {
			if entry, ok := e.cfg.Tools.Lookup(cmd.Tool); ok {
				help = entry.Spec.TitleIn(lang)
			}
		}
		lines = append(lines, name+" — "+help)
	}
	lines = append(lines, "/cancel — "+say(lang, txtHelpCancel), "/reset — "+say(lang, txtHelpReset))
	return say(lang, txtHelp, strings.Join(lines, ", "))
}

// noModelText is the reply to a message no model can answer: how to
// configure one, and the commands that work without.
func (e *Engine) noModelText(lang string) string {
	commands := append(slices.Sorted(maps.Keys(e.cfg.Commands)), "/help")
	list := strings.Join(commands, ", ")
	m := e.cfg.ModelSetup
	if len(m.Env) == 0 && len(m.Kinds) == 0 {
		return say(lang, txtNoModelBare, list)
	}
	return say(lang, txtNoModel, strings.Join(m.Env, ", "), strings.Join(m.Kinds, ", "), list)
}
