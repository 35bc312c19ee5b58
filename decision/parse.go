package decision

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/chat"
)

// Limits applied while parsing; longer values are cut, not rejected, so a
// chatty model still gets its turn.
const (
	MaxSayRunes     = 4000
	MaxButtons      = 8
	MaxButtonLabel  = 64
	MaxButtonValue  = 64
	MaxOutputBytes  = 64 << 10
	maxToolNameSize = 64
)

// Problem is one reason a model output was refused, at a JSON pointer
// location ("" for the whole output).
type Problem struct {
	Location string `json:"location"`
	Message  string `json:"message"`
}

// ParseError says why a model output is not a valid Decision. Its text is
// written to be fed back to the model in a repair request.
type ParseError struct {
	Problems []Problem
}

func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString("invalid decision:")
	for _, p := range e.Problems {
		if p.Location != "" {
			fmt.Fprintf(&b, " at %s:", p.Location)
		}
		b.WriteString(" " + p.Message + ";")
	}
	return strings.TrimSuffix(b.String(), ";")
}

func fail(loc, format string, args ...any) *ParseError {
	return &ParseError{Problems: []Problem{{Location: loc, Message: fmt.Sprintf(format, args...)}}}
}

// Parse turns model output into a Decision. It accepts exactly one JSON
// object, optionally inside a code fence or surrounded by prose without
// other JSON; it rejects duplicate keys anywhere, a second JSON value, a
// first JSON value that never closes (whatever it quotes), and wrong field
// types. The tool name is mapped onto allowed (exact, then
// case- and separator-insensitive); any other name sets UnknownTool.
// Arguments are not checked against a tool schema here.
func Parse(output string, allowed []string) (Decision, error) {
	if len(output) > MaxOutputBytes {
		return Decision{}, fail("", "output is %d bytes, more than %d", len(output), MaxOutputBytes)
	}
	obj, err := extractObject(output)
	if err != nil {
		return Decision{}, err
	}
	// One pass checks every object for duplicate keys and hands over the
	// top-level fields (obj is one valid JSON object by now).
	var sc dupScanner
	sc.useBuffers()
	if err := sc.scan(obj, true); err != nil {
		return Decision{}, err
	}
	return fromFields(sc.fields, allowed)
}

// extractObject finds the single JSON object in output.
func extractObject(output string) ([]byte, error) {
	s := strings.TrimSpace(output)
	// Fast path: structured output is exactly one object.
	if len(s) > 1 && s[0] == '{' && s[len(s)-1] == '}' && json.Valid([]byte(s)) {
		return []byte(s), nil
	}
	s = stripFences(s)
	var values [][]byte
	for i := 0; i < len(s); i++ {
		if s[i] != '{' && s[i] != '[' {
			continue
		}
		n := jsonValueLen(s[i:])
		if n == 0 {
			group := closedGroupLen(s[i:])
			if len(values) == 0 && (group == 0 || startsObject(s[i:])) {
				// A bracket that is not JSON and never closes: whatever
				// valid object lies further in is quoted inside it (a
				// truncated reply citing injected JSON), not the answer.
				// One that closes but opens as an object ({"…) was meant
				// as the answer: a later object is not read in its place
				// (its say may already have been streamed).
				return nil, fail("", "the JSON value that starts at byte %d is malformed or truncated; answer with exactly one complete JSON object", i)
			}
			i += max(group, 1) - 1 // prose such as "{this}" is skipped whole
			continue
		}
		values = append(values, []byte(s[i:i+n]))
		i += n - 1
	}
	switch {
	case len(values) == 0:
		return nil, fail("", "no JSON object found; answer with exactly one JSON object")
	case len(values) > 1:
		return nil, fail("", "found %d JSON values; answer with exactly one JSON object and nothing else", len(values))
	case values[0][0] != '{':
		return nil, fail("", "the JSON value is not an object")
	}
	return values[0], nil
}

// startsObject reports whether s opens as a JSON object with a key: "{",
// JSON whitespace, then a quote.
func startsObject(s string) bool {
	rest := strings.TrimLeft(s[1:], " \t\r\n")
	return s[0] == '{' && rest != "" && rest[0] == '"'
}

