package app

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"time"

	"github.com/arbiterhq/arbiter/internal/config"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/anthropic"
	"github.com/arbiterhq/arbiter/llm/cassette"
	"github.com/arbiterhq/arbiter/llm/openaicompat"
)

// defaultPrices are list prices in US dollars per million tokens, used for
// the journal's cost estimate unless the config gives its own.
var defaultPrices = map[string]llm.Price{
	"gpt-oss-20b":           {InputPerMTok: 0.07, OutputPerMTok: 0.30},
	"gpt-oss-120b":          {InputPerMTok: 0.15, OutputPerMTok: 0.60},
	"mistral-medium-latest": {InputPerMTok: 0.40, OutputPerMTok: 2.00},
	"gpt-4.1-mini":          {InputPerMTok: 0.40, OutputPerMTok: 1.60, CachedInputPerMTok: 0.10},
	"gpt-4o-mini":           {InputPerMTok: 0.15, OutputPerMTok: 0.60, CachedInputPerMTok: 0.075},
	"grok-3-mini":           {InputPerMTok: 0.30, OutputPerMTok: 0.50, CachedInputPerMTok: 0.075},
	"claude-sonnet-4-5":     {InputPerMTok: 3.00, OutputPerMTok: 15.00, CachedInputPerMTok: 0.30},
	"claude-haiku-4-5":      {InputPerMTok: 1.00, OutputPerMTok: 5.00, CachedInputPerMTok: 0.10},
}

// EnvModels derives the models from the environment when the config names
// none: the seed system's balanced chain, each model present only if its
// key is set — Fireworks gpt-oss-20b and gpt-oss-120b (FIREWORKS_API_KEY),
// Mistral Medium (MISTRAL_API_KEY), OpenAI (OPENAI_API_KEY, with
// OPENAI_BASE_URL and ARBITER_MODEL), xAI (XAI_API_KEY).
func EnvModels(getenv func(string) string) []config.Model {
	var out []config.Model
	if getenv("FIREWORKS_API_KEY") != "" {
		out = append(out,
			config.Model{Name: "fireworks-gpt-oss-20b", Kind: "fireworks", Model: "accounts/fireworks/models/gpt-oss-20b"},
			config.Model{Name: "fireworks-gpt-oss-120b", Kind: "fireworks", Model: "accounts/fireworks/models/gpt-oss-120b"})
	}
	if getenv("MISTRAL_API_KEY") != "" {
		out = append(out, config.Model{Name: "mistral-medium", Kind: "mistral", Model: "mistral-medium-latest"})
	}
	if getenv("OPENAI_API_KEY") != "" {
		model := getenv("ARBITER_MODEL")
		if model == "" {
			model = "gpt-4.1-mini"
		}
		out = append(out, config.Model{Name: "openai", Kind: "openai", BaseURL: getenv("OPENAI_BASE_URL"), Model: model})
	}
	if getenv("XAI_API_KEY") != "" {
		out = append(out, config.Model{Name: "xai", Kind: "xai", Model: "grok-3-mini"})
	}
	return out
}

// modelSetup is what building the providers needs besides the config.
type modelSetup struct {
	getenv func(string) string
	client *http.Client // nil: each provider's default
	notice io.Writer    // where disabled models are reported
}

// newProvider is the kind -> constructor map for models. It returns nil,
// nil for a hosted model whose preset key is not set: such a model is
// simply not part of any chain.
func newProvider(m config.Model, setup modelSetup) (llm.Provider, error) {
	preset := config.Presets[m.Kind]
	base := m.BaseURL
	if base == "" {
		base = preset.BaseURL
	}
	provider := m.Provider
	switch {
	case provider != "":
	case base != preset.BaseURL:
		provider = m.Name // a custom endpoint is a provider of its own
	default:
		provider = preset.Vendor
	}
	key := config.ResolveAPIKey(m, setup.getenv)
	if m.APIKey == "" && m.APIKeyEnv == "" && preset.KeyEnv != "" {
		key = setup.getenv(preset.KeyEnv)
		if key == "" {
			fmt.Fprintf(setup.notice, "model %s left out: %s is not set\n", m.Name, preset.KeyEnv)
			return nil, nil
		}
	}
	output := m.Output
	if output == "" {
		output = preset.Output
	}
	protocol := m.Protocol
	if protocol == "" {
		protocol = preset.Protocol
	}
	switch preset.Wire {
	case "openai":
		return openaicompat.New(openaicompat.Config{
			Name: provider, BaseURL: base, APIKey: key, Model: m.Model,
			Output: llm.OutputMode(output), Protocol: llm.Protocol(protocol),
			Timeout: time.Duration(m.Timeout), HTTPClient: setup.client,
			AuthHeader: m.AuthHeader, Headers: m.Headers,
		})
	case "anthropic":
		return anthropic.New(anthropic.Config{
			Name: provider, BaseURL: base, APIKey: key, Model: m.Model,
			Protocol: llm.Protocol(protocol), Timeout: time.Duration(m.Timeout),
			HTTPClient: setup.client, Headers: m.Headers,
		})
	}
	return nil, fmt.Errorf("model %s: unknown kind %q", m.Name, m.Kind)
}

