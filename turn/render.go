package turn

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn/internal/gate"
)

// A confirmation is the last check a person makes before a write runs, so
// it shows the call the way a person checks it: the tool's title and each
// argument under its label in the user's language, the objects it
// changes as they are now (tool.Previewer), times in the user's zone with
// the zone named — never raw UTC — lists as lists, nothing left out, and
// every value inert.

// field is one argument of a call as a person reads it.
type field struct {
	name, label, value string
}

// renderConfirmation is the text of a pending action's confirmation.
// Arguments taken from content of others are named before the question,
// so the user weighs them first; when none was, the content of others the
// model had read is (readBefore).
// A tool whose result a value came from is named by its title in tools
// (by its name when tools is nil).
func renderConfirmation(lang string, loc *time.Location, spec tool.Spec, args []byte, resolved map[string]string, fromUntrusted []taintedArg, readBefore []string, tools *tool.Registry) string {
	var b strings.Builder
	b.WriteString(say(lang, txtConfirmHeader, spec.TitleIn(lang)))
	tainted := writeCallFields(&b, "", lang, loc, spec, args, resolved, fromUntrusted, tools)
	if !tainted && len(readBefore) > 0 {
		b.WriteString("\n⚠ " + say(lang, txtReadBefore, strings.Join(readBefore, ", ")))
	}
	b.WriteString("\n" + say(lang, txtConfirmQuestion))
	return b.String()
}

// heldCall is one call of a batch put to the user at once: its tool, its
// arguments, the objects it changes and its values from content of others.
type heldCall struct {
	spec          tool.Spec
	args          []byte
	resolved      map[string]string
	fromUntrusted []taintedArg
}

// renderBatchConfirmation is the text of one confirmation of several
// calls: every call, numbered, as renderConfirmation shows one, then one
// question for all of them.
func renderBatchConfirmation(lang string, loc *time.Location, calls []heldCall, readBefore []string, tools *tool.Registry) string {
	var b strings.Builder
	b.WriteString(say(lang, txtConfirmBatchHeader, len(calls)))
	tainted := false
	for i, c := range calls {
		b.WriteString("\n" + strconv.Itoa(i+1) + ". " + c.spec.TitleIn(lang))
		if writeCallFields(&b, "   ", lang, loc, c.spec, c.args, c.resolved, c.fromUntrusted, tools) {
			tainted = true
		}
	}
	if !tainted && len(readBefore) > 0 {
		b.WriteString("\n⚠ " + say(lang, txtReadBefore, strings.Join(readBefore, ", ")))
	}
	b.WriteString("\n" + say(lang, txtConfirmBatchQuestion))
	return b.String()
}

// writeCallFields writes a call's arguments, one a line under indent, and
// names those taken from content of others; it reports whether any was.
func writeCallFields(b *strings.Builder, indent, lang string, loc *time.Location, spec tool.Spec, args []byte, resolved map[string]string, fromUntrusted []taintedArg, tools *tool.Registry) bool {
	fields := confirmationFields(lang, loc, spec, args, resolved)
	for _, f := range fields {
		b.WriteString("\n" + indent + "• " + f.label + ": " + f.value)
	}
	if len(fromUntrusted) == 0 {
		return false
	}
	var labels []string
	for _, f := range fields {
		if i := slices.IndexFunc(fromUntrusted, func(t taintedArg) bool { return t.name == f.name }); i >= 0 {
			labels = append(labels, f.label+" ("+sourceName(lang, fromUntrusted[i].source, tools)+")")
		}
	}
	b.WriteString("\n" + indent + "⚠ " + say(lang, txtFromUntrusted, strings.Join(labels, ", ")))
	return true
}

// confirmationFields are a call's arguments, in name order, labelled and
// rendered; resolved values replace the ones given.
func confirmationFields(lang string, loc *time.Location, spec tool.Spec, args []byte, resolved map[string]string) []field {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(args, &m)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// In the schema's order (title before due date), then by name.
	order := propertyOrder(spec.InputSchema)
	sort.Slice(keys, func(i, j int) bool {
		oi, iok := order[keys[i]]
		oj, jok := order[keys[j]]
		if iok != jok {
			return iok
		}
		if iok && oi != oj {
			return oi < oj
		}
		return keys[i] < keys[j]
	})
	out := make([]field, 0, len(keys))
	for _, k := range keys {
		v, ok := resolved[k]
		if !ok {
			v = valueText(lang, loc, k, m[k])
		}
		out = append(out, field{name: k, label: gate.Inert(argLabel(spec, lang, k)), value: gate.Inert(v)})
	}
	return out
}

