package anthropic

import (
	"net/http"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Suite{
		Fake: providertest.AnthropicFake,
		New: func(baseURL, key string, timeout time.Duration) (llm.Provider, error) {
			return New(Config{BaseURL: baseURL, APIKey: key, Model: "test-model", Timeout: timeout})
		},
		NewStreaming: func(baseURL, key string, limits llm.StreamLimits, client *http.Client) (llm.Provider, error) {
			return New(Config{BaseURL: baseURL, APIKey: key, Model: "test-model", Stream: limits, HTTPClient: client})
		},
	})
}
