// Package bench measures what one arbiter turn costs against a hand-written
// baseline doing the same work in the same process: a message over loopback
// HTTP, one call to a fake OpenAI-compatible model server, a read tool, the
// reply. The baseline uses only net/http and encoding/json and keeps
// nothing; the engine runs the full pipeline on the embedded store.
//
// It is used by the arbiter-bench command and the package's Go benchmarks;
// it holds no production code.
package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
	"github.com/arbiterhq/arbiter/tool"
)

// decision is what the fake model answers on every call: list my tasks.
const decision = `{"say":"Вот ваши задачи.","tool":"list_my_tasks","args":{},"done":false,"newTopic":false,"buttons":[]}`

const token = "k-bench-user"

// Conversations is how many conversations the turns rotate through: one
// per session of the 64-session rows, so concurrent turns never wait for
// each other's conversation lock.
const Conversations = 64

// Workload runs turns of one kind.
type Workload interface {
	Turn(i int) error
	Close()
}

// ModelKind is which turn the fake model plays.
type ModelKind string

// Model kinds.
const (
	ModelSingle ModelKind = "single" // a decision to list my tasks
	ModelLoop   ModelKind = "loop"   // a call of list_my_tasks, then the answer
	ModelWrite  ModelKind = "write"  // a call of create_task, then the answer
)

// modelServer is the fake model of kind: a decision to list my tasks, or
// in a loop a call of a tool and, once its result is back, the answer,
// each after latency (none by default: the model then costs the least
// wall time it can). capture sees each turn's first request.
func modelServer(capture func(*llmtest.ChatRequest), kind ModelKind, latency time.Duration) *llmtest.Server {
	loop := kind != ModelSingle
	first := llmtest.WireToolCall{ID: "call_1", Name: "list_my_tasks", Arguments: "{}"}
	if kind == ModelWrite {
		first = llmtest.WireToolCall{ID: "call_1", Name: writeTool, Arguments: writeArgs}
	}
	usage := &llmtest.WireUsage{PromptTokens: 900, CompletionTokens: 40, TotalTokens: 940}
	return llmtest.NewServer(llmtest.ServerConfig{
		SkipRecording: true,
		Respond: func(r *llmtest.ChatRequest) llmtest.HTTPReply {
			if latency > 0 {
				time.Sleep(latency)
			}
			if loop && len(r.Messages) > 0 && r.Messages[len(r.Messages)-1].Role == "tool" {
				return llmtest.HTTPReply{Content: loopAnswer, Usage: usage}
			}
			if capture != nil {
				capture(r)
			}
			if loop {
				return llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{first}, Usage: usage}
			}
			return llmtest.HTTPReply{Content: decision, Usage: usage}
		},
	})
}

// client is a keep-alive client sized for the benchmark.
func client() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64}}
}

// Engine is the full arbiter on a temporary SQLite store.
type Engine struct {
	app     *server.Server
	api     *httptest.Server
	model   Model
	client  *http.Client
	checked bool
	loop    bool // a loop assistant answers
}

// NewEngine wires an arbiter in dir, on the embedded store, with a task
// board holding a few cards of the benchmark user.
func NewEngine(dir string) (*Engine, error) {
	return NewEngineOn(dir, sqliteStore(dir), "", server.Builtin())
}

// NewLoopEngine is NewEngine with a loop assistant over native tool
// calling: a turn is model → list_my_tasks → model.
func NewLoopEngine(dir string) (*Engine, error) {
	return newEngine(dir, sqliteStore(dir), server.Builtin(), true, newInProcess(ModelLoop))
}

// NewEngineWith is NewEngine (or NewLoopEngine when loop) calling model,
// which the engine closes.
func NewEngineWith(dir string, loop bool, model Model) (*Engine, error) {
	return newEngine(dir, sqliteStore(dir), server.Builtin(), loop, model)
}

