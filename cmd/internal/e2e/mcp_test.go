package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cmd/internal/kinds"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server/servertest"
)

// everythingServer returns the entry point of the pinned MCP reference
// server installed by `npm ci --prefix tool/mcptool/testdata/everything`.
func everythingServer(t *testing.T) string {
	t.Helper()
	needCommand(t, "node")
	entry, _ := filepath.Abs(filepath.Join("..", "..", "..", "tool", "mcptool", "testdata", "everything",
		"node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if _, err := os.Stat(entry); err != nil {
		t.Skip("the MCP reference server is not installed (npm ci --prefix tool/mcptool/testdata/everything)")
	}
	return entry
}

// everythingTools is a tools section that runs the reference server as
// "everything"; more holds the rest of its settings, indented as theirs.
func everythingTools(t *testing.T, more string) string {
	t.Helper()
	return fmt.Sprintf(`tools:
  mcp:
    servers:
      - name: everything
        command: [node, %q, stdio]
        inherit_env: [PATH, HOME]
`, everythingServer(t)) + more
}

// needCommand skips the test where name is not installed.
func needCommand(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skip(name + " is not installed")
	}
}

// TestMCPThroughTheEngine runs the seed's MCP flows against the real
// reference server: the universal "mcp" action, a public action held for
// confirmation and run once, "нет", a manager role that does not see an
// owner-only tool, and a read-only key refused a write with no call made.
func TestMCPThroughTheEngine(t *testing.T) {
	tools := everythingTools(t, `        tools:
          echo: {risk: read}
          get-sum: {risk: "write:full", confirm: always, title: "Публичная операция: сложить числа"}
`)
	model := llmtest.NewServer(llmtest.ServerConfig{})
	defer model.Close()
	yaml := fmt.Sprintf(`models:
  - {name: fake, kind: openai, base_url: %q, model: m, api_key: sk-x}
tenants:
  - id: acme
    language: ru
    roles:
      owner: {tools: ["*"]}
      manager: {tools: [mcp, "mcp:everything/echo", everything.echo]}
    users:
      - {id: dmitry, name: Дмитрий, role: owner, keys: [{token: "k-owner-0001", scopes: [read, "write:safe", "write:full"]}, {token: "k-owner-read", scopes: [read]}]}
      - {id: anna, name: Анна, role: manager, keys: [{token: "k-manager-01", scopes: [read, "write:safe", "write:full"]}]}
`, model.URL) + tools
	e := servertest.New(t, yaml, kinds.All(), model, func(string) string { return "" })
	a, decide := e.Server, e.Decide

	// The universal action runs echo and returns its result.
	decide("mcp", `{"server":"everything","tool":"echo","args":{"message":"hi"}}`)
	status, body := e.Post("k-owner-0001", `{"conversation_id":"c1","text":"повтори hi"}`)
	ex, _ := body["executed"].([]any)
	if status != 200 || len(ex) != 1 || !strings.Contains(fmt.Sprint(ex[0].(map[string]any)["result"]), "hi") {
		t.Fatalf("echo: %d %v", status, body)
	}

	echoTurn, _ := a.Journal.GetTurn(t.Context(), "acme", body["turn_id"].(string))
	if c := echoTurn.ToolCalls; len(c) != 1 || c[0].Server != "everything" || c[0].RemoteTool != "echo" || c[0].Risk != "read" ||
		c[0].Scope != "read" || c[0].ConfirmationID != "" || len(c[0].ArgsHash) != 64 || c[0].Status != "ok" {
		t.Errorf("journaled echo call = %+v", c)
	}

	// A public action: held, described by the server, run once on "да".
	decide("mcp", `{"server":"everything","tool":"get-sum","args":{"a":2,"b":3}}`)
	status, body = e.Post("k-owner-0001", `{"conversation_id":"c1","text":"сложи 2 и 3"}`)
	if status != 200 || body["pending"] == nil || !strings.Contains(body["say"].(string), "Публичная операция") {
		t.Fatalf("proposal: %d %v", status, body)
	}
	status, body = e.Post("k-owner-0001", `{"conversation_id":"c1","text":"да"}`)
	ex, _ = body["executed"].([]any)
	if status != 200 || len(ex) != 1 || !strings.Contains(fmt.Sprint(ex[0].(map[string]any)["result"]), "5") {
		t.Fatalf("confirmed sum: %d %v", status, body)
	}
	// The audit row: server, tool, argument hash, risk, scope, the
	// confirmation it ran under, duration and status.
	sumTurn, err := a.Journal.GetTurn(t.Context(), "acme", body["turn_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	var trace struct {
		Confirmation struct{ ID string } `json:"confirmation"`
	}
	_ = json.Unmarshal(sumTurn.Trace, &trace)
	if c := sumTurn.ToolCalls; len(c) != 1 || c[0].Tool != "mcp:everything/get-sum" || c[0].Server != "everything" ||
		c[0].RemoteTool != "get-sum" || c[0].Risk != "write:full" || c[0].Scope != "write:full" ||
		c[0].ConfirmationID == "" || c[0].ConfirmationID != trace.Confirmation.ID || c[0].ArgsHash == echoTurn.ToolCalls[0].ArgsHash ||
		c[0].Status != "ok" || c[0].IdempotencyKey != "pending:"+c[0].ConfirmationID {
		t.Errorf("journaled confirmed call = %+v (confirmation %q)", c, trace.Confirmation.ID)
	}
	// A second "да" confirms nothing and asks no model.
	calls := model.Count()
	if _, body = e.Post("k-owner-0001", `{"conversation_id":"c1","text":"да"}`); len(body["executed"].([]any)) != 0 || body["pending"] != nil || model.Count() != calls {
		t.Errorf("a second да ran or proposed something: %v", body)
	}

	// "нет" cancels.
	decide("everything.get-sum", `{"a":1,"b":1}`)
	e.Post("k-owner-0001", `{"conversation_id":"c2","text":"сложи 1 и 1"}`)
	if _, body = e.Post("k-owner-0001", `{"conversation_id":"c2","text":"нет"}`); len(body["executed"].([]any)) != 0 || body["pending"] != nil {
		t.Errorf("нет: %v", body)
	}

	// A manager does not see the owner-only tool, and cannot reach it
	// through the universal action either.
	decide("mcp", `{"server":"everything","tool":"get-sum","args":{"a":2,"b":2}}`)
	if _, body = e.Post("k-manager-01", `{"conversation_id":"m1","text":"сложи"}`); body["pending"] != nil || len(body["executed"].([]any)) != 0 {
		t.Errorf("manager reached an owner-only tool: %v", body)
	}
	reqs := model.Requests()
	if last := reqs[len(reqs)-1]; strings.Contains(last.Messages[0].Content, "everything.get-sum") {
		t.Errorf("the manager's catalog lists an owner-only tool")
	}

	// A read-only key is refused a write; nothing is called.
	decide("everything.get-sum", `{"a":4,"b":4}`)
	if _, body = e.Post("k-owner-read", `{"conversation_id":"r1","text":"сложи"}`); body["pending"] != nil || len(body["executed"].([]any)) != 0 {
		t.Errorf("a read-only key got a write: %v", body)
	}
}

// TestMCPQuestionsThroughTheEngine enables sampling and elicitation on the
// reference server and answers through the HTTP API while the turn waits:
// the sampling request reaches our model only after the user allowed it,
// a declined form reaches the server as declined, and the turn record
// keeps the questions and the progress of a long call.
func TestMCPQuestionsThroughTheEngine(t *testing.T) {
	tools := everythingTools(t, `        sampling: true
        elicitation: true
        ask_timeout: 5s
        tools:
          trigger-*: {risk: read}
`)
	model := llmtest.NewServer(llmtest.ServerConfig{})
	defer model.Close()
	yaml := servertest.OwnerTenantYAML(model.URL, "ru") + `      - {id: dmitry, name: Дмитрий, role: owner, keys: [{token: "k-owner-0001", scopes: [read, "write:safe", "write:full"]}]}
` + tools
	e := servertest.New(t, yaml, kinds.All(), model, func(string) string { return "" })
	a, decide := e.Server, e.Decide
	// answer waits for the open question and answers it with choice.
	answer := func(choice string) map[string]any {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			_, body := e.Do("GET", "/v1/questions", "k-owner-0001", "")
			if qs, _ := body["questions"].([]any); len(qs) == 1 {
				q := qs[0].(map[string]any)
				if status, body := e.Do("POST", "/v1/questions/"+q["id"].(string), "k-owner-0001", `{"choice":"`+choice+`"}`); status != 200 {
					t.Fatalf("answer: %d %v", status, body)
				}
				return q
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("no question showed")
		return nil
	}
	postAsync := func(body string) <-chan map[string]any {
		out := make(chan map[string]any, 1)
		go func() {
			_, reply := e.Post("k-owner-0001", body)
			out <- reply
		}()
		return out
	}

	// Sampling: shown, allowed, answered by our model.
	decide("everything.trigger-sampling-request", `{"prompt":"назови цвет неба","maxTokens":20}`)
	e.Model.Enqueue(llmtest.HTTPReply{Content: "Небо голубое."})
	reply := postAsync(`{"conversation_id":"s1","text":"спроси модель через сервер"}`)
	q := answer("accept")
	if text := q["question"].(map[string]any)["text"].(string); !strings.Contains(text, "«everything»") || !strings.Contains(text, "назови цвет неба") {
		t.Errorf("sampling question = %q", text)
	}
	body := <-reply
	ex, _ := body["executed"].([]any)
	if len(ex) != 1 || !strings.Contains(fmt.Sprint(ex[0].(map[string]any)["result"]), "Небо голубое.") {
		t.Fatalf("sampling turn = %v", body)
	}
	reqs := model.Requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(last.Messages[len(last.Messages)-1].Content, "назови цвет неба") {
		t.Errorf("the sampling request did not reach the model: %+v", last.Messages)
	}
	rec, err := a.Journal.GetTurn(t.Context(), "acme", body["turn_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	var trace struct {
		Questions []struct{ Choice, Text string } `json:"questions"`
		Progress  []struct{ Done, Total float64 } `json:"progress"`
	}
	if err := json.Unmarshal(rec.Trace, &trace); err != nil || len(trace.Questions) != 1 || trace.Questions[0].Choice != "accept" {
		t.Errorf("journaled questions = %+v (%v)", trace.Questions, err)
	}
	// The sampling call is journaled with the turn, after its decision.
	if c := rec.LLMCalls; len(c) != 2 || c[0].Operation != "turn" || c[1].Operation != "mcp_sampling" || c[1].Status != "ok" {
		t.Errorf("journaled model calls = %+v", c)
	}

	// A form, declined: the server hears "decline"; nothing reaches the model.
	calls := model.Count()
	decide("everything.trigger-elicitation-request", `{}`)
	reply = postAsync(`{"conversation_id":"s2","text":"заполни форму"}`)
	answer("decline")
	body = <-reply
	if ex, _ := body["executed"].([]any); len(ex) != 1 || !strings.Contains(fmt.Sprint(ex[0].(map[string]any)["result"]), "decline") || model.Count() != calls+1 {
		t.Errorf("declined form = %v", body)
	}

	// A long call's progress lands in the turn record.
	decide("everything.trigger-long-running-operation", `{"duration":0.4,"steps":2}`)
	_, body = e.Post("k-owner-0001", `{"conversation_id":"s3","text":"долгая операция"}`)
	rec, _ = a.Journal.GetTurn(t.Context(), "acme", body["turn_id"].(string))
	trace.Progress = nil
	// The last notification may arrive after the result and is dropped.
	if err := json.Unmarshal(rec.Trace, &trace); err != nil || len(trace.Progress) == 0 || trace.Progress[0].Done != 1 || trace.Progress[0].Total != 2 {
		t.Errorf("journaled progress = %+v (%v)", trace.Progress, err)
	}
}
