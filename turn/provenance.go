package turn

import (
	"slices"

	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn/internal/gate"
)

// inView reports whether the prompt the model saw holds content of
// others than the user and the server — evidence, or what tools read from
// their systems — which may have steered its proposal.
func (e *Engine) inView(s *state) bool {
	for _, part := range s.viewed {
		for _, m := range part {
			if e.untrusted(m) {
				return true
			}
		}
	}
	return false
}

func (e *Engine) untrusted(m store.Message) bool {
	return m.Role == store.RoleEvidence || m.Role == store.RoleTool && e.untrustedResult(m.Name)
}

// untrustedResult reports whether results of the tool named name carry
// what others wrote: everything a tool reads, anything from another
// process, and what a tool declares external (tool.Spec.ExternalResults).
// The acknowledgement of a local write echoes arguments that already
// passed the guards.
func (e *Engine) untrustedResult(name string) bool {
	entry, ok := e.cfg.Tools.Lookup(name)
	if !ok {
		return true
	}
	if _, dispatches := entry.Tool.(tool.Resolver); dispatches {
		return true
	}
	return !entry.Spec.Risk.Writes() || entry.Spec.Server != "" || entry.Spec.ExternalResults
}

// maxReadBefore bounds the sources a confirmation names.
const maxReadBefore = 3

// readBefore names the sources of the content of others the model read in
// this turn — evidence that came with the message, results of this task's
// reads — the latest first, each once. What earlier turns read stays
// unnamed: a request in the user's own words after a list of tasks is not
// the list's doing.
func (e *Engine) readBefore(s *state) []string {
	var out []string
	current := s.viewed[1]
	for i := len(current) - 1; i >= 0 && len(out) < maxReadBefore; i-- {
		if m := current[i]; e.untrusted(m) {
			if name := sourceName(s.lang, m, e.cfg.Tools); !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// taintedArg is an argument whose value came from content of others, and
// where it came from.
type taintedArg struct {
	name   string
	source store.Message // the untrusted message the value appears in
}

// taintedArgs returns the arguments of a call of spec (gate.Tainted) whose
// text appears in untrusted content of the prompt and not in the user's
// own words, each with the first untrusted message that holds it. The
// attachment argument is the server's own (the user's stored file).
func (e *Engine) taintedArgs(s *state, spec tool.Spec, args []byte) []taintedArg {
	var others []store.Message
	var shown gate.Shown
	for _, part := range s.viewed {
		for _, m := range part {
			switch {
			case e.untrusted(m):
				others = append(others, m)
				shown.Others = append(shown.Others, gate.PlainText(m))
			case m.Role == store.RoleUser:
				shown.User = append(shown.User, m.Text)
			}
		}
	}
	var out []taintedArg
	for _, t := range gate.Tainted(args, spec.AttachmentArg, shown) {
		out = append(out, taintedArg{name: t.Arg, source: others[t.Source]})
	}
	return out
}

// sensitiveFromUntrusted returns the sensitive arguments (gate.Sensitive)
// of a call whose values came from content of others.
func (e *Engine) sensitiveFromUntrusted(s *state, spec tool.Spec, args []byte) []taintedArg {
	sensitive := gate.Sensitive(args, spec.Sensitive)
	if sensitive == nil {
		return nil
	}
	var out []taintedArg
	for _, t := range e.taintedArgs(s, spec, args) {
		if sensitive[t.name] {
			out = append(out, t)
		}
	}
	return out
}
