package tool

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// A struct field's `jsonschema` tag comes in two styles, both read by
// Func:
//
//   - a description, the whole tag: `jsonschema:"the text to shout"`;
//   - comma-separated keys, as invopop/jsonschema and the frameworks built
//     on it (Eino among them) write them:
//     `jsonschema:"description=the text to shout,required,enum=a,enum=b"`,
//     a comma inside a value escaped as `\\,` in the tag's source (`\,`
//     once Go has unquoted the tag).
//
// A tag is of the second style when it begins with a word and "=" or is
// one of the flags alone ("required"). A `jsonschema_description` tag is a
// description too. The keys read are keyedTagKeys; any other key, an empty
// part or a value that does not fit its field is an error naming the field.

// keyedTagKeys are the keys of the keyed style Func reads; "required" is a
// flag without a value.
var keyedTagKeys = []string{"description", "title", "required", "enum", "format", "pattern",
	"minimum", "maximum", "minLength", "maxLength"}

// keyedPrefix is how a keyed tag begins (the pattern jsonschema-go
// refuses in its own descriptions).
var keyedPrefix = regexp.MustCompile(`^[^ \t\n]*=`)

// fieldTag is one field's keyed tag, parsed.
type fieldTag struct {
	description, title, format, pattern string
	required                            bool
	enum                                []any
	minimum, maximum                    *float64
	minLength, maxLength                *int
}

// isKeyed reports whether tag is of the keyed style.
func isKeyed(tag string) bool { return tag == "required" || keyedPrefix.MatchString(tag) }

// schemaOf derives the input schema of type t: jsonschema-go's, with the
// keyed tags (which it refuses) taken out of the types it sees and applied
// to its schema afterwards.
func schemaOf(t reflect.Type) (*jsonschema.Schema, error) {
	st := &stripper{done: map[reflect.Type]reflect.Type{}, busy: map[reflect.Type]bool{}, tags: map[reflect.Type][]taggedField{}}
	plain, err := st.strip(t)
	if err != nil {
		return nil, err
	}
	s, err := jsonschema.ForType(plain, nil)
	if err != nil {
		return nil, err
	}
	st.apply(t, s)
	return s, nil
}

// taggedField is a field of a struct whose tags were taken out: its JSON
// name and its tag (nil: none).
type taggedField struct {
	name string
	tag  *fieldTag
}

// stripper rewrites types: a struct with a keyed tag anywhere in it
// becomes an unnamed struct without jsonschema tags.
type stripper struct {
	done map[reflect.Type]reflect.Type
	busy map[reflect.Type]bool          // being rewritten: a cycle, left to jsonschema-go to report
	tags map[reflect.Type][]taggedField // by the original struct type
}

func (st *stripper) strip(t reflect.Type) (reflect.Type, error) {
	if out, ok := st.done[t]; ok {
		return out, nil
	}
	if st.busy[t] {
		return t, nil
	}
	st.busy[t] = true
	defer delete(st.busy, t)
	out, err := st.rewrite(t)
	if err != nil {
		return nil, err
	}
	st.done[t] = out
	return out, nil
}

func (st *stripper) rewrite(t reflect.Type) (reflect.Type, error) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		elem, err := st.strip(t.Elem())
		if err != nil || elem == t.Elem() {
			return t, err
		}
		switch t.Kind() {
		case reflect.Pointer:
			return reflect.PointerTo(elem), nil
		case reflect.Slice:
			return reflect.SliceOf(elem), nil
		case reflect.Array:
			return reflect.ArrayOf(t.Len(), elem), nil
		}
		return reflect.MapOf(t.Key(), elem), nil
	case reflect.Struct:
		return st.rewriteStruct(t)
	}
	return t, nil
}

