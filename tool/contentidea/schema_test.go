package contentidea

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
		{ActionIdea, `{"idea":"Разбор кейса"}`, true},
		{ActionIdea, `{"idea":"Разбор кейса","platform":null,"format":null,"notes":null}`, true},
		{ActionIdea, `{"idea":"Разбор кейса","platform":"tiktok","format":"reels","notes":"x"}`, true},
		{ActionIdea, `{"idea":"` + long(maxIdea) + `","platform":"telegram"}`, true},
		{ActionIdea, `{}`, false},
		{ActionIdea, `{"idea":""}`, false},
		{ActionIdea, `{"idea":null,"platform":"blog"}`, false},
		{ActionIdea, `{"idea":"x","platform":["blog"]}`, false},
		{ActionIdea, `{"idea":"x","platform":"` + long(maxPlatform+1) + `"}`, false},
		{ActionIdea, `{"idea":"x","format":"` + long(maxFormat+1) + `"}`, false},
		{ActionIdea, `{"idea":"` + long(maxIdea+1) + `"}`, false},
		{ActionIdea, `{"idea":"x","publish":true}`, false},

		{ActionList, `{}`, true},
		{ActionList, `{"platform":"telegram","limit":50}`, true},
		{ActionList, `{"platform":null,"limit":null}`, true},
		{ActionList, `{"limit":0}`, false},
		{ActionList, `{"limit":51}`, false},
		{ActionList, `{"limit":"5"}`, false},
		{ActionList, `{"tenant":"globex"}`, false},
	}
	s := newStore(t, Config{})
	schemas := map[string]*tool.Schema{}
	for _, tl := range s.Tools() {
		spec := tl.Spec()
		compiled, err := tool.CompileSchema(spec.Name, spec.InputSchema)
		if err != nil {
			t.Fatalf("schema of %s does not compile: %v", spec.Name, err)
		}
		schemas[spec.Name] = compiled
	}
	if len(schemas) != 2 {
		t.Fatalf("%d tools, want 2", len(schemas))
	}
	if _, err := tool.NewRegistry(s.Tools()...); err != nil {
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
	// Platform names with quotes still give a valid schema.
	q := newStore(t, Config{Platforms: []string{`Блог "Вечерний"`, `a\b`}})
	for _, tl := range q.Tools() {
		if _, err := tool.CompileSchema(tl.Spec().Name, tl.Spec().InputSchema); err != nil {
			t.Errorf("schema with quoted platforms: %v", err)
		}
	}
}
