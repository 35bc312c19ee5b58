package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbiterhq/arbiter/channel/mcpserver"
	"github.com/arbiterhq/arbiter/channel/mcpserver/mcpservertest"
	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/cmd/internal/kinds"
	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn"
)

// The embedded board (create_task confirmed always) and an HTTP tool of
// the highest risk; one user with a full and a read-only key.
const mcpTestConfig = `store: {kind: sqlite, path: %q}
log: {level: warn}
tenants:
  - id: acme
    timezone: UTC
    language: en
    roles:
      owner: {tools: ["*"]}
    users:
      - id: ann
        name: Ann
        role: owner
        keys:
          - {token: "k-ann-full", scopes: [read, "write:safe", "write:full"]}
          - {token: "k-ann-read", scopes: [read]}
tools:
  taskboard: {confirm: {create_task: always}}
  http:
    - name: send_invoice
      title: Send invoice
      description: Send an invoice to a customer.
      url: %q
      risk: "write:full"
      confirm: always
      input_schema:
        type: object
        additionalProperties: false
        required: [to, amount]
        properties:
          to: {type: string}
          amount: {type: integer, minimum: 1}
`

const (
	fullKey = "k-ann-full"
	readKey = "k-ann-read"
)

// invoices counts the invoices the HTTP tool sent.
type invoices struct {
	mu sync.Mutex
	n  int
}

