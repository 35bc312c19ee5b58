package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/cmd/internal/kinds"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server/servertest"
	"github.com/arbiterhq/arbiter/store"
)

// The token economics of an interview: a 50 KB log pasted with the first
// message, three questions, the result — four requests that each repeat
// the log. With the system prompt and the first message marked for the
// prompt cache, every request after the first reads them from the cache
// (the fake emulates the Messages API's cache and estimates tokens as
// bytes/4); without caching all of it would be input every time.
func TestInterviewTokenEconomics(t *testing.T) {
	log := "ERROR 2026-11-30 app.php:42 " + strings.Repeat("Stack trace: #0 /var/www/app/Http/Controllers/ReportController.php(118): query() ", 600)
	run := func() []store.LLMCall {
		model := llmtest.NewAnthropicServer(llmtest.AnthropicServerConfig{PromptCache: true})
		t.Cleanup(model.Close)
		for i := 1; i <= 3; i++ {
			model.Enqueue(llmtest.AnthropicReply{ToolUses: []llmtest.AnthropicToolUse{{ID: fmt.Sprintf("toolu_q%d", i), Name: "ask_user",
				Input: []byte(fmt.Sprintf(`{"question":"Вопрос %d?","reasoning":"r"}`, i))}}})
		}
		model.Enqueue(llmtest.AnthropicReply{ToolUses: []llmtest.AnthropicToolUse{{ID: "toolu_f", Name: "deliver_final_result",
			Input: []byte(`{"content":"Исправление: …","confidence_score":0.8}`)}}})
		yaml := `models:
  - {name: claude, kind: anthropic, protocol: tools, base_url: "` + model.URL + `", model: claude-haiku-4-5, api_key: sk-ant-test-000000}
limits: {max_body_bytes: 262144}
assistants:
  iv: {mode: interview, prompt: "Ты — эксперт-исполнитель. Решай задачу пользователя; задавай не более одного вопроса за раз."}
tenants:
  - id: acme
    assistant: iv
    roles: {user: {tools: []}}
    users:
      - {id: anna, role: user, keys: [{token: k-anna-01, scopes: [read]}]}
`
		e := servertest.New(t, yaml, kinds.All(), nil, func(string) string { return "" })
		body := fmt.Sprintf(`{"conversation_id":"c1","text":%q}`, "почини код:\n"+log)
		if status, out := e.Post("k-anna-01", body); status != 200 || out["say"] != "Вопрос 1?" {
			t.Fatalf("first message: %d %v", status, out)
		}
		var calls []store.LLMCall
		for i, answer := range []string{"PHP 8.3", "Laravel 11", "MySQL"} {
			status, out := e.Post("k-anna-01", `{"conversation_id":"c1","text":"`+answer+`"}`)
			if status != 200 || (i == 2) != (out["final"] != nil) {
				t.Fatalf("answer %d: %d %v", i+1, status, out)
			}
		}
		lister := e.Journal.(store.TurnLister)
		recs, err := lister.ListTurns(context.Background(), "acme", store.TurnFilter{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		for i := len(recs) - 1; i >= 0; i-- {
			calls = append(calls, recs[i].LLMCalls...)
			// What an automatic prefix cache (OpenAI-compatible providers)
			// can reuse: the share of each request that repeats the last.
			rec, err := e.Journal.GetTurn(context.Background(), "acme", recs[i].TurnID)
			if err != nil {
				t.Fatal(err)
			}
			var tr struct {
				Ratio float64 `json:"stable_prefix_ratio"`
			}
			_ = json.Unmarshal(rec.Trace, &tr)
			t.Logf("request %d: stable prefix %.3f", len(recs)-i, tr.Ratio)
			if i < len(recs)-1 && tr.Ratio < 0.95 {
				t.Errorf("request %d repeats only %.2f of the previous prompt from its start", len(recs)-i, tr.Ratio)
			}
		}
		if len(calls) != 4 {
			t.Fatalf("%d model calls, want 4", len(calls))
		}
		return calls
	}
	calls := run()
	var uncached, total int
	for i, c := range calls {
		t.Logf("iteration %d: input %6d tokens, %6d of them read from the cache, %6d not", i+1, c.InputTokens, c.CachedInputTokens, c.InputTokens-c.CachedInputTokens)
		uncached += c.InputTokens - c.CachedInputTokens
		total += c.InputTokens
	}
	t.Logf("over the interview: %d input tokens not from the cache with caching, %d without caching", uncached, total)
	for i := 1; i < len(calls); i++ {
		if c := calls[i]; c.CachedInputTokens < c.InputTokens*9/10 {
			t.Errorf("iteration %d read only %d of %d input tokens from the cache", i+1, c.CachedInputTokens, c.InputTokens)
		}
	}
	if uncached*3 > total {
		t.Errorf("caching saved too little: %d uncached tokens of %d", uncached, total)
	}
}
