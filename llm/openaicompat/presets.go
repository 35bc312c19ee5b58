package openaicompat

import "github.com/arbiterhq/arbiter/llm"

// Presets are the model kinds served over the Chat Completions wire format,
// by the name a configuration gives them: hosted vendors (their key from
// KeyEnv) and local servers (no key).
var Presets = map[string]llm.Preset{
	"openai":     {BaseURL: "https://api.openai.com/v1", KeyEnv: "OPENAI_API_KEY", Vendor: "openai", Output: llm.OutputJSONSchemaStrict, Protocol: llm.ProtocolJSON, Images: true},
	"fireworks":  {BaseURL: "https://api.fireworks.ai/inference/v1", KeyEnv: "FIREWORKS_API_KEY", Vendor: "fireworks", Output: llm.OutputJSONSchema, Protocol: llm.ProtocolJSON},
	"mistral":    {BaseURL: "https://api.mistral.ai/v1", KeyEnv: "MISTRAL_API_KEY", Vendor: "mistral", Output: llm.OutputJSONSchema, Protocol: llm.ProtocolJSON},
	"xai":        {BaseURL: "https://api.x.ai/v1", KeyEnv: "XAI_API_KEY", Vendor: "xai", Output: llm.OutputJSONSchemaStrict, Protocol: llm.ProtocolJSON},
	"openrouter": {BaseURL: "https://openrouter.ai/api/v1", KeyEnv: "OPENROUTER_API_KEY", Vendor: "openrouter", Output: llm.OutputJSONSchema, Protocol: llm.ProtocolJSON},
	"ollama":     {BaseURL: "http://127.0.0.1:11434/v1", Vendor: "ollama", Output: llm.OutputJSONSchema, Protocol: llm.ProtocolJSON},
	"vllm":       {BaseURL: "http://127.0.0.1:8000/v1", Vendor: "vllm", Output: llm.OutputJSONSchema, Protocol: llm.ProtocolJSON},
	"llamacpp":   {BaseURL: "http://127.0.0.1:8080/v1", Vendor: "llamacpp", Output: llm.OutputJSONSchema, Protocol: llm.ProtocolJSON},
}

// Prices are list prices in US dollars per million tokens of the models
// the presets usually serve, for the journal's cost estimate.
var Prices = llm.Prices{
	"gpt-oss-20b":           {InputPerMTok: 0.07, OutputPerMTok: 0.30},
	"gpt-oss-120b":          {InputPerMTok: 0.15, OutputPerMTok: 0.60},
	"mistral-medium-latest": {InputPerMTok: 0.40, OutputPerMTok: 2.00},
	"gpt-4.1-mini":          {InputPerMTok: 0.40, OutputPerMTok: 1.60, CachedInputPerMTok: 0.10},
	"gpt-4o-mini":           {InputPerMTok: 0.15, OutputPerMTok: 0.60, CachedInputPerMTok: 0.075},
	"grok-3-mini":           {InputPerMTok: 0.30, OutputPerMTok: 0.50, CachedInputPerMTok: 0.075},
}
