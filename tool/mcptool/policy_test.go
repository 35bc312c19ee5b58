package mcptool

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbiterhq/arbiter/tool"
)

func bp(b bool) *bool { return &b }

func TestDecide(t *testing.T) {
	ro := hints{present: true, readOnly: true, destructive: bp(false), openWorld: bp(false)}
	additive := hints{present: true, destructive: bp(false), openWorld: bp(false)}
	external := hints{present: true, destructive: bp(false), openWorld: bp(true)}
	destructive := hints{present: true, destructive: bp(true), openWorld: bp(false)}
	none := hints{}
	trustedRead := Policy{Trusted: true, DefaultRisk: tool.RiskRead, DefaultConfirm: tool.ConfirmNever}
	cases := []struct {
		name    string
		p       Policy
		tool    string
		h       hints
		hidden  bool
		risk    tool.Risk
		confirm tool.Confirm
	}{
		{"zero policy hides", Policy{}, "echo", ro, true, "", ""},
		{"trusted zero defaults are strict", Policy{Trusted: true}, "echo", ro, false, tool.RiskWriteFull, tool.ConfirmAlways},
		{"read-only hint keeps the default", trustedRead, "echo", ro, false, tool.RiskRead, tool.ConfirmNever},
		{"no annotations read as destructive", trustedRead, "x", none, false, tool.RiskWriteFull, tool.ConfirmAlways},
		{"additive closed-world is write:safe", trustedRead, "x", additive, false, tool.RiskWriteSafe, tool.ConfirmNever},
		{"open-world write is write:full", trustedRead, "x", external, false, tool.RiskWriteFull, tool.ConfirmAlways},
		{"destructive is write:full", trustedRead, "x", destructive, false, tool.RiskWriteFull, tool.ConfirmAlways},
		{"configured risk beats destructive hint", Policy{Tools: map[string]ToolPolicy{"x": {Risk: tool.RiskRead}}}, "x", destructive, false, tool.RiskRead, tool.ConfirmNever},
		{"configured risk beats read-only hint", Policy{Tools: map[string]ToolPolicy{"x": {Risk: tool.RiskWriteFull}}}, "x", ro, false, tool.RiskWriteFull, tool.ConfirmAlways},
		{"configured confirm never is final", Policy{Tools: map[string]ToolPolicy{"x": {Risk: tool.RiskWriteFull, Confirm: tool.ConfirmNever}}}, "x", destructive, false, tool.RiskWriteFull, tool.ConfirmNever},
		{"hint forces confirm over default never", Policy{Trusted: true, DefaultRisk: tool.RiskWriteFull, DefaultConfirm: tool.ConfirmNever}, "x", destructive, false, tool.RiskWriteFull, tool.ConfirmAlways},
		{"default never stays for read-only", Policy{Trusted: true, DefaultRisk: tool.RiskWriteFull, DefaultConfirm: tool.ConfirmNever}, "x", ro, false, tool.RiskWriteFull, tool.ConfirmNever},
		{"hidden entry", Policy{Trusted: true, Tools: map[string]ToolPolicy{"x*": {Hidden: true}}}, "xy", ro, true, "", ""},
		{"glob shows on untrusted", Policy{Tools: map[string]ToolPolicy{"get-*": {Risk: tool.RiskRead}}}, "get-sum", ro, false, tool.RiskRead, tool.ConfirmNever},
		{"glob never shows env", Policy{Tools: map[string]ToolPolicy{"get-*": {Risk: tool.RiskRead}}}, "get-env", ro, true, "", ""},
		{"trusted never shows env", trustedRead, "printEnv", ro, true, "", ""},
		{"exact name shows env", Policy{Tools: map[string]ToolPolicy{"get-env": {Risk: tool.RiskRead}}}, "get-env", ro, false, tool.RiskRead, tool.ConfirmNever},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := c.p.decide(c.tool, c.h)
			if (d.hidden != "") != c.hidden {
				t.Fatalf("hidden = %q, want %v", d.hidden, c.hidden)
			}
			if c.hidden {
				return
			}
			if d.risk != c.risk || d.confirm != c.confirm {
				t.Errorf("got %s/%s, want %s/%s", d.risk, d.confirm, c.risk, c.confirm)
			}
		})
	}
}

