package taskboard

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/tool/internal/board"
	"github.com/arbiterhq/arbiter/tool/tooltest"
)

func TestSchemas(t *testing.T) {
	long := func(n int) string { return strings.Repeat("ж", n) }
	tests := []tooltest.Case{
		tooltest.Accepts(ActionCreate, `{"title":"Проверить форму"}`),
		tooltest.Accepts(ActionCreate, `{"title":"Проверить форму","assignee":"Дмитрий","dueIso":null,"column":null,"description":null}`),
		tooltest.Accepts(ActionCreate, `{"title":"X","assignee":"me","dueIso":"2026-12-01","column":"В работе","description":"d"}`),
		tooltest.Accepts(ActionCreate, `{"title":"`+long(board.MaxTitle)+`"}`),
		tooltest.Refuses(ActionCreate, `{}`),
		tooltest.Refuses(ActionCreate, `{"title":""}`),
		tooltest.Refuses(ActionCreate, `{"title":null}`),
		tooltest.Refuses(ActionCreate, `{"title":"X","priority":"high"}`),
		tooltest.Refuses(ActionCreate, `{"title":"`+long(board.MaxTitle+1)+`"}`),
		tooltest.Refuses(ActionCreate, `{"title":"X","dueIso":20261201}`),
		tooltest.Refuses(ActionCreate, `{"title":"X","description":"`+long(board.MaxDescription+1)+`"}`),

		tooltest.Accepts(ActionUpdate, `{"card":"ab12cd34","column":"Готово"}`),
		tooltest.Accepts(ActionUpdate, `{"card":"ab12cd34","title":null,"assignee":null,"dueIso":null,"column":null,"description":null}`),
		tooltest.Refuses(ActionUpdate, `{"title":"X"}`),
		tooltest.Refuses(ActionUpdate, `{"card":"ab12cd34","status":"done"}`),
		tooltest.Refuses(ActionUpdate, `{"card":null,"title":"X"}`),

		tooltest.Accepts(ActionComment, `{"card":"https://board.example/board/c/ab12cd34","text":"Готово к ревью"}`),
		tooltest.Refuses(ActionComment, `{"card":"ab12cd34"}`),
		tooltest.Refuses(ActionComment, `{"card":"ab12cd34","text":null}`),
		tooltest.Refuses(ActionComment, `{"card":"ab12cd34","text":"x","author":"boss"}`),
		tooltest.Refuses(ActionComment, `{"card":"ab12cd34","text":"`+long(board.MaxComment+1)+`"}`),

		tooltest.Accepts(ActionComplete, `{"card":"Проверить форму"}`),
		tooltest.Refuses(ActionComplete, `{}`),
		tooltest.Refuses(ActionComplete, `{"card":"x","force":true}`),
		tooltest.Refuses(ActionComplete, `{"card":"`+long(board.MaxCardRef+1)+`"}`),

		tooltest.Accepts(ActionListMine, `{}`),
		tooltest.Refuses(ActionListMine, `{"user":"u2"}`),
	}
	tooltest.Run(t, newBoard(t).Tools(), tests)
}
