package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
)

const e2eConfig = `listen: 127.0.0.1:8080
store: {kind: sqlite, path: data/arbiter.db}
models:
  - {name: primary, kind: openai, base_url: "MODEL_URL", model: gpt-oss-20b, api_key_env: PRIMARY_KEY}
prices:
  gpt-oss-20b: {input: 0.10, output: 0.50}
retry: {delay: 20ms}
tenants:
  - id: acme
    timezone: Europe/Moscow
    language: ru
    roles:
      owner: {tools: ["*"]}
      viewer: {tools: [list_my_tasks]}
    users:
      - id: dmitry
        name: Дмитрий
        role: owner
        keys: [{token: "k-dmitry", scopes: [read, "write:safe", "write:full"]}]
      - id: olga
        name: Ольга
        role: owner
        keys: [{token: "k-olga-ro", scopes: [read]}]
      - id: ops
        role: viewer
        keys: [{token: "k-acme-ops", scopes: [read, "turns:read_all"]}]
  - id: globex
    roles:
      owner: {tools: ["*"]}
    users:
      - id: hank
        role: owner
        keys: [{token: "k-hank-globex", scopes: [read]}]
tools:
  taskboard: {columns: [Входящие, В работе, Готово], confirm: {create_task: always, complete_task: always}}
`

func newE2E(t *testing.T) *servertest.Server {
	t.Helper()
	model := llmtest.NewServer(llmtest.ServerConfig{APIKey: "sk-test"})
	t.Cleanup(model.Close)
	return serveE2E(t, model, e2eConfig)
}

// serveE2E serves config, e2eConfig or a variant of it, with model at its
// MODEL_URL and the key model wants.
func serveE2E(t *testing.T, model *llmtest.Server, config string) *servertest.Server {
	t.Helper()
	env := map[string]string{"PRIMARY_KEY": "sk-test"}
	return servertest.New(t, strings.Replace(config, "MODEL_URL", model.URL, 1), server.Builtin(), model, func(k string) string { return env[k] })
}

