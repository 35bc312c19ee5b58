package decision

import (
	"encoding/json"
	"fmt"
	"slices"
)

// ToolSchema is one catalog entry as the output schema needs it.
type ToolSchema struct {
	Name  string
	Input json.RawMessage
}

// OutputSchemas is the decision schema specialized for one catalog: JSON
// constrains "tool" to the catalog's names; Strict additionally constrains
// "args" to the union of the tools' input schemas in the form strict
// structured output accepts. Strict is nil when some tool schema cannot be
// expressed that way (for example a free-form object), in which case
// providers fall back to non-strict output.
type OutputSchemas struct {
	JSON   []byte
	Strict []byte
}

// BuildSchemas specializes the decision schema for a catalog. Build once
// per catalog and reuse: the result is plain bytes.
func BuildSchemas(tools []ToolSchema) (OutputSchemas, error) {
	var base map[string]any
	if err := json.Unmarshal(SchemaJSON, &base); err != nil {
		return OutputSchemas{}, fmt.Errorf("decision schema: %w", err)
	}
	names := make([]any, 0, len(tools)+1)
	for _, t := range tools {
		names = append(names, t.Name)
	}
	names = append(names, nil)
	props := base["properties"].(map[string]any)
	props["tool"] = map[string]any{"type": []any{"string", "null"}, "enum": names, "description": "One tool from the catalog, or null."}
	base["properties"] = inFieldOrder(props)
	loose, err := json.Marshal(base)
	if err != nil {
		return OutputSchemas{}, err
	}

	argVariants := make([]any, 0, len(tools)+1)
	for _, t := range tools {
		var doc map[string]any
		if err := json.Unmarshal(t.Input, &doc); err != nil {
			return OutputSchemas{}, fmt.Errorf("input schema of %s: %w", t.Name, err)
		}
		s, ok := strictify(doc)
		if !ok {
			return OutputSchemas{JSON: loose}, nil
		}
		argVariants = append(argVariants, s)
	}
	argVariants = append(argVariants, map[string]any{"type": "null"})
	strictProps := map[string]any{
		"say":      map[string]any{"type": "string"},
		"tool":     map[string]any{"type": []any{"string", "null"}, "enum": names},
		"args":     map[string]any{"anyOf": argVariants},
		"done":     map[string]any{"type": "boolean"},
		"newTopic": map[string]any{"type": "boolean"},
		"buttons": map[string]any{
			"type": "array",
			"items": map[string]any{
				"type":                 "object",
				"additionalProperties": false,
				"required":             []any{"label", "value"},
				"properties": map[string]any{
					"label": map[string]any{"type": "string"},
					"value": map[string]any{"type": "string"},
				},
			},
		},
	}
	strict, err := json.Marshal(map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []any{"tool", "args", "say", "done", "newTopic", "buttons"},
		"properties":           inFieldOrder(strictProps),
	})
	if err != nil {
		return OutputSchemas{}, err
	}
	return OutputSchemas{JSON: loose, Strict: strict}, nil
}

// strictKeywords are kept by strictify; validation keywords strict mode may
// not accept are dropped, since the server validates arguments itself.
var strictKeywords = map[string]bool{"type": true, "description": true, "enum": true, "const": true, "items": true, "anyOf": true}

// strictify rewrites a schema into the strict structured-output subset:
// every object closed and with every property required, optional
// properties made nullable. It reports false when that is impossible.
func strictify(s map[string]any) (map[string]any, bool) {
	out := map[string]any{}
	for k, v := range s {
		if strictKeywords[k] {
			out[k] = v
		}
	}
	if alts, ok := s["anyOf"].([]any); ok {
		variants := make([]any, 0, len(alts))
		for _, v := range alts {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			sv, ok := strictify(m)
			if !ok {
				return nil, false
			}
			variants = append(variants, sv)
		}
		out["anyOf"] = variants
		return out, true
	}
	switch typeName(s) {
	case "object":
		props, _ := s["properties"].(map[string]any)
		if len(props) == 0 {
			if ap, set := s["additionalProperties"]; !set || ap != false {
				return nil, false // free-form object
			}
		}
		required := map[string]bool{}
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if name, ok := r.(string); ok {
					required[name] = true
				}
			}
		}
		newProps := make(map[string]any, len(props))
		names := make([]any, 0, len(props))
		for name, p := range props {
			pm, ok := p.(map[string]any)
			if !ok {
				return nil, false
			}
			sp, ok := strictify(pm)
			if !ok {
				return nil, false
			}
			if !required[name] {
				sp = nullable(sp)
			}
			newProps[name] = sp
			names = append(names, name)
		}
		out["type"] = "object"
		out["properties"] = newProps
		out["required"] = names
		out["additionalProperties"] = false
	case "array":
		if items, ok := s["items"].(map[string]any); ok {
			si, ok := strictify(items)
			if !ok {
				return nil, false
			}
			out["items"] = si
		}
	case "":
		if _, hasType := s["type"]; !hasType && s["enum"] == nil && s["const"] == nil {
			return nil, false // unconstrained value
		}
	}
	return out, true
}

// typeName returns the single non-null type of s, or "" for none or many.
func typeName(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		name := ""
		for _, x := range t {
			if x == "null" {
				continue
			}
			if name != "" {
				return ""
			}
			name, _ = x.(string)
		}
		return name
	}
	return ""
}

// nullable lets s also accept null, the strict-mode spelling of "absent".
func nullable(s map[string]any) map[string]any {
	if _, ok := s["anyOf"]; ok {
		s["anyOf"] = append(s["anyOf"].([]any), map[string]any{"type": "null"})
		return s
	}
	switch t := s["type"].(type) {
	case string:
		if t != "null" {
			s["type"] = []any{t, "null"}
		}
	case []any:
		hasNull := false
		for _, x := range t {
			if x == "null" {
				hasNull = true
			}
		}
		if !hasNull {
			s["type"] = append(t, "null")
		}
	}
	if e, ok := s["enum"].([]any); ok {
		hasNull := false
		for _, x := range e {
			if x == nil {
				hasNull = true
			}
		}
		if !hasNull {
			s["enum"] = append(e, nil)
		}
	}
	return s
}

// fieldOrder is the order of a decision's fields in its schemas, which a
// model writing structured output follows: "tool" and "args" before "say",
// so a reply is known to propose nothing before its text is written and
// can be shown to a person as it arrives.
var fieldOrder = [...]string{"tool", "args", "say", "done", "newTopic", "buttons"}

// orderedObject is a JSON object whose keys keep the order given.
type orderedObject struct {
	keys   []string
	values map[string]any
}

// inFieldOrder is props with the decision's fields in fieldOrder, any
// other key after them in no particular order.
func inFieldOrder(props map[string]any) orderedObject {
	o := orderedObject{values: props}
	for _, k := range fieldOrder {
		if _, ok := props[k]; ok {
			o.keys = append(o.keys, k)
		}
	}
	for k := range props {
		if !slices.Contains(o.keys, k) {
			o.keys = append(o.keys, k)
		}
	}
	return o
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, k := range o.keys {
		if i > 0 {
			b = append(b, ',')
		}
		key, _ := json.Marshal(k)
		v, err := json.Marshal(o.values[k])
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, key...), ':'), v...)
	}
	return append(b, '}'), nil
}
