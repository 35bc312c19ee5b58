package anthropic

import "github.com/arbiterhq/arbiter/llm"

// Presets are the model kinds served over the Messages wire format, by the
// name a configuration gives them.
var Presets = map[string]llm.Preset{
	"anthropic": {BaseURL: DefaultBaseURL, KeyEnv: "ANTHROPIC_API_KEY", Vendor: DefaultName, Output: llm.OutputJSONSchema, Protocol: llm.ProtocolJSON, Images: true},
}

// Prices are list prices in US dollars per million tokens, for the
// journal's cost estimate.
var Prices = llm.Prices{
	"claude-sonnet-4-5": {InputPerMTok: 3.00, OutputPerMTok: 15.00, CachedInputPerMTok: 0.30},
	"claude-haiku-4-5":  {InputPerMTok: 1.00, OutputPerMTok: 5.00, CachedInputPerMTok: 0.10},
}
