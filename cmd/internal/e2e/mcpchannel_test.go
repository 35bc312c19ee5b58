package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbiterhq/arbiter/channel/mcpserver/mcpservertest"
	"github.com/arbiterhq/arbiter/cmd/internal/kinds"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server/servertest"
)

// bearerTransport adds an API key to every request.
type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPChannelInServe: channels.mcp serves each key's catalog over
// streamable HTTP on the same listener as the API; the engine's guards
// hold and the calls are journaled as turns of channel "mcp".
func TestMCPChannelInServe(t *testing.T) {
	model := llmtest.NewServer(llmtest.ServerConfig{APIKey: "sk-test"})
	t.Cleanup(model.Close)
	env := map[string]string{"PRIMARY_KEY": "sk-test"}
	yaml := servertest.OwnerTenantYAML(model.URL, "ru") + `      - {id: dmitry, name: Дмитрий, role: owner, keys: [{token: "k-dmitry", scopes: [read, "write:safe", "write:full"]}]}
      - {id: olga, name: Ольга, role: owner, keys: [{token: "k-olga-ro", scopes: [read]}]}
tools:
  taskboard: {columns: [Входящие, В работе, Готово], confirm: {create_task: always, complete_task: always}}
channels:
  mcp: {path: /tools/mcp}
`
	e := servertest.New(t, yaml, kinds.All(), model, func(k string) string { return env[k] })

	req, _ := http.NewRequest("POST", e.API.URL+"/tools/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key: %v %v", resp, err)
	}

	connect := func(key string) *mcp.ClientSession {
		t.Helper()
		transport := &mcp.StreamableClientTransport{Endpoint: e.API.URL + "/tools/mcp", HTTPClient: &http.Client{Transport: bearerTransport{key}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(t.Context(), transport, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	owner, readOnly := mcpservertest.Tools(t, connect("k-dmitry")), mcpservertest.Tools(t, connect("k-olga-ro"))
	if owner["create_task"] == nil || owner["create_task"].Annotations == nil || owner["create_task"].Annotations.ReadOnlyHint {
		t.Errorf("owner's create_task = %+v", owner["create_task"])
	}
	if readOnly["create_task"] != nil || readOnly["list_my_tasks"] == nil || !readOnly["list_my_tasks"].Annotations.ReadOnlyHint {
		t.Errorf("read-only key's tools = %v", readOnly)
	}

	// A tool outside the key's catalog is not even offered: the call is a
	// protocol error and no turn runs.
	cs := connect("k-olga-ro")
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_task", Arguments: map[string]any{"title": "x"}}); err == nil {
		t.Errorf("a read key's write = %+v", res)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_my_tasks", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("list_my_tasks = %+v, %v", res, err)
	}
	status, body := e.Do("GET", "/v1/turns?user_id=olga", "k-olga-ro", "")
	list, _ := body["turns"].([]any)
	if status != 200 || len(list) != 1 || model.Count() != 0 {
		t.Fatalf("journaled %d turns (%d), model called %d times; want 1 and 0", len(list), status, model.Count())
	}
	rec, err := e.Journal.GetTurn(t.Context(), "acme", list[0].(map[string]any)["turn_id"].(string))
	if err != nil || !strings.Contains(string(rec.Trace), `"channel":"mcp"`) || rec.Route != "call" {
		t.Errorf("the journaled call: route %q, %v", rec.Route, err)
	}
}
