package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/tool"
)

// shoutSettings are the section of the shout tool kind: what tools.shout
// would hold in a configuration file.
type shoutSettings struct {
	Suffix string `yaml:"suffix"`
}

// shoutInput is the shout tool's input, its schema in the keyed tag style
// of invopop/jsonschema.
type shoutInput struct {
	Text string `json:"text" jsonschema:"description=the text to shout,required"`
}

// shoutKind is a program's own tool kind: it reads its section as a file's
// would be read, and makes one tool of a Go function.
func shoutKind(_ context.Context, _ *server.Env, sec server.Section) (server.ToolSet, error) {
	var set shoutSettings
	if err := sec.Decode(&set); err != nil {
		return server.ToolSet{}, err
	}
	t, err := tool.Func(tool.Spec{Name: "shout", Description: "Upper-case a text.", Policy: tool.Policy{Risk: tool.RiskRead}},
		func(_ context.Context, _ tool.Call, in shoutInput) (string, error) {
			return strings.ToUpper(in.Text) + set.Suffix, nil
		})
	return server.ToolSet{Tools: []tool.Tool{t}}, err
}

// A program embeds arbiter with no configuration file: the configuration
// is built in Go, its own tool kind's section made with SectionOf, and a
// slash command runs the tool without a model.
func ExampleSectionOf() {
	dir, err := os.MkdirTemp("", "arbiter-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	section, err := server.SectionOf(shoutSettings{Suffix: "!"})
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := &config.Config{
		Store: config.Store{Path: filepath.Join(dir, "arbiter.db")},
		Tenants: []config.Tenant{{ID: "acme", Roles: map[string]config.Role{"owner": {Tools: []string{"*"}}},
			Users: []config.User{{ID: "ann", Role: "owner", Keys: []config.Key{{Token: "k-ann-0001", Scopes: []string{"read"}}}}}}},
		Tools:    config.Tools{Extra: map[string]yaml.Node{"shout": section}},
		Commands: map[string]config.Command{"/shout": {Tool: "shout", Args: `{"text":"hello"}`}},
	}
	kinds := server.Builtin()
	kinds.Tools["shout"] = shoutKind
	srv, err := server.Build(cfg, kinds, server.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	if say, ok := send(srv, "/shout"); ok {
		fmt.Println(say)
	}
	// Output: HELLO!
}

// A server built from a configuration file's text, its model an
// OpenAI-compatible endpoint (here a loopback fake): the model proposes a
// task, the server renders the confirmation, and the user's "yes" creates
// it on the embedded task board.
func ExampleBuild() {
	model := llmtest.NewServer(llmtest.ServerConfig{})
	defer model.Close()
	model.Enqueue(llmtest.HTTPReply{Content: `{"tool":"create_task","args":{"title":"Check the signup form"},` +
		`"say":"","done":false,"newTopic":false,"buttons":[]}`})
	dir, err := os.MkdirTemp("", "arbiter-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	cfg, err := config.Parse(strings.NewReader(`
store: {path: `+filepath.Join(dir, "arbiter.db")+`}
models:
  - {name: local, kind: openai, base_url: "`+model.URL+`", model: m, api_key: sk-local}
tenants:
  - id: acme
    language: en
    roles: {owner: {tools: ["*"]}}
    users:
      - {id: ann, name: Ann, role: owner, keys: [{token: k-ann-0001, scopes: [read, write:safe]}]}
tools:
  taskboard: {columns: [Inbox, Doing, Done]}
`), func(string) string { return "" })
	if err != nil {
		fmt.Println(err)
		return
	}
	srv, err := server.Build(cfg, server.Builtin(), server.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	for _, text := range []string{"create a task to check the signup form", "yes"} {
		said, ok := send(srv, text)
		if !ok {
			return
		}
		// A created card's link ends the reply; its id is random.
		say, link, linked := strings.Cut(said, " — ")
		fmt.Printf("%s\n-> %s\n", text, say)
		if linked {
			fmt.Println("-> its card:", strings.HasPrefix(link, "http://127.0.0.1:8080/board/c/"))
		}
	}
	fmt.Println("model calls:", model.Count())
	// Output:
	// create a task to check the signup form
	// -> Please confirm: Create a task
	// • Title: Check the signup form
	// Go ahead?
	// yes
	// -> Created task "Check the signup form" (unassigned, no due date)
	// -> its card: true
	// model calls: 1
}

// send posts text as Ann's message in conversation c1 and returns the
// reply's text; it prints what came back instead when that is no reply.
func send(srv *server.Server, text string) (string, bool) {
	body, _ := json.Marshal(map[string]string{"conversation_id": "c1", "text": text})
	req := httptest.NewRequest("POST", "/v1/messages", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer k-ann-0001")
	rec := httptest.NewRecorder()
	srv.HTTP.ServeHTTP(rec, req)
	var reply struct {
		Say string `json:"say"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &reply); err != nil {
		fmt.Println(rec.Code, rec.Body.String())
		return "", false
	}
	return reply.Say, true
}