func sqliteStore(dir string) string {
	return fmt.Sprintf(`{kind: sqlite, path: %q}`, filepath.Join(dir, "arbiter.db"))
}

// NewEngineOn is NewEngine on the store and the journal the YAML mappings
// describe (the values of the configuration's store and journal keys; an
// empty journal is the embedded file), of kinds.
func NewEngineOn(dir, storeYAML, journalYAML string, kinds server.Kinds) (*Engine, error) {
	if journalYAML == "" {
		journalYAML = fmt.Sprintf(`{kind: sqlite, path: %q}`, filepath.Join(dir, "journal.db"))
	}
	return newEngineJournal(dir, storeYAML, journalYAML, kinds, false, newInProcess(ModelSingle))
}

// Transactions returns how many writes (commits and journal appends) the
// engine's embedded store has made and in how many transactions.
func (e *Engine) Transactions() (writes, txs int64) { return groupStats(e.app) }

// groupStats counts the embedded file's group commits through the journal
// it backs (the sqlite journal is that file; the server keeps the file
// itself off its surface); 0 for a journal kept elsewhere.
func groupStats(app *server.Server) (writes, txs int64) {
	g, ok := app.Journal.(interface{ GroupStats() sqlitestore.GroupStats })
	if !ok {
		return 0, 0
	}
	st := g.GroupStats()
	return st.Writes, st.Transactions
}

// RoundTrips returns the requests the engine's state backend has sent to
// its server, for a backend that counts them (the Redis store); else 0.
func (e *Engine) RoundTrips() int64 {
	if c, ok := e.app.State.(interface{ RoundTrips() int64 }); ok {
		return c.RoundTrips()
	}
	return 0
}

func newEngine(dir, storeYAML string, kinds server.Kinds, loop bool, model Model) (*Engine, error) {
	return newEngineJournal(dir, storeYAML, fmt.Sprintf(`{kind: sqlite, path: %q}`, filepath.Join(dir, "journal.db")), kinds, loop, model)
}

func newEngineJournal(dir, storeYAML, journalYAML string, kinds server.Kinds, loop bool, model Model) (*Engine, error) {
	e := &Engine{client: client(), loop: loop, model: model}
	kinds, boardTools := keepBoardTools(kinds)
	protocol, assistant := "json", ""
	if loop {
		protocol, assistant = "tools", "desk"
	}
	yaml := fmt.Sprintf(`store: %s
journal: %s
models:
  - {name: fake, kind: openai, protocol: %s, base_url: %q, model: gpt-oss-20b, api_key: sk-bench}
assistants:
  desk: {mode: loop}
tenants:
  - id: bench
    timezone: Europe/Moscow
    assistant: %q
    roles: {owner: {tools: ["*"]}}
    users:
      - {id: u1, name: Дмитрий Иванов, role: owner, keys: [{token: %q, scopes: [read, "write:safe"]}]}
      - {id: u2, name: Ольга Смирнова, role: owner}
tools:
  taskboard: {confirm: {create_task: never}}
`, storeYAML, journalYAML, protocol, e.model.URL(), assistant, token)
	cfg, err := config.Parse(strings.NewReader(yaml), func(string) string { return "" })
	if err != nil {
		return nil, err
	}
	if e.app, err = server.Build(cfg, kinds, server.Options{}); err != nil {
		e.model.Close()
		return nil, err
	}
	if err := e.seed(*boardTools); err != nil {
		e.Close()
		return nil, err
	}
	e.api = httptest.NewServer(e.app.HTTP)
	return e, nil
}

// keepBoardTools returns kinds whose taskboard kind also keeps the tools it
// builds in the returned slice: the bench seeds cards by calling the
// board's create_task, which the server does not hand out.
func keepBoardTools(kinds server.Kinds) (server.Kinds, *[]tool.Tool) {
	var kept []tool.Tool
	build := kinds.Tools["taskboard"]
	if build == nil {
		return kinds, &kept
	}
	kinds.Tools = maps.Clone(kinds.Tools)
	kinds.Tools["taskboard"] = func(ctx context.Context, env *server.Env, sec server.Section) (server.ToolSet, error) {
		set, err := build(ctx, env, sec)
		kept = set.Tools
		return set, err
	}
	return kinds, &kept
}

