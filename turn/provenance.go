package turn

import (
	"encoding/json"
	"regexp"
	"slices"
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

// taintedArg is an argument whose value came from content of others, and
// where it came from.
type taintedArg struct {
	name   string
	source store.Message // the untrusted message the value appears in
}

// taintedArgs returns the arguments of a call of spec (top level, by
// name) whose text appears in untrusted content of the prompt and not in
// the user's own words — what an injection would have put there — each
// with the first untrusted message that holds it. The attachment argument
// is the server's own (the user's stored file).
func (e *Engine) taintedArgs(s *state, spec tool.Spec, args []byte) []taintedArg {
	var untrusted []store.Message
	var own []string
	for _, part := range s.viewed {
		for _, m := range part {
			switch {
			case e.untrusted(m):
				untrusted = append(untrusted, m)
			case m.Role == store.RoleUser:
				own = append(own, strings.ToLower(m.Text))
			}
		}
	}
	if len(untrusted) == 0 {
		return nil
	}
	lowered := make([]string, len(untrusted))
	for i, m := range untrusted {
		lowered[i] = strings.ToLower(m.Text)
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return nil
	}
	var out []taintedArg
	for k, raw := range m {
		if k == spec.AttachmentArg {
			continue
		}
		if i := valueSource(stringsIn(raw), lowered, own); i >= 0 {
			out = append(out, taintedArg{name: k, source: untrusted[i]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// valueSource returns the index of the first untrusted text holding one of
// values that the user's own words do not hold, or -1.
func valueSource(values []string, untrusted, own []string) int {
	for _, v := range values {
		v = strings.ToLower(strings.TrimSpace(v))
		if utf8.RuneCountInString(v) < minProvenanceRunes || containedIn(v, own) {
			continue
		}
		for i, t := range untrusted {
			if strings.Contains(t, v) {
				return i
			}
		}
	}
	return -1
}

// sensitiveFromUntrusted returns the sensitive arguments (see sensitiveArg)
// of a call whose values came from content of others.
func (e *Engine) sensitiveFromUntrusted(s *state, spec tool.Spec, args []byte) []taintedArg {
	// Which arguments are sensitive is cheap to tell; where values came
	// from is not, so it is asked only when one is.
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return nil
	}
	sensitive := false
	for k, raw := range m {
		if sensitiveArg(k, stringsIn(raw)) {
			sensitive = true
			break
		}
	}
	if !sensitive {
		return nil
	}
	var out []taintedArg
	for _, t := range e.taintedArgs(s, spec, args) {
		if sensitiveArg(t.name, stringsIn(m[t.name])) {
			out = append(out, t)
		}
	}
	return out
}

// sensitiveNames are parts of argument names that say where something goes
// or what unlocks it; sensitiveExact are names too short to look for inside
// others.
var (
	sensitiveNames = []string{"url", "uri", "link", "href", "endpoint", "webhook", "callback", "email",
		"e_mail", "recipient", "iban", "account", "phone", "password", "passwd", "secret", "share"}
	sensitiveExact = []string{"to", "cc", "bcc", "dest", "target"}
	ibanLike       = regexp.MustCompile(`^[a-z]{2}[0-9]{2}[a-z0-9 ]{10,32}$`)
	phoneLike      = regexp.MustCompile(`^\+?[0-9][0-9 ()-]{6,18}[0-9]$`)
)

// sensitiveArg reports whether an argument, by its name or by the form of
// its values (a link, an e-mail address, an IBAN, a phone number), says
// where data goes or what unlocks it: a value of that kind taken from
// content of others is how an injection sends data away.
func sensitiveArg(name string, values []string) bool {
	n := strings.ToLower(name)
	if slices.Contains(sensitiveExact, n) {
		return true
	}
	for _, part := range sensitiveNames {
		if strings.Contains(n, part) {
			return true
		}
	}
	for _, v := range values {
		v = strings.ToLower(strings.TrimSpace(v))
		switch {
		case strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://"),
			strings.Count(v, "@") == 1 && strings.Contains(v[strings.Index(v, "@"):], ".") && !strings.ContainsAny(v, " \n"),
			ibanLike.MatchString(v), phoneLike.MatchString(v):
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
