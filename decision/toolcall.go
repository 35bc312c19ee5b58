package decision

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ToolCall is one native tool call as a model returned it.
type ToolCall struct {
	Name      string
	Arguments json.RawMessage
}

// FromToolCalls maps an answer of the tools protocol onto a Decision: the
// text is what to say and one tool call is the proposal. An answer without
// a call is a plain reply: nothing runs. More than one call, arguments that
// are not a JSON object, or an answer with neither text nor call is a
// contract problem (a *ParseError, so the engine asks for a repair). The
// tool name is mapped onto allowed as Parse does.
func FromToolCalls(text string, calls []ToolCall, allowed []string) (Decision, error) {
	d := Decision{Say: truncateRunes(strings.TrimSpace(text), MaxSayRunes), Args: json.RawMessage("{}")}
	switch len(calls) {
	case 0:
		if d.Say == "" {
			return Decision{}, fail("", "the answer has neither text nor a tool call")
		}
		return d, nil
	case 1:
	default:
		return Decision{}, fail("", "the answer has %d tool calls; call at most one tool per answer", len(calls))
	}
	c := calls[0]
	d.Tool, d.UnknownTool = mapTool(c.Name, allowed)
	if d.Tool == "" {
		return Decision{}, fail("/tool", "the tool call has no name")
	}
	raw := bytes.TrimSpace(c.Arguments)
	if len(raw) == 0 || string(raw) == "null" {
		return d, nil
	}
	if !json.Valid(raw) {
		return Decision{}, fail("/args", "the arguments are not valid JSON")
	}
	args, err := coerceArgs(raw)
	var pe *ParseError
	switch {
	case errors.As(err, &pe):
		for i := range pe.Problems {
			pe.Problems[i].Location = "/args" + pe.Problems[i].Location
		}
		return Decision{}, pe
	case err != nil:
		return Decision{}, fail("/args", "%s", err.Error())
	}
	if err := checkDuplicateKeys(args); err != nil {
		errors.As(err, &pe)
		for i := range pe.Problems {
			pe.Problems[i].Location = "/args" + pe.Problems[i].Location
		}
		return Decision{}, pe
	}
	d.Args = args
	return d, nil
}

// DescribeToolCalls renders calls as text, for repeating a broken answer
// back to the model in a repair request.
func DescribeToolCalls(text string, calls []ToolCall) string {
	var b strings.Builder
	b.WriteString(text)
	for _, c := range calls {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "[tool call %s %s]", c.Name, c.Arguments)
	}
	return b.String()
}
