package llm_test

import (
	"context"
	"fmt"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
)

// A chain of two models: the first one's key is refused, so the chain asks
// the second and blocks the first one's account for every later request
// until its cool-down ends — the next request skips it without a call.
func ExampleNewChain() {
	first := &llmtest.Scripted{ProviderName: "fireworks", ModelName: "gpt-oss-20b"}
	first.Push(llmtest.FailKind(llm.ErrAuth, "invalid API key"))
	second := &llmtest.Scripted{ProviderName: "mistral", ModelName: "mistral-medium"}
	second.Push(llmtest.Text(`{"say":"hello"}`), llmtest.Text(`{"say":"hello again"}`))

	chain, err := llm.NewChain(llm.ChainConfig{Strategy: "balanced",
		Entries: []llm.ChainEntry{{Provider: first}, {Provider: second}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 2 {
		resp, err := chain.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(resp.Text, "from", resp.Provider)
		for _, a := range resp.Attempts {
			outcome := "answered"
			if a.Err != nil {
				outcome = string(llm.KindOf(a.Err))
			}
			if a.Note != "" {
				outcome += " (" + a.Note + ")"
			}
			fmt.Printf("  %s %s: %s\n", a.Kind, a.Provider, outcome)
		}
	}
	fmt.Println("calls:", first.Calls(), second.Calls())
	// Output:
	// {"say":"hello"} from mistral
	//   first fireworks: auth (blocked provider fireworks for 5m0s)
	//   fallback mistral: answered
	// {"say":"hello again"} from mistral
	//   skipped fireworks: blocked
	//   first mistral: answered
	// calls: 1 2
}
