// Package action turns an embedded tool's operations into tool.Tool
// values: a Def declares an operation and makes its tool.Spec, a Tool
// pairs a tool.Spec with the function that runs a call and refuses calls
// that name no tenant or user, and Policies applies a tool's configured
// confirmation overrides to its defaults.
//
// It holds no action of its own: names, schemas, texts and what each
// action does stay in the tool's package.
//
// Every function, type and method here is safe for concurrent use (a
// Tool's calls as far as its run function is).
package action

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/arbiterhq/arbiter/tool"
)

// Def declares one operation of a tool package. A Def is a value that is
// not changed after it is made; it is safe for concurrent use.
type Def struct {
	Title       string // tool.Spec.Title
	Titles      tool.Localized
	Doing       tool.Localized            // tool.Spec.Doing
	Labels      map[string]tool.Localized // tool.Spec.Labels
	Description string                    // tool.Spec.Description, what the model reads
	Risk        tool.Risk                 // tool.Spec.Risk
	Schema      string                    // the JSON Schema of the arguments
	MaxResult   int                       // tool.Spec.MaxResultBytes; 0 for the engine's default
}

// Spec is the tool.Spec of d named name with confirmation policy confirm.
// An operation that writes is declared idempotent: the tool packages
// apply each call's idempotency key at most once.
func (d Def) Spec(name string, confirm tool.Confirm) tool.Spec {
	return tool.Spec{
		Name:        name,
		Title:       d.Title,
		Titles:      d.Titles,
		Doing:       d.Doing,
		Labels:      d.Labels,
		Description: d.Description,
		InputSchema: json.RawMessage(d.Schema),
		Policy:      tool.Policy{Risk: d.Risk, Confirm: confirm, MaxResultBytes: d.MaxResult, Idempotent: d.Risk.Writes()},
	}
}

// Tool is one operation of a tool package as a tool.Tool. It is safe for
// concurrent use when its run function is.
type Tool struct {
	owner   string
	spec    tool.Spec
	run     func(ctx context.Context, call tool.Call) tool.Result
	preview func(ctx context.Context, call tool.Call) (tool.Preview, error)
}

var (
	_ tool.Tool      = (*Tool)(nil)
	_ tool.Previewer = (*Tool)(nil)
)

// New returns the Tool described by spec that runs calls with run. owner
// names the tool package in errors ("taskboard").
func New(owner string, spec tool.Spec, run func(ctx context.Context, call tool.Call) tool.Result) *Tool {
	return &Tool{owner: owner, spec: spec, run: run}
}

// WithPreview sets how the action resolves what a call would change
// (tool.Previewer); preview must only read, and return an error only when
// it could not look. It returns t.
func (t *Tool) WithPreview(preview func(ctx context.Context, call tool.Call) (tool.Preview, error)) *Tool {
	t.preview = preview
	return t
}

// Preview resolves what call would change; an action without a preview
// shows its arguments as given.
func (t *Tool) Preview(ctx context.Context, call tool.Call) (tool.Preview, error) {
	if t.preview == nil {
		return tool.Preview{}, nil
	}
	if call.Caller.TenantID == "" || call.Caller.UserID == "" {
		return tool.Preview{}, fmt.Errorf("%s %s: caller has no tenant or user id", t.owner, t.spec.Name)
	}
	return t.preview(ctx, call)
}

// Spec describes the action.
func (t *Tool) Spec() tool.Spec { return t.spec }

// Call runs the action for call.Caller's tenant. Every outcome of a call
// that ran, bad arguments and storage or service failures included, is a
// Result; the error is non-nil only when the call carries no tenant or
// user, which would leave the action unable to scope it.
func (t *Tool) Call(ctx context.Context, call tool.Call) (tool.Result, error) {
	if call.Caller.TenantID == "" || call.Caller.UserID == "" {
		return tool.Result{}, fmt.Errorf("%s %s: caller has no tenant or user id", t.owner, t.spec.Name)
	}
	return t.run(ctx, call), nil
}

// Policies returns defaults, the confirmation policy of each action by
// name, with overrides applied. It returns an error, prefixed with owner,
// for an override of an action that is not in defaults or a policy other
// than tool.ConfirmAlways and tool.ConfirmNever. defaults is not changed.
func Policies(owner string, defaults, overrides map[string]tool.Confirm) (map[string]tool.Confirm, error) {
	out := maps.Clone(defaults)
	for name, c := range overrides {
		if _, ok := out[name]; !ok {
			return nil, fmt.Errorf("%s: confirm override for unknown action %q", owner, name)
		}
		if c != tool.ConfirmAlways && c != tool.ConfirmNever {
			return nil, fmt.Errorf("%s: confirm override for %s: unknown policy %q (want never or always)", owner, name, c)
		}
		out[name] = c
	}
	return out, nil
}
