package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheckConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("listen: 127.0.0.1:9090\ntenants:\n  - id: a\n    roles: {owner: {tools: ['*']}}\n    users: [{id: u, role: owner, keys: [{token: abcdefgh, scopes: [read]}]}]\n"), 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("listen: 127.0.0.1:9090\ntenants:\n  - id: a\n    roles: {owner: {tools: ['*']}}\n    users:\n      - id: u\n        role: boss\n        keys: [{token: abcdefgh, scopes: [read, root]}]\n"), 0o644)

	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"check-config", "-config", good}, nil, &out, &errOut); code != 0 {
		t.Fatalf("valid config: exit %d, %s", code, errOut.String())
	}
	out.Reset()
	errOut.Reset()
	code := run(context.Background(), []string{"check-config", "-config", bad}, nil, &out, &errOut)
	if code != 1 {
		t.Fatalf("invalid config: exit %d", code)
	}
	for _, want := range []string{`line 7: tenants[0].users[0].role: role "boss" is not defined`, `line 8: tenants[0].users[0].keys[0].scopes[1]: unknown scope "root"`} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
	if code := run(context.Background(), []string{"check-config", "-config", filepath.Join(dir, "missing.yaml")}, nil, &out, &errOut); code != 1 {
		t.Errorf("missing file: exit %d", code)
	}
	if code := run(context.Background(), []string{"frobnicate"}, nil, &out, &errOut); code != 2 {
		t.Errorf("unknown command: exit %d", code)
	}
}

// localSetup moves the test into a fresh directory, which it returns,
// with no provider's key set: a first run on a new machine.
func localSetup(t *testing.T) string {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("FIREWORKS_API_KEY", "")
	return dir
}

// TestServeLocalSetup starts `arbiter serve` with no configuration, as the
// README's quick start does, and talks to it.
func TestServeLocalSetup(t *testing.T) {
	dir := localSetup(t)
	t.Setenv("ARBITER_LISTEN", "127.0.0.1:0")

	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve"}, nil, pw, io.Discard)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	var addr, key string
	deadline := time.After(20 * time.Second)
	for addr == "" || key == "" {
		got := make(chan bool, 1)
		go func() { got <- lines.Scan() }()
		select {
		case ok := <-got:
			if !ok {
				t.Fatalf("serve exited early")
			}
		case <-deadline:
			t.Fatal("serve did not start")
		}
		l := lines.Text()
		if a, ok := strings.CutPrefix(l, "arbiter listening on "); ok {
			addr = a
		}
		if k, ok := strings.CutPrefix(l, "local API key: "); ok {
			key = k
		}
	}
	go io.Copy(io.Discard, pr)

	post := func(body string) map[string]any {
		req, _ := http.NewRequest("POST", addr+"/v1/messages", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %v", resp.StatusCode, m)
		}
		return m
	}
	// Deterministic routes work without a model; free text says how to
	// configure one.
	if m := post(`{"conversation_id":"c1","text":"/tasks"}`); len(m["executed"].([]any)) != 1 {
		t.Errorf("/tasks: %v", m)
	}
	if m := post(`{"conversation_id":"c1","text":"create a task"}`); !strings.Contains(m["say"].(string), "OPENAI_API_KEY") {
		t.Errorf("free text without a model: %v", m)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "arbiter.db")); err != nil {
		t.Errorf("store not in ./data: %v", err)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exit %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// TestChatLocalSetup drives `arbiter chat` through its stdin.
func TestChatLocalSetup(t *testing.T) {
	localSetup(t)
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"chat"}, strings.NewReader("/tasks\nhello\n/help\n\n"), &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"chatting as Local User", "You have no open tasks.", "OPENAI_API_KEY", "/tasks — my tasks"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRecordReplayFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"serve", "-record", t.TempDir(), "-replay", t.TempDir()}, nil, &out, &errOut); code != 2 ||
		!strings.Contains(errOut.String(), "exclude each other") {
		t.Errorf("both flags: exit %d, %q", code, errOut.String())
	}
	errOut.Reset()
	if code := run(context.Background(), []string{"check-config", "-record", "x"}, nil, &out, &errOut); code != 2 {
		t.Errorf("-record on check-config: exit %d", code)
	}
}

// TestCheckConfigReportsEveryMistakeInOneRun: unknown kinds come in the
// same run as the other mistakes, and every reference — a command's tool,
// a role's and an assistant's tools, a preflight read, approvers' roles,
// strategies' models, assistants and skills — is checked, each with its
// line and the name meant.
func TestCheckConfigReportsEveryMistakeInOneRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "arbiter.yaml")
	os.WriteFile(path, []byte(`store: {kind: sqlit}
models:
  - {name: fast, kind: openai, model: m, api_key: k}
  - {name: other, kind: gemini, model: m, api_key: k}
strategies:
  quick: [fsat]
commands:
  /x: {tool: no_such_tool}
  /mine: {tool: list_my_task}
assistants:
  desk:
    mode: loop
    tools: [list_*, comment_tsk]
    preflight: [{tool: serch_knowledge}]
  front:
    mode: router
    router:
      skills: [{id: s, assistant: dsk}]
tenants:
  - id: a
    assistant: dessk
    strategy: quik
    roles:
      owner: {tools: ["*"]}
      viewer: {tools: [list_my_tasks, create_tsk]}
    users: [{id: u, role: ownr, keys: [{token: abcdefgh, scopes: [read]}]}]
tools:
  taskboard: {confirm: {create_tusk: always}}
  knowledge: {}
  http:
    - name: refund
      url: http://127.0.0.1:1/refund
      risk: "write:full"
      approve: [staf]
      input_schema: {type: object}
`), 0o644)
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"check-config", "-config", path}, nil, &out, &errOut); code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, errOut.String())
	}
	got := errOut.String()
	for _, want := range []string{
		`line 1: store.kind: unknown store kind "sqlit" (one of: redis, sqlite) (did you mean "sqlite"?)`,
		`line 4: models[1].kind: unknown model kind "gemini"`,
		`line 6: strategies.quick[0]: no model named "fsat" in models (did you mean "fast"?)`,
		`line 8: commands./x.tool: no configured tool is named "no_such_tool"`,
		`line 9: commands./mine.tool: no configured tool is named "list_my_task" (did you mean "list_my_tasks"?)`,
		`line 13: assistants.desk.tools[1]: no configured tool is named "comment_tsk" (did you mean "comment_task"?)`,
		`line 14: assistants.desk.preflight[0].tool: no configured tool is named "serch_knowledge" (did you mean "search_knowledge"?)`,
		`line 18: assistants.front.router.skills[0].assistant: no assistant named "dsk" (did you mean "desk"?)`,
		`line 21: tenants[0].assistant: no assistant named "dessk" in assistants (did you mean "desk"?)`,
		`line 22: tenants[0].strategy: unknown strategy "quik" (did you mean "quick"?)`,
		`line 25: tenants[0].roles.viewer.tools[1]: no configured tool is named "create_tsk" (did you mean "create_task"?)`,
		`line 26: tenants[0].users[0].role: role "ownr" is not defined in tenant a (defined: owner, viewer) (did you mean "owner"?)`,
		`line 28: tools.taskboard.confirm.create_tusk: no configured tool is named "create_tusk" (did you mean "create_task"?)`,
		`line 34: tools.http[0].approve[0]: no tenant defines a role "staf"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", got)
	}
	// In the order of the lines.
	if i, j := strings.Index(got, "line 1:"), strings.Index(got, "line 34:"); i < 0 || j < i {
		t.Errorf("problems not in line order:\n%s", got)
	}
}
