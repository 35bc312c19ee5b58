package main

import (
	"context"
	"fmt"

	"github.com/arbiterhq/arbiter/tool"
)

// numberTools are the article's four "show the numbers" tools that are
// confused most: the statistics of the user's page in the network, the
// site's visits, the advertising revenue and the counter's settings (a
// goal, a filter, a segment is a setting, not figures).
func numberTools() []func() (tool.Tool, error) {
	type period struct {
		Period string `json:"period" jsonschema:"day, week or month"`
	}
	return []func() (tool.Tool, error){
		func() (tool.Tool, error) {
			return tool.Func(tool.Spec{Name: "page_stats", Title: "Статистика страницы", Description: "Figures of the user's own page in the Schai network: subscribers, views, reactions. Not the website.", Policy: tool.Policy{Risk: tool.RiskRead}},
				func(_ context.Context, _ tool.Call, in period) (any, error) {
					return map[string]any{"period": in.Period, "subscribers": 1240, "new_subscribers": 37, "views": 8900}, nil
				})
		},
		func() (tool.Tool, error) {
			return tool.Func(tool.Spec{Name: "site_visits", Title: "Посещаемость сайта", Description: "Visits, visitors and sources of the user's website from its web analytics counter (Metrika). Not the page in the network.", Policy: tool.Policy{Risk: tool.RiskRead}},
				func(_ context.Context, _ tool.Call, in period) (any, error) {
					return map[string]any{"period": in.Period, "visits": 5320, "visitors": 4100, "top_source": "поиск"}, nil
				})
		},
		func() (tool.Tool, error) {
			return tool.Func(tool.Spec{Name: "ad_revenue", Title: "Доход с рекламы", Description: "What the ads on the user's site or page earned, in roubles.", Policy: tool.Policy{Risk: tool.RiskRead}},
				func(_ context.Context, _ tool.Call, in period) (any, error) {
					return map[string]any{"period": in.Period, "revenue_rub": 18450, "impressions": 96000}, nil
				})
		},
		func() (tool.Tool, error) {
			return tool.Func(tool.Spec{Name: "counter_settings", Title: "Настройка счётчика", Description: "Add or change a goal, a filter or a segment of the site's web analytics counter (Metrika). A setting, not a report.", Policy: tool.Policy{Risk: tool.RiskWriteSafe}},
				func(_ context.Context, _ tool.Call, in struct {
					Setting string `json:"setting" jsonschema:"goal, filter or segment"`
					Name    string `json:"name" jsonschema:"its name"`
				}) (string, error) {
					return fmt.Sprintf("В счётчике добавлено: %s «%s».", in.Setting, in.Name), nil
				})
		},
	}
}
