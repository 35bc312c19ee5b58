// Package funcdef reads third-party function definitions (OpenAI
// function-calling JSON, the BFCL and tau2-bench catalogs) into tool specs
// with strict JSON Schemas: what the engine's tests replay through the
// catalog and the validator, and a way to declare an HTTP or MCP tool from
// a definition someone else wrote. The engine itself does not need it.
package funcdef

import (
	"github.com/arbiterhq/arbiter/tool"

	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Options tunes how Parse reads a definition.
type Options struct {
	// Language is the language the function is written in and its
	// arguments are expressed in: "python" (the default when empty),
	// "java" or "javascript". See Parse.
	Language string
}

// Languages accepted in Options.
const (
	LangPython     = "python"
	LangJava       = "java"
	LangJavaScript = "javascript"
)

// Def is a third-party function definition mapped onto this package's
// terms.
type Def struct {
	Name        string
	Description string
	// InputSchema is a JSON Schema (draft 2020-12) whose root is an object;
	// it compiles with tool.CompileSchema.
	InputSchema json.RawMessage
}

// Spec turns the definition into a tool spec with the given risk. A tool
// that writes gets tool.ConfirmAlways, since nothing in a third-party catalog
// says a write is harmless; the registry can relax it with Override. Its
// results are external (tool.Spec.ExternalResults): a third-party function
// answers from a system of others, whatever it writes.
func (d Def) Spec(risk tool.Risk) tool.Spec {
	s := tool.Spec{
		Name:        d.Name,
		Description: d.Description,
		InputSchema: d.InputSchema,
		Policy:      tool.Policy{Risk: risk, Confirm: tool.ConfirmNever, ExternalResults: true},
	}
	if risk.Writes() {
		s.Confirm = tool.ConfirmAlways
	}
	return s
}

// ParseRisk reads a side-effect label from a third-party catalog: either a
// tool.Risk value ("read", "write:safe", "write:full") or a bare "read"/"write"
// in any letter case. A bare write becomes tool.RiskWriteFull because the label
// does not say whether the write can be undone. Any other label (a
// catalog's "generic" or "think", say) is an error: the caller decides.
func ParseRisk(label string) (tool.Risk, error) {
	if r := tool.Risk(label); r.Valid() {
		return r, nil
	}
	switch strings.ToLower(label) {
	case "read":
		return tool.RiskRead, nil
	case "write":
		return tool.RiskWriteFull, nil
	}
	return "", fmt.Errorf("risk label %q: want read or write", label)
}

// UnsupportedTypeError reports a parameter type the loader cannot map: an
// empty or unknown type name, a type that is not a name, or a parameters
// root that is not an object.
type UnsupportedTypeError struct {
	Function string // the function's name
	Path     string // JSON pointer to the schema inside "parameters"; "" is the root
	Type     string // the type as written (JSON text when it is not a string)
}

func (e *UnsupportedTypeError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("function %s: parameters must describe an object, got type %q", e.Function, e.Type)
	}
	return fmt.Sprintf("function %s: unsupported parameter type %q at %s", e.Function, e.Type, e.Path)
}

// ErrMalformedFuncDef is wrapped by every Parse error other than
// *UnsupportedTypeError.
var ErrMalformedFuncDef = errors.New("malformed function definition")

// dialectTypes maps the type names of OpenAI-style and BFCL-style
// definitions onto JSON Schema types; "" means no type constraint. BFCL
// writes Python names (dict, float, tuple, any) and, for its Java and
// JavaScript sets, the host language's names (String, HashMap, long, ...).
var dialectTypes = map[string]string{
	"object": "object", "dict": "object", "HashMap": "object",
	"array": "array", "tuple": "array", "Array": "array", "ArrayList": "array",
	"string": "string", "String": "string", "char": "string",
	"integer": "integer", "long": "integer",
	"number": "number", "float": "number", "double": "number",
	"boolean": "boolean", "Boolean": "boolean",
	"null": "null",
	"any":  "",
}

// Keywords copied unchanged (annotations and type-specific bounds), each
// with a check of the value it must hold for the schema to compile.
var passThrough = map[string]func(any) bool{
	"title": isString, "description": isString, "format": isString, "pattern": isPattern,
	"const": isAny, "default": isAny, "examples": isArray, "deprecated": isBool, "uniqueItems": isBool,
	"minimum": isNumber, "maximum": isNumber, "exclusiveMinimum": isNumber, "exclusiveMaximum": isNumber,
	"multipleOf": isPositive, "minLength": isCount, "maxLength": isCount, "minItems": isCount,
	"maxItems": isCount, "minProperties": isCount, "maxProperties": isCount,
}

