package gate

import (
	"context"
	"reflect"
	"strconv"
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
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry(fn)
	if err != nil {
		t.Fatal(err)
	}
	entry, _ := reg.Lookup("add_task")
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
