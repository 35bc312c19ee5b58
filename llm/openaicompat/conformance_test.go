package openaicompat

import (
	"testing"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Suite{
		Fake: providertest.OpenAIFake,
		New: func(baseURL, key string, o providertest.Options) (llm.Provider, error) {
			return New(Config{BaseURL: baseURL, APIKey: key, Model: "test-model", Timeout: o.Timeout, Stream: o.Stream, HTTPClient: o.HTTPClient})
		},
	})
}
