package contentidea

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/tooltest"
)

func TestSchemas(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("ж", n) }
	tests := []tooltest.Case{
		tooltest.Accepts(ActionIdea, `{"idea":"Разбор кейса"}`),
		tooltest.Accepts(ActionIdea, `{"idea":"Разбор кейса","platform":null,"format":null,"notes":null}`),
		tooltest.Accepts(ActionIdea, `{"idea":"Разбор кейса","platform":"tiktok","format":"reels","notes":"x"}`),
		tooltest.Accepts(ActionIdea, `{"idea":"`+long(maxIdea)+`","platform":"telegram"}`),
		tooltest.Refuses(ActionIdea, `{}`),
		tooltest.Refuses(ActionIdea, `{"idea":""}`),
		tooltest.Refuses(ActionIdea, `{"idea":null,"platform":"blog"}`),
		tooltest.Refuses(ActionIdea, `{"idea":"x","platform":["blog"]}`),
		tooltest.Refuses(ActionIdea, `{"idea":"x","platform":"`+long(maxPlatform+1)+`"}`),
		tooltest.Refuses(ActionIdea, `{"idea":"x","format":"`+long(maxFormat+1)+`"}`),
		tooltest.Refuses(ActionIdea, `{"idea":"`+long(maxIdea+1)+`"}`),
		tooltest.Refuses(ActionIdea, `{"idea":"x","publish":true}`),

		tooltest.Accepts(ActionList, `{}`),
		tooltest.Accepts(ActionList, `{"platform":"telegram","limit":50}`),
		tooltest.Accepts(ActionList, `{"platform":null,"limit":null}`),
		tooltest.Refuses(ActionList, `{"limit":0}`),
		tooltest.Refuses(ActionList, `{"limit":51}`),
		tooltest.Refuses(ActionList, `{"limit":"5"}`),
		tooltest.Refuses(ActionList, `{"tenant":"globex"}`),
	}
	tooltest.Run(t, newStore(t, Config{}).Tools(), tests)
	// Platform names with quotes still give a valid schema.
	q := newStore(t, Config{Platforms: []string{`Блог "Вечерний"`, `a\b`}})
	for _, tl := range q.Tools() {
		if _, err := tool.CompileSchema(tl.Spec().Name, tl.Spec().InputSchema); err != nil {
			t.Errorf("schema with quoted platforms: %v", err)
		}
	}
}
