package server

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/cassette"
	"github.com/arbiterhq/arbiter/llm/openaicompat"
	"github.com/arbiterhq/arbiter/turn"
)

// models are the built strategies.
type models struct {
	model      llm.Provider // the default strategy's chain; nil: none configured
	strategy   string
	strategies map[string]llm.Provider
	prices     llm.Prices
	// unpriced are the providers of custom endpoints whose model the
	// configuration's prices do not name: their cost is unknown.
	unpriced map[string]bool
	setup    turn.ModelSetup
}

// envChain is the seed system's balanced chain EnvModels derives, in
// order; each model is present when its preset's key variable is set.
var envChain = []config.Model{
	{Name: "fireworks-gpt-oss-20b", Kind: "fireworks", Model: "accounts/fireworks/models/gpt-oss-20b"},
	{Name: "fireworks-gpt-oss-120b", Kind: "fireworks", Model: "accounts/fireworks/models/gpt-oss-120b"},
	{Name: "mistral-medium", Kind: "mistral", Model: "mistral-medium-latest"},
	{Name: "openai", Kind: "openai"}, // OPENAI_BASE_URL and ARBITER_MODEL (default gpt-4.1-mini)
	{Name: "xai", Kind: "xai", Model: "grok-3-mini"},
}

// EnvModels derives the models from the environment when the config names
// none: the seed system's balanced chain, each model present only if its
// key is set — Fireworks gpt-oss-20b and gpt-oss-120b (FIREWORKS_API_KEY),
// Mistral Medium (MISTRAL_API_KEY), OpenAI (OPENAI_API_KEY, with
// OPENAI_BASE_URL and ARBITER_MODEL), xAI (XAI_API_KEY).
func EnvModels(getenv func(string) string) []config.Model {
	var out []config.Model
	for _, m := range envChain {
		if getenv(openaicompat.Presets[m.Kind].KeyEnv) == "" {
			continue
		}
		if m.Kind == "openai" {
			m.BaseURL, m.Model = getenv("OPENAI_BASE_URL"), orDefault(getenv("ARBITER_MODEL"), "gpt-4.1-mini")
		}
		out = append(out, m)
	}
	return out
}

// modelSetup is how a model is configured with kinds: the key variables
// EnvModels reads, and every model kind a configuration may name.
func modelSetup(kinds Kinds) turn.ModelSetup {
	var setup turn.ModelSetup
	for _, m := range envChain {
		if env := openaicompat.Presets[m.Kind].KeyEnv; !slices.Contains(setup.Env, env) {
			setup.Env = append(setup.Env, env)
		}
	}
	setup.Kinds = slices.Sorted(maps.Keys(kinds.Models))
	return setup
}

// buildModels builds every strategy as a chain over one shared breaker.
func buildModels(cfg *config.Config, kinds Kinds, env *Env, opts Options) (models, error) {
	out := models{strategy: orDefault(cfg.Strategy, "balanced"), prices: llm.Prices{}, unpriced: map[string]bool{}, setup: modelSetup(kinds)}
	for _, k := range kinds.Models {
		maps.Copy(out.prices, k.Prices)
	}
	for name, p := range cfg.Prices {
		out.prices[name] = llm.Price{InputPerMTok: p.Input, OutputPerMTok: p.Output, CachedInputPerMTok: p.CachedInput}
	}
	list := cfg.Models
	if len(list) == 0 {
		list = EnvModels(env.Getenv)
	}
	var secrets []string
	for _, m := range list {
		if k := config.ResolveAPIKey(m, env.Getenv); k != "" {
			secrets = append(secrets, k)
		}
		if p := kinds.Models[m.Kind].Preset; p.KeyEnv != "" && env.Getenv(p.KeyEnv) != "" {
			secrets = append(secrets, env.Getenv(p.KeyEnv))
		}
	}
	client, err := providerClient(opts, secrets)
	if err != nil {
		return out, err
	}
	notice := opts.LogOut
	if notice == nil {
		notice = io.Discard
	}
	providers := map[string]llm.Provider{}
	var order []string
	for _, m := range list {
		p, err := newProvider(m, kinds.Models[m.Kind], env.Getenv, client, notice)
		if err != nil {
			return out, fmt.Errorf("model %s: %w", m.Name, err)
		}
		if p != nil {
			providers[m.Name] = p
			order = append(order, m.Name)
			// A self-hosted or custom endpoint does not charge its
			// vendor's list prices, whatever its model is called.
			if _, named := cfg.Prices[m.Model]; !named && orDefault(m.BaseURL, kinds.Models[m.Kind].Preset.BaseURL) != kinds.Models[m.Kind].Preset.BaseURL {
				out.unpriced[p.Name()] = true
			}
		}
	}
	if len(order) == 0 {
		return out, nil
	}
	chains := map[string][]string{"balanced": order, "cheap": byPrice(order, list, out.prices, false), "strong": byPrice(order, list, out.prices, true)}
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
	out.strategies = map[string]llm.Provider{}
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
			return out, fmt.Errorf("strategy %s: %w", name, err)
		}
		out.strategies[name] = chain
	}
	out.model = out.strategies[out.strategy]
	return out, nil
}

