package knowledge

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/tool"
)

func TestSchemas(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("ж", n) }
	tests := []struct {
		tool   string
		args   string
		accept bool
	}{
		{ActionAdd, `{"title":"Тарифы","text":"Базовый — 990 ₽"}`, true},
		{ActionAdd, `{"title":"Тарифы","text":"x","source":"https://t.me/c/1","tags":["цены","2027"]}`, true},
		{ActionAdd, `{"title":"Тарифы","text":"x","source":null,"tags":null}`, true},
		{ActionAdd, `{"title":"` + long(maxTitle) + `","text":"` + long(maxText) + `"}`, true},
		{ActionAdd, `{"title":"Тарифы"}`, false},
		{ActionAdd, `{"text":"x"}`, false},
		{ActionAdd, `{"title":"","text":"x"}`, false},
		{ActionAdd, `{"title":"x","text":""}`, false},
		{ActionAdd, `{"title":"x","text":"y","author":"boss"}`, false},
		{ActionAdd, `{"title":"x","text":"y","tags":"цены"}`, false},
		{ActionAdd, `{"title":"x","text":"y","tags":[""]}`, false},
		{ActionAdd, `{"title":"x","text":"y","tags":["1","2","3","4","5","6","7","8","9","10","11"]}`, false},
		{ActionAdd, `{"title":"x","text":"y","source":42}`, false},
		{ActionAdd, `{"title":"` + long(maxTitle+1) + `","text":"y"}`, false},
		{ActionAdd, `{"title":"x","text":"y","source":"` + long(maxSource+1) + `"}`, false},

		{ActionSearch, `{"query":"встреча"}`, true},
		{ActionSearch, `{"query":"NEAR(\"x\" *)","limit":20}`, true},
		{ActionSearch, `{"query":"x","limit":null}`, true},
		{ActionSearch, `{}`, false},
		{ActionSearch, `{"query":""}`, false},
		{ActionSearch, `{"query":"x","limit":0}`, false},
		{ActionSearch, `{"query":"x","limit":21}`, false},
		{ActionSearch, `{"query":"x","limit":2.5}`, false},
		{ActionSearch, `{"query":"x","tenant":"globex"}`, false},
		{ActionSearch, `{"query":"` + long(maxQuery+1) + `"}`, false},
	}
	b := newBase(t)
	schemas := map[string]*tool.Schema{}
	for _, tl := range b.Tools() {
		s := tl.Spec()
		compiled, err := tool.CompileSchema(s.Name, s.InputSchema)
		if err != nil {
			t.Fatalf("schema of %s does not compile: %v", s.Name, err)
		}
		schemas[s.Name] = compiled
	}
	if len(schemas) != 2 {
		t.Fatalf("%d tools, want 2", len(schemas))
	}
	if _, err := tool.NewRegistry(b.Tools()...); err != nil {
		t.Fatalf("registry: %v", err)
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
