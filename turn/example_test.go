package turn_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/mode/builtin"
)

// An engine over the embedded store, one write tool and a scripted model:
// the model proposes the write, the server asks the user, and the user's
// "yes" runs the stored call — the model is not asked again.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "arbiter-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	st, err := sqlitestore.Open(filepath.Join(dir, "arbiter.db"), sqlitestore.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	var created []string
	addTask, err := tool.Func(tool.Spec{Name: "add_task", Title: "Add a task", Description: "Add a task to the list.", Policy: tool.Policy{Risk: tool.RiskWriteSafe, Confirm: tool.ConfirmAlways}},
		func(_ context.Context, _ tool.Call, in struct {
			Title string `json:"title" jsonschema:"the task's title"`
		}) (string, error) {
			created = append(created, in.Title)
			return "added: " + in.Title, nil
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	tools, err := tool.NewRegistry(addTask)
	if err != nil {
		fmt.Println(err)
		return
	}
	model := llmtest.NewScripted(llmtest.Text(
		`{"tool":"add_task","args":{"title":"check the signup form"},"say":"","done":false,"newTopic":false,"buttons":[]}`))
	engine, err := turn.New(turn.Config{State: st, Locker: st, Journal: st, Tools: tools, Model: model, Modes: builtin.Modes(), DefaultMode: builtin.DefaultMode,
		Tenants: map[string]turn.Tenant{"acme": {ID: "acme", Language: "en", Roles: map[string]turn.Role{"owner": {Tools: []string{"*"}}}}}})
	if err != nil {
		fmt.Println(err)
		return
	}

	ann := chat.Identity{TenantID: "acme", UserID: "ann", Role: "owner", Scopes: []chat.Scope{chat.ScopeRead, chat.ScopeWriteSafe}}
	for _, text := range []string{"add a task to check the signup form", "yes"} {
		out, err := engine.HandleTurn(context.Background(), chat.Inbound{Identity: ann, Chat: "c1", Text: text})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s\n-> %s\n", text, out.Say)
	}
	fmt.Println("created:", created, "model calls:", model.Calls())
	// Output:
	// add a task to check the signup form
	// -> Please confirm: Add a task
	// • title: check the signup form
	// Go ahead?
	// yes
	// -> added: check the signup form
	// created: [check the signup form] model calls: 1
}