func TestEndToEndCreateConfirmAndTrace(t *testing.T) {
	e := newE2E(t)
	e.Model.Enqueue(llmtest.HTTPReply{
		Content: `{"say":"Создаю","tool":"create_task","args":{"title":"Проверить форму регистрации","assignee":"Дмитрий","dueIso":"2026-12-01","column":null,"description":null},"done":false,"newTopic":false,"buttons":[]}`,
		Model:   "accounts/fireworks/models/gpt-oss-20b",
		Usage:   &llmtest.WireUsage{PromptTokens: 1200, CompletionTokens: 80, TotalTokens: 1280},
	})
	status, body := e.Post("k-dmitry", `{"conversation_id":"c1","message_id":"m1","text":"Поставь на меня задачу проверить форму регистрации до завтра"}`)
	if status != 200 {
		t.Fatalf("status %d %v", status, body)
	}
	pending, _ := body["pending"].(map[string]any)
	if pending == nil || pending["tool"] != "create_task" {
		t.Fatalf("pending = %v", body["pending"])
	}
	if n, _ := e.TestBoard().Cards(context.Background(), "acme"); len(n) != 0 {
		t.Fatalf("a card exists before confirmation: %+v", n)
	}

	// What went over the wire: the decision schema as strict structured
	// output, with the catalog's tools and nothing else.
	reqs := e.Model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	rf := reqs[0].ResponseFormat
	if rf == nil || rf.Type != "json_schema" || rf.JSONSchema == nil || rf.JSONSchema.Strict == nil || !*rf.JSONSchema.Strict {
		t.Fatalf("response_format = %+v", rf)
	}
	schema := string(rf.JSONSchema.Schema)
	if !strings.Contains(schema, `"create_task"`) || strings.Contains(schema, "delete_board") {
		t.Errorf("schema tool enum wrong: %s", schema)
	}
	if reqs[0].Temperature == nil || *reqs[0].Temperature != 0 {
		t.Errorf("temperature = %v, want 0", reqs[0].Temperature)
	}

	firstTurn := body["turn_id"].(string)
	status, body = e.Post("k-dmitry", `{"conversation_id":"c1","message_id":"m2","button":"`+confirmButton(t, body)+`"}`)
	if status != 200 {
		t.Fatalf("status %d %v", status, body)
	}
	executed, _ := body["executed"].([]any)
	if len(executed) != 1 || executed[0].(map[string]any)["status"] != "ok" {
		t.Fatalf("executed = %v", body["executed"])
	}
	cards, _ := e.TestBoard().Cards(context.Background(), "acme")
	if len(cards) != 1 || cards[0].Title != "Проверить форму регистрации" || cards[0].AssigneeID != "dmitry" {
		t.Fatalf("cards = %+v", cards)
	}
	if !strings.Contains(body["say"].(string), cards[0].URL) {
		t.Errorf("reply %q does not link the created card", body["say"])
	}
	if e.Model.Count() != 1 {
		t.Errorf("the confirmation called the model (%d requests)", e.Model.Count())
	}

	// Redelivering the confirmation is a no-op that returns the same reply.
	status, dup := e.Post("k-dmitry", `{"conversation_id":"c1","message_id":"m2","text":"да"}`)
	if status != 200 || dup["duplicate"] != true || dup["turn_id"] != body["turn_id"] {
		t.Errorf("redelivery: %d %v", status, dup)
	}
	if cards, _ := e.TestBoard().Cards(context.Background(), "acme"); len(cards) != 1 {
		t.Errorf("redelivery created another card: %d", len(cards))
	}

	// The first turn's record shows who decided and what it cost.
	status, tr := e.Do("GET", "/v1/turns/"+firstTurn, "k-dmitry", "")
	if status != 200 {
		t.Fatalf("GET turn: %d %v", status, tr)
	}
	for _, k := range []string{"turn_id", "conversation_id", "route", "llm_calls", "decision", "vetoes", "executed", "duration_ms"} {
		if _, ok := tr[k]; !ok {
			t.Errorf("turn record lacks %q", k)
		}
	}
	calls := tr["llm_calls"].([]any)
	if len(calls) != 1 {
		t.Fatalf("llm_calls = %v", calls)
	}
	call := calls[0].(map[string]any)
	if call["provider"] != "primary" || call["model"] != "accounts/fireworks/models/gpt-oss-20b" || call["operation"] != "turn" ||
		call["strategy"] != "balanced" || call["input_tokens"] != 1200.0 || call["output_tokens"] != 80.0 || call["status"] != "ok" {
		t.Errorf("llm call = %v", call)
	}
	// 1200 * 0.10/1e6 + 80 * 0.50/1e6
	if cost := call["cost_usd"].(float64); cost < 0.000159 || cost > 0.000161 {
		t.Errorf("cost_usd = %v, want 0.00016", cost)
	}
	if d := tr["decision"].(map[string]any); d["tool"] != "create_task" {
		t.Errorf("decision = %v", d)
	}
	if db, _ := tr["decided_by"].(map[string]any); db["provider"] != "primary" || db["model"] != "accounts/fireworks/models/gpt-oss-20b" {
		t.Errorf("decided_by = %v", tr["decided_by"])
	}
	// Every step of the pipeline is on the timeline, in order.
	wantSteps := func(turnID string, want ...string) {
		t.Helper()
		_, rec := e.Do("GET", "/v1/turns/"+turnID, "k-dmitry", "")
		var got []string
		for _, st := range rec["steps"].([]any) {
			got = append(got, st.(map[string]any)["name"].(string))
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("steps of %s = %v, want %v", turnID, got, want)
		}
	}
	wantSteps(firstTurn, "route", "lock", "dedupe", "load_memory", "assemble", "decide:turn", "validate:create_task",
		"guard:create_task", "preview:create_task")
	wantSteps(body["turn_id"].(string), "route", "lock", "dedupe", "load_memory", "guard:create_task", "execute:create_task", "reply")
	if tr["conversation_id"] != "c1" || tr["route"] != "model" {
		t.Errorf("record = %v", tr)
	}

	// Another user of the tenant may not read it, an operator with
	// turns:read_all may; another tenant may not even learn it exists.
	if status, _ := e.Do("GET", "/v1/turns/"+firstTurn, "k-olga-ro", ""); status != 404 {
		t.Errorf("another user's read: %d", status)
	}
	if status, _ := e.Do("GET", "/v1/turns/"+firstTurn, "k-acme-ops", ""); status != 200 {
		t.Errorf("operator's read: %d", status)
	}
	if status, list := e.Do("GET", "/v1/turns", "k-olga-ro", ""); status != 200 || len(list["turns"].([]any)) != 0 {
		t.Errorf("another user lists %v", list)
	}
	if status, list := e.Do("GET", "/v1/turns?user_id=dmitry", "k-acme-ops", ""); status != 200 || len(list["turns"].([]any)) == 0 {
		t.Errorf("the operator lists %d %v", status, list)
	}
	if status, body := e.Do("GET", "/v1/turns/"+firstTurn, "k-hank-globex", ""); status != 404 {
		t.Errorf("cross-tenant read: %d %v", status, body)
	}
}

