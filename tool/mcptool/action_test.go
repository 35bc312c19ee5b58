package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/mcptool"
)

func TestUntrustedServerShowsOnlyConfiguredTools(t *testing.T) {
	f := newFake(t)
	s := connect(t, f, mcptool.ServerConfig{Policy: mcptool.Policy{}})
	if n := len(s.Tools()); n != 0 {
		t.Fatalf("an untrusted server without entries shows %d tools", n)
	}
	for _, ti := range s.Catalog() {
		if ti.Hidden == "" {
			t.Errorf("%s is visible", ti.Name)
		}
	}
	s2 := connect(t, f, mcptool.ServerConfig{Name: "fake2", Policy: mcptool.Policy{Tools: map[string]mcptool.ToolPolicy{
		"echo": {Risk: tool.RiskRead},
	}}})
	tools := toolsByName(s2)
	if len(tools) != 1 || tools["fake2.echo"] == nil {
		t.Fatalf("configured tools = %v", keys(tools))
	}
	if sp := tools["fake2.echo"].Spec(); sp.Risk != tool.RiskRead || sp.Confirm != tool.ConfirmNever {
		t.Errorf("echo spec = %+v", sp)
	}
}

func TestGlobPolicyAndAnnotations(t *testing.T) {
	f := newFake(t)
	s := connect(t, f, mcptool.ServerConfig{Policy: mcptool.Policy{
		Tools: map[string]mcptool.ToolPolicy{
			"*":          {Risk: tool.RiskRead},
			"*-*":        {Risk: tool.RiskWriteSafe},
			"delete-*":   {Risk: tool.RiskWriteFull},
			"append-*":   {Hidden: true},
			"echo":       {Risk: tool.RiskWriteFull, Title: "Loud echo"}, // readOnlyHint is set; configuration wins
			"bad-output": {Confirm: tool.ConfirmAlways},
			"fail":       {}, // no risk: defaults + annotations
		},
	}})
	specs := map[string]tool.Spec{}
	for _, tl := range s.Tools() {
		specs[tl.Spec().Name] = tl.Spec()
	}
	cases := []struct {
		name    string
		risk    tool.Risk
		confirm tool.Confirm
	}{
		{"fake.echo", tool.RiskWriteFull, tool.ConfirmAlways},       // readOnlyHint never lowers a configured risk
		{"fake.add", tool.RiskRead, tool.ConfirmNever},              // "*"
		{"fake.delete-all", tool.RiskWriteFull, tool.ConfirmAlways}, // "delete-*" beats "*-*"
		// An exact entry governs alone: bad-output's sets no risk, so the
		// default (write:full) applies and "*-*" is not consulted.
		{"fake.bad-output", tool.RiskWriteFull, tool.ConfirmAlways},
		{"fake.fail", tool.RiskWriteFull, tool.ConfirmAlways}, // unset risk: default write:full
	}
	for _, c := range cases {
		sp, ok := specs[c.name]
		if !ok {
			t.Errorf("%s missing; have %v", c.name, keys(specs))
			continue
		}
		if sp.Risk != c.risk || sp.Confirm != c.confirm {
			t.Errorf("%s = %s/%s, want %s/%s", c.name, sp.Risk, sp.Confirm, c.risk, c.confirm)
		}
	}
	if specs["fake.echo"].Title != "Loud echo" {
		t.Errorf("echo title = %q", specs["fake.echo"].Title)
	}
	if _, ok := specs["fake.append-note"]; ok {
		t.Error("append-note should be hidden by its entry")
	}
	if _, ok := specs["fake.get-env"]; ok {
		t.Error("get-env must not be shown by a glob")
	}
	// Naming get-env exactly shows it.
	s2 := connect(t, f, mcptool.ServerConfig{Name: "f2", Policy: mcptool.Policy{Tools: map[string]mcptool.ToolPolicy{"get-env": {Risk: tool.RiskRead}}}})
	if _, ok := toolsByName(s2)["f2.get-env"]; !ok {
		t.Error("get-env configured by its exact name should be visible")
	}
}

