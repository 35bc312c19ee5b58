package router

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/turn"
)

// The answer's prompt explains the live context only to an assistant
// whose requests can carry one; the router's own prompt never does, and
// the evidence rules are in both.
func TestPromptsNameTheLiveContextOnlyWhenCarried(t *testing.T) {
	for _, live := range []bool{false, true} {
		p := mode{}.Prompts(turn.PromptInput{Tenant: turn.Tenant{ID: "t"}, Language: "en", Assistant: turn.Assistant{Settings: &Settings{}}, Live: live})
		own := p.Extra.(prompts)
		if got := strings.Contains(p.System, "<live_context>"); got != live {
			t.Errorf("live %v: the answer's prompt names the live context: %v", live, got)
		}
		if strings.Contains(own.prompt, "<live_context>") || own.live != live {
			t.Errorf("live %v: the router's prompt names it, or the prompts keep live=%v", live, own.live)
		}
		if !strings.Contains(p.System, "<evidence>") || !strings.Contains(own.prompt, "<evidence>") {
			t.Errorf("live %v: a prompt lost the evidence rules", live)
		}
	}
}