func (v *invoices) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	v.n++
	v.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"sent":true}`)
}

func (v *invoices) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.n
}

// mcpFixture writes the configuration into a temp dir, with the invoice
// endpoint on loopback.
func mcpFixture(t *testing.T) (path string, sent *invoices) {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("FIREWORKS_API_KEY", "")
	sent = &invoices{}
	srv := httptest.NewServer(sent)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	path = filepath.Join(dir, "arbiter.yaml")
	cfg := fmt.Sprintf(mcpTestConfig, filepath.Join(dir, "arbiter.db"), srv.URL+"/invoices")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, sent
}

// human answers confirmations as told and remembers what it was shown.
type human struct {
	mu     sync.Mutex
	yes    bool
	shown  []string
	answer string
}

func (h *human) say(yes bool) {
	h.mu.Lock()
	h.yes = yes
	h.mu.Unlock()
}

func (h *human) elicit(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.shown = append(h.shown, req.Params.Message)
	if h.yes {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
	}
	return &mcp.ElicitResult{Action: "decline"}, nil
}

func (h *human) last() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.shown) == 0 {
		return ""
	}
	return h.shown[len(h.shown)-1]
}

// lockedBuffer is stderr shared with the command's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// mcpRun is `arbiter mcp` running in-process on pipes, with a client.
type mcpRun struct {
	client *mcp.ClientSession
	done   chan int
	stderr *lockedBuffer
}

func startMCP(t *testing.T, key string, copts *mcp.ClientOptions, args ...string) *mcpRun {
	t.Helper()
	t.Setenv("ARBITER_KEY", key)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := &mcpRun{done: make(chan int, 1), stderr: &lockedBuffer{}}
	go func() {
		code := run(context.Background(), append([]string{"mcp"}, args...), inR, outW, r.stderr)
		outW.Close()
		r.done <- code
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		inW.Close()
		t.Fatalf("connect: %v\n%s", err, r.stderr)
	}
	r.client = cs
	return r
}

// stop ends the session as a client does, by closing the pipe, and
// returns the exit status.
func (r *mcpRun) stop(t *testing.T) int {
	t.Helper()
	r.client.Close()
	select {
	case code := <-r.done:
		return code
	case <-time.After(20 * time.Second):
		t.Fatal("arbiter mcp did not end with its session")
		return -1
	}
}

func structured(res *mcp.CallToolResult) map[string]any {
	m, _ := res.StructuredContent.(map[string]any)
	return m
}

// myTaskTitles lists the caller's open tasks through the read tool.
func myTaskTitles(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res := mcpservertest.Call(t, cs, "list_my_tasks", nil)
	st := structured(res)
	if res.IsError || st["status"] != "ok" {
		t.Fatalf("list_my_tasks: %q %v", mcpservertest.Text(res), st)
	}
	var out struct {
		Cards []struct {
			Title string `json:"title"`
		} `json:"cards"`
	}
	raw, _ := json.Marshal(st["result"])
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	titles := []string{}
	for _, c := range out.Cards {
		titles = append(titles, c.Title)
	}
	return titles
}

func toolNames(tools map[string]*mcp.Tool) []string {
	var names []string
	for n := range tools {
		names = append(names, n)
	}
	return names
}

// TestMCPStdioEndToEnd runs `arbiter mcp` on a configuration with the
// real engine and board: the catalog with its hints, a read, confirmed and
// declined writes, a refusal, a read-only key, and the journal afterwards.
func TestMCPStdioEndToEnd(t *testing.T) {
	path, sent := mcpFixture(t)
	ann := &human{}
	r := startMCP(t, fullKey, &mcp.ClientOptions{ElicitationHandler: ann.elicit}, "-config", path)

	tools := mcpservertest.Tools(t, r.client)
	for _, name := range []string{"list_my_tasks", "create_task", "update_task", "comment_task", "complete_task", "send_invoice"} {
		if tools[name] == nil {
			t.Fatalf("tools %v lack %s", toolNames(tools), name)
		}
	}
	if a := tools["list_my_tasks"].Annotations; !a.ReadOnlyHint || tools["list_my_tasks"].Meta[mcpserver.MetaRisk] != "read" {
		t.Errorf("list_my_tasks: %+v %v", a, tools["list_my_tasks"].Meta)
	}
	if a, m := tools["create_task"].Annotations, tools["create_task"].Meta; a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint ||
		a.OpenWorldHint == nil || *a.OpenWorldHint || m[mcpserver.MetaRisk] != "write:safe" || m[mcpserver.MetaConfirm] != "always" {
		t.Errorf("create_task: %+v %v", a, m)
	}
	if a, m := tools["send_invoice"].Annotations, tools["send_invoice"].Meta; a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint ||
		a.OpenWorldHint == nil || !*a.OpenWorldHint || m[mcpserver.MetaRisk] != "write:full" || m[mcpserver.MetaConfirm] != "always" {
		t.Errorf("send_invoice: %+v %v", a, m)
	}
	if schema, _ := tools["create_task"].InputSchema.(map[string]any); schema["type"] != "object" || schema["required"] == nil {
		t.Errorf("create_task schema %v", tools["create_task"].InputSchema)
	}

	if got := myTaskTitles(t, r.client); len(got) != 0 {
		t.Fatalf("tasks before: %v", got)
	}
	task := map[string]any{"title": "Check the signup form", "assignee": "me"}
	ann.say(false)
	if res := mcpservertest.Call(t, r.client, "create_task", task); !res.IsError || structured(res)["status"] != mcpserver.StatusDeclined {
		t.Errorf("declined create: %q %v", mcpservertest.Text(res), res.StructuredContent)
	}
	if !strings.Contains(ann.last(), "Check the signup form") {
		t.Errorf("confirmation shown: %q", ann.last())
	}
	if got := myTaskTitles(t, r.client); len(got) != 0 {
		t.Fatalf("a declined create made %v", got)
	}
	ann.say(true)
	if res := mcpservertest.Call(t, r.client, "create_task", task); res.IsError || structured(res)["status"] != "ok" {
		t.Errorf("confirmed create: %q %v", mcpservertest.Text(res), res.StructuredContent)
	} else if raw, _ := json.Marshal(res.StructuredContent); strings.Contains(string(raw), `"url"`) || strings.HasSuffix(mcpservertest.Text(res), " — ") {
		// No process serves the board's pages: a card has no link, and
		// says so by having none rather than an empty one.
		t.Errorf("confirmed create without pages names a url: %s %q", raw, mcpservertest.Text(res))
	}
	if got := myTaskTitles(t, r.client); !reflect.DeepEqual(got, []string{"Check the signup form"}) {
		t.Fatalf("tasks after: %v", got)
	}

	invoice := map[string]any{"to": "Globex", "amount": 120}
	if res := mcpservertest.Call(t, r.client, "send_invoice", invoice); res.IsError || structured(res)["status"] != "ok" {
		t.Errorf("confirmed invoice: %q %v", mcpservertest.Text(res), res.StructuredContent)
	}
	ann.say(false)
	if res := mcpservertest.Call(t, r.client, "send_invoice", invoice); !res.IsError {
		t.Errorf("declined invoice: %q", mcpservertest.Text(res))
	}
	if n := sent.count(); n != 1 {
		t.Errorf("invoices sent: %d, want 1", n)
	}
	res := mcpservertest.Call(t, r.client, "create_task", map[string]any{"title": 5})
	if !res.IsError || structured(res)["status"] != mcpserver.StatusRefused || !strings.Contains(mcpservertest.Text(res), "title") {
		t.Errorf("invalid arguments: %q %v", mcpservertest.Text(res), res.StructuredContent)
	}
	if code := r.stop(t); code != 0 {
		t.Fatalf("exit %d: %s", code, r.stderr)
	}

	// A read-only key sees only reads; a write it names is not run.
	r = startMCP(t, readKey, &mcp.ClientOptions{ElicitationHandler: ann.elicit}, "-config", path)
	if tools := mcpservertest.Tools(t, r.client); len(tools) != 1 || tools["list_my_tasks"] == nil {
		t.Errorf("read-only tools: %v", toolNames(tools))
	}
	ann.say(true)
	res, err := r.client.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_task", Arguments: task})
	if err == nil && !res.IsError {
		t.Errorf("read-only create: %q", mcpservertest.Text(res))
	}
	if code := r.stop(t); code != 0 {
		t.Fatalf("exit %d: %s", code, r.stderr)
	}

	a, board := buildApp(t, path)
	cards, err := board.Board().Cards(context.Background(), "acme")
	if err != nil || len(cards) != 1 || cards[0].Title != "Check the signup form" {
		t.Errorf("board: %v %+v", err, cards)
	}
	outcomes := journalOutcomes(t, a)
	want := map[string]int{"turns": 12, "proposed": 4, "confirmed": 2, "cancelled": 2}
	if !reflect.DeepEqual(outcomes, want) {
		t.Errorf("journal: %v, want %v", outcomes, want)
	}
}

// buildApp builds the fixture's server with a watch on its task board,
// whose cards the tests read.
func buildApp(t *testing.T, path string) (*server.Server, *servertest.BoardWatch) {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	all, board := servertest.WatchBoard(kinds.All())
	a, err := server.Build(cfg, all, server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, board
}

// journalOutcomes counts the tenant's turns and their confirmation
// outcomes, checking that each came through MCP in its own conversation.
func journalOutcomes(t *testing.T, a *server.Server) map[string]int {
	t.Helper()
	ctx := context.Background()
	turns, err := a.Journal.(store.TurnLister).ListTurns(ctx, "acme", store.TurnFilter{Limit: store.MaxTurnPage})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{"turns": len(turns)}
	for _, sum := range turns {
		rec, err := a.Journal.GetTurn(ctx, "acme", sum.TurnID)
		if err != nil {
			t.Fatal(err)
		}
		var tr struct {
			Channel      string `json:"channel"`
			Confirmation *struct {
				Outcome string `json:"outcome"`
			} `json:"confirmation"`
		}
		if err := json.Unmarshal(rec.Trace, &tr); err != nil {
			t.Fatal(err)
		}
		if tr.Channel != "mcp" || !strings.HasPrefix(rec.Chat, "mcp:") || rec.UserID != "ann" {
			t.Errorf("turn %s: channel %q chat %q user %q", rec.TurnID, tr.Channel, rec.Chat, rec.UserID)
		}
		if tr.Confirmation != nil {
			counts[tr.Confirmation.Outcome]++
		}
	}
	return counts
}

// lyingCatalog offers another identity's catalog: the tools a client sees
// are advisory, what runs is still decided by the engine for the caller.
type lyingCatalog struct {
	*turn.Engine
	shown chat.Identity
}

func (l lyingCatalog) Catalog(chat.Identity) []tool.Spec { return l.Engine.Catalog(l.shown) }

func TestMCPEngineStillGuards(t *testing.T) {
	path, sent := mcpFixture(t)
	a, board := buildApp(t, path)
	full, ro := a.Keys[0].Identity, a.Keys[1].Identity
	if len(ro.Scopes) != 1 {
		t.Fatalf("keys %+v", a.Keys)
	}
	srv, err := mcpserver.New(mcpserver.Config{Handler: lyingCatalog{a.Engine, full}, Identity: ro})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	ann := &human{yes: true}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{ElicitationHandler: ann.elicit}).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, c := range []struct {
		name string
		args any
	}{{"create_task", map[string]any{"title": "Sneak"}}, {"send_invoice", map[string]any{"to": "X", "amount": 1}}} {
		res := mcpservertest.Call(t, cs, c.name, c.args)
		if !res.IsError || structured(res)["status"] != mcpserver.StatusRefused {
			t.Errorf("%s as read-only: %q %v", c.name, mcpservertest.Text(res), res.StructuredContent)
		}
	}
	if len(ann.shown) != 0 {
		t.Errorf("the user was asked to confirm a refused call: %v", ann.shown)
	}
	cards, _ := board.Board().Cards(context.Background(), "acme")
	if len(cards) != 0 || sent.count() != 0 {
		t.Errorf("cards %v, invoices %d", cards, sent.count())
	}
}

func TestMCPKeyRequired(t *testing.T) {
	path, _ := mcpFixture(t)
	for key, want := range map[string]string{"": "set ARBITER_KEY", "k-nobody1": "not an API key"} {
		t.Setenv("ARBITER_KEY", key)
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{"mcp", "-config", path}, strings.NewReader(""), &out, &errOut); code != 1 ||
			!strings.Contains(errOut.String(), want) || out.Len() != 0 {
			t.Errorf("key %q: exit %d, stdout %q, stderr %q", key, code, out.String(), errOut.String())
		}
	}
}

// TestMCPLocalSetup: with no configuration the local user's key is used,
// and stdout carries nothing but the protocol.
func TestMCPLocalSetup(t *testing.T) {
	localSetup(t)
	r := startMCP(t, "", nil)
	if tools := mcpservertest.Tools(t, r.client); tools["create_task"] == nil || tools["list_my_tasks"] == nil {
		t.Errorf("local tools: %v", toolNames(tools))
	}
	if got := myTaskTitles(t, r.client); len(got) != 0 {
		t.Errorf("tasks: %v", got)
	}
	if code := r.stop(t); code != 0 {
		t.Fatalf("exit %d: %s", code, r.stderr)
	}
}

// bearer adds the API key to every request.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

func TestMCPStreamableHTTP(t *testing.T) {
	path, _ := mcpFixture(t)
	a, _ := buildApp(t, path)
	h, closeAll, err := mcpHTTPHandler(a, mcpOptions{confirmTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last first: sessions, then the MCP servers, then HTTP.
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(closeAll)

	for _, auth := range []string{"", "Bearer k-nobody1", "Bearer "} {
		req, _ := http.NewRequest("POST", srv.URL+kinds.MCPPath, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("auth %q: status %d", auth, resp.StatusCode)
		}
	}

	connect := func(key string, copts *mcp.ClientOptions) *mcp.ClientSession {
		t.Helper()
		transport := &mcp.StreamableClientTransport{Endpoint: srv.URL + kinds.MCPPath, HTTPClient: &http.Client{Transport: bearer{key, http.DefaultTransport}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, copts).Connect(context.Background(), transport, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	ann := &human{yes: true}
	full := connect(fullKey, &mcp.ClientOptions{ElicitationHandler: ann.elicit})
	if res := mcpservertest.Call(t, full, "create_task", map[string]any{"title": "Over HTTP", "assignee": "me"}); res.IsError {
		t.Fatalf("create over HTTP: %q", mcpservertest.Text(res))
	}
	if got := myTaskTitles(t, full); !reflect.DeepEqual(got, []string{"Over HTTP"}) {
		t.Errorf("tasks: %v", got)
	}
	ro := connect(readKey, nil)
	if tools := mcpservertest.Tools(t, ro); len(tools) != 1 || tools["list_my_tasks"] == nil {
		t.Errorf("read-only tools over HTTP: %v", toolNames(tools))
	}
}

// TestMCPBinary talks to the built binary over its real stdio once.
func TestMCPBinary(t *testing.T) {
	bin := slowBinary(t, "builds the binary")
	path, _ := mcpFixture(t)
	cmd := exec.Command(bin, "mcp", "-config", path)
	cmd.Env = append(os.Environ(), "ARBITER_KEY="+fullKey)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil && cmd.Process != nil {
			cmd.Process.Kill()
		}
	})
	if got := myTaskTitles(t, cs); len(got) != 0 {
		t.Errorf("tasks: %v", got)
	}
	// Without elicitation a confirmed write is refused, and nothing runs.
	if res := mcpservertest.Call(t, cs, "create_task", map[string]any{"title": "No way", "assignee": "me"}); !res.IsError ||
		structured(res)["status"] != mcpserver.StatusUnconfirmed {
		t.Errorf("create without elicitation: %q", mcpservertest.Text(res))
	}
	if got := myTaskTitles(t, cs); len(got) != 0 {
		t.Errorf("tasks: %v", got)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v\n%s", err, stderr.String())
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
		t.Errorf("process: %v\n%s", cmd.ProcessState, stderr.String())
	}
}