func (e *Engine) seed(boardTools []tool.Tool) error {
	var create tool.Tool
	for _, t := range boardTools {
		if t.Spec().Name == "create_task" {
			create = t
		}
	}
	if create == nil {
		return errors.New("seed: the board offers no create_task")
	}
	caller := tool.Caller{TenantID: "bench", UserID: "u1", Name: "Дмитрий Иванов", Language: "ru"}
	for i := range 5 {
		args := fmt.Sprintf(`{"title":"Задача %d","assignee":"me","dueIso":"2026-12-0%d"}`, i+1, i+1)
		res, err := create.Call(context.Background(), tool.Call{Caller: caller, Args: json.RawMessage(args)})
		if err != nil || res.Status != tool.StatusOK {
			return fmt.Errorf("seed card: %v %s", err, res.Error)
		}
	}
	return nil
}

// Turn posts one message and checks, on the first turn, that the reply
// came from the executed read tool.
func (e *Engine) Turn(i int) error {
	body := `{"conversation_id":"c` + strconv.Itoa(i%Conversations) + `","text":"Что у меня по задачам?"}`
	out, err := post(e.client, e.api.URL+"/v1/messages", body)
	if err != nil {
		return err
	}
	if !e.checked {
		e.checked = true
		want := []byte("Задача 1") // the tool's reply
		if e.loop {
			want = []byte(loopAnswer)
		}
		if !bytes.Contains(out, []byte(`"status":"ok"`)) || !bytes.Contains(out, want) {
			return fmt.Errorf("engine turn did not run list_my_tasks: %s", out)
		}
	}
	return nil
}

// LastRequest returns the latest request the model received, so the
// baseline can send the same request as a warmed-up engine.
func (e *Engine) LastRequest() (*llmtest.ChatRequest, error) {
	return e.model.LastRequest()
}

// Close stops everything.
func (e *Engine) Close() {
	if e.api != nil {
		e.api.Close()
	}
	e.app.Close()
	e.model.Close()
}

func post(c *http.Client, url, body string) ([]byte, error) {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, out)
	}
	return out, nil
}

// Baseline is the same turn written directly on net/http and
// encoding/json, with no persistence, memory, journal or checks beyond
// decoding.
type Baseline struct {
	api      *httptest.Server
	model    Model
	client   *http.Client
	prompt   []baselineMessage
	format   json.RawMessage
	tools    json.RawMessage // the loop's tool definitions
	maxToken int
	cards    []baselineCard
	mu       sync.Mutex
	seq      int
}

type baselineCard struct {
	ID, Title, URL, Assignee, Due, Column, Status string
}

// NewBaseline starts the baseline server. like is a model request of the
// engine: the baseline sends the same messages (the last user message
// replaced by the incoming text) and the same response format, so both put
// the same bytes on the wire.
func NewBaseline(like *llmtest.ChatRequest) *Baseline {
	return NewBaselineWith(like, newInProcess(ModelSingle))
}

// NewBaselineWith is NewBaseline calling model, which the baseline closes.
func NewBaselineWith(like *llmtest.ChatRequest, model Model) *Baseline {
	b := &Baseline{model: model, client: client(), maxToken: 1000}
	if like != nil {
		for _, m := range like.Messages {
			b.prompt = append(b.prompt, baselineMessage{Role: m.Role, Content: m.Content})
		}
		// The decoded form: the fake model keeps no raw bodies here.
		if like.ResponseFormat != nil {
			b.format, _ = json.Marshal(like.ResponseFormat)
		}
	}
	for i := range 5 {
		b.cards = append(b.cards, baselineCard{
			ID: "card" + strconv.Itoa(i), Title: "Задача " + strconv.Itoa(i+1), URL: "http://127.0.0.1:8080/board/c/card" + strconv.Itoa(i),
			Assignee: "u1", Due: "2026-12-0" + strconv.Itoa(i+1), Column: "Входящие", Status: "open",
		})
	}
	b.api = httptest.NewServer(http.HandlerFunc(b.serve))
	return b
}

type baselineMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type baselineRequest struct {
	Model          string            `json:"model"`
	Messages       []baselineMessage `json:"messages"`
	Temperature    float64           `json:"temperature"`
	MaxTokens      int               `json:"max_tokens"`
	ResponseFormat json.RawMessage   `json:"response_format,omitempty"`
}

// message is the part of POST /v1/messages the baselines read.
type message struct {
	ConversationID string `json:"conversation_id"`
	Text           string `json:"text"`
}

// readMessage checks the bearer token and decodes the message, answering
// the error itself.
func readMessage(w http.ResponseWriter, r *http.Request) (message, bool) {
	var in message
	if r.Header.Get("Authorization") != "Bearer "+token {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return in, false
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return in, false
	}
	return in, true
}

func (b *Baseline) serve(w http.ResponseWriter, r *http.Request) {
	in, ok := readMessage(w, r)
	if !ok {
		return
	}
	req := baselineRequest{Model: "gpt-oss-20b", MaxTokens: b.maxToken, ResponseFormat: b.format}
	req.Messages = append(req.Messages, b.prompt...)
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" {
		req.Messages[n-1].Content = in.Text
	} else {
		req.Messages = append(req.Messages, baselineMessage{Role: "user", Content: in.Text})
	}
	m, err := b.complete(r.Context(), &req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if m.Content == nil {
		http.Error(w, "bad model answer", http.StatusBadGateway)
		return
	}
	var d struct {
		Say  string          `json:"say"`
		Tool *string         `json:"tool"`
		Args json.RawMessage `json:"args"`
	}
	if err := json.Unmarshal([]byte(*m.Content), &d); err != nil || d.Tool == nil || *d.Tool != "list_my_tasks" {
		http.Error(w, "unexpected decision", http.StatusBadGateway)
		return
	}
	data, text := b.listMine()
	b.reply(w, text, data)
}

// listMine is list_my_tasks: the user's open cards as data and as text.
func (b *Baseline) listMine() ([]byte, string) {
	var mine []baselineCard
	var text strings.Builder
	text.WriteString("Ваши открытые задачи:")
	for _, c := range b.cards {
		if c.Assignee == "u1" && c.Status == "open" {
			mine = append(mine, c)
			text.WriteString("\n«" + c.Title + "» — " + c.Column + ", до " + c.Due + " — " + c.URL)
		}
	}
	data, _ := json.Marshal(map[string]any{"cards": mine, "total": len(mine)})
	return data, text.String()
}

// reply answers a turn that ran list_my_tasks.
func (b *Baseline) reply(w http.ResponseWriter, say string, data []byte) {
	b.mu.Lock()
	b.seq++
	id := strconv.Itoa(b.seq)
	b.mu.Unlock()
	out := map[string]any{
		"turn_id": id, "say": say, "buttons": []any{}, "pending": nil, "duplicate": false,
		"executed": []any{map[string]any{"tool": "list_my_tasks", "args": json.RawMessage("{}"), "status": "ok", "result": json.RawMessage(data)}},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// Turn posts one message to the baseline.
func (b *Baseline) Turn(i int) error {
	out, err := post(b.client, b.api.URL+"/v1/messages", `{"conversation_id":"c`+strconv.Itoa(i%Conversations)+`","text":"Что у меня по задачам?"}`)
	if err == nil && !bytes.Contains(out, []byte(`"status":"ok"`)) {
		err = errors.New("baseline turn did not run the tool")
	}
	return err
}

// Close stops the baseline.
func (b *Baseline) Close() {
	b.api.Close()
	b.model.Close()
}
