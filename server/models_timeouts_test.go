package server

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
)

func TestModelTimeoutsReachTheProvider(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(`models:
  - {name: slow, kind: local, model: m, base_url: "http://127.0.0.1:1/v1", timeout: 90s, first_token_timeout: 2m, chunk_timeout: 45s, min_token_rate: 4, stream: false}
  - {name: plain, kind: local, model: m, base_url: "http://127.0.0.1:1/v1"}
`), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	var got []Model
	kind := ModelKind{New: func(m Model) (llm.Provider, error) {
		got = append(got, m)
		return llmtest.NewScripted(), nil
	}}
	for _, m := range cfg.Models {
		if _, err := newProvider(m, kind, func(string) string { return "" }, nil, io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	want := llm.StreamLimits{FirstToken: 2 * time.Minute, Chunk: 45 * time.Second, MinTokenRate: 4}
	if len(got) != 2 || got[0].Timeout != 90*time.Second || got[0].Stream != want || !got[0].NoStream {
		t.Errorf("configured model: %+v", got)
	}
	if len(got) == 2 && (got[1].Stream != (llm.StreamLimits{}) || got[1].NoStream || got[1].Timeout != 0) {
		t.Errorf("model without settings: %+v; want zero values, the providers' defaults", got[1])
	}
}
