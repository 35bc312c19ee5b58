package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/tool"
)

type shoutIn struct {
	Text  string `json:"text" jsonschema:"the text to shout"`
	Times int    `json:"times,omitempty"`
}

func TestFunc(t *testing.T) {
	shout, err := tool.Func(tool.Spec{Name: "shout", Policy: tool.Policy{Risk: tool.RiskRead}}, func(_ context.Context, c tool.Call, in shoutIn) (string, error) {
		if in.Text == "" {
			return "", errors.New("nothing to shout")
		}
		return strings.Repeat(strings.ToUpper(in.Text), max(in.Times, 1)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry(shout)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := reg.Lookup("shout")
	var schema struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(e.Spec.InputSchema, &schema); err != nil || len(schema.Required) != 1 || schema.Required[0] != "text" ||
		!strings.Contains(string(schema.Properties["text"]), "the text to shout") {
		t.Errorf("derived schema = %s", e.Spec.InputSchema)
	}
	if err := e.Schema.Validate("shout", []byte(`{"times":2}`)); err == nil {
		t.Error("the schema accepts arguments without the required text")
	}
	call := func(args string) tool.Result {
		res, err := shout.Call(context.Background(), tool.Call{Args: json.RawMessage(args)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := call(`{"text":"abc","times":2}`); res.Status != tool.StatusOK || res.Text != "ABCABC" || string(res.Data) != `"ABCABC"` {
		t.Errorf("call = %+v", res)
	}
	if res := call(`{"text":""}`); res.Status != tool.StatusError || res.Error != "nothing to shout" {
		t.Errorf("failing call = %+v", res)
	}
	if res := call(`{"text":"a","volume":3}`); res.Status != tool.StatusError {
		t.Errorf("unknown argument = %+v", res)
	}
}