func TestMatchPrecedence(t *testing.T) {
	p := Policy{Tools: map[string]ToolPolicy{
		"*":        {Title: "any"},
		"get-*":    {Title: "get"},
		"get-s*":   {Title: "get-s"},
		"get-sum":  {Title: "exact"},
		"?et-*":    {Title: "q"},
		"*-*-*":    {Title: "three"},
		"b*":       {Title: "b-star"},
		"*z":       {Title: "star-z"},
		"a?c":      {Title: "a-q-c"},
		"list_all": {Title: "list"},
	}}
	for name, want := range map[string]string{
		"get-sum":     "exact",
		"get-sugar":   "get-s",
		"get-tiny":    "get",
		"set-x":       "q",
		"echo":        "any",
		"a-b-c":       "three",
		"bz":          "star-z", // equal literal counts: the lexically smaller pattern ("*z" < "b*")
		"abc":         "a-q-c",
		"list_all":    "list",
		"list_allx":   "any",
		"":            "any",
		"über-wide-x": "three",
	} {
		if tp, _, ok := p.match(name); !ok || tp.Title != want {
			t.Errorf("match(%q) = %q, want %q", name, tp.Title, want)
		}
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		p, s string
		ok   bool
	}{
		{"*", "", true}, {"*", "abc", true}, {"a*", "a", true}, {"a*c", "abbbc", true}, {"a*c", "abcd", false},
		{"?", "é", true}, {"??", "é", false}, {"*a*b*", "xxaxxbxx", true}, {"*a*b*", "xxbxxaxx", false},
		{"get-*", "get-", true}, {"get-*", "get", false}, {"a/b", "a/b", true},
	} {
		if got := globMatch(c.p, c.s); got != c.ok {
			t.Errorf("globMatch(%q, %q) = %v", c.p, c.s, got)
		}
	}
}

func TestSensitiveName(t *testing.T) {
	for name, want := range map[string]bool{
		"get-env": true, "printEnv": true, "print_env": true, "env": true, "GET_ENVIRONMENT": true,
		"read-secrets": true, "listCredentials": true, "getenv": true,
		"inventory": false, "get-sum": false, "envelope-send": false, "seven": false, "echo": false,
	} {
		if got := sensitiveName(name); got != want {
			t.Errorf("sensitiveName(%q) = %v", name, got)
		}
	}
}

func TestMapNameAndCollisions(t *testing.T) {
	if got := mapName("say it/loud!"); got != "say_it_loud_" {
		t.Errorf("mapName = %q", got)
	}
	long := strings.Repeat("x", 80)
	cfg := ServerConfig{Name: "srv", Policy: Policy{Trusted: true, DefaultRisk: tool.RiskRead}, MaxResultBytes: 100}
	schema := map[string]any{"type": "object"}
	c := buildCatalog(cfg, toolsNamed(schema, "a b", "a_b", long, long+"y", "ok"))
	names := map[string]bool{}
	for _, tg := range c.targets {
		if len(tg.spec.Name) > 64 || !strings.HasPrefix(tg.spec.Name, "srv.") {
			t.Errorf("bad exposed name %q", tg.spec.Name)
		}
		if names[tg.spec.Name] || names[tg.info.Resolved] {
			t.Errorf("duplicate name %q / %q", tg.spec.Name, tg.info.Resolved)
		}
		names[tg.spec.Name], names[tg.info.Resolved] = true, true
	}
	if len(c.targets) != 5 {
		t.Fatalf("targets = %d", len(c.targets))
	}
	if tg, ok := c.lookup("a_b"); !ok || tg.info.Name != "a_b" {
		t.Errorf("lookup of an exact name found %+v", tg)
	}
	if _, err := tool.NewRegistry(toolsOf(c)...); err != nil {
		t.Errorf("registry: %v", err)
	}
}

