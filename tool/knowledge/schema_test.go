package knowledge

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/tool/tooltest"
)

func TestSchemas(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("ж", n) }
	tests := []tooltest.Case{
		tooltest.Accepts(ActionAdd, `{"title":"Тарифы","text":"Базовый — 990 ₽"}`),
		tooltest.Accepts(ActionAdd, `{"title":"Тарифы","text":"x","source":"https://t.me/c/1","tags":["цены","2027"]}`),
		tooltest.Accepts(ActionAdd, `{"title":"Тарифы","text":"x","source":null,"tags":null}`),
		tooltest.Accepts(ActionAdd, `{"title":"`+long(maxTitle)+`","text":"`+long(maxText)+`"}`),
		tooltest.Refuses(ActionAdd, `{"title":"Тарифы"}`),
		tooltest.Refuses(ActionAdd, `{"text":"x"}`),
		tooltest.Refuses(ActionAdd, `{"title":"","text":"x"}`),
		tooltest.Refuses(ActionAdd, `{"title":"x","text":""}`),
		tooltest.Refuses(ActionAdd, `{"title":"x","text":"y","author":"boss"}`),
		tooltest.Refuses(ActionAdd, `{"title":"x","text":"y","tags":"цены"}`),
		tooltest.Refuses(ActionAdd, `{"title":"x","text":"y","tags":[""]}`),
		tooltest.Refuses(ActionAdd, `{"title":"x","text":"y","tags":["1","2","3","4","5","6","7","8","9","10","11"]}`),
		tooltest.Refuses(ActionAdd, `{"title":"x","text":"y","source":42}`),
		tooltest.Refuses(ActionAdd, `{"title":"`+long(maxTitle+1)+`","text":"y"}`),
		tooltest.Refuses(ActionAdd, `{"title":"x","text":"y","source":"`+long(maxSource+1)+`"}`),

		tooltest.Accepts(ActionSearch, `{"query":"встреча"}`),
		tooltest.Accepts(ActionSearch, `{"query":"NEAR(\"x\" *)","limit":20}`),
		tooltest.Accepts(ActionSearch, `{"query":"x","limit":null}`),
		tooltest.Refuses(ActionSearch, `{}`),
		tooltest.Refuses(ActionSearch, `{"query":""}`),
		tooltest.Refuses(ActionSearch, `{"query":"x","limit":0}`),
		tooltest.Refuses(ActionSearch, `{"query":"x","limit":21}`),
		tooltest.Refuses(ActionSearch, `{"query":"x","limit":2.5}`),
		tooltest.Refuses(ActionSearch, `{"query":"x","tenant":"globex"}`),
		tooltest.Refuses(ActionSearch, `{"query":"`+long(maxQuery+1)+`"}`),
	}
	tooltest.Run(t, newBase(t).Tools(), tests)
}
