package config

import "fmt"

// Model is one model endpoint.
type Model struct {
	// Name identifies the model in strategies; unique.
	Name string `yaml:"name"`
	// Kind is a preset: openai, fireworks, mistral, xai, openrouter,
	// ollama, vllm, llamacpp (OpenAI-compatible wire format) or anthropic.
	Kind string `yaml:"kind"`
	// Provider labels the model in the journal and groups models of one
	// account: an auth or billing error blocks the whole group. Default:
	// the preset's vendor name (the model's name for local servers).
	Provider  string `yaml:"provider"`
	BaseURL   string `yaml:"base_url"`
	Model     string `yaml:"model"`
	APIKey    string `yaml:"api_key"`
	APIKeyEnv string `yaml:"api_key_env"`
	// Output is json_schema_strict, json_schema or json_object; default
	// from the preset.
	Output string `yaml:"output"`
	// Protocol is json (structured output) or tools (native tool calling);
	// default from the preset.
	Protocol string `yaml:"protocol"`
	// AuthHeader sends the key in this header instead of
	// "Authorization: Bearer" (e.g. api-key).
	AuthHeader string            `yaml:"auth_header"`
	Headers    map[string]string `yaml:"headers"`
	// Timeout bounds a call that is not streamed, the whole answer
	// included; default 60s.
	Timeout Duration `yaml:"timeout"`
	// FirstTokenTimeout, ChunkTimeout and MinTokenRate bound a streamed
	// call: the wait for the first token (default 60s), the longest
	// silence between chunks (30s), and the output tokens per second the
	// call's ceiling allows for (10): first_token_timeout + max_tokens /
	// min_token_rate seconds.
	FirstTokenTimeout Duration `yaml:"first_token_timeout"`
	ChunkTimeout      Duration `yaml:"chunk_timeout"`
	MinTokenRate      float64  `yaml:"min_token_rate"`
	// Stream: false sends every call as a plain one, for an endpoint that
	// cannot stream (the reader then gets the reply whole); default true.
	Stream *bool `yaml:"stream"`
	// Images says the model accepts images: a photo the user sends is
	// shown to it, not only named. Default from the preset (true for
	// openai and anthropic, false for the rest).
	Images *bool `yaml:"images"`
}

// Retry is the provider chain's retry and fallback policy.
type Retry struct {
	// Delay before the first model's one retry on a transient error;
	// default 2s.
	Delay Duration `yaml:"delay"`
	// CoolDown is how long an auth or billing error blocks a provider for
	// all conversations (a bad request blocks nothing); default 5m.
	CoolDown Duration `yaml:"cool_down"`
	// InvalidFallback asks the next model when a model's output is still
	// invalid after its repair; default false.
	InvalidFallback bool `yaml:"invalid_fallback"`
}

// Price is a model's cost in US dollars per million tokens.
type Price struct {
	Input       float64 `yaml:"input"`
	Output      float64 `yaml:"output"`
	CachedInput float64 `yaml:"cached_input"`
}

// ResolveAPIKey returns a model's API key, reading api_key_env through getenv.
func ResolveAPIKey(m Model, getenv func(string) string) string {
	if m.APIKeyEnv != "" {
		return getenv(m.APIKeyEnv)
	}
	return m.APIKey
}

var (
	knownOutputs   = map[string]bool{"": true, "json_schema_strict": true, "json_schema": true, "json_object": true}
	knownProtocols = map[string]bool{"": true, "json": true, "tools": true}
)

// checkModels checks each model and that no two share a name.
func (v *validator) checkModels(models []Model) {
	names := map[string]bool{}
	for i, m := range models {
		p := fmt.Sprintf("models[%d]", i)
		v.uniqueKey(names, p, "name", m.Name, "model name %q is used twice")
		m.check(v, p)
	}
}

// check checks one model at path p (models[i]).
func (m Model) check(v *validator, p string) {
	if m.Kind == "" {
		v.errorf(p, "kind is required")
	}
	if m.Model == "" {
		v.errorf(p, "model is required")
	}
	if !knownOutputs[m.Output] {
		v.errorf(p+".output", "unknown output mode %q (json_schema_strict, json_schema or json_object)", m.Output)
	}
	if !knownProtocols[m.Protocol] {
		v.errorf(p+".protocol", "unknown protocol %q (json or tools)", m.Protocol)
	}
	// Negative durations are refused when they are parsed.
	if m.MinTokenRate < 0 {
		v.errorf(p+".min_token_rate", "must not be negative (output tokens per second)")
	}
	if m.APIKey != "" && m.APIKeyEnv != "" {
		v.errorf(p, "set api_key or api_key_env, not both")
	} else if m.APIKeyEnv != "" && v.getenv(m.APIKeyEnv) == "" {
		v.errorf(p+".api_key_env", "environment variable %s is empty or unset", m.APIKeyEnv)
	}
}

// modelNames are the names strategies may list (a model without one
// included, as "").
func (c *Config) modelNames() map[string]bool {
	names := map[string]bool{}
	for _, m := range c.Models {
		names[m.Name] = true
	}
	return names
}