// buildStrategies builds every strategy as a chain over one shared
// breaker and returns them with the default strategy's name.
func buildStrategies(cfg *config.Config, models []config.Model, prices map[string]llm.Price, setup modelSetup, opts Options) (map[string]llm.Provider, string, error) {
	providers := map[string]llm.Provider{}
	var order []string
	for _, m := range models {
		p, err := newProvider(m, setup)
		if err != nil {
			return nil, "", fmt.Errorf("model %s: %w", m.Name, err)
		}
		if p != nil {
			providers[m.Name] = p
			order = append(order, m.Name)
		}
	}
	def := cfg.Strategy
	if def == "" {
		def = "balanced"
	}
	if len(order) == 0 {
		return nil, def, nil
	}
	chains := map[string][]string{"balanced": order, "cheap": byPrice(order, models, prices, false), "strong": byPrice(order, models, prices, true)}
	for name, names := range cfg.Strategies {
		var present []string
		for _, n := range names {
			if providers[n] != nil {
				present = append(present, n)
			}
		}
		chains[name] = present
	}
	breaker := &llm.Breaker{}
	out := map[string]llm.Provider{}
	for name, names := range chains {
		if len(names) == 0 {
			continue // every model of it lacks a key
		}
		entries := make([]llm.ChainEntry, len(names))
		for i, n := range names {
			entries[i] = llm.ChainEntry{Provider: providers[n]}
		}
		chain, err := llm.NewChain(llm.ChainConfig{
			Strategy: name, Entries: entries, Breaker: breaker,
			RetryDelay: time.Duration(cfg.Retry.Delay), CoolDown: time.Duration(cfg.Retry.CoolDown),
			Now: opts.Now, Sleep: opts.Sleep,
		})
		if err != nil {
			return nil, "", fmt.Errorf("strategy %s: %w", name, err)
		}
		out[name] = chain
	}
	return out, def, nil
}

// byPrice orders the present models by their price per million tokens
// (input and output summed), unknown prices last, keeping list order among
// equals.
func byPrice(order []string, models []config.Model, prices map[string]llm.Price, dearestFirst bool) []string {
	modelOf := map[string]string{}
	for _, m := range models {
		modelOf[m.Name] = m.Model
	}
	price := func(name string) (float64, bool) {
		p, ok := lookupPrice(prices, modelOf[name])
		return p.InputPerMTok + p.OutputPerMTok, ok
	}
	out := append([]string(nil), order...)
	sort.SliceStable(out, func(i, j int) bool {
		pi, oki := price(out[i])
		pj, okj := price(out[j])
		if oki != okj {
			return oki
		}
		if dearestFirst {
			return pi > pj
		}
		return pi < pj
	})
	return out
}

// lookupPrice finds a model's price by exact name, then by the last path
// segment ("accounts/fireworks/models/gpt-oss-20b" -> "gpt-oss-20b").
func lookupPrice(prices map[string]llm.Price, model string) (llm.Price, bool) {
	if p, ok := prices[model]; ok {
		return p, true
	}
	for i := len(model) - 1; i >= 0; i-- {
		if model[i] == '/' {
			p, ok := prices[model[i+1:]]
			return p, ok
		}
	}
	return llm.Price{}, false
}

// providerClient returns the HTTP client every provider uses when calls
// are recorded or replayed, or nil for the providers' own clients.
func providerClient(opts Options, secrets []string) (*http.Client, error) {
	switch {
	case opts.Replay != "":
		r, err := cassette.NewReplayer(opts.Replay)
		if err != nil {
			return nil, err
		}
		return &http.Client{Transport: r}, nil
	case opts.Record != "":
		if err := os.MkdirAll(opts.Record, 0o700); err != nil {
			return nil, fmt.Errorf("record directory: %w", err)
		}
		next := openaicompat.SharedHTTPClient().Transport
		r, err := cassette.NewRecorder(opts.Record, next, secrets...)
		if err != nil {
			return nil, err
		}
		return &http.Client{Transport: r}, nil
	}
	return nil, nil
}
