package gate

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/decision"
	"github.com/arbiterhq/arbiter/tool"
)

func TestCanonical(t *testing.T) {
	tests := []struct {
		in, want string
		required []string
	}{
		{`{"b":1,"a":"x"}`, `{"a":"x","b":1}`, nil},
		{`{"title":"x","dueIso":null}`, `{"title":"x"}`, nil},
		{`{"title":null}`, `{"title":null}`, []string{"title"}},
		{`{"n":1.50,"big":12345678901234567890}`, `{"big":12345678901234567890,"n":1.50}`, nil},
		{`{"html":"<b>&"}`, `{"html":"<b>&"}`, nil},
		{`{"limit":2.0,"n":[5e1,-3.000],"o":{"x":1E0}}`, `{"limit":2,"n":[50,-3],"o":{"x":1}}`, nil},
		{`{"big":1e20,"huge":1e999}`, `{"big":1e20,"huge":1e999}`, nil}, // left for the schema check to refuse
	}
	for _, tc := range tests {
		req := map[string]bool{}
		for _, r := range tc.required {
			req[r] = true
		}
		got, err := Canonical([]byte(tc.in), req)
		if err != nil || string(got) != tc.want {
			t.Errorf("Canonical(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	if _, err := Canonical([]byte(`[1]`), nil); err == nil {
		t.Error("Canonical accepted an array")
	}
	if Hash("t", []byte(`{"a":1}`)) == Hash("t", []byte(`{"a":2}`)) || Hash("t", []byte(`{}`)) == Hash("u", []byte(`{}`)) {
		t.Error("Hash collides on different calls")
	}
}

// Whole numbers are written as integers up to tool.MaxExactInteger and
// left as written beyond it.
func TestWholeNumbersLimit(t *testing.T) {
	limit := strconv.FormatInt(tool.MaxExactInteger, 10)
	got, err := Canonical([]byte(`{"at":`+limit+`.0,"past":-`+limit+`0.0}`), nil)
	if want := `{"at":` + limit + `,"past":-` + limit + `0.0}`; err != nil || string(got) != want {
		t.Errorf("Canonical = %s, %v; want %s", got, err, want)
	}
}

// Args answers in canonical form what fits the schema, and with the
// schema's problems under /args what does not.
func TestArgs(t *testing.T) {
	type in struct {
		Title string `json:"title"`
		Limit int    `json:"limit,omitempty"`
	}
	fn, err := tool.Func(tool.Spec{Name: "add_task", Description: "add", Policy: tool.Policy{Risk: tool.RiskWriteSafe}},
		func(context.Context, tool.Call, in) (string, error) { return "", nil })
	entry := registered(t, fn, err)
	got, problems := Args(entry, nil, []byte(`{"limit":2.0,"title":"x"}`))
	if string(got) != `{"limit":2,"title":"x"}` || problems != nil {
		t.Errorf("valid: Args = %s, %v", got, problems)
	}
	got, problems = Args(entry, nil, []byte(`{"limit":"two"}`))
	if got != nil || len(problems) == 0 {
		t.Fatalf("invalid: Args = %s, %v; want problems", got, problems)
	}
	for _, p := range problems {
		if len(p.Location) < 5 || p.Location[:5] != "/args" || p.Message == "" {
			t.Errorf("problem %+v: want a location under /args and a message", p)
		}
	}
	_, problems = Args(entry, nil, []byte(`[1]`))
	if want := []decision.Problem{{Location: "/args", Message: "arguments must be a JSON object"}}; !reflect.DeepEqual(problems, want) {
		t.Errorf("not an object: problems %+v, want %+v", problems, want)
	}
}

// Args validates the object it decoded for the canonical form instead of
// decoding that form again: for every kind of argument, valid or not, it
// finds what validating the canonical text finds.
func TestArgsValidateWhatTheyEncode(t *testing.T) {
	schema := `{"type":"object","additionalProperties":false,"required":["title"],"properties":{
		"title":{"type":"string","minLength":1},"limit":{"type":"integer","minimum":1},
		"tags":{"type":"array","items":{"type":"string"}},"when":{"type":["string","null"]},
		"meta":{"type":"object","properties":{"n":{"type":"number"}}}}}`
	fn, err := tool.Func(tool.Spec{Name: "add_task", Description: "add", InputSchema: []byte(schema), Policy: tool.Policy{Risk: tool.RiskWriteSafe}},
		func(context.Context, tool.Call, map[string]any) (string, error) { return "", nil })
	entry := registered(t, fn, err)
	big := `{"title":"` + strings.Repeat("x", tool.DefaultMaxArgsBytes) + `"}`
	for _, args := range []string{
		`{"title":"x"}`, `{"title":"x","limit":2.0}`, `{"title":"x","limit":5e1}`, `{"title":""}`,
		`{"limit":3}`, `{"title":"x","extra":1}`, `{"title":"x","limit":"two"}`, `{"title":"x","limit":0}`,
		`{"title":"x","limit":1e999}`, `{"title":"x","limit":123456789012345678901234567890}`,
		`{"title":"x","tags":["a",2]}`, `{"title":"x","when":null}`, `{"title":null}`,
		`{"title":"x","meta":{"n":1.5e3}}`, `{"title":"x","meta":{"n":"1"}}`, `{"title":"<b>&\u00e9\ud83d\ude00"}`,
		`{}`, ` {} `, `{"title":"x"} trailing`, big,
	} {
		got, problems := Args(entry, map[string]bool{"title": true}, []byte(args))
		canon, cerr := Canonical([]byte(args), map[string]bool{"title": true})
		var want []decision.Problem
		if cerr == nil {
			if err := entry.Schema.Validate("add_task", canon); err != nil {
				var ae *tool.ArgsError
				if !errors.As(err, &ae) {
					t.Fatalf("%.60s: %v", args, err)
				}
				for _, p := range ae.Problems {
					want = append(want, decision.Problem{Location: "/args" + p.Location, Message: p.Message})
				}
			}
		}
		if cerr != nil || !reflect.DeepEqual(problems, want) || (want == nil && string(got) != string(canon)) {
			t.Errorf("%.60s: Args = %s, %+v; validating the canonical %s: %+v (%v)", args, got, problems, canon, want, cerr)
		}
	}
}

// registered is fn's entry in a registry of its own; err is fn's from
// tool.Func.
func registered(t *testing.T, fn tool.Tool, err error) *tool.Entry {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry(fn)
	if err != nil {
		t.Fatal(err)
	}
	entry, _ := reg.Lookup(fn.Spec().Name)
	return entry
}