// newProvider makes the provider of configured model m with its kind. It
// returns nil, nil for a hosted model whose preset key is not set: such a
// model is simply not part of any chain.
func newProvider(m config.Model, kind ModelKind, getenv func(string) string, client *http.Client, notice io.Writer) (llm.Provider, error) {
	preset := kind.Preset
	spec := Model{Name: m.Provider, BaseURL: orDefault(m.BaseURL, preset.BaseURL), Model: m.Model,
		Output: llm.OutputMode(m.Output), Protocol: llm.Protocol(m.Protocol), Timeout: time.Duration(m.Timeout),
		Stream:   llm.StreamLimits{FirstToken: time.Duration(m.FirstTokenTimeout), Chunk: time.Duration(m.ChunkTimeout), MinTokenRate: m.MinTokenRate},
		NoStream: m.Stream != nil && !*m.Stream, Images: preset.Images, HTTPClient: client, AuthHeader: m.AuthHeader, Headers: m.Headers}
	switch {
	case spec.Name != "":
	case spec.BaseURL != preset.BaseURL:
		spec.Name = m.Name // a custom endpoint is a provider of its own
	default:
		spec.Name = preset.Vendor
	}
	if m.Images != nil {
		spec.Images = *m.Images
	}
	spec.APIKey = config.ResolveAPIKey(m, getenv)
	if m.APIKey == "" && m.APIKeyEnv == "" && preset.KeyEnv != "" {
		spec.APIKey = getenv(preset.KeyEnv)
		if spec.APIKey == "" {
			fmt.Fprintf(notice, "model %s left out: %s is not set\n", m.Name, preset.KeyEnv)
			return nil, nil
		}
	}
	if spec.Output == "" {
		spec.Output = preset.Output
	}
	if spec.Protocol == "" {
		spec.Protocol = preset.Protocol
	}
	return kind.New(spec)
}

// byPrice orders the present models by their price per million tokens
// (input and output summed), unknown prices last, keeping list order among
// equals.
func byPrice(order []string, list []config.Model, prices llm.Prices, dearestFirst bool) []string {
	modelOf := map[string]string{}
	for _, m := range list {
		modelOf[m.Name] = m.Model
	}
	price := func(name string) (float64, bool) {
		p, ok := prices.Lookup(modelOf[name])
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

// providerClient returns the HTTP client every provider uses when calls
// are recorded, replayed or carried by Options.Transport, or nil for the
// providers' own clients.
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
		next := opts.Transport
		if next == nil {
			next = openaicompat.SharedHTTPClient().Transport
		}
		r, err := cassette.NewRecorder(opts.Record, next, secrets...)
		if err != nil {
			return nil, err
		}
		return &http.Client{Transport: r}, nil
	case opts.Transport != nil:
		return &http.Client{Transport: opts.Transport}, nil
	}
	return nil, nil
}
