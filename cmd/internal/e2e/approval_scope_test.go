package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbiterhq/arbiter/cmd/internal/kinds"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server/servertest"
)

// TestReadOnlyKeyCannotApproveAWrite: an MCP server's "Approve?" for a
// write:full transfer, asked during a call the owner's full key started,
// is not listed for, nor answerable by, the same owner's read-only key; the
// full key answers it.
func TestReadOnlyKeyCannotApproveAWrite(t *testing.T) {
	var transfers atomic.Int32
	srv := mcp.NewServer(&mcp.Implementation{Name: "bank", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "transfer", Description: "Transfer money.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"amount": map[string]any{"type": "integer"}}}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Approve the transfer?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}})
			if err != nil || res.Action != "accept" {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "not approved"}}}, nil
			}
			transfers.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "transferred"}}}, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	// Cleanups run last-in first-out: the app (registered later) lets go
	// of its session before these servers close.
	bank := httptest.NewServer(handler)
	t.Cleanup(bank.Close)
	model := llmtest.NewServer(llmtest.ServerConfig{})
	t.Cleanup(model.Close)
	yaml := servertest.OwnerTenantYAML(model.URL, "en") + fmt.Sprintf(`      - id: dmitry
        name: Dmitry
        role: owner
        keys:
          - {token: "k-owner-full", scopes: [read, "write:safe", "write:full"]}
          - {token: "k-owner-read", scopes: [read]}
tools:
  mcp:
    servers:
      - name: bank
        url: %q
        elicitation: true
        ask_timeout: 3s
        tools:
          transfer: {risk: "write:full", confirm: never}
`, bank.URL)
	e := servertest.New(t, yaml, kinds.All(), model, func(string) string { return "" })
	e.Decide("bank.transfer", `{"amount":500}`)
	reply := make(chan map[string]any, 1)
	go func() {
		_, r := e.Post("k-owner-full", `{"conversation_id":"c1","text":"transfer 500"}`)
		reply <- r
	}()

	// The full key sees the question; wait for it.
	var id string
	deadline := time.Now().Add(10 * time.Second)
	for id == "" && time.Now().Before(deadline) {
		_, body := e.Do("GET", "/v1/questions", "k-owner-full", "")
		if qs, _ := body["questions"].([]any); len(qs) == 1 {
			id = qs[0].(map[string]any)["id"].(string)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if id == "" {
		t.Fatal("the approval question never showed")
	}
	if _, body := e.Do("GET", "/v1/questions", "k-owner-read", ""); len(body["questions"].([]any)) != 0 {
		t.Errorf("the read-only key lists %v", body["questions"])
	}
	if status, body := e.Do("POST", "/v1/questions/"+id, "k-owner-read", `{"choice":"accept"}`); status != http.StatusNotFound {
		t.Errorf("the read-only key's approval got %d %v, want 404", status, body)
	}
	if n := transfers.Load(); n != 0 {
		t.Fatalf("%d transfers after the read-only key's answer", n)
	}
	if status, body := e.Do("POST", "/v1/questions/"+id, "k-owner-full", `{"choice":"accept"}`); status != http.StatusOK {
		t.Fatalf("the full key's approval got %d %v", status, body)
	}
	select {
	case <-reply:
	case <-time.After(10 * time.Second):
		t.Fatal("no reply after the approval")
	}
	if n := transfers.Load(); n != 1 {
		t.Errorf("%d transfers, want 1", n)
	}
}