// Keywords the loader does not follow; a definition using them is refused
// rather than loaded with weaker checks than its author meant.
var refused = map[string]bool{
	"anyOf": true, "oneOf": true, "allOf": true, "not": true,
	"$ref": true, "$defs": true, "definitions": true, "$dynamicRef": true,
	"patternProperties": true, "propertyNames": true, "prefixItems": true,
	"additionalItems": true, "contains": true, "dependentRequired": true,
	"dependentSchemas": true, "dependencies": true, "if": true, "then": true,
	"else": true, "unevaluatedProperties": true, "unevaluatedItems": true,
}

// sourceName matches a (dotted) identifier: a variable or a named constant
// such as ResultSet.CONCUR_READ_ONLY.
const sourceName = `^[A-Za-z_$][A-Za-z0-9_$]*(\.[A-Za-z_$][A-Za-z0-9_$]*)*$`

// Parse reads one function definition, {"name", "description",
// "parameters"} (optionally wrapped as {"type": "function", "function":
// {...}}), and maps its parameters onto JSON Schema:
//
//   - Type names: dict and HashMap become object; float and double number;
//     tuple, Array and ArrayList array; long integer; char and String
//     string; Boolean boolean; any drops the type constraint. JSON Schema
//     names and lists of names are kept. An empty or unknown name is an
//     *UnsupportedTypeError. A schema without a type gets object when it
//     declares properties, array when it declares items, and no type
//     constraint otherwise.
//   - An object that declares properties, and the root always, rejects
//     unknown arguments (additionalProperties false) unless the definition
//     says otherwise. An object without declared properties is a free-form
//     map: its keys cannot be checked.
//   - "optional": true on a property (or "true", "yes") removes it from the
//     parent's required list, as does an object-level "optional": [names].
//   - "default": null also admits null: in the Python signatures these
//     definitions come from, passing None is the same as leaving the
//     argument out.
//   - An enum whose values do not fit the declared type is read as the
//     author meant it: on an array it constrains the items; on a scalar the
//     enum becomes the only constraint, and strings that spell a value of
//     the declared type ("True", "3") admit that value too.
//   - Bounds, format, default, description and the like are kept.
//     Keywords the loader does not follow (anyOf, $ref, patternProperties,
//     if, ...) are refused rather than dropped, so that a definition is
//     never checked more loosely than written; other unknown keys (vendor
//     annotations) are dropped.
//
// Language "java" and "javascript": arguments of these functions are
// source code, so besides its JSON literal a value may be written as an
// expression. BFCL's ground-truth calls show both forms: [2, 7, 11] and
// "textBuffer" for an Array, {"format": "epoch_millis"} and "docFields" for
// a HashMap, 3 and "ResultSet.TYPE_SCROLL_INSENSITIVE" for an integer. A
// parameter of array or object type therefore also accepts any non-empty
// string (a variable, a constructor or a call). A boolean or numeric
// parameter also accepts a string only when it names a value, a dotted
// identifier other than true, false or null: a literal in quotes such as
// "42" or "true" is still a type error. Parameters with an enum, and
// string or untyped ones, are unchanged.
//
// The result compiles with tool.CompileSchema (the loader checks what each kept
// keyword holds); anything else malformed is reported with an error
// wrapping ErrMalformedFuncDef.
func Parse(raw []byte, opts Options) (Def, error) {
	lang := opts.Language
	switch lang {
	case "":
		lang = LangPython
	case LangPython, LangJava, LangJavaScript:
	default:
		return Def{}, fmt.Errorf("%w: unknown language %q (want python, java or javascript)", ErrMalformedFuncDef, opts.Language)
	}
	doc, err := decodeOrdered(raw)
	if err != nil {
		return Def{}, fmt.Errorf("%w: %v", ErrMalformedFuncDef, err)
	}
	top, ok := doc.(*object)
	if !ok {
		return Def{}, fmt.Errorf("%w: a definition must be a JSON object", ErrMalformedFuncDef)
	}
	if fn, ok := top.get("function"); ok && isFunctionWrapper(top) {
		if top, ok = fn.(*object); !ok {
			return Def{}, fmt.Errorf("%w: function must be a JSON object", ErrMalformedFuncDef)
		}
	}
	var def Def
	name, _ := top.get("name")
	if def.Name, _ = name.(string); def.Name == "" {
		return Def{}, fmt.Errorf("%w: name must be a non-empty string", ErrMalformedFuncDef)
	}
	if !tool.ValidName(def.Name) {
		return Def{}, fmt.Errorf("%w: function name %q must start with a letter and hold only letters, digits, '_', '.', '-' (at most 64)", ErrMalformedFuncDef, def.Name)
	}
	if d, _ := top.get("description"); d != nil {
		if def.Description, ok = d.(string); !ok {
			return Def{}, fmt.Errorf("%w: function %s: description must be a string", ErrMalformedFuncDef, def.Name)
		}
	}
	params, _ := top.get("parameters")
	if params == nil {
		params = &object{}
	}
	c := converter{fn: def.Name, lang: lang}
	root, err := c.schema(params, "", true)
	if err != nil {
		return Def{}, err
	}
	var b bytes.Buffer
	root.write(&b)
	def.InputSchema = b.Bytes()
	return def, nil
}

