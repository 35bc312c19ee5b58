package turn

import (
	"encoding/json"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
)

// minProvenanceRunes is the shortest argument value looked for in
// untrusted content; shorter ones ("ok", "1") match anything.
const minProvenanceRunes = 3

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
// what others wrote: everything a tool reads, and anything from another
// process. The acknowledgement of a local write echoes arguments that
// already passed the guards.
func (e *Engine) untrustedResult(name string) bool {
	entry, ok := e.cfg.Tools.Lookup(name)
	if !ok {
		return true
	}
	if _, dispatches := entry.Tool.(tool.Resolver); dispatches {
		return true
	}
	return !entry.Spec.Risk.Writes() || entry.Spec.Server != ""
}

// fromUntrusted returns the arguments of a call of spec (top level,
// sorted) whose text appears in untrusted content of the prompt and not in
// the user's own words: what an injection would have put there. The
// attachment argument is the server's own (the user's stored file).
func (e *Engine) fromUntrusted(s *state, spec tool.Spec, args []byte) []string {
	var untrusted, own []string
	for _, part := range s.viewed {
		for _, m := range part {
			switch {
			case e.untrusted(m):
				untrusted = append(untrusted, strings.ToLower(m.Text))
			case m.Role == store.RoleUser:
				own = append(own, strings.ToLower(m.Text))
			}
		}
	}
	if len(untrusted) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return nil
	}
	var out []string
	for k, raw := range m {
		if k != spec.AttachmentArg && valueFrom(stringsIn(raw), untrusted, own) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func valueFrom(values []string, untrusted, own []string) bool {
	for _, v := range values {
		v = strings.ToLower(strings.TrimSpace(v))
		if utf8.RuneCountInString(v) < minProvenanceRunes || containedIn(v, own) {
			continue
		}
		if containedIn(v, untrusted) {
			return true
		}
	}
	return false
}

func containedIn(v string, texts []string) bool {
	for _, t := range texts {
		if strings.Contains(t, v) {
			return true
		}
	}
	return false
}

// stringsIn returns the strings of a JSON value, at any depth.
func stringsIn(raw json.RawMessage) []string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}
