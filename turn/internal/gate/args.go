package gate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/arbiterhq/arbiter/decision"
	"github.com/arbiterhq/arbiter/tool"
)

// Args checks proposed arguments against the tool's compiled schema and
// returns them in canonical form (see Canonical). required names the
// arguments whose null is a value, not an absence.
func Args(entry *tool.Entry, required map[string]bool, args json.RawMessage) ([]byte, []decision.Problem) {
	canon, decoded, err := canonical(args, required)
	if err != nil {
		return nil, []decision.Problem{{Location: "/args", Message: err.Error()}}
	}
	// The canonical form decodes to what canonical decoded: validated as
	// it is, the arguments are decoded once.
	if err := entry.Schema.ValidateDecoded(entry.Spec.Name, decoded, len(canon)); err != nil {
		var ae *tool.ArgsError
		if !errors.As(err, &ae) {
			return nil, []decision.Problem{{Location: "/args", Message: err.Error()}}
		}
		problems := make([]decision.Problem, len(ae.Problems))
		for i, p := range ae.Problems {
			problems[i] = decision.Problem{Location: "/args" + p.Location, Message: p.Message}
		}
		return nil, problems
	}
	return canon, nil
}

// Canonical re-encodes an arguments object with sorted keys, without null
// optional arguments (strict output spells "absent" as null), and with
// whole numbers written as integers ("limit": 2.0 becomes 2, which a tool
// decoding an int accepts), so equal proposals hash equally.
func Canonical(args json.RawMessage, required map[string]bool) ([]byte, error) {
	canon, _, err := canonical(args, required)
	return canon, err
}

// canonical is Canonical, with the object it encoded (nil for {}).
func canonical(args json.RawMessage, required map[string]bool) ([]byte, map[string]any, error) {
	if string(bytes.TrimSpace(args)) == "{}" { // most reads: nothing to re-encode
		return []byte("{}"), nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, nil, errors.New("arguments must be a JSON object")
	}
	for k, v := range m {
		if v == nil && !required[k] {
			delete(m, k)
			continue
		}
		m[k] = wholeNumbers(v)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), m, nil
}

// Hash identifies a tool call's content: the tool name and its canonical
// arguments.
func Hash(toolName string, canon []byte) string {
	h := sha256.New()
	h.Write([]byte(toolName))
	h.Write([]byte{0})
	h.Write(canon)
	return hex.EncodeToString(h.Sum(nil))
}

// wholeNumbers rewrites whole numbers written with a fraction or exponent
// (2.0, 5e1) as integers, at any depth, within the range every consumer
// holds exactly; the schema check refuses numbers beyond it.
func wholeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if !strings.ContainsAny(string(x), ".eE") {
			return x
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil || f != math.Trunc(f) || math.Abs(f) > tool.MaxExactInteger {
			return x
		}
		return json.Number(strconv.FormatInt(int64(f), 10))
	case []any:
		for i, e := range x {
			x[i] = wholeNumbers(e)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = wholeNumbers(e)
		}
	}
	return v
}
