package gate

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/store"
)

// minProvenanceRunes is the shortest argument value looked for in
// untrusted content; shorter ones ("ok", "1") match anything.
const minProvenanceRunes = 3

// minPieceRunes is the shortest line of a longer value looked for on its
// own.
const minPieceRunes = 8

// Shown is what the model was shown, in two parts: the texts of others
// (evidence, what tools read from their systems), each as PlainText gives
// it, and the user's own words.
type Shown struct {
	Others []string
	User   []string
}

// A Taint is an argument whose value came from content of others: Source
// is the index in Shown.Others of the first text that holds it.
type Taint struct {
	Arg    string
	Source int
}

// Tainted returns the top-level arguments of args, but skip (an argument
// the server fills itself), whose text appears in a text of others and not
// in the user's own words — what an injection would have put there — in
// name order. Matching ignores case; args that are not a JSON object have
// none.
func Tainted(args []byte, skip string, shown Shown) []Taint {
	if len(shown.Others) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return nil
	}
	others, own := lowered(shown.Others), lowered(shown.User)
	var out []Taint
	for k, raw := range m {
		if k == skip {
			continue
		}
		if i := valueSource(valuesIn(raw), others, own); i >= 0 {
			out = append(out, Taint{Arg: k, Source: i})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Arg < out[j].Arg })
	return out
}

func lowered(texts []string) []string {
	out := make([]string, len(texts))
	for i, t := range texts {
		out[i] = strings.ToLower(t)
	}
	return out
}

// PlainText is the text of a message as its reader may take it in: a
// tool result's JSON as written, and then the strings and numbers it holds
// (a value with a quote, a newline or "<" is escaped in the JSON but not
// in an argument), or for a result cut short for memory, its text with the
// escapes undone.
func PlainText(m store.Message) string {
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

// Sensitive returns the top-level arguments of args that say where data
// goes or what unlocks it — by name, by the class of their values (see
// sensitiveArg), or because the tool declares them (declared,
// tool.Spec.Sensitive) — or nil when there are none. Telling this is
// cheap; where values came from (Tainted) is not, so it is asked first.
func Sensitive(args []byte, declared []string) map[string]bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return nil
	}
	var out map[string]bool
	for k, raw := range m {
		if slices.Contains(declared, k) || sensitiveArg(k, stringsIn(raw)) {
			if out == nil {
				out = map[string]bool{}
			}
			out[k] = true
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
