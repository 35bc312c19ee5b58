package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/arbiterhq/arbiter/tool"
)

// feed is where the mocks publish: the posts and sell cards the buttons
// of their drafts wrote, numbered, so a second publish would show.
type feed struct {
	mu    sync.Mutex
	items []string
}

func (f *feed) publish(item string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.items = append(f.items, item)
	return len(f.items)
}

// draftTools are the article's two drafts: a post and a sell card are
// prepared and shown with buttons (publish, edit, cancel), and only the
// publish button runs the write.
func draftTools(f *feed) []func() (tool.Tool, error) {
	return []func() (tool.Tool, error){
		func() (tool.Tool, error) {
			return tool.Func(tool.Spec{Name: "create_post_draft", Title: "Черновик поста", Description: "Draft a post or an article for the user's feed; the user sees the draft and publishes, edits or cancels it. While a draft is shown, call it again with the changed topic to revise it.", Policy: tool.Policy{Risk: tool.RiskRead}},
				func(_ context.Context, _ tool.Call, in struct {
					Topic string `json:"topic" jsonschema:"what the post is about"`
				}) (tool.Result, error) {
					text := "Черновик поста «" + in.Topic + "»:\n\n" + in.Topic + " — главное в трёх абзацах, с выводом в конце."
					return drafted(map[string]any{"draft": true, "topic": in.Topic, "text": text}, text, "publish_post", map[string]string{"text": text})
				})
		},
		func() (tool.Tool, error) {
			return tool.Func(tool.Spec{Name: "publish_post", Title: "Публикация поста", Description: "Publish a drafted post.", Policy: tool.Policy{Risk: tool.RiskWriteFull, PublishesDraft: true}},
				func(_ context.Context, _ tool.Call, in struct {
					Text string `json:"text" jsonschema:"the post as drafted"`
				}) (string, error) {
					return fmt.Sprintf("Пост опубликован в ленте (№%d).", f.publish(in.Text)), nil
				})
		},
		func() (tool.Tool, error) {
			return tool.Func(tool.Spec{Name: "create_sell_card", Title: "Карточка на продажу", Description: "Draft a card that sells the user's own item or course; the user sees the draft and publishes, edits or cancels it.", Policy: tool.Policy{Risk: tool.RiskRead}},
				func(_ context.Context, _ tool.Call, in struct {
					Title string `json:"title" jsonschema:"what is sold"`
					Price int    `json:"price" jsonschema:"price in roubles"`
				}) (tool.Result, error) {
					text := fmt.Sprintf("Карточка на продажу: «%s» — %d ₽.", in.Title, in.Price)
					return drafted(map[string]any{"draft": true, "title": in.Title, "price": in.Price}, text, "publish_sell_card", in)
				})
		},
		func() (tool.Tool, error) {
			return tool.Func(tool.Spec{Name: "publish_sell_card", Title: "Выставить на продажу", Description: "Publish a drafted sell card.", Policy: tool.Policy{Risk: tool.RiskWriteFull, PublishesDraft: true}},
				func(_ context.Context, _ tool.Call, in struct {
					Title string `json:"title" jsonschema:"what is sold"`
					Price int    `json:"price" jsonschema:"price in roubles"`
				}) (string, error) {
					return fmt.Sprintf("«%s» выставлен на продажу за %d ₽ (№%d).", in.Title, in.Price, f.publish(in.Title)), nil
				})
		},
	}
}

// drafted is a drafting tool's result: data for the model, the text the
// user sees and the call its publish button makes.
func drafted(data any, text, publish string, args any) (tool.Result, error) {
	d, err := json.Marshal(data)
	if err != nil {
		return tool.Result{}, err
	}
	a, err := json.Marshal(args)
	if err != nil {
		return tool.Result{}, err
	}
	return tool.Result{Data: d, Draft: &tool.Draft{Text: text, Publish: tool.Choice{Tool: publish, Args: a}}}, nil
}