func confirmButton(t *testing.T, reply map[string]any) string {
	t.Helper()
	for _, b := range reply["buttons"].([]any) {
		v := b.(map[string]any)["value"].(string)
		if strings.HasPrefix(v, "confirm:") {
			return v
		}
	}
	t.Fatalf("no confirm button in %v", reply["buttons"])
	return ""
}

func TestEndToEndRefusalsWriteNothing(t *testing.T) {
	e := newE2E(t)
	for _, body := range []string{`{"conversation_id":"c1","text":`, `{"conversation_id":"c1","text":"x","extra":1}`, `{"text":"x"}`} {
		if status, _ := e.Post("k-dmitry", body); status != 400 {
			t.Errorf("%s: status %d", body, status)
		}
	}
	if status, _ := e.Post("wrong-token", `{"conversation_id":"c1","text":"x"}`); status != 401 {
		t.Errorf("wrong token: %d", status)
	}
	// Nothing reached the model, and nothing was remembered or journaled.
	if e.Model.Count() != 0 {
		t.Errorf("model called %d times", e.Model.Count())
	}
	var n int
	if err := e.TestSQLite().DB().QueryRow(`SELECT count(*) FROM turns`).Scan(&n); err != nil || n != 0 {
		t.Errorf("journal has %d turns (err %v)", n, err)
	}
}

func TestEndToEndModelGarbage(t *testing.T) {
	e := newE2E(t)
	// A provider that answers garbage twice: nothing runs, the user is asked
	// to rephrase, both calls are journaled.
	e.Model.Enqueue(llmtest.HTTPReply{Content: "I'll create it now!"}, llmtest.HTTPReply{Content: `{"say":1}`})
	status, body := e.Post("k-dmitry", `{"conversation_id":"c1","text":"Создай задачу"}`)
	if status != 200 || body["pending"] != nil || len(body["executed"].([]any)) != 0 {
		t.Fatalf("%d %v", status, body)
	}
	_, tr := e.Do("GET", "/v1/turns/"+body["turn_id"].(string), "k-dmitry", "")
	if calls := tr["llm_calls"].([]any); len(calls) != 2 || calls[1].(map[string]any)["operation"] != "repair" {
		t.Errorf("llm_calls = %v", tr["llm_calls"])
	}
	// A provider that keeps failing (HTTP 500): one retry, then an apology;
	// nothing runs, the turn is journaled as failed.
	e.Model.Enqueue(llmtest.HTTPReply{Status: 500, ErrorMessage: "boom"}, llmtest.HTTPReply{Status: 503, ErrorMessage: "still down"})
	status, body = e.Post("k-dmitry", `{"conversation_id":"c1","text":"Создай задачу"}`)
	if status != 200 || body["pending"] != nil || !strings.Contains(body["say"].(string), "Извините") {
		t.Fatalf("%d %v", status, body)
	}
	_, tr = e.Do("GET", "/v1/turns/"+body["turn_id"].(string), "k-dmitry", "")
	calls := tr["llm_calls"].([]any)
	if len(calls) != 2 || calls[0].(map[string]any)["status"] != "transient" || calls[1].(map[string]any)["attempt"] != "retry" {
		t.Errorf("llm_calls = %v", tr["llm_calls"])
	}
	if tr["status"] != "failed" {
		t.Errorf("turn status = %v, want failed", tr["status"])
	}
	// The failed turn released the conversation's lock: the next one runs.
	e.Model.Enqueue(llmtest.HTTPReply{Content: `{"say":"Снова на связи.","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`})
	status, body = e.Post("k-dmitry", `{"conversation_id":"c1","text":"Ты тут?"}`)
	if status != 200 || body["say"] != "Снова на связи." {
		t.Errorf("turn after the failure: %d %v", status, body)
	}
}

