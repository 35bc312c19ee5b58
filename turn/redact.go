package turn

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	"github.com/arbiterhq/arbiter/tool"
)

// A tool may name fields of its arguments and results that must never be
// written down as they are (tool.Spec.Redact: a card number, an e-mail).
// Before a turn's record is journaled or handed to the observer (traces),
// every value of such a field the turn saw is replaced, wherever it
// appears in the record — the call's arguments and result, the model's
// reply, a draft kept for review, a note — by a keyed hash (HMAC-SHA256
// with Config.RedactionKey): equal values stay joinable within the
// deployment, and nobody without the key can test a guess. What must be
// executed is not changed: an action keeps its arguments until it ends.

// minRedactedLen is the shortest value replaced: shorter ones would mangle
// unrelated text and are no secret.
const minRedactedLen = 4

// redactedValue is a value's keyed hash as the records show it.
func redactedValue(key []byte, v string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(v))
	return "hmac:" + hex.EncodeToString(m.Sum(nil))[:20]
}

// secretValues are the values of spec's redacted fields in the JSON
// documents docs, at any depth, as text.
func secretValues(fields []string, docs ...[]byte) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if slices.Contains(fields, k) {
					out = appendLeaves(out, c)
					continue
				}
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	for _, d := range docs {
		if len(d) > 0 {
			walk(decodeAny(d))
		}
	}
	return out
}

// appendLeaves appends the text of every leaf of v.
func appendLeaves(out []string, v any) []string {
	switch x := v.(type) {
	case string:
		if len(x) >= minRedactedLen {
			out = append(out, x)
		}
	case json.Number:
		if len(x) >= minRedactedLen {
			out = append(out, x.String())
		}
	case map[string]any:
		for _, c := range x {
			out = appendLeaves(out, c)
		}
	case []any:
		for _, c := range x {
			out = appendLeaves(out, c)
		}
	}
	return out
}

// redactTrace replaces the redacted values of the calls in record t:
// the fields the observer reads, then, in raw (with the replacer it
// returns), every other occurrence.
func (e *Engine) redactTrace(t *Trace) *strings.Replacer {
	var secrets []string
	for _, ex := range t.Executed {
		entry, ok := e.cfg.Tools.Lookup(ex.Tool)
		if !ok || len(entry.Spec.Redact) == 0 {
			continue
		}
		var data []byte
		if ex.Result != nil {
			data = ex.Result.Data
		}
		secrets = append(secrets, secretValues(entry.Spec.Redact, ex.Args, data)...)
	}
	if len(secrets) == 0 {
		return nil
	}
	r := e.redactionReplacer(secrets)
	for i := range t.Executed {
		ex := &t.Executed[i]
		ex.Args = json.RawMessage(r.Replace(string(ex.Args)))
		if ex.Result != nil {
			res := *ex.Result // a copy: the result itself is the reply's too
			res.Data, res.Text, res.Error = json.RawMessage(r.Replace(string(res.Data))), r.Replace(res.Text), r.Replace(res.Error)
			ex.Result = &res
		}
	}
	t.Say, t.Decision = r.Replace(t.Say), json.RawMessage(r.Replace(string(t.Decision)))
	if t.Review != nil {
		t.Review.Draft, t.Review.Detail = r.Replace(t.Review.Draft), r.Replace(t.Review.Detail)
	}
	if t.Repair != nil {
		t.Repair.Output, t.Repair.SecondOutput = r.Replace(t.Repair.Output), r.Replace(t.Repair.SecondOutput)
	}
	for i := range t.Notes {
		t.Notes[i] = r.Replace(t.Notes[i])
	}
	for name, section := range t.Sections {
		if raw, err := json.Marshal(section); err == nil {
			t.Sections[name] = json.RawMessage(r.Replace(string(raw)))
		}
	}
	return r
}

// redactionReplacer replaces each secret, as written and as JSON escapes
// it, by its keyed hash.
func (e *Engine) redactionReplacer(secrets []string) *strings.Replacer {
	slices.SortFunc(secrets, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) }) // longest first
	var pairs []string
	for _, v := range slices.Compact(secrets) {
		h := redactedValue(e.cfg.RedactionKey, v)
		pairs = append(pairs, v, h)
		if b, _ := json.Marshal(v); string(b[1:len(b)-1]) != v {
			pairs = append(pairs, string(b[1:len(b)-1]), h) // as the record's JSON writes it
		}
	}
	return strings.NewReplacer(pairs...)
}

// redactFact replaces the redacted fields of a read's data by their keyed
// hashes, for an action's basis shown to its approvers.
func (e *Engine) redactFact(spec tool.Spec, data json.RawMessage) json.RawMessage {
	secrets := secretValues(spec.Redact, data)
	if len(secrets) == 0 {
		return data
	}
	return json.RawMessage(e.redactionReplacer(secrets).Replace(string(data)))
}