// rewriteStruct rewrites struct t when a field has a keyed tag or a
// field's type changes; otherwise t stays as it is.
func (st *stripper) rewriteStruct(t reflect.Type) (reflect.Type, error) {
	var fields []reflect.StructField
	var tagged []taggedField
	changed := false
	for f := range t.Fields() {
		if !f.IsExported() && !f.Anonymous {
			continue // neither encoding/json nor the schema sees it
		}
		ft, err := st.strip(f.Type)
		if err != nil {
			return nil, err
		}
		changed = changed || ft != f.Type
		tf := taggedField{name: jsonName(f)}
		raw, ok := f.Tag.Lookup("jsonschema")
		if !ok && strings.Contains(string(f.Tag), `jsonschema:"`) {
			// reflect reads nothing of a tag it cannot unquote; say so
			// rather than drop the field's description and required.
			return nil, fmt.Errorf("struct field %s.%s: the tag %s is not a valid Go struct tag (go vet says why; a backslash in a value is written \\\\)", t, f.Name, f.Tag)
		}
		if ok && isKeyed(raw) {
			if tf.tag, err = parseKeyedTag(raw, f.Type); err != nil {
				return nil, fmt.Errorf("struct field %s.%s: %w", t, f.Name, err)
			}
			changed = true
		} else if desc := f.Tag.Get("jsonschema_description"); desc != "" {
			tf.tag, changed = &fieldTag{description: desc}, true
		} else if ok {
			tf.tag = &fieldTag{description: raw}
		}
		f.Type, f.Tag = ft, withoutSchemaTags(f.Tag)
		fields, tagged = append(fields, f), append(tagged, tf)
	}
	if !changed {
		return t, nil
	}
	st.tags[t] = tagged
	return structOf(t, fields)
}

// structOf is reflect.StructOf, its panics (an embedded field it cannot
// build) turned into an error.
func structOf(t reflect.Type, fields []reflect.StructField) (out reflect.Type, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("struct %s with keyed jsonschema tags: %v", t, r)
		}
	}()
	return reflect.StructOf(fields), nil
}

// apply sets the taken-out tags on schema s of type t.
func (st *stripper) apply(t reflect.Type, s *jsonschema.Schema) {
	if s == nil {
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		st.apply(t.Elem(), s)
	case reflect.Slice, reflect.Array:
		st.apply(t.Elem(), s.Items)
	case reflect.Map:
		st.apply(t.Elem(), s.AdditionalProperties)
	case reflect.Struct:
		st.applyStruct(t, s)
	}
}

func (st *stripper) applyStruct(t reflect.Type, s *jsonschema.Schema) {
	tagged, rewritten := st.tags[t]
	i := 0
	for f := range t.Fields() {
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		var tf taggedField
		if rewritten {
			tf, i = tagged[i], i+1
		}
		if f.Anonymous && tf.name == "" {
			st.apply(f.Type, s) // promoted fields are the parent's properties
			continue
		}
		prop := s.Properties[jsonName(f)]
		if prop == nil {
			continue
		}
		st.apply(f.Type, prop)
		if tf.tag != nil {
			tf.tag.set(prop)
			if tf.tag.required && !slices.Contains(s.Required, tf.name) {
				s.Required = append(s.Required, tf.name)
			}
		}
	}
}

// set writes the tag's keywords into the property's schema.
func (ft *fieldTag) set(p *jsonschema.Schema) {
	if ft.description != "" {
		p.Description = ft.description
	}
	if ft.title != "" {
		p.Title = ft.title
	}
	if ft.format != "" {
		p.Format = ft.format
	}
	if ft.pattern != "" {
		p.Pattern = ft.pattern
	}
	if len(ft.enum) > 0 {
		p.Enum = ft.enum
	}
	if ft.minimum != nil {
		p.Minimum = ft.minimum
	}
	if ft.maximum != nil {
		p.Maximum = ft.maximum
	}
	if ft.minLength != nil {
		p.MinLength = ft.minLength
	}
	if ft.maxLength != nil {
		p.MaxLength = ft.maxLength
	}
}

// jsonName is the name encoding/json gives field f; empty for an embedded
// struct whose fields are promoted, "-" for a field it leaves out.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name != "" {
		return name
	}
	if f.Anonymous {
		return ""
	}
	return f.Name
}

