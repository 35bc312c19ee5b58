package gate

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/tool"
)

// claimsRegistry registers one tool a spec each, doing nothing.
func claimsRegistry(t *testing.T, specs ...tool.Spec) *tool.Registry {
	t.Helper()
	var tools []tool.Tool
	for _, spec := range specs {
		spec.Description = "test"
		fn, err := tool.Func(spec, func(context.Context, tool.Call, struct{}) (string, error) { return "", nil })
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, fn)
	}
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func outcomes(risk tool.Risk, o ...tool.Outcome) tool.Policy {
	return tool.Policy{Risk: risk, Outcomes: o}
}

// An outcome the engine does not know needs patterns, one no tool
// confirms must be one it knows — unless a tool declares it after all —
// and a broken pattern is refused with the compiler's reason.
func TestCompileClaims(t *testing.T) {
	cases := []struct {
		outcome       tool.Outcome
		unconfirmable []string
		want          string // "" for none
	}{
		{tool.Outcome{Name: "ticket_closed"}, nil, `tool close_ticket: outcome "ticket_closed" is not one the engine knows (access_restored,`},
		{tool.Outcome{Name: "ticket_closed", Patterns: []string{"... closed"}}, nil, "a gap must stand between two words"},
		{tool.Outcome{Name: "refund_done"}, []string{"ticket_closed"}, `unconfirmable outcome "ticket_closed" is not one the engine knows (access_restored,`},
		{tool.Outcome{Name: "ticket_closed", Patterns: []string{"ticket* ... closed"}}, []string{"ticket_closed"}, ""},
		{tool.Outcome{Name: "refund_done"}, []string{"access_restored"}, ""},
	}
	for _, c := range cases {
		reg := claimsRegistry(t, tool.Spec{Name: "close_ticket", Policy: outcomes(tool.RiskWriteSafe, c.outcome)})
		_, err := CompileClaims(reg, c.unconfirmable)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v, unconfirmable %v: err %v, want %q", c.outcome, c.unconfirmable, err, c.want)
		}
	}
}

// What a reply asserts is sent only as the turn's successful calls
// confirm it: a confirming tool's call, with the fields its outcome
// names (a dotted path into the result), and general words of completion
// only while no write of the turn is open.
func TestUnconfirmed(t *testing.T) {
	reg := claimsRegistry(t,
		tool.Spec{Name: "get_subscription", Policy: outcomes(tool.RiskRead, tool.Outcome{Name: "subscription_active", When: map[string]string{"plan.status": "active", "n": "2"}})},
		tool.Spec{Name: "refund", Policy: outcomes(tool.RiskWriteFull, tool.Outcome{Name: "refund_done"})},
		tool.Spec{Name: "refund_v2", Policy: outcomes(tool.RiskWriteFull, tool.Outcome{Name: "refund_done"})},
		tool.Spec{Name: "reopen", Policy: tool.Policy{Risk: tool.RiskWriteSafe, Claims: []string{"*Ticket* | reopened."}}},
	)
	c, err := CompileClaims(reg, []string{"access_restored"})
	if err != nil {
		t.Fatal(err)
	}
	active := Done{Tool: "get_subscription", Data: json.RawMessage(`{"plan":{"status":"active"},"n":2}`)}
	cases := []struct {
		name  string
		reply string
		done  []Done
		open  string
		want  string // a part of the answer; "" for none
	}{
		{"confirmed as answered", "Your subscription is active.", []Done{active}, "", ""},
		{"answered otherwise", "Your subscription is active.", []Done{{Tool: "get_subscription", Data: json.RawMessage(`{"plan":{"status":"paused"},"n":2}`)}}, "",
			"the reply asserts subscription_active, but no call of get_subscription confirmed it"},
		{"a field missing", "Your subscription is active.", []Done{{Tool: "get_subscription", Data: json.RawMessage(`{"plan":"active","n":2}`)}}, "", "subscription_active"},
		{"a null field", "Your subscription is active.", []Done{{Tool: "get_subscription", Data: json.RawMessage(`{"plan":{"status":null},"n":2}`)}}, "", "subscription_active"},
		{"a result not JSON", "Your subscription is active.", []Done{{Tool: "get_subscription", Data: json.RawMessage(`active`)}, active}, "", ""},
		{"another tool's call", "Your subscription is active.", []Done{{Tool: "refund", Data: active.Data}}, "", "subscription_active"},
		{"any of the confirming tools", "The refund was issued.", []Done{{Tool: "refund_v2"}}, "", ""},
		{"none of them called", "The refund was issued.", nil, "", "the reply asserts refund_done, but no call of refund or refund_v2 confirmed it"},
		{"an outcome no tool confirms", "Your access is restored.", []Done{active}, "", "the reply asserts access_restored, but no tool here confirms it"},
		{"a declared phrase", "Ticket reopened.", nil, "", "the reply asserts claim: Ticket reopened, but no call of reopen confirmed it"},
		{"done while a write is open", "Done!", nil, "the write of refund is proposed", "the reply says it is done (done), but the write of refund is proposed"},
		{"done with nothing open", "Done!", nil, "", ""},
		{"nothing asserted", "I will look into it.", nil, "the write of refund is proposed", ""},
	}
	for _, tc := range cases {
		asked := 0
		got := c.Unconfirmed(tc.reply, func() []Done { asked++; return tc.done }, func() string { return tc.open })
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: Unconfirmed(%q) = %q, want %q", tc.name, tc.reply, got, tc.want)
		}
		if asked > 1 {
			t.Errorf("%s: the turn's calls were listed %d times", tc.name, asked)
		}
	}
}

// A reply that asserts nothing asks nothing of the turn.
func TestUnconfirmedAsksOnlyWhenAsserted(t *testing.T) {
	c, err := CompileClaims(claimsRegistry(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ask := func() []Done { t.Error("the calls were listed"); return nil }
	open := func() string { t.Error("the open writes were asked"); return "" }
	if got := c.Unconfirmed("Hello! How can I help?", ask, open); got != "" {
		t.Errorf("Unconfirmed = %q", got)
	}
	if got := (*Claims)(nil).Unconfirmed("Done! The refund was issued.", ask, open); got != "" {
		t.Errorf("no claims: Unconfirmed = %q", got)
	}
}

func TestPhrasePattern(t *testing.T) {
	for in, want := range map[string]string{"*Ticket* | reopened.": "Ticket reopened", "  a  ~b~ ": "a b", "*.|~": ""} {
		if got := phrasePattern(in); got != want {
			t.Errorf("phrasePattern(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJSONField(t *testing.T) {
	var v any
	if err := json.Unmarshal([]byte(`{"a":{"b":1.5,"c":null,"d":[1]},"e":"x"}`), &v); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"a.b": "1.5", "e": "x", "a.c": "", "a.x": "", "e.f": "", "a.d.0": "", "": ""} {
		if got := jsonField(v, path); got != want {
			t.Errorf("jsonField(%q) = %q, want %q", path, got, want)
		}
	}
}
