package eval

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/eval/evaltest"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
)

const unitConfig = `models:
  - {name: primary, kind: openai, base_url: "https://api.openai.com/v1", model: gpt-4.1-mini, api_key_env: OPENAI_API_KEY}
prices:
  gpt-4.1-mini: {input: 0.40, output: 1.60}
tenants:
  - id: acme
    timezone: Europe/Moscow
    language: ru
    roles:
      owner: {tools: ["*"]}
      viewer: {tools: [list_my_tasks]}
    users:
      - {id: dmitry, name: Дмитрий, role: owner, keys: [{token: "k-dmitry", scopes: [read, "write:safe", "write:full"]}]}
      - {id: ivan, name: Иван, role: viewer, keys: [{token: "k-ivan-viewer", scopes: [read, "write:safe"]}]}
      - {id: olga, name: Ольга, role: owner}
tools:
  taskboard: {confirm: {create_task: always}}
  http:
    - name: refund
      description: Refund a payment.
      url: http://127.0.0.1:9/refund
      risk: "write:full"
      claims: [refund issued]
      input_schema: {type: object, properties: {payment: {type: string}}, required: [payment]}
`

const unitSuite = `name: unit
as: k-dmitry
env: {OPENAI_API_KEY: sk-eval}
scenarios:
  - name: Create and confirm
    turns:
      - text: Поставь Ольге задачу проверить счёт
        expect: {tool: create_task, args: {title: Проверить счёт, assignee: Ольге}, pending: create_task, max_model_calls: 1}
      - button: confirm
        expect: {executed: create_task, say_contains: [Создана задача], max_model_calls: 0}
  - name: A call the role does not allow
    turns:
      - as: k-ivan-viewer
        text: Создай задачу позвонить клиенту
        expect: {vetoed: not_granted, say_contains: [недоступно]}
  - name: A claim no tool confirmed
    turns:
      - text: Верни деньги за заказ
        expect: {status: needs_review, say_lacks: [refund issued]}
`