// propertyOrder maps each top-level property of a JSON Schema to its
// position in the document.
func propertyOrder(schema json.RawMessage) map[string]int {
	order := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(schema))
	depth := 0
	inProps := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return order
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				depth++
			} else {
				depth--
				if depth == 1 {
					inProps = false
				}
			}
		case string:
			switch {
			case depth == 1 && t == "properties" && !inProps:
				inProps = true
			case depth == 2 && inProps && dec.More():
				// A key of "properties": skip its value.
				order[t] = len(order)
				var skip json.RawMessage
				if dec.Decode(&skip) != nil {
					return order
				}
			}
		}
	}
}

// argLabel names an argument for people: the tool's label in lang, else
// the schema property's title, else its name.
func argLabel(spec tool.Spec, lang, arg string) string {
	if l := spec.Labels[arg].In(lang); l != "" {
		return l
	}
	var schema struct {
		Properties map[string]struct {
			Title string `json:"title"`
		} `json:"properties"`
	}
	if json.Unmarshal(spec.InputSchema, &schema) == nil {
		if t := strings.TrimSpace(schema.Properties[arg].Title); t != "" {
			return t
		}
	}
	return arg
}

// valueText renders one argument's JSON value as a person reads it.
func valueText(lang string, loc *time.Location, name string, raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	switch x := v.(type) {
	case string:
		return timeText(lang, loc, x)
	case float64:
		n := strconv.FormatFloat(x, 'f', -1, 64)
		if minutes(name) {
			return n + " " + pick(lang, "мин", "min")
		}
		return n
	case bool:
		if x {
			return pick(lang, "да", "yes")
		}
		return pick(lang, "нет", "no")
	case []any:
		parts := make([]string, len(x))
		for i := range x {
			item, _ := json.Marshal(x[i])
			parts[i] = valueText(lang, loc, "", item)
		}
		return strings.Join(parts, ", ")
	case map[string]any:
		// A file reference shows its name and which file it is.
		var parts []string
		for _, k := range []string{"name", "url", "file"} {
			if s, ok := x[k].(string); ok && s != "" {
				parts = append(parts, s)
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, " · ")
		}
	case nil:
		return pick(lang, "нет", "none")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// timeText shows a time or a date in the user's zone, naming the zone; any
// other text as it is.
func timeText(lang string, loc *time.Location, s string) string {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return dateText(lang, t.In(loc)) + " " + t.In(loc).Format("15:04") + " (" + loc.String() + ")"
	}
	if t, err := time.ParseInLocation("2006-01-02T15:04", s, loc); err == nil {
		return dateText(lang, t) + " " + t.Format("15:04") + " (" + loc.String() + ")"
	}
	if t, err := time.ParseInLocation("2006-01-02", s, loc); err == nil {
		return dateText(lang, t)
	}
	return s
}

// dateText is "ср 02.12.2026" or "Wed 2026-12-02".
func dateText(lang string, t time.Time) string {
	if lang != "ru" {
		return t.Format("Mon 2006-01-02")
	}
	return [...]string{"вс", "пн", "вт", "ср", "чт", "пт", "сб"}[t.Weekday()] + " " + t.Format("02.01.2006")
}

// minutes reports whether an argument counts minutes (durationMin).
func minutes(name string) bool {
	low := strings.ToLower(name)
	return strings.HasSuffix(name, "Min") || strings.HasSuffix(low, "_min") || strings.HasSuffix(low, "minutes")
}

// pick is ru for a Russian reader and en for everyone else (the default,
// chat.Language).
func pick(lang, ru, en string) string {
	if lang == "ru" {
		return ru
	}
	return en
}

// sourceName says where untrusted content came from: a forward and whom
// from, an attachment, a quote, or the result of a tool. The origin is
// data: it is shown inert, in quotes.
func sourceName(lang string, m store.Message, tools *tool.Registry) string {
	if m.Role == store.RoleTool {
		name := m.Name
		if tools != nil {
			if entry, ok := tools.Lookup(m.Name); ok {
				name = "«" + entry.Spec.TitleIn(lang) + "»"
			}
		}
		return say(lang, txtFromToolResult, name)
	}
	origin := ""
	if m.Source != "" {
		origin = " «" + Clip(gate.Inert(m.Source), 60) + "»"
	}
	switch m.Name {
	case "forward":
		return say(lang, txtFromForward) + origin
	case "attachment":
		return say(lang, txtFromAttachment) + origin
	}
	return say(lang, txtFromQuote) + origin
}