// closedGroupLen returns the length of the bracket group at the start of
// s — up to the bracket that brings the nesting of {}[] back to zero,
// strings ignored — or 0 when it never closes.
func closedGroupLen(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return 0
}

// stripFences removes Markdown code-fence lines (```json ... ```), keeping
// their content.
func stripFences(s string) string {
	if !strings.Contains(s, "```") {
		return s
	}
	lines := strings.Split(s, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			continue
		}
		kept = append(kept, l)
	}
	return strings.Join(kept, "\n")
}

// jsonValueLen returns the length of the complete JSON value at the start
// of s, or 0 when none starts there.
func jsonValueLen(s string) int {
	dec := json.NewDecoder(strings.NewReader(s))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return 0
	}
	return int(dec.InputOffset())
}

// checkDuplicateKeys rejects any object, at any depth, that names a key
// twice: encoding/json would silently keep the last one, and a model (or an
// injected text) could hide a second "tool" behind the first. data must be
// one valid JSON value (callers check that first).
func checkDuplicateKeys(data []byte) error {
	var sc dupScanner
	sc.useBuffers()
	return sc.scan(data, false)
}

// dupScanner walks valid JSON looking only at object keys; it keeps the
// path to the current value so a duplicate can be reported by location.
// Keys are compared as they stand in the input (decoded only when they
// hold escapes), so a valid object costs no allocation per key.
type dupScanner struct {
	data []byte
	pos  int
	path []pathStep
	keys [][]byte // the keys of the objects being read, innermost last
	// fields are the top-level object's fields, when asked for.
	fields    []field
	topFields bool

	// Room for the usual decision, so that a scan allocates nothing.
	keyBuf   [16][]byte
	pathBuf  [8]pathStep
	fieldBuf [8]field
}

// useBuffers points the slices at the scanner's own arrays.
func (s *dupScanner) useBuffers() {
	s.keys, s.path, s.fields = s.keyBuf[:0], s.pathBuf[:0], s.fieldBuf[:0]
}

// pathStep is an object key or, when key is nil, an array index.
type pathStep struct {
	key   []byte
	index int
}

// field is a top-level key and its value as it stands in the input.
type field struct {
	name string
	raw  json.RawMessage
}

type fieldList []field

// get returns the value of the field named name.
func (l fieldList) get(name string) (json.RawMessage, bool) {
	for _, f := range l {
		if f.name == name {
			return f.raw, true
		}
	}
	return nil, false
}

var errTruncated = fail("", "malformed JSON: unexpected end")

// scan checks data; with topFields it also collects the fields of the
// object data holds.
func (s *dupScanner) scan(data []byte, topFields bool) error {
	s.data, s.topFields = data, topFields
	if err := s.value(); err != nil {
		return err
	}
	s.space()
	if s.pos != len(data) {
		return fail("", "trailing data after the JSON object")
	}
	return nil
}

func (s *dupScanner) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *dupScanner) value() error {
	s.space()
	if s.pos >= len(s.data) {
		return errTruncated
	}
	switch s.data[s.pos] {
	case '{':
		return s.object()
	case '[':
		s.pos++
		for i := 0; ; i++ {
			s.space()
			if s.pos >= len(s.data) {
				return errTruncated
			}
			if s.data[s.pos] == ']' {
				s.pos++
				return nil
			}
			if s.data[s.pos] == ',' {
				s.pos++
			}
			s.path = append(s.path, pathStep{index: i})
			if err := s.value(); err != nil {
				return err
			}
			s.path = s.path[:len(s.path)-1]
		}
	case '"':
		_, err := s.str()
		return err
	}
	for s.pos < len(s.data) && !strings.ContainsRune(",]} \t\r\n", rune(s.data[s.pos])) {
		s.pos++
	}
	return nil
}

