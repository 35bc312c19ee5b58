package config

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The document is checked against the shape of Config before it is
// decoded, so that one run reports every mistake: each unknown key (with
// the known key it is probably a typo of) and each value of the wrong kind,
// at its line, in the file's words rather than Go's. The offending keys
// and values are taken out, and the rest decodes and is validated as
// usual.

var (
	durationType = reflect.TypeOf(Duration(0))
	nodeType     = reflect.TypeOf(yaml.Node{})
)

// shapeProblem is one mistake of the document's shape.
type shapeProblem struct {
	line int
	text string
}

// checkShape checks n, at path, against t, records what does not fit it
// and removes that from n.
func checkShape(n *yaml.Node, t reflect.Type, path string, out *[]shapeProblem) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode || t == nodeType || (t.Kind() == reflect.Interface) {
		return
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // an empty value: the default
	}
	switch {
	case t == durationType:
		checkDuration(n, path, out)
	case t.Kind() == reflect.Struct:
		checkStruct(n, t, path, out)
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			misfit(n, path, out, "expected a mapping (key: value), found %s", kindName(n))
			blank(n)
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkShape(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), out)
		}
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			misfit(n, path, out, "expected a list, found %s", kindName(n))
			blank(n)
			return
		}
		for i, item := range n.Content {
			checkShape(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), out)
		}
	default:
		checkScalar(n, t.Kind(), path, out)
	}
}

// misfit records that n, at path, does not fit its place.
func misfit(n *yaml.Node, path string, out *[]shapeProblem, format string, args ...any) {
	where := path
	if where == "" {
		where = "the file"
	}
	*out = append(*out, shapeProblem{n.Line, fmt.Sprintf("line %d: %s: %s", n.Line, where, fmt.Sprintf(format, args...))})
}

func checkDuration(n *yaml.Node, path string, out *[]shapeProblem) {
	if n.Kind != yaml.ScalarNode {
		misfit(n, path, out, "expected a duration such as 30s, 10m or 90d, found %s", kindName(n))
		return
	}
	if d, err := ParseDuration(n.Value); err != nil {
		misfit(n, path, out, "%q is not a duration (e.g. 30s, 10m, 90d)", n.Value)
		blank(n)
	} else if d < 0 {
		misfit(n, path, out, "duration %q is negative", n.Value)
		blank(n)
	}
}

// checkStruct checks a mapping against struct t: an unknown key is
// reported with the known key it is probably a typo of and taken out
// (unless t keeps unknown keys), each known key's value is checked.
func checkStruct(n *yaml.Node, t reflect.Type, path string, out *[]shapeProblem) {
	if n.Kind != yaml.MappingNode {
		misfit(n, path, out, "expected a mapping (key: value), found %s", kindName(n))
		blank(n)
		return
	}
	fields, inline := structKeys(t)
	kept := n.Content[:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		ft, ok := fields[key.Value]
		if !ok && !inline {
			where := join(path, key.Value)
			msg := fmt.Sprintf("line %d: %s: unknown key %q", key.Line, where, key.Value)
			if near := nearest(key.Value, fields); near != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", near)
			}
			*out = append(*out, shapeProblem{key.Line, msg})
			continue
		}
		if ok {
			checkShape(val, ft, join(path, key.Value), out)
		}
		kept = append(kept, key, val)
	}
	n.Content = kept
}

// checkScalar checks a value for a field of kind k (text, a flag, a
// number); other kinds take any value.
func checkScalar(n *yaml.Node, k reflect.Kind, path string, out *[]shapeProblem) {
	var expected string
	switch {
	case k == reflect.String:
		if n.Kind != yaml.ScalarNode {
			misfit(n, path, out, "expected text, found %s", kindName(n))
			blank(n)
		}
		return
	case k == reflect.Bool:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
			return
		}
		expected = "true or false"
	case k >= reflect.Int && k <= reflect.Uint64:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
			return
		}
		expected = "a whole number"
	case k == reflect.Float32 || k == reflect.Float64:
		if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
			return
		}
		expected = "a number"
	default:
		return
	}
	misfit(n, path, out, "expected %s, found %s", expected, valueName(n))
	blank(n)
}

// structKeys maps a struct's YAML keys to their types; inline says it
// keeps unknown keys (the sections of a program's own kinds).
func structKeys(t reflect.Type) (map[string]reflect.Type, bool) {
	keys := map[string]reflect.Type{}
	inline := false
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case tag == "-" || !f.IsExported():
		case strings.Contains(opts, "inline"):
			inline = true
		case name != "":
			keys[name] = f.Type
		}
	}
	return keys, inline
}

// blank turns n into an empty value, so decoding skips it.
func blank(n *yaml.Node) {
	*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: n.Line, Column: n.Column}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return valueName(n)
}

func valueName(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode {
		return kindName(n)
	}
	return fmt.Sprintf("%q", n.Value)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// nearest is the known key key is most probably a typo of, or "".
func nearest(key string, known map[string]reflect.Type) string {
	keys := make([]string, 0, len(known))
	for k := range known {
		keys = append(keys, k)
	}
	return Nearest(key, keys)
}

// Nearest is the name of known that name is most probably a typo of, or ""
// when none is close: what a problem's "did you mean" names.
func Nearest(name string, known []string) string {
	key := name
	best, bestD := "", 3
	for _, k := range known {
		d := editDistance(strings.ToLower(key), k)
		if strings.HasPrefix(k, key) || strings.HasPrefix(key, k) {
			d = min(d, 1)
		}
		if d < bestD || (d == bestD && k < best) {
			best, bestD = k, d
		}
	}
	return best
}

// DidYouMean is " (did you mean \"x\"?)" for the name of known that name
// is most probably a typo of, or "".
func DidYouMean(name string, known []string) string {
	if near := Nearest(name, known); near != "" {
		return fmt.Sprintf(" (did you mean %q?)", near)
	}
	return ""
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
