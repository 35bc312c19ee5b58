package main

import (
	"context"
	"fmt"

	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/tool"
)

// kinds are the server's built-in kinds plus "router_mock": the six tools
// of the example, each answering with canned results so the routing can
// be tried and tested without any account.
func kinds() server.Kinds {
	k := server.Builtin()
	k.Tools["router_mock"] = func(context.Context, *server.Env, server.Section) (server.ToolSet, error) {
		var set server.ToolSet
		for _, build := range []func() (tool.Tool, error){
			func() (tool.Tool, error) {
				return tool.Func(tool.Spec{Name: "web_search", Title: "Поиск в интернете", Description: "Search the web; returns titles, links and snippets.", Risk: tool.RiskRead},
					func(_ context.Context, _ tool.Call, in struct {
						Query string `json:"query" jsonschema:"what to search for"`
					}) (any, error) {
						return map[string]any{"query": in.Query, "results": []map[string]string{
							{"title": "Результат по запросу «" + in.Query + "»", "url": "https://example.org/search/1", "snippet": "Кратко: сводка по теме из открытых источников."},
							{"title": "Обзор и сравнение", "url": "https://example.org/search/2", "snippet": "Цены, отзывы и рейтинги на сегодня."},
						}}, nil
					})
			},
			func() (tool.Tool, error) {
				return tool.Func(tool.Spec{Name: "product_search", Title: "Подбор товаров", Description: "Find products to buy on the marketplace; returns product cards.", Risk: tool.RiskRead},
					func(_ context.Context, _ tool.Call, in struct {
						Query string `json:"query" jsonschema:"what to buy, with constraints"`
					}) (any, error) {
						return map[string]any{"query": in.Query, "cards": []map[string]any{
							{"title": "Увлажнитель Aqua 300", "price": 5990, "rating": 4.7},
							{"title": "Увлажнитель Breeze Mini", "price": 7490, "rating": 4.6},
						}}, nil
					})
			},
			func() (tool.Tool, error) {
				return tool.Func(tool.Spec{Name: "create_sell_card", Title: "Карточка на продажу", Description: "Draft a card that sells the user's own item or course.", Risk: tool.RiskWriteSafe},
					func(_ context.Context, _ tool.Call, in struct {
						Title string `json:"title" jsonschema:"what is sold"`
						Price int    `json:"price" jsonschema:"price in roubles"`
					}) (any, error) {
						return map[string]any{"draft": true, "title": in.Title, "price": in.Price}, nil
					})
			},
			func() (tool.Tool, error) {
				return tool.Func(tool.Spec{Name: "create_post_draft", Title: "Черновик поста", Description: "Draft a post or an article for the user's feed; the user publishes it.", Risk: tool.RiskWriteSafe},
					func(_ context.Context, _ tool.Call, in struct {
						Topic string `json:"topic" jsonschema:"what the post is about"`
					}) (any, error) {
						return map[string]any{"draft": true, "topic": in.Topic, "text": "Черновик: " + in.Topic}, nil
					})
			},
			func() (tool.Tool, error) {
				return tool.Func(tool.Spec{Name: "delete_metrika_goal", Title: "Удалить цель в Метрике", Description: "Delete a goal of the site's web analytics counter.", Risk: tool.RiskWriteFull, Confirm: tool.ConfirmAlways},
					func(_ context.Context, _ tool.Call, in struct {
						Goal string `json:"goal" jsonschema:"the goal's name"`
					}) (string, error) {
						return fmt.Sprintf("Цель «%s» удалена.", in.Goal), nil
					})
			},
			func() (tool.Tool, error) {
				return tool.Func(tool.Spec{Name: "edit_document", Title: "Правка документа", Description: "Change a document the user names (a table, a text).", Risk: tool.RiskWriteSafe},
					func(_ context.Context, _ tool.Call, in struct {
						Document string `json:"document" jsonschema:"the document's name"`
						Change   string `json:"change" jsonschema:"what to change"`
					}) (string, error) {
						return fmt.Sprintf("В «%s» внесено: %s", in.Document, in.Change), nil
					})
			},
		} {
			t, err := build()
			if err != nil {
				return server.ToolSet{}, err
			}
			set.Tools = append(set.Tools, t)
		}
		return set, nil
	}
	return k
}
