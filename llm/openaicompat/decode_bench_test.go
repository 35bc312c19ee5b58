package openaicompat

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The two answers of a loop turn with a write, as a Chat Completions API
// sends them: a tool call, then the final text.
var (
	answerToolCall = []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1764998400,"model":"fake-model","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"create_task","arguments":"{\"title\":\"Check signup form\",\"assignee\":\"Dmitry\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":208,"completion_tokens":18,"total_tokens":226}}`)
	answerText     = []byte(`{"id":"chatcmpl-2","object":"chat.completion","created":1764998400,"model":"fake-model","choices":[{"index":0,"message":{"role":"assistant","content":"Done: card created"},"finish_reason":"stop"}],"usage":{"prompt_tokens":283,"completion_tokens":5,"total_tokens":288,"prompt_tokens_details":{"cached_tokens":0}}}`)
)

// BenchmarkDecodeAnswers decodes both answers as Complete does (decoder
// and conversion), beside the baseline: encoding/json into baseResponse,
// as a hand-written client would.
func BenchmarkDecodeAnswers(b *testing.B) {
	p := &Provider{}
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, body := range [][]byte{answerToolCall, answerText} {
				var out baseResponse
				if err := json.NewDecoder(bytes.NewReader(body)).Decode(&out); err != nil || len(out.Choices) != 1 {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("provider", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i, body := range [][]byte{answerToolCall, answerText} {
				var cc completion
				if err := json.NewDecoder(bytes.NewReader(body)).Decode(&cc); err != nil {
					b.Fatal(err)
				}
				resp, err := p.response(&cc, i == 0)
				if err != nil || (i == 0 && len(resp.ToolCalls) != 1) || (i == 1 && resp.Text != "Done: card created") {
					b.Fatalf("%v %+v", err, resp)
				}
			}
		}
	})
}