func isFunctionWrapper(o *object) bool {
	t, _ := o.get("type")
	return t == "function"
}

// node is one mapped schema; write emits its keywords in a fixed order,
// with properties in the order the definition gave them.
type node struct {
	types      []string // JSON types; empty means any
	keep       []member // pass-through keywords, in input order
	enum       []any
	hasEnum    bool
	items      *node
	props      []namedNode
	hasProps   bool
	required   []string
	additional any      // nil, bool or *node
	not        *node    // set by admitExpression: not the strings true, false, null
	optional   bool     // the property-level "optional" flag; not written
	optNames   []string // an object-level "optional" list; not written
}

type namedNode struct {
	name string
	n    *node
}

type converter struct {
	fn   string
	lang string
}

func (c *converter) malformed(path, format string, args ...any) error {
	loc := path
	if loc == "" {
		loc = "(root)"
	}
	return fmt.Errorf("%w: function %s: parameters at %s: %s", ErrMalformedFuncDef, c.fn, loc, fmt.Sprintf(format, args...))
}

func (c *converter) schema(v any, path string, root bool) (*node, error) {
	obj, ok := v.(*object)
	if !ok {
		if root {
			return nil, &UnsupportedTypeError{Function: c.fn, Path: path, Type: jsonKind(v)}
		}
		return nil, c.malformed(path, "a schema must be a JSON object")
	}
	var err error
	n := &node{}
	for _, m := range obj.members {
		if refused[m.key] {
			return nil, c.malformed(path, "keyword %q is not supported", m.key)
		}
	}
	t, typed := obj.get("type")
	_, hasProps := obj.get("properties")
	_, hasItems := obj.get("items")
	switch {
	case typed:
		if n.types, err = c.types(t, path); err != nil {
			return nil, err
		}
	case root || hasProps:
		n.types = []string{"object"}
	case hasItems:
		n.types = []string{"array"}
	}
	if root && (len(n.types) != 1 || n.types[0] != "object") {
		return nil, &UnsupportedTypeError{Function: c.fn, Path: path, Type: typeText(t)}
	}
	for _, m := range obj.members {
		if check, ok := passThrough[m.key]; ok {
			if !check(m.val) {
				return nil, c.malformed(path, "%s has an invalid value", m.key)
			}
			n.keep = append(n.keep, m)
		}
	}
	if o, ok := obj.get("optional"); ok {
		if err := c.optional(n, o, path); err != nil {
			return nil, err
		}
	}
	if it, ok := obj.get("items"); ok {
		if n.items, err = c.schema(it, path+"/items", false); err != nil {
			return nil, err
		}
	}
	if p, ok := obj.get("properties"); ok {
		if err := c.properties(n, p, path); err != nil {
			return nil, err
		}
	} else if root {
		n.hasProps = true
	}
	if a, ok := obj.get("additionalProperties"); ok {
		if b, isBool := a.(bool); isBool {
			n.additional = b
		} else if n.additional, err = c.schema(a, path+"/additionalProperties", false); err != nil {
			return nil, err
		}
	} else if n.hasProps && slices.Contains(n.types, "object") {
		n.additional = false
	}
	if r, ok := obj.get("required"); ok {
		if err := c.required(n, r, path); err != nil {
			return nil, err
		}
	}
	if e, ok := obj.get("enum"); ok {
		values, _ := e.([]any)
		if len(values) == 0 {
			return nil, c.malformed(path, "enum must be a non-empty array")
		}
		c.applyEnum(n, values)
	}
	if d, ok := obj.get("default"); ok && d == nil && !root {
		if n.hasEnum && !containsValue(n.enum, nil) {
			n.enum = append(n.enum, nil)
		}
		if len(n.types) > 0 && !slices.Contains(n.types, "null") {
			n.types = append(n.types, "null")
		}
	}
	if c.lang != LangPython && !root {
		_, hasConst := obj.get("const")
		c.admitExpression(n, hasConst)
	}
	return n, nil
}

