package eval_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/arbiterhq/arbiter/eval"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
)

// suiteYAML is a suite of two scenarios, each judged from the journal of
// its turns: what was proposed, what waits for the user, what ran.
const suiteYAML = `
name: board
as: k-ann-0001
scenarios:
  - name: a task is created only after the yes
    turns:
      - text: create a task to check the signup form
        expect: {tool: create_task, args: {title: Check the signup form}, pending: create_task}
      - text: "yes"
        expect: {executed: create_task, max_model_calls: 0}
  - name: a greeting writes nothing
    turns:
      - text: hello
        expect: {no_tool: true, say_contains: [board]}
`

// A suite run against a configuration whose model is a loopback fake that
// answers by the user's newest words; every scenario runs twice (pass^k),
// each run on a fresh store.
func ExampleRun() {
	model := llmtest.NewServer(llmtest.ServerConfig{Respond: func(r *llmtest.ChatRequest) llmtest.HTTPReply {
		if strings.Contains(r.Messages[len(r.Messages)-1].Content, "signup form") {
			return llmtest.HTTPReply{Content: `{"tool":"create_task","args":{"title":"Check the signup form"},"say":"","done":false,"newTopic":false,"buttons":[]}`}
		}
		return llmtest.HTTPReply{Content: `{"tool":null,"args":null,"say":"Hello! What should go on the board?","done":false,"newTopic":false,"buttons":[]}`}
	}})
	defer model.Close()
	dir, err := os.MkdirTemp("", "arbiter-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	configPath := filepath.Join(dir, "arbiter.yaml")
	if err := os.WriteFile(configPath, []byte(`models:
  - {name: local, kind: openai, base_url: "`+model.URL+`", model: m, api_key: sk-local}
tenants:
  - id: acme
    language: en
    roles: {owner: {tools: ["*"]}}
    users:
      - {id: ann, name: Ann, role: owner, keys: [{token: k-ann-0001, scopes: [read, write:safe]}]}
tools:
  taskboard: {columns: [Inbox, Doing, Done]}
`), 0o600); err != nil {
		fmt.Println(err)
		return
	}
	suite, err := eval.ParseSuite(strings.NewReader(suiteYAML))
	if err != nil {
		fmt.Println(err)
		return
	}
	report, err := eval.Run(context.Background(), suite, eval.Options{Config: configPath, K: 2,
		Kinds: server.Builtin(), Getenv: func(string) string { return "" }})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, sc := range report.Scenarios {
		fmt.Printf("%s: %d of %d runs passed\n", sc.Name, sc.Passed, len(sc.Runs))
		for _, turn := range sc.Runs[0].Turns {
			fmt.Printf("  %q: tool %q, pending %q, executed %q, model calls %d, failures %d\n",
				turn.Message, turn.Tool, turn.Pending, turn.Executed, turn.ModelCalls, len(turn.Failures))
		}
	}
	fmt.Printf("passed: %t, turns: %d, tool selection: %.2f\n", report.Passed(), report.Metrics.Turns, report.Metrics.ToolSelection)
	// Output:
	// a task is created only after the yes: 2 of 2 runs passed
	//   "create a task to check the signup form": tool "create_task", pending "create_task", executed [], model calls 1, failures 0
	//   "yes": tool "create_task", pending "", executed ["create_task"], model calls 0, failures 0
	// a greeting writes nothing: 2 of 2 runs passed
	//   "hello": tool "", pending "", executed [], model calls 1, failures 0
	// passed: true, turns: 6, tool selection: 1.00
}
