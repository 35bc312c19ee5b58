package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/tool"
)

// The library rows: the engine as a program embedding it calls it —
// server.Build, then Engine.HandleTurn in process, no HTTP API in front —
// on a loop turn whose tool is a write (model → create_task → model), so
// the write's idempotency key and execution record are part of the turn.
// Each turn is a conversation of its own. Its baseline makes the same two
// model calls in process with net/http and encoding/json and calls the
// same function, keeping nothing.

// The write tool of the library rows and the call the fake model makes.
const (
	writeTool   = "create_task"
	writeArgs   = `{"title":"Check signup form","assignee":"Dmitry"}`
	writePrompt = "You are a team assistant. Use tools when asked to create tasks."
	writeText   = "Create a card: check the signup form, assign it to Dmitry"
	writeSchema = `{"type":"object","properties":{"title":{"type":"string","description":"Card title"},"assignee":{"type":"string","description":"Who the card is assigned to"}},"required":["title","assignee"]}`
)

type taskArgs struct {
	Title    string `json:"title"`
	Assignee string `json:"assignee"`
}

type taskResult struct {
	OK bool   `json:"ok"`
	ID string `json:"id"`
}

// createTask is the write both sides run.
func createTask(_ context.Context, in taskArgs) (taskResult, error) {
	if in.Title == "" || in.Assignee == "" {
		return taskResult{}, fmt.Errorf("title and assignee are required")
	}
	return taskResult{OK: true, ID: "c1"}, nil
}

// Library is the engine embedded as a library, answering the write turn.
type Library struct {
	app   *server.Server
	model Model
	ident chat.Identity
	next  atomic.Int64 // the next turn's conversation
}

const libraryConfig = `store: {kind: sqlite, path: %q}
models:
  - {name: fake, kind: openai, protocol: tools, base_url: %q, model: gpt-oss-20b, api_key: sk-bench}
assistants:
  desk: {mode: loop, prompt: %q}
tenants:
  - id: bench
    timezone: UTC
    language: en
    assistant: desk
    roles: {owner: {tools: ["*"]}}
    users:
      - {id: u1, name: Dmitry, role: owner}
tools:
  bench_tasks: {}
`

// NewLibrary builds the engine in dir (one SQLite file: state and
// journal) calling model (a ModelWrite one), which it closes.
func NewLibrary(dir string, model Model) (*Library, error) {
	yaml := fmt.Sprintf(libraryConfig, filepath.Join(dir, "arbiter.db"), model.URL(), writePrompt)
	cfg, err := config.Parse(strings.NewReader(yaml), func(string) string { return "" })
	if err != nil {
		model.Close()
		return nil, err
	}
	kinds := server.Builtin()
	kinds.Tools["bench_tasks"] = func(context.Context, *server.Env, server.Section) (server.ToolSet, error) {
		spec := tool.Spec{
			Name:        writeTool,
			Title:       "Create task",
			Description: "Create a task card on the team board.",
			InputSchema: json.RawMessage(writeSchema),
			Policy:      tool.Policy{Risk: tool.RiskWriteSafe, Confirm: tool.ConfirmNever},
		}
		t, err := tool.Func(spec, func(ctx context.Context, _ tool.Call, in taskArgs) (taskResult, error) {
			return createTask(ctx, in)
		})
		return server.ToolSet{Tools: []tool.Tool{t}}, err
	}
	app, err := server.Build(cfg, kinds, server.Options{Getenv: func(string) string { return "" }})
	if err != nil {
		model.Close()
		return nil, err
	}
	t := cfg.Tenants[0]
	return &Library{app: app, model: model, ident: server.Identity(t, t.Users[0], []string{"read", "write:safe"})}, nil
}

// Turn runs a turn in a conversation of its own, whatever i, and checks
// the write ran.
func (l *Library) Turn(int) error {
	conv := "w" + strconv.FormatInt(l.next.Add(1), 10)
	out, err := l.app.Engine.HandleTurn(context.Background(), chat.Inbound{Identity: l.ident, Chat: conv, Text: writeText, Channel: "bench"})
	if err != nil {
		return err
	}
	if len(out.Executed) != 1 || out.Executed[0].Tool != writeTool || out.Executed[0].Status != "ok" || out.Say != loopAnswer {
		return fmt.Errorf("library turn did not run %s: %q", writeTool, out.Say)
	}
	return nil
}

// Transactions is Engine.Transactions for the library's store.
func (l *Library) Transactions() (writes, txs int64) { return groupStats(l.app) }

// LastRequest returns the newest first request of a turn the model saw.
func (l *Library) LastRequest() (*llmtest.ChatRequest, error) { return l.model.LastRequest() }

// Close stops the engine and its model.
func (l *Library) Close() {
	l.app.Close()
	l.model.Close()
}

// LibraryBaseline is the library turn on net/http and encoding/json alone.
type LibraryBaseline struct{ b *Baseline }

// NewLibraryBaseline sends what like (a first request of the library
// engine) holds: its messages and tools. It closes model.
func NewLibraryBaseline(like *llmtest.ChatRequest, model Model) *LibraryBaseline {
	b := NewLoopBaselineWith(like, model)
	b.api.Close() // it is called in process, not over HTTP
	return &LibraryBaseline{b: b}
}

// Turn makes the two model calls around the write.
func (l *LibraryBaseline) Turn(int) error {
	b := l.b
	ctx := context.Background()
	req := loopRequest{Model: "gpt-oss-20b", MaxTokens: b.maxToken, Tools: b.tools, ToolChoice: "auto"}
	for _, m := range b.prompt {
		req.Messages = append(req.Messages, loopMessage{Role: m.Role, Content: &m.Content})
	}
	first, err := b.complete(ctx, &req)
	if err != nil || len(first.ToolCalls) != 1 || first.ToolCalls[0].Function.Name != writeTool {
		return fmt.Errorf("unexpected model answer (%v)", err)
	}
	call := first.ToolCalls[0]
	var in taskArgs
	if err := json.Unmarshal([]byte(call.Function.Arguments), &in); err != nil {
		return err
	}
	res, err := createTask(ctx, in)
	if err != nil {
		return err
	}
	data, _ := json.Marshal(res)
	calls, _ := json.Marshal([]map[string]any{{"id": call.ID, "type": "function",
		"function": map[string]string{"name": writeTool, "arguments": call.Function.Arguments}}})
	result := string(data)
	req.Messages = append(req.Messages,
		loopMessage{Role: "assistant", ToolCalls: calls},
		loopMessage{Role: "tool", ToolCallID: call.ID, Content: &result})
	final, err := b.complete(ctx, &req)
	if err != nil || final.Content == nil || *final.Content != loopAnswer {
		return fmt.Errorf("unexpected final answer (%v)", err)
	}
	return nil
}

// Close stops the baseline's model.
func (l *LibraryBaseline) Close() { l.b.model.Close() }