// withoutSchemaTags is tag without its jsonschema and
// jsonschema_description keys.
func withoutSchemaTags(tag reflect.StructTag) reflect.StructTag {
	var keep []string
	for rest := strings.TrimSpace(string(tag)); rest != ""; rest = strings.TrimSpace(rest) {
		colon := strings.Index(rest, `:"`)
		if colon <= 0 {
			break
		}
		key := rest[:colon]
		value, err := strconv.QuotedPrefix(rest[colon+1:])
		if err != nil {
			break
		}
		if key != "jsonschema" && key != "jsonschema_description" {
			keep = append(keep, key+":"+value)
		}
		rest = rest[colon+1+len(value):]
	}
	return reflect.StructTag(strings.Join(keep, " "))
}

// parseKeyedTag parses a keyed tag of a field of type t.
func parseKeyedTag(raw string, t reflect.Type) (*fieldTag, error) {
	ft := &fieldTag{}
	for _, part := range splitEscaped(raw) {
		key, value, hasValue := strings.Cut(part, "=")
		key = strings.TrimSpace(key)
		if err := ft.setKey(key, value, hasValue, t); err != nil {
			return nil, fmt.Errorf("jsonschema tag %q: %w", raw, err)
		}
	}
	return ft, nil
}

func (ft *fieldTag) setKey(key, value string, hasValue bool, t reflect.Type) error {
	var err error
	switch {
	case key == "":
		return fmt.Errorf("an empty key (a stray comma or \"=\"; a comma inside a value is written \\\\, in the tag)")
	case key == "required":
		if hasValue {
			return fmt.Errorf("required is a flag and takes no value")
		}
		ft.required = true
		return nil
	case !slices.Contains(keyedTagKeys, key):
		return fmt.Errorf("unknown key %q (one of: %s; a description that begins with a word and \"=\" is written description=…)", key, strings.Join(keyedTagKeys, ", "))
	case !hasValue:
		return fmt.Errorf("%s needs a value (%s=…)", key, key)
	}
	switch key {
	case "description":
		ft.description = value
	case "title":
		ft.title = value
	case "format":
		ft.format = value
	case "pattern":
		if _, err = regexp.Compile(value); err == nil {
			ft.pattern = value
		}
	case "enum":
		var v any
		if v, err = enumValue(value, t); err == nil {
			ft.enum = append(ft.enum, v)
		}
	case "minimum", "maximum":
		var f float64
		if f, err = strconv.ParseFloat(value, 64); err == nil {
			ft.minimum, ft.maximum = pick(key == "minimum", &f, ft.minimum, ft.maximum)
		}
	case "minLength", "maxLength":
		var n int
		if n, err = strconv.Atoi(value); err == nil {
			ft.minLength, ft.maxLength = pick(key == "minLength", &n, ft.minLength, ft.maxLength)
		}
	}
	if err != nil {
		return fmt.Errorf("%s=%s: %w", key, value, err)
	}
	return nil
}

// pick sets v as the first of two values when first, else as the second.
func pick[T any](first bool, v, a, b *T) (*T, *T) {
	if first {
		return v, b
	}
	return a, v
}

// enumValue is value as a JSON value of a field of type t (of a slice's
// items).
func enumValue(value string, t reflect.Type) (any, error) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return value, nil
	case reflect.Bool:
		return strconv.ParseBool(value)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.ParseInt(value, 10, 64)
	case reflect.Float32, reflect.Float64:
		return strconv.ParseFloat(value, 64)
	}
	return nil, fmt.Errorf("enum on a field of type %s", t)
}

// splitEscaped splits a keyed tag at its commas, `\,` being a comma of a
// value.
func splitEscaped(s string) []string {
	var parts []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == ',':
			cur.WriteByte(',')
			i++
		case s[i] == ',':
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(s[i])
		}
	}
	return append(parts, cur.String())
}