func TestActionResolves(t *testing.T) {
	f := newFake(t)
	s := connect(t, f, mcptool.ServerConfig{Policy: mcptool.Policy{Trusted: true, DefaultRisk: tool.RiskRead,
		Tools: map[string]mcptool.ToolPolicy{
			"delete-all": {Roles: []string{"owner"}, Title: "Delete every record"},
		}}})
	a, err := mcptool.NewAction(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tool.NewRegistry(a); err != nil {
		t.Fatalf("the action does not register: %v", err)
	}
	owner := tool.Caller{TenantID: "t", UserID: "u", Role: "owner"}
	manager := tool.Caller{TenantID: "t", UserID: "m", Role: "manager"}
	ctx := context.Background()

	spec, err := a.Resolve(ctx, owner, json.RawMessage(`{"server":"fake","tool":"delete-all","args":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	if spec.Name != "mcp:fake/delete-all" || spec.Risk != tool.RiskWriteFull || spec.Confirm != tool.ConfirmAlways || spec.Title != "Delete every record" {
		t.Errorf("resolved delete-all = %+v", spec)
	}
	if _, err := a.Resolve(ctx, manager, json.RawMessage(`{"server":"fake","tool":"delete-all"}`)); !errors.Is(err, mcptool.ErrNotPermitted) {
		t.Errorf("manager resolved delete-all: %v", err)
	}
	spec, err = a.Resolve(ctx, manager, json.RawMessage(`{"server":"fake","tool":"echo","args":{"message":"hi"}}`))
	if err != nil || spec.Name != "mcp:fake/echo" || spec.Risk != tool.RiskRead || spec.Confirm != tool.ConfirmNever {
		t.Errorf("resolved echo = %+v, %v", spec, err)
	}
	// The mapped name works too and resolves to the same spec name.
	if spec, err := a.Resolve(ctx, owner, json.RawMessage(`{"server":"fake","tool":"say_it_loud"}`)); err != nil || spec.Name != "mcp:fake/say_it_loud" {
		t.Errorf("mapped name = %+v, %v", spec, err)
	}

	// Invalid inner arguments: an ArgsError located under /args, and no call.
	_, err = a.Resolve(ctx, owner, json.RawMessage(`{"server":"fake","tool":"add","args":{"a":"1","b":2}}`))
	var ae *tool.ArgsError
	if !errors.As(err, &ae) || ae.Tool != "mcp:fake/add" || ae.Problems[0].Location != "/args/a" {
		t.Fatalf("invalid inner args = %v", err)
	}
	res := call(t, a, `{"server":"fake","tool":"add","args":{"a":"1","b":2}}`)
	if res.Status != tool.StatusError || f.count("add") != 0 {
		t.Fatalf("invalid inner args reached the server: %+v", res)
	}

	for _, bad := range []string{
		`{"server":"nope","tool":"echo"}`,
		`{"server":"fake","tool":"nope"}`,
		`{"server":"fake","tool":"get-env"}`,
		`{"server":"fake","tool":"echo","extra":1}`,
	} {
		if _, err := a.Resolve(ctx, owner, json.RawMessage(bad)); err == nil {
			t.Errorf("Resolve(%s) succeeded", bad)
		}
		if res := call(t, a, bad); res.Status != tool.StatusError {
			t.Errorf("Call(%s) = %+v", bad, res)
		}
	}
	if f.count("get-env") != 0 {
		t.Fatal("a hidden tool was called")
	}

	res = call(t, a, `{"server":"fake","tool":"add","args":{"a":2,"b":3}}`)
	if res.Status != tool.StatusOK || res.Text != "5" || res.Source != "mcp:fake/add" {
		t.Errorf("add through the action = %+v", res)
	}
	res, _ = a.Call(ctx, tool.Call{Caller: manager, Args: json.RawMessage(`{"server":"fake","tool":"delete-all"}`)})
	if res.Status != tool.StatusError || f.count("delete-all") != 0 {
		t.Errorf("manager ran delete-all: %+v", res)
	}
}

func TestActionLiveContext(t *testing.T) {
	f := newFake(t)
	s := connect(t, f, mcptool.ServerConfig{Policy: mcptool.Policy{Trusted: true, DefaultRisk: tool.RiskRead,
		Tools: map[string]mcptool.ToolPolicy{"delete-all": {Roles: []string{"owner"}}}}})
	a, _ := mcptool.NewAction(s)
	secs, err := a.LiveContext(context.Background(), tool.Caller{Role: "manager"}, time.Now())
	if err != nil || len(secs) != 1 {
		t.Fatalf("live context = %v, %v", secs, err)
	}
	all := strings.Join(secs[0].Lines, "\n")
	if !strings.Contains(all, "server=fake tool=add") || !strings.Contains(all, "a: number (required)") {
		t.Errorf("live context lacks add:\n%s", all)
	}
	if strings.Contains(all, "delete-all") || strings.Contains(all, "get-env") {
		t.Errorf("live context shows a tool the caller may not run:\n%s", all)
	}
}

func TestServerToolRefusesRoleAndStricterChange(t *testing.T) {
	f := newFake(t)
	s := connect(t, f, mcptool.ServerConfig{Policy: mcptool.Policy{Trusted: true, DefaultRisk: tool.RiskRead,
		Tools: map[string]mcptool.ToolPolicy{"echo": {Roles: []string{"owner"}}}}})
	echo := toolsByName(s)["fake.echo"].(tool.Resolver)
	if _, err := echo.Resolve(context.Background(), tool.Caller{Role: "guest"}, json.RawMessage(`{"message":"x"}`)); !errors.Is(err, mcptool.ErrNotPermitted) {
		t.Errorf("guest resolved echo: %v", err)
	}
	if spec, err := echo.Resolve(context.Background(), tool.Caller{Role: "owner"}, json.RawMessage(`{"message":"x"}`)); err != nil || spec.Name != "fake.echo" {
		t.Errorf("owner resolved echo: %+v, %v", spec, err)
	}
}

func TestConnectRejectsBadConfig(t *testing.T) {
	ctx := context.Background()
	for name, cfg := range map[string]mcptool.ServerConfig{
		"bad name":          {Name: "1bad", Command: "x"},
		"dotted name":       {Name: "a.b", Command: "x"},
		"no transport":      {Name: "a"},
		"two transports":    {Name: "a", Command: "x", URL: "https://h/mcp"},
		"bearer over http":  {Name: "a", URL: "http://example.com/mcp", BearerToken: "t"},
		"creds in url":      {Name: "a", URL: "https://u:p@example.com/mcp"},
		"reserved header":   {Name: "a", URL: "https://example.com/mcp", Headers: map[string]string{"mcp-session-id": "x"}},
		"bad risk":          {Name: "a", Command: "x", Policy: mcptool.Policy{DefaultRisk: "admin"}},
		"bad entry confirm": {Name: "a", Command: "x", Policy: mcptool.Policy{Tools: map[string]mcptool.ToolPolicy{"*": {Confirm: "maybe"}}}},
		"bad rate":          {Name: "a", Command: "x", RateLimits: mcptool.RateLimits{PerUser: mcptool.Rate{Calls: 1}}},
	} {
		if _, err := mcptool.Connect(ctx, cfg); err == nil {
			t.Errorf("%s: Connect accepted %+v", name, cfg)
		}
	}
}
