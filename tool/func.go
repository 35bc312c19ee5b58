package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// Func makes a Tool of a Go function whose input is a struct: the input
// schema is derived from In (json tags name the fields; `jsonschema:"…"`
// tags describe them, either as the whole description or in the keyed
// style `jsonschema:"description=…,required"` — see functags.go; fields
// without omitempty are required), the
// arguments are decoded into In strictly, and what fn returns becomes the
// Result — Out as its data (a string as its text too; a Result as it
// is, StatusOK when it has no status), an error as
// StatusError with the error's text. spec.InputSchema, when set, is used
// instead of the derived one. fn must be safe for concurrent use.
//
//	shout := tool.Func(tool.Spec{Name: "shout", Policy: tool.Policy{Risk: tool.RiskRead}},
//		func(ctx context.Context, c tool.Call, in struct{ Text string `json:"text"` }) (string, error) {
//			return strings.ToUpper(in.Text), nil
//		})
func Func[In, Out any](spec Spec, fn func(ctx context.Context, c Call, in In) (Out, error)) (Tool, error) {
	if spec.Name == "" {
		return nil, errors.New("tool.Func: the spec has no name")
	}
	if len(spec.InputSchema) == 0 {
		s, err := schemaOf(reflect.TypeFor[In]())
		if err != nil {
			return nil, fmt.Errorf("tool %s: input schema of %T: %w", spec.Name, *new(In), err)
		}
		if spec.InputSchema, err = json.Marshal(s); err != nil {
			return nil, fmt.Errorf("tool %s: input schema: %w", spec.Name, err)
		}
	}
	if spec.Title == "" {
		spec.Title = spec.Name
	}
	return &funcTool[In, Out]{spec: spec, fn: fn}, nil
}

type funcTool[In, Out any] struct {
	spec Spec
	fn   func(ctx context.Context, c Call, in In) (Out, error)
}

func (f *funcTool[In, Out]) Spec() Spec { return f.spec }

// Call decodes the arguments and runs the function. Arguments that do not
// decode are a StatusError result, as is the function's error.
func (f *funcTool[In, Out]) Call(ctx context.Context, c Call) (Result, error) {
	var in In
	dec := json.NewDecoder(bytes.NewReader(c.Args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return Result{Status: StatusError, Error: "arguments: " + err.Error()}, nil
	}
	out, err := f.fn(ctx, c, in)
	if err != nil {
		return Result{Status: StatusError, Error: err.Error()}, nil
	}
	if r, ok := any(out).(Result); ok {
		if r.Status == "" {
			r.Status = StatusOK
		}
		return r, nil
	}
	data, err := json.Marshal(out)
	if err != nil {
		return Result{Status: StatusError, Error: "encode result: " + err.Error()}, nil
	}
	res := Result{Status: StatusOK, Data: data}
	if s, ok := any(out).(string); ok {
		res.Text = s
	}
	return res, nil
}
