package config

// Preset is what a model kind brings by default: where the API is, how to
// authenticate, and what structured output it supports.
type Preset struct {
	// Wire is the wire format: "openai" (Chat Completions) or "anthropic".
	Wire    string
	BaseURL string
	// KeyEnv is the environment variable that holds the key by default;
	// empty for local servers that need none.
	KeyEnv string
	// Vendor is the default provider label.
	Vendor   string
	Output   string // default output mode
	Protocol string // default decision protocol
}

// Presets by model kind.
var Presets = map[string]Preset{
	"openai":     {Wire: "openai", BaseURL: "https://api.openai.com/v1", KeyEnv: "OPENAI_API_KEY", Vendor: "openai", Output: "json_schema_strict", Protocol: "json"},
	"fireworks":  {Wire: "openai", BaseURL: "https://api.fireworks.ai/inference/v1", KeyEnv: "FIREWORKS_API_KEY", Vendor: "fireworks", Output: "json_schema", Protocol: "json"},
	"mistral":    {Wire: "openai", BaseURL: "https://api.mistral.ai/v1", KeyEnv: "MISTRAL_API_KEY", Vendor: "mistral", Output: "json_schema", Protocol: "json"},
	"xai":        {Wire: "openai", BaseURL: "https://api.x.ai/v1", KeyEnv: "XAI_API_KEY", Vendor: "xai", Output: "json_schema_strict", Protocol: "json"},
	"openrouter": {Wire: "openai", BaseURL: "https://openrouter.ai/api/v1", KeyEnv: "OPENROUTER_API_KEY", Vendor: "openrouter", Output: "json_schema", Protocol: "json"},
	"ollama":     {Wire: "openai", BaseURL: "http://127.0.0.1:11434/v1", Vendor: "ollama", Output: "json_schema", Protocol: "json"},
	"vllm":       {Wire: "openai", BaseURL: "http://127.0.0.1:8000/v1", Vendor: "vllm", Output: "json_schema", Protocol: "json"},
	"llamacpp":   {Wire: "openai", BaseURL: "http://127.0.0.1:8080/v1", Vendor: "llamacpp", Output: "json_schema", Protocol: "json"},
	"anthropic":  {Wire: "anthropic", BaseURL: "https://api.anthropic.com", KeyEnv: "ANTHROPIC_API_KEY", Vendor: "anthropic", Output: "json_schema", Protocol: "json"},
}

// Built-in strategies, computed from the models list when the
// configuration does not define them: balanced is the list in order, cheap
// orders it by price (cheapest first), strong by price (dearest first).
var builtinStrategies = map[string]bool{"balanced": true, "cheap": true, "strong": true}

// BuiltinStrategy reports whether name is a built-in strategy.
func BuiltinStrategy(name string) bool { return builtinStrategies[name] }
