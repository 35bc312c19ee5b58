package openaicompat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/arbiterhq/arbiter/internal/jsonstr"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/internal/wire"
)

// Native tool calling: the tools member of a request and the tool_calls of
// an answer.

// emptyParameters is sent for a tool whose ToolDef.Parameters is empty.
const emptyParameters = `{"type":"object","properties":{}}`

// encodedTools returns the tools member for defs, encoded once per
// catalog.
//
// A catalog is found again by the address of its first element and its
// length (wire.ToolsKey), since callers pass the same []llm.ToolDef on
// every request. A hit is then checked against the names, descriptions
// and parameter documents the entry was encoded from (by identity, which
// is nearly free), so an array reused for other tools is encoded afresh.
// Changing the bytes of a Parameters document in place after its first
// use is not detected: treat a catalog as immutable once passed to
// Complete.
func (p *Provider) encodedTools(defs []llm.ToolDef) ([]byte, error) {
	return p.tools.Get(wire.ToolsKeyOf(defs),
		func(old []llm.ToolDef) bool { return sameCatalog(old, defs) },
		func() ([]llm.ToolDef, []byte, error) {
			enc, err := p.encodeTools(defs)
			if err != nil {
				return nil, nil, err
			}
			// A shallow copy, to detect a reused array.
			return append([]llm.ToolDef(nil), defs...), enc, nil
		})
}

// sameCatalog reports whether defs are the definitions old was copied
// from: the same names and descriptions, and the same parameter documents
// in memory. old and defs share a wire.ToolsKey, hence a length.
func sameCatalog(old, defs []llm.ToolDef) bool {
	for i := range defs {
		d, o := &defs[i], &old[i]
		if d.Name != o.Name || d.Description != o.Description || !sameBytes(d.Parameters, o.Parameters) {
			return false
		}
	}
	return true
}

// sameBytes reports whether a and b are the same slice of memory.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// encodeTools encodes a catalog as the tools member of a request:
// [{"type":"function","function":{"name","description","parameters"}}].
// A tool without a name, a duplicate name or parameters that are not a
// JSON object make it a bad_request.
func (p *Provider) encodeTools(defs []llm.ToolDef) ([]byte, error) {
	seen := make(map[string]bool, len(defs))
	var compact bytes.Buffer
	b := []byte{'['}
	for i := range defs {
		d := &defs[i]
		switch {
		case d.Name == "":
			return nil, p.newError(llm.ErrBadRequest, fmt.Sprintf("tool %d has no name", i), nil)
		case seen[d.Name]:
			return nil, p.newError(llm.ErrBadRequest, fmt.Sprintf("tool %q is defined twice", d.Name), nil)
		}
		seen[d.Name] = true
		params := []byte(emptyParameters)
		if len(bytes.TrimSpace(d.Parameters)) > 0 {
			compact.Reset()
			if err := json.Compact(&compact, d.Parameters); err != nil {
				return nil, p.newError(llm.ErrBadRequest, fmt.Sprintf("tool %q: parameters are not valid JSON: %v", d.Name, err), err)
			}
			if compact.Bytes()[0] != '{' {
				return nil, p.newError(llm.ErrBadRequest, fmt.Sprintf("tool %q: parameters are not a JSON object", d.Name), nil)
			}
			params = compact.Bytes()
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"function","function":{"name":`...)
		b = jsonstr.Append(b, d.Name)
		if d.Description != "" {
			b = append(b, `,"description":`...)
			b = jsonstr.Append(b, d.Description)
		}
		b = append(b, `,"parameters":`...)
		b = append(b, params...)
		b = append(b, "}}"...)
	}
	return append(b, ']'), nil
}

// wireToolCall is one element of an answer's message.tool_calls.
type wireToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string        `json:"name"`
		Arguments toolArguments `json:"arguments"`
	} `json:"function"`
}

// toolArguments decodes a tool call's arguments. The API sends them as a
// string holding JSON; some compatible servers send the JSON itself. The
// result is always one JSON value:
//
//   - a string holding valid JSON: that JSON, without surrounding space;
//   - a string that is not valid JSON (e.g. cut off by max_tokens): the
//     string itself as a JSON string value, so the caller's validation
//     rejects it rather than this package guessing;
//   - an empty or blank string, null or no arguments at all: {} (how some
//     servers express a call without arguments);
//   - any other JSON value: as sent.
type toolArguments json.RawMessage

func (a *toolArguments) UnmarshalJSON(data []byte) error {
	switch {
	case len(data) == 0 || data[0] == 'n':
		*a = nil
		return nil
	case data[0] != '"':
		*a = append(toolArguments(nil), data...)
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("tool call arguments: %w", err)
	}
	*a = argumentsOf(s, data)
	return nil
}

// argumentsOf is the JSON value of the arguments string s, as
// toolArguments.UnmarshalJSON says; quoted, if not nil, is s as the API
// encoded it, kept when s is not JSON.
func argumentsOf(s string, quoted []byte) toolArguments {
	switch t := strings.TrimSpace(s); {
	case t == "":
		return nil
	case json.Valid([]byte(t)):
		return toolArguments(t)
	case quoted != nil:
		return append(toolArguments(nil), quoted...)
	default:
		return toolArguments(jsonstr.Append(nil, s))
	}
}

// toolCalls converts an answer's tool calls.
func toolCalls(wire []wireToolCall) []llm.ToolCall {
	if len(wire) == 0 {
		return nil
	}
	calls := make([]llm.ToolCall, len(wire))
	for i := range wire {
		w := &wire[i]
		args := json.RawMessage(w.Function.Arguments)
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		calls[i] = llm.ToolCall{ID: w.ID, Name: w.Function.Name, Arguments: args}
	}
	return calls
}