func isAny(any) bool { return true }

func isString(v any) bool { _, ok := v.(string); return ok }

func isBool(v any) bool { _, ok := v.(bool); return ok }

func isArray(v any) bool { _, ok := v.([]any); return ok }

func isPattern(v any) bool {
	s, ok := v.(string)
	_, err := regexp.Compile(s)
	return ok && err == nil
}

func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	f, err := n.Float64()
	return f, ok && err == nil
}

func isNumber(v any) bool { _, ok := number(v); return ok }

func isPositive(v any) bool { f, ok := number(v); return ok && f > 0 }

func isCount(v any) bool { f, ok := number(v); return ok && f >= 0 && f == math.Trunc(f) }

// types maps the "type" keyword; nil means no constraint.
func (c *converter) types(v any, path string) ([]string, error) {
	var names []string
	switch x := v.(type) {
	case string:
		names = []string{x}
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, &UnsupportedTypeError{Function: c.fn, Path: path, Type: typeText(v)}
			}
			names = append(names, s)
		}
	}
	if len(names) == 0 {
		return nil, &UnsupportedTypeError{Function: c.fn, Path: path, Type: typeText(v)}
	}
	var out []string
	for _, name := range names {
		t, ok := dialectTypes[name]
		if !ok {
			return nil, &UnsupportedTypeError{Function: c.fn, Path: path, Type: name}
		}
		if t == "" {
			return nil, nil
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

func (c *converter) properties(n *node, v any, path string) error {
	props, ok := v.(*object)
	if !ok {
		return c.malformed(path, "properties must be a JSON object")
	}
	n.hasProps = true
	for _, m := range props.members {
		sub, err := c.schema(m.val, path+"/properties/"+tool.PointerToken(m.key), false)
		if err != nil {
			return err
		}
		n.props = append(n.props, namedNode{name: m.key, n: sub})
	}
	return nil
}

func (c *converter) required(n *node, v any, path string) error {
	list, ok := v.([]any)
	if !ok {
		return c.malformed(path, "required must be an array of names")
	}
	optional := make(map[string]bool)
	for _, p := range n.props {
		if p.n.optional {
			optional[p.name] = true
		}
	}
	for _, name := range n.optNames {
		optional[name] = true
	}
	for _, e := range list {
		name, ok := e.(string)
		if !ok {
			return c.malformed(path, "required must be an array of names")
		}
		if optional[name] || slices.Contains(n.required, name) {
			continue
		}
		if n.additional == false && !n.declares(name) {
			return c.malformed(path, "required names %q, which is not among the properties", name)
		}
		n.required = append(n.required, name)
	}
	return nil
}

// optional reads BFCL's "optional": a flag on a property, or on an object
// the names of its optional properties.
func (c *converter) optional(n *node, v any, path string) error {
	switch x := v.(type) {
	case bool:
		n.optional = x
		return nil
	case string:
		switch strings.ToLower(x) {
		case "true", "yes":
			n.optional = true
			return nil
		case "false", "no":
			return nil
		}
	case []any:
		for _, e := range x {
			name, ok := e.(string)
			if !ok {
				return c.malformed(path, "optional must be a boolean or a list of names")
			}
			n.optNames = append(n.optNames, name)
		}
		return nil
	}
	return c.malformed(path, "optional must be a boolean or a list of names")
}

func (c *converter) applyEnum(n *node, values []any) {
	fits := true
	for _, v := range values {
		if !valueFits(v, n.types) {
			fits = false
			break
		}
	}
	switch {
	case fits:
		n.enum, n.hasEnum = values, true
	case len(n.types) == 1 && n.types[0] == "array" && !slices.ContainsFunc(values, func(v any) bool { _, ok := v.([]any); return ok }) && (n.items == nil || !n.items.hasEnum):
		// An enum of scalars on an array lists what the items may be.
		if n.items == nil {
			n.items = &node{}
		}
		c.applyEnum(n.items, values)
	default:
		out := append([]any(nil), values...)
		for _, v := range values {
			s, ok := v.(string)
			if !ok {
				continue
			}
			s = strings.TrimSpace(s)
			if l := strings.ToLower(s); (l == "true" || l == "false") && slices.Contains(n.types, "boolean") {
				out = appendNew(out, l == "true")
			}
			if i, err := strconv.ParseInt(s, 10, 64); err == nil && (slices.Contains(n.types, "integer") || slices.Contains(n.types, "number")) {
				out = appendNew(out, json.Number(strconv.FormatInt(i, 10)))
			} else if f, err := strconv.ParseFloat(s, 64); err == nil && slices.Contains(n.types, "number") && !math.IsInf(f, 0) && !math.IsNaN(f) {
				out = appendNew(out, json.Number(strconv.FormatFloat(f, 'g', -1, 64)))
			}
		}
		n.types, n.enum, n.hasEnum = nil, out, true
	}
}

// admitExpression lets a Java or JavaScript argument be written as source
// code; see Parse.
func (c *converter) admitExpression(n *node, hasConst bool) {
	if len(n.types) == 0 || n.hasEnum || hasConst || slices.Contains(n.types, "string") {
		return
	}
	scalar := slices.Contains(n.types, "integer") || slices.Contains(n.types, "number") || slices.Contains(n.types, "boolean")
	if !scalar && !slices.Contains(n.types, "array") && !slices.Contains(n.types, "object") {
		return
	}
	for _, m := range n.keep {
		if m.key == "pattern" || m.key == "minLength" || m.key == "maxLength" {
			return
		}
	}
	n.types = append(n.types, "string")
	if scalar {
		n.keep = append(n.keep, member{"pattern", sourceName})
		n.not = &node{enum: []any{"true", "false", "null"}, hasEnum: true}
	} else {
		n.keep = append(n.keep, member{"minLength", json.Number("1")})
	}
}

func (n *node) declares(name string) bool {
	for _, p := range n.props {
		if p.name == name {
			return true
		}
	}
	return false
}

// write encodes the schema as JSON.
func (n *node) write(b *bytes.Buffer) {
	var fields []member
	switch len(n.types) {
	case 0:
	case 1:
		fields = append(fields, member{"type", n.types[0]})
	default:
		fields = append(fields, member{"type", n.types})
	}
	fields = append(fields, n.keep...)
	if n.hasEnum {
		fields = append(fields, member{"enum", n.enum})
	}
	if n.items != nil {
		fields = append(fields, member{"items", n.items})
	}
	if n.hasProps {
		props := &object{members: make([]member, len(n.props))}
		for i, p := range n.props {
			props.members[i] = member{p.name, p.n}
		}
		fields = append(fields, member{"properties", props})
	}
	if len(n.required) > 0 {
		fields = append(fields, member{"required", n.required})
	}
	if n.additional != nil {
		fields = append(fields, member{"additionalProperties", n.additional})
	}
	if n.not != nil {
		fields = append(fields, member{"not", n.not})
	}
	writeValue(b, &object{members: fields})
}

// typeText renders a "type" value for an error: the name itself, or its
// JSON text when it is not a string.
func typeText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b bytes.Buffer
	writeValue(&b, v)
	return b.String()
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

// valueFits reports whether v has one of the JSON types (any when empty).
func valueFits(v any, types []string) bool {
	if len(types) == 0 {
		return true
	}
	if num, ok := v.(json.Number); ok && !slices.Contains(types, "number") {
		f, err := num.Float64()
		return err == nil && slices.Contains(types, "integer") && f == math.Trunc(f)
	}
	return slices.Contains(types, jsonKind(v))
}

func containsValue(values []any, v any) bool {
	var want bytes.Buffer
	writeValue(&want, v)
	for _, x := range values {
		var got bytes.Buffer
		writeValue(&got, x)
		if bytes.Equal(got.Bytes(), want.Bytes()) {
			return true
		}
	}
	return false
}

func appendNew(values []any, v any) []any {
	if containsValue(values, v) {
		return values
	}
	return append(values, v)
}