// TestEndToEndTurnListAndMetrics: the turn list is tenant-scoped and
// filterable, /metrics counts the turns, and the web chat is served at /.
func TestEndToEndTurnListAndWebChat(t *testing.T) {
	e := newE2E(t)
	e.Model.Enqueue(
		llmtest.HTTPReply{Content: `{"say":"Привет!","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`},
		llmtest.HTTPReply{Content: `{"say":"Ещё раз привет!","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`},
	)
	for _, conv := range []string{"a1", "a2"} {
		if status, body := e.Post("k-dmitry", `{"conversation_id":"`+conv+`","text":"Привет"}`); status != 200 {
			t.Fatalf("%d %v", status, body)
		}
	}
	status, list := e.Do("GET", "/v1/turns?conversation_id=a2", "k-dmitry", "")
	if status != 200 {
		t.Fatalf("list: %d %v", status, list)
	}
	turns, _ := list["turns"].([]any)
	if len(turns) != 1 || turns[0].(map[string]any)["conversation_id"] != "a2" {
		t.Errorf("filtered list = %v", list)
	}
	if status, list = e.Do("GET", "/v1/turns?provider=primary", "k-dmitry", ""); status != 200 || len(list["turns"].([]any)) != 2 {
		t.Errorf("provider filter: %d %v", status, list)
	}
	if status, list = e.Do("GET", "/v1/turns", "k-hank-globex", ""); status != 200 || len(list["turns"].([]any)) != 0 {
		t.Errorf("another tenant sees: %d %v", status, list)
	}
	if status, list = e.Do("GET", "/v1/turns?limit=0", "k-dmitry", ""); status != 400 {
		t.Errorf("limit=0: %d %v", status, list)
	}

	resp, err := http.Get(e.API.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") || !strings.Contains(string(page), "<html") {
		t.Errorf("web chat at /: %d %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
}

// A model on a custom endpoint does not charge its vendor's list price
// because of its name: its cost is unknown unless prices names it.
func TestCostOfACustomEndpoint(t *testing.T) {
	for _, tt := range []struct {
		prices  string
		unknown bool
	}{{"", true}, {"prices: {gpt-4.1-mini: {input: 1, output: 2}}\n", false}} {
		model := llmtest.NewServer(llmtest.ServerConfig{})
		t.Cleanup(model.Close)
		yaml := "models:\n  - {name: local, kind: openai, base_url: \"" + model.URL + "\", model: gpt-4.1-mini, api_key: sk-x}\n" + tt.prices +
			"tenants:\n  - id: acme\n    roles: {owner: {tools: []}}\n    users:\n      - {id: u, role: owner, keys: [{token: k-cost-01, scopes: [read]}]}\n"
		e := servertest.New(t, yaml, server.Builtin(), model, func(string) string { return "" })
		model.Enqueue(llmtest.HTTPReply{Content: `{"say":"hi","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`,
			Usage: &llmtest.WireUsage{PromptTokens: 1000000, CompletionTokens: 1000000, TotalTokens: 2000000}})
		_, body := e.Post("k-cost-01", `{"conversation_id":"c","text":"hi"}`)
		_, rec := e.Do("GET", "/v1/turns/"+body["turn_id"].(string), "k-cost-01", "")
		unknown, _ := rec["cost_unknown"].(bool)
		if unknown != tt.unknown || (tt.unknown && rec["cost_usd"] != 0.0) || (!tt.unknown && rec["cost_usd"] != 3.0) {
			t.Errorf("prices %q: cost %v unknown %v", tt.prices, rec["cost_usd"], rec["cost_unknown"])
		}
	}
}

// Replies keep parameterized links to public_url's host and to link_hosts,
// and lose the parameters of links anywhere else.
func TestReplyLinkHosts(t *testing.T) {
	model := llmtest.NewServer(llmtest.ServerConfig{})
	t.Cleanup(model.Close)
	yaml := "public_url: https://assistant.example\nlink_hosts: [docs.example]\n" +
		"models:\n  - {name: local, kind: openai, base_url: \"" + model.URL + "\", model: gpt-4.1-mini, api_key: sk-x}\n" +
		"tenants:\n  - id: acme\n    roles: {owner: {tools: []}}\n    users:\n      - {id: u, role: owner, keys: [{token: k-links-01, scopes: [read]}]}\n"
	e := servertest.New(t, yaml, server.Builtin(), model, func(string) string { return "" })
	model.Enqueue(llmtest.HTTPReply{Content: `{"say":"a https://assistant.example/turns?c=1 b https://docs.example/s?q=x c https://evil.example/l?d=secret","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`})
	_, body := e.Post("k-links-01", `{"conversation_id":"c","text":"links?"}`)
	say, _ := body["say"].(string)
	for _, want := range []string{"https://assistant.example/turns?c=1", "https://docs.example/s?q=x", "https://evil.example/l "} {
		if !strings.Contains(say, want) {
			t.Errorf("reply %q lacks %q", say, want)
		}
	}
	if strings.Contains(say, "secret") {
		t.Errorf("reply %q keeps the parameters of a link to another host", say)
	}
}
