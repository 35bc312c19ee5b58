package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/arbiterhq/arbiter/tool"
)

// A Go function with a struct input becomes a tool: the input schema comes
// from the struct's tags, the arguments are decoded strictly, and the
// function's answer or error becomes the Result. (The engine checks the
// arguments against the schema before it calls a tool; Call itself only
// decodes them.)
func ExampleFunc() {
	shout, err := tool.Func(tool.Spec{Name: "shout", Description: "Upper-case a text.", Policy: tool.Policy{Risk: tool.RiskRead}},
		func(_ context.Context, _ tool.Call, in struct {
			Text  string `json:"text" jsonschema:"the text to shout"`
			Marks int    `json:"marks,omitempty" jsonschema:"description=how many exclamation marks,maximum=3"`
		}) (string, error) {
			if in.Text == "" {
				return "", errors.New("nothing to shout")
			}
			return strings.ToUpper(in.Text) + strings.Repeat("!", in.Marks), nil
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(shout.Spec().InputSchema))

	for _, args := range []string{`{"text":"hello","marks":2}`, `{"text":""}`, `{"txt":"hello"}`} {
		res, err := shout.Call(context.Background(), tool.Call{Args: json.RawMessage(args)})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %s %q %q\n", args, res.Status, res.Text, res.Error)
	}
	// Output:
	// {"type":"object","properties":{"text":{"type":"string","description":"the text to shout"},"marks":{"type":"integer","description":"how many exclamation marks","maximum":3}},"required":["text"],"additionalProperties":false}
	// {"text":"hello","marks":2}: ok "HELLO!!" ""
	// {"text":""}: error "" "nothing to shout"
	// {"txt":"hello"}: error "" "arguments: json: unknown field \"txt\""
}