func TestCapData(t *testing.T) {
	d := resultData{Server: "s", Tool: "t", Content: []contentItem{{Type: "text", Text: strings.Repeat("ü\"<", 3000)}},
		Progress: []progressEntry{{Progress: 1}, {Progress: 2}}, Audit: auditData{Outcome: "ok"}}
	for _, limit := range []int{300, 1000, 5000} {
		b := capData(d, limit)
		if len(b) > limit {
			t.Errorf("limit %d: %d bytes", limit, len(b))
		}
		var got resultData
		if err := json.Unmarshal(b, &got); err != nil || !got.Truncated || got.Text == "" || !strings.HasPrefix(d.Content[0].Text, got.Text) {
			t.Errorf("limit %d: %s (%v)", limit, b, err)
		}
	}
	if b := capData(d, 1<<20); strings.Contains(string(b), "truncated") {
		t.Error("small data was truncated")
	}
}

func TestLimiter(t *testing.T) {
	l := newLimiter()
	now := time.Unix(0, 0)
	r := Rate{Calls: 3, Per: 3 * time.Second}
	for i := range 3 {
		if lim, _ := l.allow("u", r, "t", Rate{}, now); lim != "" {
			t.Fatalf("call %d limited", i)
		}
	}
	lim, after := l.allow("u", r, "t", Rate{}, now)
	if lim != "user" || after != time.Second {
		t.Fatalf("4th = %q after %s", lim, after)
	}
	if lim, _ := l.allow("u", r, "t", Rate{}, now.Add(time.Second)); lim != "" {
		t.Fatal("refill did not happen")
	}
	// A refusal by the tool bucket takes no user token.
	tr := Rate{Calls: 1, Per: time.Hour}
	l2 := newLimiter()
	l2.allow("a", r, "t", tr, now)
	for range 5 {
		if lim, _ := l2.allow("a", r, "t", tr, now); lim != "tool" {
			t.Fatalf("want tool limit, got %q", lim)
		}
	}
	if lim, _ := l2.allow("a", r, "other", tr, now); lim != "" {
		t.Error("tool refusals consumed user tokens")
	}
}

func TestCommandEnvIsExplicit(t *testing.T) {
	ours := map[string]string{"PATH": "/bin", "HOME": "/root", "OPENAI_API_KEY": "sk-secret"}
	lookup := func(k string) (string, bool) { v, ok := ours[k]; return v, ok }
	got := commandEnv(map[string]string{"TOKEN": "for-the-server", "HOME": "/srv"}, []string{"PATH", "HOME", "MISSING"}, lookup)
	want := []string{"HOME=/srv", "PATH=/bin", "TOKEN=for-the-server"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("env = %v, want %v", got, want)
	}
	// With nothing configured a server still gets the SDKs' minimal
	// environment, and never our keys.
	if env := commandEnv(nil, nil, lookup); strings.Join(env, ",") != "HOME=/root,PATH=/bin" {
		t.Errorf("default env = %#v, want HOME and PATH only", env)
	}
}

// A stdio server that exits while starting is reported with the last
// lines of its stderr.
func TestStartFailureShowsStderr(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	_, err := Connect(context.Background(), ServerConfig{Name: "broken", Command: "sh",
		Args: []string{"-c", "echo 'Error: Cannot find module @modelcontextprotocol/server-x' >&2; exit 1"}, ConnectTimeout: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "Cannot find module @modelcontextprotocol/server-x") {
		t.Errorf("err = %v, want the server's stderr in it", err)
	}
}

func toolsNamed(schema any, names ...string) []*mcp.Tool {
	out := make([]*mcp.Tool, len(names))
	for i, n := range names {
		out[i] = &mcp.Tool{Name: n, InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	}
	return out
}

func toolsOf(c *catalog) []tool.Tool {
	out := make([]tool.Tool, len(c.targets))
	for i, tg := range c.targets {
		out[i] = &serverTool{name: tg.info.Name, spec: tg.spec}
	}
	return out
}

func TestCleanText(t *testing.T) {
	if got := cleanText("a\n\tb\u200b\x00c  d", 100); got != "a b c d" {
		t.Errorf("cleanText = %q", got)
	}
	if got := cleanText(strings.Repeat("x", 20), 5); got != "xxxxx…" {
		t.Errorf("cut = %q", got)
	}
}