func (s *dupScanner) object() error {
	s.pos++
	top := s.topFields && len(s.path) == 0
	first := len(s.keys)
	defer func() { s.keys = s.keys[:first] }()
	for {
		s.space()
		if s.pos >= len(s.data) {
			return errTruncated
		}
		switch s.data[s.pos] {
		case '}':
			s.pos++
			return nil
		case ',':
			s.pos++
			continue
		}
		key, err := s.str()
		if err != nil {
			return err
		}
		for _, k := range s.keys[first:] {
			if bytes.Equal(k, key) {
				return fail(s.pointer(key), "duplicate key %q", key)
			}
		}
		s.keys = append(s.keys, key)
		s.space()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return fail(s.pointer(key), "malformed JSON: expected ':'")
		}
		s.pos++
		s.path = append(s.path, pathStep{key: key})
		s.space()
		start := s.pos
		if err := s.value(); err != nil {
			return err
		}
		if top {
			s.fields = append(s.fields, field{name: string(key), raw: s.data[start:s.pos]})
		}
		s.path = s.path[:len(s.path)-1]
	}
}

// str reads a string literal and returns its value; escapes (rare in keys)
// are decoded so "t\u0069tle" and "title" count as the same key. Without
// escapes the value is a slice of the input.
func (s *dupScanner) str() ([]byte, error) {
	start := s.pos
	s.pos++
	escaped := false
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case '\\':
			escaped = true
			s.pos += 2
			continue
		case '"':
			s.pos++
			raw := s.data[start:s.pos]
			if !escaped {
				return raw[1 : len(raw)-1], nil
			}
			var v string
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fail(s.pointer(nil), "malformed JSON string: %v", err)
			}
			return []byte(v), nil
		}
		s.pos++
	}
	return nil, errTruncated
}

// pointer is the JSON pointer of the current value, or of its key last.
func (s *dupScanner) pointer(last []byte) string {
	var b strings.Builder
	for _, p := range s.path {
		b.WriteByte('/')
		if p.key == nil {
			b.WriteString(strconv.Itoa(p.index))
		} else {
			b.WriteString(escapePointer(string(p.key)))
		}
	}
	if last != nil {
		b.WriteString("/" + escapePointer(string(last)))
	}
	return b.String()
}

func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return pointerEscaper.Replace(s)
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

var knownFields = map[string]bool{"say": true, "tool": true, "args": true, "done": true, "newTopic": true, "buttons": true}

// fromFields builds the decision from the top-level fields (each named
// once: the scanner refused duplicates).
func fromFields(list []field, allowed []string) (Decision, error) {
	var d Decision
	var problems []Problem
	add := func(loc, format string, args ...any) {
		problems = append(problems, Problem{Location: loc, Message: fmt.Sprintf(format, args...)})
	}
	fields := fieldList(list)
	for _, f := range list {
		if !knownFields[f.name] {
			add("/"+escapePointer(strings.ToValidUTF8(f.name, "\uFFFD")), "unknown field; allowed fields are say, tool, args, done, newTopic, buttons")
		}
	}
	if raw, ok := fields.get("say"); ok && !isNull(raw) {
		if err := decodeString(raw, &d.Say); err != nil {
			add("/say", "must be a string")
		}
		d.Say = truncateRunes(d.Say, MaxSayRunes)
	}
	if raw, ok := fields.get("tool"); ok && !isNull(raw) {
		var name string
		if err := decodeString(raw, &name); err != nil {
			add("/tool", "must be a string or null")
		} else {
			d.Tool, d.UnknownTool = mapTool(name, allowed)
		}
	}
	d.Args = json.RawMessage("{}")
	if raw, ok := fields.get("args"); ok && !isNull(raw) {
		args, err := coerceArgs(raw)
		var pe *ParseError
		switch {
		case errors.As(err, &pe):
			for _, p := range pe.Problems {
				add("/args"+p.Location, "%s", p.Message)
			}
		case err != nil:
			add("/args", "%s", err.Error())
		default:
			d.Args = args
		}
	}
	for _, f := range []struct {
		name string
		dst  *bool
	}{{"done", &d.Done}, {"newTopic", &d.NewTopic}} {
		if raw, ok := fields.get(f.name); ok && !isNull(raw) {
			v, err := coerceBool(raw)
			if err != nil {
				add("/"+f.name, "must be a boolean")
			}
			*f.dst = v
		}
	}
	if raw, ok := fields.get("buttons"); ok && !isNull(raw) {
		buttons, err := coerceButtons(raw)
		if err != nil {
			add("/buttons", "%s", err.Error())
		}
		d.Buttons = buttons
	}
	if len(problems) > 0 {
		return Decision{}, &ParseError{Problems: problems}
	}
	return d, nil
}