var unitScript = map[string]llmtest.HTTPReply{
	"проверить счёт":    decision("create_task", `{"title":"Проверить счёт","assignee":"Ольге"}`, ""),
	"позвонить клиенту": decision("create_task", `{"title":"Позвонить клиенту"}`, ""),
	"Верни деньги":      decision("", "", "Готово, refund issued."),
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// recordUnit records the unit suite against the scripted model and
// returns the directory, with the model gone: what follows is offline.
func recordUnit(t *testing.T, suite *Suite, cfg string) string {
	t.Helper()
	model, transport := evaltest.FakeModel(t, evaltest.ByText(unitScript))
	rec := filepath.Join(t.TempDir(), "recordings")
	rep, err := Run(context.Background(), suite, Options{Config: cfg, Record: rec, Kinds: server.Builtin(), Transport: transport,
		Getenv: func(string) string { return "" }})
	evaltest.MustPass(t, "recording run failed", rep, err)
	model.Close()
	return rec
}

func TestSuitePassesOfflineKTimes(t *testing.T) {
	dir := writeFiles(t, map[string]string{"arbiter.yaml": unitConfig, "suite.yaml": unitSuite})
	suite, err := LoadSuite(filepath.Join(dir, "suite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "arbiter.yaml")
	rec := recordUnit(t, suite, cfg)

	rep, err := Run(context.Background(), suite, Options{Config: cfg, K: 3, Replay: rec, Kinds: server.Builtin(),
		Getenv: func(string) string { return "" }})
	text := evaltest.MustPass(t, "replay failed", rep, err)
	t.Log("\n" + text)
	m := rep.Metrics
	// From the journal: the vetoed call is a blocked invalid action though
	// the reply is right, and the held-back claim is an unconfirmed claim.
	if m.BlockedInvalid != 3 || m.UnconfirmedClaims != 3 || m.Turns != 12 || m.DuplicateWrites != 0 || m.ToolSelection != 1 {
		t.Errorf("metrics %+v\n%s", m, text)
	}
	if m.Tokens == 0 || m.CostUSD <= 0 {
		t.Errorf("no tokens or cost: %+v", m)
	}
	for _, want := range []string{"Create and confirm", "PASS", "3/3", "blocked invalid actions 3", "unconfirmed claims 3", "3 of 3 scenarios passed 3 times in a row"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}

	// The report for machines reads back; two runs compare side by side.
	jsonPath := filepath.Join(t.TempDir(), "a.json")
	if err := rep.WriteJSON(jsonPath); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(jsonPath)
	if err != nil || back.Metrics.Turns != 12 || len(back.Scenarios) != 3 || back.Metrics.BlockedInvalid != 3 {
		t.Fatalf("read back: %v", err)
	}

	// The same recordings against a wrong expectation: the run fails and
	// says which scenario and step differ.
	wrong, err := ParseSuite(strings.NewReader(strings.Replace(unitSuite, "expect: {tool: create_task,", "expect: {tool: update_task,", 1)))
	if err != nil {
		t.Fatal(err)
	}
	rep, err = Run(context.Background(), wrong, Options{Config: cfg, Replay: rec, Kinds: server.Builtin(), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.WriteText(&out)
	if rep.Passed() || !strings.Contains(out.String(), "Create and confirm, run 1:") ||
		!strings.Contains(out.String(), `turn 1 "Поставь Ольге задачу проверить счёт"`) || !strings.Contains(out.String(), "tool: want update_task, got create_task") {
		t.Errorf("a wrong expectation:\n%s", out.String())
	}
	htmlPath := filepath.Join(t.TempDir(), "r.html")
	if err := rep.WriteHTML(htmlPath, "http://127.0.0.1:8080"); err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(htmlPath)
	for _, want := range []string{"Create and confirm", "tool: want update_task, got create_task", `href="http://127.0.0.1:8080/turns/`, "<summary>trace</summary>", "&#34;llm_calls&#34;"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
	out.Reset()
	WriteComparison(&out, back, rep, "a.json", "b.json")
	for _, want := range []string{"Create and confirm", "PASS 3/3", "FAIL 0/1", "blocked invalid actions"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("comparison lacks %q:\n%s", want, out.String())
		}
	}
}

func TestParseSuiteErrors(t *testing.T) {
	for name, body := range map[string]string{
		"unknown key":   "name: x\nas: k\nscenarios: [{name: a, turns: [{text: hi, expect: {tooll: x}}]}]\n",
		"no scenarios":  "name: x\n",
		"no message":    "name: x\nas: k\nscenarios: [{name: a, turns: [{expect: {no_tool: true}}]}]\n",
		"same name":     "name: x\nas: k\nscenarios: [{name: A b, turns: [{text: hi}]}, {name: a-B, turns: [{text: hi}]}]\n",
		"no key":        "name: x\nscenarios: [{name: a, turns: [{text: hi}]}]\n",
		"tool and none": "name: x\nas: k\nscenarios: [{name: a, turns: [{text: hi, expect: {no_tool: true, tool: t}}]}]\n",
	} {
		if _, err := ParseSuite(strings.NewReader(body)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

// A run that cannot go on (a button no reply showed) fails, whatever the
// turns before it did.
func TestARunThatStopsFails(t *testing.T) {
	dir := writeFiles(t, map[string]string{"arbiter.yaml": unitConfig})
	suite, err := ParseSuite(strings.NewReader(`name: stop
as: k-dmitry
env: {OPENAI_API_KEY: sk-eval}
scenarios:
  - name: Press a button nobody showed
    turns:
      - text: /tasks
      - button: confirm
`))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), suite, Options{Config: filepath.Join(dir, "arbiter.yaml"), Kinds: server.Builtin(), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	run := rep.Scenarios[0].Runs[0]
	if rep.Passed() || run.Pass || !strings.Contains(run.Error, `turn 2: no reply so far shows a button "confirm"`) {
		t.Errorf("run %+v", run)
	}
}
