package main

import (
	"context"
	"fmt"

	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/tool"
)

// kinds are the server's built-in kinds plus "router_mock": the tools of
// the example, each answering with canned results so the routing can be
// tried and tested without any account — the searches, the two drafts and
// their publishing (drafts.go), the four tools that show numbers
// (numbers.go), the generation modes (generation.go), the Metrika goal and
// the document edit.
func kinds() server.Kinds {
	k := server.Builtin()
	k.Tools["router_mock"] = func(context.Context, *server.Env, server.Section) (server.ToolSet, error) {
		var set server.ToolSet
		builders := []func() (tool.Tool, error){
			func() (tool.Tool, error) {
				return tool.Func(tool.Spec{Name: "web_search", Title: "Поиск в интернете", Description: "Search the web; returns titles, links and snippets.", Policy: tool.Policy{Risk: tool.RiskRead}},
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
				return tool.Func(tool.Spec{Name: "product_search", Title: "Подбор товаров", Description: "Find products to buy on the marketplace; returns product cards.", Policy: tool.Policy{Risk: tool.RiskRead}},
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
				return tool.Func(tool.Spec{Name: "delete_metrika_goal", Title: "Удалить цель в Метрике", Description: "Delete a goal of the site's web analytics counter.", Policy: tool.Policy{Risk: tool.RiskWriteFull, Confirm: tool.ConfirmAlways}},
					func(_ context.Context, _ tool.Call, in struct {
						Goal string `json:"goal" jsonschema:"the goal's name"`
					}) (string, error) {
						return fmt.Sprintf("Цель «%s» удалена.", in.Goal), nil
					})
			},
			func() (tool.Tool, error) {
				return tool.Func(tool.Spec{Name: "edit_document", Title: "Правка документа", Description: "Change a document the user names (a table, a text).", Policy: tool.Policy{Risk: tool.RiskWriteSafe}},
					func(_ context.Context, _ tool.Call, in struct {
						Document string `json:"document" jsonschema:"the document's name"`
						Change   string `json:"change" jsonschema:"what to change"`
					}) (string, error) {
						return fmt.Sprintf("В «%s» внесено: %s", in.Document, in.Change), nil
					})
			},
		}
		builders = append(builders, draftTools(&feed{})...)
		builders = append(builders, numberTools()...)
		builders = append(builders, generationTools()...)
		for _, build := range builders {
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