// decodeString decodes a JSON string into dst. A string with nothing to
// unescape — the usual say and tool — is taken as it stands, without
// encoding/json's decoder; anything else goes through json.Unmarshal.
func decodeString(raw json.RawMessage, dst *string) error {
	v := trimJSONSpace(raw)
	if plainJSONString(v) {
		*dst = string(v[1 : len(v)-1])
		return nil
	}
	return json.Unmarshal(raw, dst)
}

// trimJSONSpace cuts the whitespace JSON allows around a value.
func trimJSONSpace(v []byte) []byte {
	return bytes.Trim(v, " \t\n\r")
}

// plainJSONString reports whether v is a quoted JSON string holding no
// escape, no control character and only valid UTF-8: its text is then the
// bytes between the quotes.
func plainJSONString(v []byte) bool {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	inner := v[1 : len(v)-1]
	for _, c := range inner {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return utf8.Valid(inner)
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// mapTool maps a proposed name onto the allowed set. Names such as "null"
// or "none" mean no tool.
func mapTool(name string, allowed []string) (string, bool) {
	name = strings.TrimSpace(name)
	switch strings.ToLower(name) {
	case "", "null", "none", "nil":
		return "", false
	}
	for _, a := range allowed {
		if a == name {
			return a, false
		}
	}
	norm := normalizeToolName(name)
	match := ""
	for _, a := range allowed {
		if normalizeToolName(a) == norm {
			if match != "" {
				match = "" // ambiguous: treat as unknown
				break
			}
			match = a
		}
	}
	if match != "" {
		return match, false
	}
	if len(name) > maxToolNameSize {
		name = name[:maxToolNameSize]
	}
	return name, true
}

func normalizeToolName(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "functions.")
	return strings.NewReplacer("-", "_", " ", "_", ".", "_").Replace(s)
}

// coerceArgs accepts an object, or a string holding a JSON object (some
// models encode arguments that way).
func coerceArgs(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		return raw, nil
	}
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			inner := bytes.TrimSpace([]byte(s))
			if len(inner) > 0 && inner[0] == '{' && json.Valid(inner) {
				if err := checkDuplicateKeys(inner); err != nil {
					return nil, err
				}
				return inner, nil
			}
		}
	}
	return nil, errors.New("must be a JSON object or null")
}

func coerceBool(raw json.RawMessage) (bool, error) {
	switch string(trimJSONSpace(raw)) { // the usual answer, decoded without encoding/json
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err == nil {
		return b, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return false, errors.New("not a boolean")
}

func coerceButtons(raw json.RawMessage) ([]chat.Button, error) {
	if string(trimJSONSpace(raw)) == "[]" { // the usual answer
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New("must be an array of {label, value}")
	}
	var out []chat.Button
	for i, item := range items {
		var b struct {
			Label *string `json:"label"`
			Value *string `json:"value"`
		}
		if err := json.Unmarshal(item, &b); err != nil || b.Label == nil {
			return nil, fmt.Errorf("item %d must be an object with string label and value", i)
		}
		btn := chat.Button{Label: truncateRunes(*b.Label, MaxButtonLabel)}
		if b.Value != nil {
			btn.Value = *b.Value
		} else {
			btn.Value = *b.Label
		}
		if strings.TrimSpace(btn.Label) == "" || btn.Value == "" || len(btn.Value) > MaxButtonValue {
			continue // an unusable button is dropped, not fatal
		}
		out = append(out, btn)
		if len(out) == MaxButtons {
			break
		}
	}
	return out, nil
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}

// IsParseError reports whether err says the output broke the contract (as
// opposed to, say, a canceled context), i.e. whether a repair request
// makes sense.
func IsParseError(err error) bool {
	var pe *ParseError
	return errors.As(err, &pe)
}
