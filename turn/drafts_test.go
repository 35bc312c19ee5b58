package turn_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/turntest"
)

// draftTools are a drafting tool (a read: it writes nothing) and the
// write its draft's publish button makes; published counts the writes.
func draftTools(t *testing.T, published *[]string) *tool.Registry {
	draft, err := tool.Func(tool.Spec{Name: "draft_post", Description: "draft a post", Policy: tool.Policy{Risk: tool.RiskRead}},
		func(_ context.Context, _ tool.Call, in struct {
			Topic string `json:"topic"`
		}) (tool.Result, error) {
			args, _ := json.Marshal(map[string]string{"text": "Пост: " + in.Topic})
			return tool.Result{Draft: &tool.Draft{Text: "Черновик: " + in.Topic, Publish: tool.Choice{Tool: "publish_post", Args: args}}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	publish, err := tool.Func(tool.Spec{Name: "publish_post", Description: "publish", Policy: tool.Policy{Risk: tool.RiskWriteSafe, PublishesDraft: true}},
		func(_ context.Context, _ tool.Call, in struct {
			Text string `json:"text"`
		}) (string, error) {
			*published = append(*published, in.Text)
			return "опубликовано", nil
		})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry(draft, publish)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// In a single-decision assistant too, a draft is shown with its buttons
// and only its publish button writes, once; a tool that publishes drafts
// is offered to no model and refuses a model's or a program's call.
func TestDraftPublishedOnlyByItsButton(t *testing.T) {
	var published []string
	e := turntest.New(t, turn.Config{Tools: draftTools(t, &published),
		Tenants: map[string]turn.Tenant{"t": {ID: "t", Language: "ru", Roles: map[string]turn.Role{"user": {Tools: []string{"*"}}}}}})
	model := e.Model
	id := chat.Identity{TenantID: "t", UserID: "u", Role: "user", Scopes: []chat.Scope{chat.ScopeRead, chat.ScopeWriteSafe}}
	send := func(in chat.Inbound) chat.Outbound {
		t.Helper()
		in.Identity, in.Chat = id, "c"
		return e.Send(in)
	}

	model.Push(turntest.Decide("draft_post", `{"topic":"осень"}`))
	out := send(chat.Inbound{Text: "напиши пост про осень"})
	if out.Say != "Черновик: осень" || len(out.Buttons) != 3 || len(published) != 0 {
		t.Fatalf("draft: say %q, buttons %+v, published %v", out.Say, out.Buttons, published)
	}
	if strings.Contains(model.Requests()[0].Messages[0].Content, "publish_post") {
		t.Error("the model was shown the publishing tool")
	}
	publish := out.Buttons[0].Value

	send(chat.Inbound{Call: &chat.Call{Tool: "publish_post", Args: json.RawMessage(`{"text":"от программы"}`)}})
	model.Push(turntest.Decide("publish_post", `{"text":"от модели"}`), turntest.Decide("publish_post", `{"text":"от модели"}`))
	send(chat.Inbound{Text: "опубликуй"})
	if len(published) != 0 {
		t.Fatalf("published without the button: %v", published)
	}

	send(chat.Inbound{Button: publish})
	send(chat.Inbound{Button: publish})
	if len(published) != 1 || published[0] != "Пост: осень" {
		t.Errorf("after two presses published %v, want the stored call once", published)
	}
}
