// Package tooltest is the conformance suite for tool implementations, on
// the model of store/storetest: Run takes a tool set and cases of
// arguments its schemas must accept or refuse, and checks what the engine
// relies on — specs that register (names, compiling schemas, valid risk
// and confirmation policy, a title and a description a user and a model
// can read), and calls that never turn a bad input into a Go error or a
// panic. Named and Call are the helpers a tool's own tests need.
package tooltest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/tool"
)

// Case is one argument document for a tool's schema.
type Case struct {
	Tool   string
	Args   string
	Accept bool
}

// Caller is the caller Run's calls run for.
var Caller = tool.Caller{TenantID: "tooltest", UserID: "u1", Name: "Tool Test", Language: "en", Timezone: "UTC"}

// The team the tools' own tests call for: two members of tenant acme, one
// writing Russian in Moscow and one English, and a member of another
// tenant, globex, with the same user id as Dmitry.
var (
	Dmitry = tool.Caller{TenantID: "acme", UserID: "u1", Name: "Дмитрий Иванов", Language: "ru", Timezone: "Europe/Moscow"}
	Olga   = tool.Caller{TenantID: "acme", UserID: "u3", Name: "Ольга Смирнова", Language: "en"}
	Hank   = tool.Caller{TenantID: "globex", UserID: "u1", Name: "Hank Scorpio", Language: "en"}
)

// Run checks tools against the contract and each case against its
// tool's schema.
func Run(t *testing.T, tools []tool.Tool, cases []Case) {
	t.Helper()
	if len(tools) == 0 {
		t.Fatal("no tools")
	}
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatalf("the tools do not register: %v", err)
	}
	for _, tl := range tools {
		s := tl.Spec()
		switch {
		case s.Title == "" || s.Description == "":
			t.Errorf("%s: a title and a description are required", s.Name)
		case !s.Risk.Valid():
			t.Errorf("%s: risk %q", s.Name, s.Risk)
		case s.Confirm != "" && s.Confirm != tool.ConfirmAlways && s.Confirm != tool.ConfirmNever:
			t.Errorf("%s: confirm policy %q", s.Name, s.Confirm)
		}
		// Arguments that are not even JSON are the tool's to refuse with a
		// result: only "could not run" is a Go error.
		for _, bad := range []string{`{`, `[]`, `{"\u0000":1e999}`} {
			res, err := Call(t.Context(), tl, Caller, "", bad)
			if err != nil || res.Status == "" {
				t.Errorf("%s with %s: result %+v, error %v; want a result that refuses it", s.Name, bad, res, err)
			}
		}
	}
	for _, c := range cases {
		e, ok := reg.Lookup(c.Tool)
		if !ok {
			t.Errorf("no tool %s for case %.80s", c.Tool, c.Args)
			continue
		}
		err := e.Schema.Validate(c.Tool, []byte(c.Args))
		if c.Accept && err != nil {
			t.Errorf("%s rejects %.80s: %v", c.Tool, c.Args, err)
		}
		if !c.Accept && err == nil {
			t.Errorf("%s accepts %.80s", c.Tool, c.Args)
		}
	}
}

// Named returns the tool of tools named name, failing the test without one.
func Named(t testing.TB, tools []tool.Tool, name string) tool.Tool {
	t.Helper()
	for _, tl := range tools {
		if tl.Spec().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

// Call calls tl for caller with idempotency key and args, at the time the
// context gives no other (time.Now).
func Call(ctx context.Context, tl tool.Tool, caller tool.Caller, key, args string) (tool.Result, error) {
	return tl.Call(ctx, tool.Call{Caller: caller, Args: json.RawMessage(args), IdempotencyKey: key, Now: time.Now()})
}

// MustCall is Call at now, failing the test on a Go error.
func MustCall(t testing.TB, tl tool.Tool, caller tool.Caller, key, args string, now time.Time) tool.Result {
	t.Helper()
	res, err := tl.Call(context.Background(), tool.Call{Caller: caller, Args: json.RawMessage(args), IdempotencyKey: key, Now: now})
	if err != nil {
		t.Fatalf("%s %.80s: %v", tl.Spec().Name, args, err)
	}
	return res
}

// Data decodes res.Data as a T, failing the test if it does not decode.
func Data[T any](t testing.TB, res tool.Result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(res.Data, &v); err != nil {
		t.Fatalf("result data %s: %v", res.Data, err)
	}
	return v
}

// WantStatus fails the test unless res has status want.
func WantStatus(t testing.TB, res tool.Result, want tool.Status) {
	t.Helper()
	if res.Status != want {
		t.Fatalf("status %s, want %s: %+v", res.Status, want, res)
	}
}

// Accepts is the case of args that tool's schema must accept.
func Accepts(tool, args string) Case { return Case{Tool: tool, Args: args, Accept: true} }

// Refuses is the case of args that tool's schema must refuse.
func Refuses(tool, args string) Case { return Case{Tool: tool, Args: args} }
