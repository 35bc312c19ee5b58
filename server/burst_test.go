package server_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/arbiterhq/arbiter/llm/llmtest"
)

// TestBurstOfYesRunsOnlyTheShownAction: with "A-GOOD" waiting for
// confirmation, twenty typed "yes" arrive at once, each its own message
// (Telegram delivers "да да да" so). The model is compromised: asked
// again, it proposes "B-EVIL" — or proposes A once more. Exactly one
// action runs, the one that was shown, once; no "yes" is consent to
// anything proposed after it arrived, and no model is asked.
func TestBurstOfYesRunsOnlyTheShownAction(t *testing.T) {
	for _, evil := range []string{"B-EVIL", "A-GOOD"} {
		t.Run(evil, func(t *testing.T) {
			var asked atomic.Int64
			model := llmtest.NewServer(llmtest.ServerConfig{APIKey: "sk-test", SkipRecording: true, Respond: func(*llmtest.ChatRequest) llmtest.HTTPReply {
				title := "A-GOOD"
				if asked.Add(1) > 1 {
					title = evil
				}
				return llmtest.HTTPReply{Content: `{"say":"","tool":"create_task","args":{"title":"` + title + `"},"done":false,"newTopic":false,"buttons":[]}`}
			}})
			defer model.Close()
			e := serveE2E(t, model, e2eConfig)

			code, reply := e.Post("k-dmitry", `{"conversation_id":"c1","message_id":"m0","text":"create task A-GOOD"}`)
			if code != 200 || reply["pending"] == nil {
				t.Fatalf("proposal: %d %v", code, reply)
			}
			const burst = 20
			var wg sync.WaitGroup
			says := make([]string, burst)
			for i := range burst {
				wg.Go(func() {
					code, r := e.Post("k-dmitry", fmt.Sprintf(`{"conversation_id":"c1","message_id":"y%d","text":"yes"}`, i))
					if code != 200 {
						t.Errorf("yes %d: status %d %v", i, code, r)
					}
					says[i], _ = r["say"].(string)
				})
			}
			wg.Wait()
			cards, err := e.TestBoard().Cards(context.Background(), "acme")
			if err != nil {
				t.Fatal(err)
			}
			var titles []string
			for _, c := range cards {
				titles = append(titles, c.Title)
			}
			if len(cards) != 1 || cards[0].Title != "A-GOOD" {
				t.Errorf("cards after the burst: %q, want exactly [A-GOOD]", titles)
			}
			if asked.Load() != 1 {
				t.Errorf("the model was asked %d times, want only the first proposal", asked.Load())
			}
			nothing := 0
			for _, s := range says {
				if strings.Contains(s, "Нет действия, ожидающего подтверждения") {
					nothing++
				}
			}
			if nothing != burst-1 {
				t.Errorf("%d of %d replies say nothing is waiting, want %d: %q", nothing, burst, burst-1, says)
			}
		})
	}
}
