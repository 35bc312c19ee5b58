package server_test

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
)

// The card-link route is the task board's, not the engine's: with the
// board, a question about a card with its link is read from the board and
// no model is asked; without it, the same message is the model's like any
// other.
func TestCardLinkRouteComesWithTheBoard(t *testing.T) {
	for _, board := range []string{"{}", "{disabled: true}"} {
		t.Run(board, func(t *testing.T) {
			model := llmtest.NewServer(llmtest.ServerConfig{APIKey: "sk-x"})
			t.Cleanup(model.Close)
			yaml := "public_url: https://board.example\n" + servertest.OwnerTenantYAML(model.URL, "ru") +
				"      - {id: anna, name: Анна, role: owner, keys: [{token: k-anna-01, scopes: [read]}]}\ntools:\n  taskboard: " + board + "\n"
			e := servertest.New(t, yaml, server.Builtin(), model, nil)
			model.Enqueue(llmtest.HTTPReply{Content: `{"say":"Пришлите ссылку ещё раз.","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`})
			_, r := e.Post("k-anna-01", `{"conversation_id":"c1","text":"что за задача https://board.example/board/c/nope"}`)
			_, rec := e.Do("GET", "/v1/turns/"+r["turn_id"].(string), "k-anna-01", "")
			say, _ := r["say"].(string)
			if board == "{}" {
				if rec["route"] != "card_link" || model.Count() != 0 || !strings.Contains(say, "Карточка по этой ссылке не найдена") {
					t.Errorf("with the board: route %v, model calls %d, reply %q", rec["route"], model.Count(), say)
				}
				return
			}
			if rec["route"] != "model" || model.Count() != 1 || say != "Пришлите ссылку ещё раз." {
				t.Errorf("without the board: route %v, model calls %d, reply %q", rec["route"], model.Count(), say)
			}
		})
	}
}
