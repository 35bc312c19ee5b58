package server

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/calendar"
	"github.com/arbiterhq/arbiter/tool/contentidea"
	"github.com/arbiterhq/arbiter/tool/knowledge"
	"github.com/arbiterhq/arbiter/tool/taskboard"
)

// ToolNamesKind tells, without building anything, the names of the tools
// one section of a tool kind offers, so that Check can find a command, a
// role or an assistant naming a tool no section offers. A name may be a
// glob ("everything.*") for tools the kind learns only when it runs.
type ToolNamesKind func(cfg *config.Config, section Section) []string

// boardNames are the actions of a task board, embedded or Trello.
func boardNames(*config.Config, Section) []string {
	return []string{taskboard.ActionCreate, taskboard.ActionUpdate, taskboard.ActionComment, taskboard.ActionComplete, taskboard.ActionListMine}
}

// builtinToolNames are the names of the built-in tool kinds' tools.
func builtinToolNames() map[string]ToolNamesKind {
	return map[string]ToolNamesKind{
		"taskboard": boardNames,
		"trello":    boardNames,
		"calendar": func(*config.Config, Section) []string {
			return []string{calendar.ActionCreateEvent, calendar.ActionSchedule}
		},
		"knowledge": func(*config.Config, Section) []string {
			return []string{knowledge.ActionAdd, knowledge.ActionSearch}
		},
		"content_ideas": func(*config.Config, Section) []string {
			return []string{contentidea.ActionIdea, contentidea.ActionList}
		},
		"http": func(cfg *config.Config, _ Section) []string {
			var names []string
			for _, h := range cfg.Tools.HTTP {
				names = append(names, h.Name)
			}
			return names
		},
	}
}

// toolRef is a place of the configuration that names a tool: exactly, or
// by a glob when glob is set.
type toolRef struct {
	path, name string
	glob       bool
}

// toolRefs are the configuration's references to tools, in its order.
func toolRefs(cfg *config.Config) []toolRef {
	var refs []toolRef
	for _, name := range sortedKeys(cfg.Commands) {
		refs = append(refs, toolRef{path: "commands." + name + ".tool", name: cfg.Commands[name].Tool})
	}
	pattern := func(p, name string) {
		// "*" and the MCP patterns (mcp:server/tool) name no one tool.
		if name != "*" && !strings.Contains(name, ":") {
			refs = append(refs, toolRef{path: p, name: name, glob: strings.ContainsAny(name, "*?[")})
		}
	}
	for i, t := range cfg.Tenants {
		for _, role := range sortedKeys(t.Roles) {
			for j, name := range t.Roles[role].Tools {
				pattern(fmt.Sprintf("tenants[%d].roles.%s.tools[%d]", i, role, j), name)
			}
		}
	}
	for _, name := range sortedKeys(cfg.Assistants) {
		a, p := cfg.Assistants[name], "assistants."+name
		for j, n := range a.Tools {
			pattern(fmt.Sprintf("%s.tools[%d]", p, j), n)
		}
		for j, c := range a.Preflight {
			refs = append(refs, toolRef{path: fmt.Sprintf("%s.preflight[%d].tool", p, j), name: c.Tool})
		}
		if r := a.Router; r != nil {
			for _, f := range []struct{ key, name string }{{"web_search", r.WebSearch}, {"edit_tool", r.EditTool}} {
				if f.name != "" {
					refs = append(refs, toolRef{path: p + ".router." + f.key, name: f.name})
				}
			}
			for j, g := range r.Guards {
				for k, n := range g.Tools {
					pattern(fmt.Sprintf("%s.router.guards[%d].tools[%d]", p, j, k), n)
				}
			}
		}
	}
	for i, h := range cfg.Tools.HTTP {
		for j, n := range h.Basis {
			refs = append(refs, toolRef{path: fmt.Sprintf("tools.http[%d].basis[%d]", i, j), name: n})
		}
	}
	for _, board := range []struct {
		key     string
		confirm map[string]string
	}{{"taskboard", confirmOf(cfg.Tools.Taskboard)}, {"trello", trelloConfirm(cfg.Tools.Trello)}} {
		for _, action := range sortedKeys(board.confirm) {
			refs = append(refs, toolRef{path: "tools." + board.key + ".confirm." + action, name: action})
		}
	}
	return refs
}

func confirmOf(tb *config.Taskboard) map[string]string {
	if tb == nil || tb.Disabled {
		return nil
	}
	return tb.Confirm
}

func trelloConfirm(tr *config.Trello) map[string]string {
	if tr == nil {
		return nil
	}
	return tr.Confirm
}

// checkToolRefs reports each reference to a tool that no configured
// section offers, by the names the kinds declare (Kinds.ToolNames). When a
// configured kind declares none, or is unknown, the names are not all
// known and nothing is reported (Build checks commands and preflight
// reads against the tools it built).
func checkToolRefs(cfg *config.Config, kinds Kinds) config.Errors {
	var known []string
	for _, name := range toolSections(cfg) {
		names := kinds.ToolNames[name]
		if names == nil || kinds.Tools[name] == nil {
			return nil
		}
		sec := Section{Kind: name}
		if n, ok := cfg.Tools.Extra[name]; ok {
			sec.Node = &n
		}
		known = append(known, names(cfg, sec)...)
	}
	var errs config.Errors
	for _, r := range toolRefs(cfg) {
		if !refMatches(r, known) {
			errs = append(errs, refProblem(cfg, r, known))
		}
	}
	return errs
}

// refMatches reports whether r names a tool of known.
func refMatches(r toolRef, known []string) bool {
	for _, k := range known {
		kglob := strings.ContainsAny(k, "*?[")
		switch {
		case k == r.name:
			return true
		case kglob && r.glob:
			return true // two globs may overlap; not a mistake to report
		case kglob:
			if ok, _ := path.Match(k, r.name); ok {
				return true
			}
		case r.glob:
			if ok, _ := path.Match(r.name, k); ok {
				return true
			}
		}
	}
	return false
}

func refProblem(cfg *config.Config, r toolRef, known []string) string {
	exact := slices.DeleteFunc(slices.Clone(known), func(k string) bool { return strings.ContainsAny(k, "*?[") })
	slices.Sort(exact)
	if r.glob {
		return cfg.Problem(r.path, "%q matches no configured tool (tools: %s)", r.name, strings.Join(exact, ", "))
	}
	return cfg.Problem(r.path, "no configured tool is named %q%s", r.name, config.DidYouMean(r.name, exact))
}

// checkBuiltRefs reports the commands and preflight reads that name a tool
// the built registry lacks — for tool kinds that declare no names.
func checkBuiltRefs(cfg *config.Config, registry *tool.Registry) error {
	var errs config.Errors
	for _, r := range toolRefs(cfg) {
		exactUse := strings.HasPrefix(r.path, "commands.") || strings.Contains(r.path, ".preflight[")
		if _, ok := registry.Lookup(r.name); exactUse && !ok {
			errs = append(errs, refProblem(cfg, r, registry.Names()))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
