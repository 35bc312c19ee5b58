package turn

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"unicode"
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
		lowered[i] = strings.ToLower(plainText(m))
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
		if i := valueSource(valuesIn(raw), lowered, own); i >= 0 {
			out = append(out, taintedArg{name: k, source: untrusted[i]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// plainText is the text of a message as its reader may take it in: a
// tool result's JSON as written, and then the strings and numbers it holds
// (a value with a quote, a newline or "<" is escaped in the JSON but not
// in an argument), or for a result cut short for memory, its text with the
// escapes undone.
func plainText(m store.Message) string {
	if m.Role != store.RoleTool {
		return m.Text
	}
	if values := valuesIn(json.RawMessage(m.Text)); values != nil {
		return m.Text + "\n" + strings.Join(values, "\n")
	}
	return m.Text + "\n" + jsonEscapes.Replace(m.Text)
}

var jsonEscapes = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\r`, "\r", `\"`, `"`, `\/`, "/", `\\`, `\`,
	`\u003c`, "<", `\u003e`, ">", `\u0026`, "&", `\u2028`, "\u2028", `\u2029`, "\u2029")

// valueSource returns the index of the first untrusted text holding one of
// values that the user's own words do not hold, or -1. A value of fewer
// than minProvenanceRunes (an id such as "13") counts only as a whole
// token: inside longer text it matches anything. A value of several lines
// not found whole is looked for line by line (lines of minPieceRunes or
// more): a model builds a message out of pieces of what it read.
func valueSource(values []string, untrusted, own []string) int {
	for _, v := range values {
		if i := pieceSource(v, untrusted, own); i >= 0 {
			return i
		}
		if !strings.Contains(v, "\n") {
			continue
		}
		for _, line := range strings.Split(v, "\n") {
			if utf8.RuneCountInString(strings.TrimSpace(line)) < minPieceRunes {
				continue
			}
			if i := pieceSource(line, untrusted, own); i >= 0 {
				return i
			}
		}
	}
	return -1
}

// minPieceRunes is the shortest line of a longer value looked for on its
// own.
const minPieceRunes = 8

// pieceSource returns the index of the first untrusted text holding v
// when the user's own words do not, or -1.
func pieceSource(v string, untrusted, own []string) int {
	v = strings.ToLower(strings.TrimSpace(v))
	n := utf8.RuneCountInString(v)
	if n == 0 {
		return -1
	}
	in := strings.Contains
	if n < minProvenanceRunes {
		in = containsToken
	}
	if slices.ContainsFunc(own, func(t string) bool { return in(t, v) }) {
		return -1
	}
	for i, t := range untrusted {
		if in(t, v) {
			return i
		}
	}
	return -1
}

// containsToken reports whether v occurs in t with no letter or digit
// right before or after it.
func containsToken(t, v string) bool {
	for from := 0; ; {
		i := strings.Index(t[from:], v)
		if i < 0 {
			return false
		}
		i += from
		before, _ := utf8.DecodeLastRuneInString(t[:i])
		after, _ := utf8.DecodeRuneInString(t[i+len(v):])
		if !isWordRune(before) && !isWordRune(after) {
			return true
		}
		from = i + 1
	}
}

func isWordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// sensitiveFromUntrusted returns the sensitive arguments (see sensitiveArg,
// and those the tool declares, tool.Spec.Sensitive) of a call whose values
// came from content of others.
func (e *Engine) sensitiveFromUntrusted(s *state, spec tool.Spec, args []byte) []taintedArg {
	// Which arguments are sensitive is cheap to tell; where values came
	// from is not, so it is asked only when one is.
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return nil
	}
	sensitive := func(k string) bool {
		return slices.Contains(spec.Sensitive, k) || sensitiveArg(k, stringsIn(m[k]))
	}
	found := false
	for k := range m {
		if found = sensitive(k); found {
			break
		}
	}
	if !found {
		return nil
	}
	var out []taintedArg
	for _, t := range e.taintedArgs(s, spec, args) {
		if sensitive(t.name) {
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
)

// sensitiveArg reports whether an argument, by its name or by the class of
// its values (a link, an e-mail address, a phone number, an IBAN, a card
// number: see classOf), says where data goes or what unlocks it: a value
// of that kind taken from content of others is how an injection sends
// data away. A date, a time or an amount is none of these.
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
		if classOf(v) != classNone {
			return true
		}
	}
	return false
}

// stringsIn returns the strings of a JSON value, at any depth.
func stringsIn(raw json.RawMessage) []string { return scalarsIn(raw, false) }

// valuesIn returns the strings and numbers of a JSON value, at any depth,
// numbers as JSON spells them; nil when raw is not JSON.
func valuesIn(raw json.RawMessage) []string { return scalarsIn(raw, true) }

func scalarsIn(raw json.RawMessage, numbers bool) []string {
	var v any
	if numbers {
		// Numbers as written: 98.70 stays 98.70, not 98.7.
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if dec.Decode(&v) != nil || dec.More() {
			return nil
		}
	} else if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	out := []string{}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case json.Number:
			if numbers {
				out = append(out, x.String())
			}
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
