package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// DefaultMaxArgsBytes bounds the encoded arguments of one call; larger
// arguments are rejected before schema validation.
const DefaultMaxArgsBytes = 16 << 10

var printer = message.NewPrinter(language.English)

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// PointerToken escapes s as one reference token of a JSON Pointer (RFC
// 6901), the form a Problem's Location takes.
func PointerToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return pointerEscaper.Replace(s)
}

// Schema is a compiled input schema. It is immutable and safe for
// concurrent use; compile once per tool, validate per call.
type Schema struct {
	compiled *jsonschema.Schema
	maxBytes int

	// emptyValid caches whether {} fits: most reads take no arguments, and
	// the verdict never changes, so it is worked out once.
	emptyOnce  sync.Once
	emptyValid bool
}

// Problem is one validation failure at a location inside the arguments
// (a JSON pointer such as "/assignee"; "" is the arguments object itself).
type Problem struct {
	Location string `json:"location"`
	Message  string `json:"message"`
}

// ArgsError reports why arguments do not fit a tool's schema. Its text
// lists every problem with its location, suitable to feed back to a model.
type ArgsError struct {
	Tool     string
	Problems []Problem
}

func (e *ArgsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "arguments of %s are invalid:", e.Tool)
	for _, p := range e.Problems {
		loc := p.Location
		if loc == "" {
			loc = "(root)"
		}
		fmt.Fprintf(&b, " at %s: %s;", loc, p.Message)
	}
	return strings.TrimSuffix(b.String(), ";")
}

// CompileSchema compiles a JSON Schema document (draft 2020-12 unless the
// document says otherwise). The root must describe an object.
func CompileSchema(name string, raw []byte) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", name, err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema of %s: must be a JSON object", name)
	}
	if t, has := obj["type"]; has && t != "object" {
		return nil, fmt.Errorf("schema of %s: root type must be \"object\", got %v", name, t)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "mem:///" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("schema of %s: %w", name, err)
	}
	compiled, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", name, err)
	}
	return &Schema{compiled: compiled, maxBytes: DefaultMaxArgsBytes}, nil
}

// Validate checks args against the schema. It returns *ArgsError for
// arguments that are not a JSON object, too large, or do not validate.
func (s *Schema) Validate(toolName string, args []byte) error {
	if string(args) == "{}" {
		s.emptyOnce.Do(func() { s.emptyValid = s.compiled.Validate(map[string]any{}) == nil })
		if s.emptyValid {
			return nil
		}
	}
	if len(args) > s.maxBytes {
		return &ArgsError{Tool: toolName, Problems: []Problem{{Message: fmt.Sprintf("arguments are %d bytes, more than the limit of %d", len(args), s.maxBytes)}}}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return &ArgsError{Tool: toolName, Problems: []Problem{{Message: "arguments are not valid JSON: " + err.Error()}}}
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return &ArgsError{Tool: toolName, Problems: []Problem{{Message: "arguments must be a JSON object"}}}
	}
	return s.validate(toolName, obj)
}

// ValidateDecoded is Validate of arguments already decoded, as
// jsonschema.UnmarshalJSON decodes them (numbers as json.Number), whose
// encoding is size bytes long: a caller that decoded them for its own use
// need not have them decoded twice.
func (s *Schema) ValidateDecoded(toolName string, args map[string]any, size int) error {
	if len(args) == 0 {
		return s.Validate(toolName, []byte("{}"))
	}
	if size > s.maxBytes {
		return &ArgsError{Tool: toolName, Problems: []Problem{{Message: fmt.Sprintf("arguments are %d bytes, more than the limit of %d", size, s.maxBytes)}}}
	}
	return s.validate(toolName, args)
}

// validate checks a decoded arguments object.
func (s *Schema) validate(toolName string, doc map[string]any) error {
	if problems := checkNumbers(doc, "", nil); len(problems) > 0 {
		return &ArgsError{Tool: toolName, Problems: problems}
	}
	err := s.compiled.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ArgsError{Tool: toolName, Problems: []Problem{{Message: err.Error()}}}
	}
	var problems []Problem
	collectProblems(ve, &problems)
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].Location < problems[j].Location })
	return &ArgsError{Tool: toolName, Problems: problems}
}

// collectProblems keeps the leaves of the error tree: they name the exact
// keyword that failed, which is what a model can act on.
func collectProblems(ve *jsonschema.ValidationError, out *[]Problem) {
	if len(ve.Causes) == 0 {
		loc := ""
		for _, part := range ve.InstanceLocation {
			loc += "/" + PointerToken(part)
		}
		*out = append(*out, Problem{Location: loc, Message: ve.ErrorKind.LocalizedString(printer)})
		return
	}
	for _, c := range ve.Causes {
		collectProblems(c, out)
	}
}

// MaxExactInteger is the largest integer every JSON consumer (a float64
// parser included) holds exactly: 2^53 - 1.
const MaxExactInteger = 1<<53 - 1

// checkNumbers refuses numbers a tool cannot be given faithfully: beyond
// float64 (1e999), or whole numbers beyond ±MaxExactInteger, which a
// float64 parser rounds (123456789012345678901234567890). The schema's
// "integer ≥ 1" alone would let both through.
func checkNumbers(v any, at string, problems []Problem) []Problem {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		switch {
		case err != nil || math.IsInf(f, 0):
			problems = append(problems, Problem{Location: at, Message: fmt.Sprintf("number %s is out of range", clipNumber(x))})
		case f == math.Trunc(f) && math.Abs(f) > MaxExactInteger:
			problems = append(problems, Problem{Location: at, Message: fmt.Sprintf("whole number %s is beyond ±%d, the range exchanged exactly", clipNumber(x), MaxExactInteger)})
		}
	case []any:
		for i, e := range x {
			problems = checkNumbers(e, at+"/"+strconv.Itoa(i), problems)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			problems = checkNumbers(x[k], at+"/"+PointerToken(k), problems)
		}
	}
	return problems
}

func clipNumber(n json.Number) string {
	if len(n) > 40 {
		return string(n[:40]) + "…"
	}
	return string(n)
}
