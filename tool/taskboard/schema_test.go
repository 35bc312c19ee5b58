package taskboard

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/tool"
)

func TestSchemas(t *testing.T) {
	long := func(n int) string { return strings.Repeat("ж", n) }
	tests := []struct {
		tool   string
		args   string
		accept bool
	}{
		{ActionCreate, `{"title":"Проверить форму"}`, true},
		{ActionCreate, `{"title":"Проверить форму","assignee":"Дмитрий","dueIso":null,"column":null,"description":null}`, true},
		{ActionCreate, `{"title":"X","assignee":"me","dueIso":"2026-12-01","column":"В работе","description":"d"}`, true},
		{ActionCreate, `{"title":"` + long(maxTitle) + `"}`, true},
		{ActionCreate, `{}`, false},
		{ActionCreate, `{"title":""}`, false},
		{ActionCreate, `{"title":null}`, false},
		{ActionCreate, `{"title":"X","priority":"high"}`, false},
		{ActionCreate, `{"title":"` + long(maxTitle+1) + `"}`, false},
		{ActionCreate, `{"title":"X","dueIso":20261201}`, false},
		{ActionCreate, `{"title":"X","description":"` + long(maxDescription+1) + `"}`, false},

		{ActionUpdate, `{"card":"ab12cd34","column":"Готово"}`, true},
		{ActionUpdate, `{"card":"ab12cd34","title":null,"assignee":null,"dueIso":null,"column":null,"description":null}`, true},
		{ActionUpdate, `{"title":"X"}`, false},
		{ActionUpdate, `{"card":"ab12cd34","status":"done"}`, false},
		{ActionUpdate, `{"card":null,"title":"X"}`, false},

		{ActionComment, `{"card":"https://board.example/board/c/ab12cd34","text":"Готово к ревью"}`, true},
		{ActionComment, `{"card":"ab12cd34"}`, false},
		{ActionComment, `{"card":"ab12cd34","text":null}`, false},
		{ActionComment, `{"card":"ab12cd34","text":"x","author":"boss"}`, false},
		{ActionComment, `{"card":"ab12cd34","text":"` + long(maxComment+1) + `"}`, false},

		{ActionComplete, `{"card":"Проверить форму"}`, true},
		{ActionComplete, `{}`, false},
		{ActionComplete, `{"card":"x","force":true}`, false},
		{ActionComplete, `{"card":"` + long(maxCardRef+1) + `"}`, false},

		{ActionListMine, `{}`, true},
		{ActionListMine, `{"user":"u2"}`, false},
	}
	b := newBoard(t)
	schemas := map[string]*tool.Schema{}
	for _, tl := range b.Tools() {
		s := tl.Spec()
		compiled, err := tool.CompileSchema(s.Name, s.InputSchema)
		if err != nil {
			t.Fatalf("schema of %s does not compile: %v", s.Name, err)
		}
		schemas[s.Name] = compiled
	}
	if len(schemas) != 5 {
		t.Fatalf("%d tools, want 5", len(schemas))
	}
	for _, tt := range tests {
		err := schemas[tt.tool].Validate(tt.tool, []byte(tt.args))
		if tt.accept && err != nil {
			t.Errorf("%s rejects %.80s: %v", tt.tool, tt.args, err)
		}
		if !tt.accept && err == nil {
			t.Errorf("%s accepts %.80s", tt.tool, tt.args)
		}
	}
}
