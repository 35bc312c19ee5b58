package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/cmd/internal/kinds"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server/servertest"
)

// TestMetricsEndpoint: turns and model calls are counted at /metrics.
func TestMetricsEndpoint(t *testing.T) {
	model := llmtest.NewServer(llmtest.ServerConfig{})
	t.Cleanup(model.Close)
	yaml := servertest.OwnerTenantYAML(model.URL, "en") + `      - {id: u1, name: User, role: owner, keys: [{token: "k-metrics-1", scopes: [read]}]}
`
	e := servertest.New(t, yaml, kinds.All(), model, func(string) string { return "" })
	e.Model.Enqueue(
		llmtest.HTTPReply{Content: `{"say":"Hi!","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`},
		llmtest.HTTPReply{Content: `{"say":"Hi again!","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`},
	)
	for _, conv := range []string{"a1", "a2"} {
		if status, body := e.Post("k-metrics-1", `{"conversation_id":"`+conv+`","text":"hello"}`); status != 200 {
			t.Fatalf("%d %v", status, body)
		}
	}
	resp, err := http.Get(e.API.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`arbiter_turns_total{route="model",status="ok",tenant="acme"} 2`,
		`arbiter_llm_calls_total{attempt="first",model="m",provider="fake",status="ok"} 2`,
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("/metrics lacks %s:\n%s", want, raw)
		}
	}
}
