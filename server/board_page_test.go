package server_test

import (
	"context"
	"strings"
	"testing"
)

// The links the board prints open: GET /v1/board and /v1/board/cards/{id}
// show the tenant's board and a card with its history to a signed-in
// reader, and nothing of another tenant; GET /v1/me tells a client the
// user's language and zone.
func TestBoardPagesAndMe(t *testing.T) {
	e := newE2E(t)
	status, me := e.Do("GET", "/v1/me", "k-dmitry", "")
	if status != 200 || me["tenant"] != "acme" || me["user"] != "dmitry" || me["language"] != "ru" || me["timezone"] != "Europe/Moscow" {
		t.Fatalf("me: %d %v", status, me)
	}
	if status, _ := e.Do("GET", "/v1/me", "k-nobody", ""); status != 401 {
		t.Errorf("me with a wrong key: %d", status)
	}

	e.Decide("create_task", `{"title":"Проверить форму","assignee":"Ольга","dueIso":"2026-12-02","column":null,"description":null}`)
	_, body := e.Post("k-dmitry", `{"conversation_id":"c1","text":"Поставь Ольге задачу проверить форму"}`)
	pendingID := strings.TrimPrefix(confirmButton(t, body), "confirm:")
	_, confirmed := e.Post("k-dmitry", `{"conversation_id":"c1","button":"`+confirmButton(t, body)+`"}`)

	// The turn's record carries the audit columns of its tool calls.
	_, rec := e.Do("GET", "/v1/turns/"+confirmed["turn_id"].(string), "k-dmitry", "")
	calls, _ := rec["tool_calls"].([]any)
	if len(calls) != 1 {
		t.Fatalf("tool_calls of the confirmed turn: %v", rec["tool_calls"])
	}
	audit := calls[0].(map[string]any)
	if audit["tool"] != "create_task" || len(audit["args_hash"].(string)) != 64 || audit["risk"] != "write:safe" ||
		audit["scope"] != "write:safe" || audit["confirmation_id"] != pendingID || audit["status"] != "ok" {
		t.Errorf("audit columns: %v", audit)
	}
	e.Decide("comment_task", `{"card":"Проверить форму","text":"Форма падает на Safari"}`)
	e.Post("k-dmitry", `{"conversation_id":"c1","text":"Добавь комментарий: форма падает на Safari"}`)
	cards, _ := e.TestBoard().Cards(context.Background(), "acme")
	if len(cards) != 1 {
		t.Fatalf("cards: %+v", cards)
	}
	id := cards[0].ID

	status, board := e.Do("GET", "/v1/board", "k-olga-ro", "")
	if status != 200 {
		t.Fatalf("board: %d %v", status, board)
	}
	cols := board["columns"].([]any)
	first := cols[0].(map[string]any)
	if len(cols) != 3 || first["name"] != "Входящие" || len(first["cards"].([]any)) != 1 {
		t.Fatalf("columns: %v", cols)
	}
	line := first["cards"].([]any)[0].(map[string]any)
	if line["title"] != "Проверить форму" || line["assignee"] != "Ольга" || line["due"] != "2026-12-02" || !strings.HasSuffix(line["url"].(string), "/board/c/"+id) {
		t.Errorf("card line: %v", line)
	}

	status, page := e.Do("GET", "/v1/board/cards/"+id, "k-olga-ro", "")
	if status != 200 {
		t.Fatalf("card: %d %v", status, page)
	}
	card := page["card"].(map[string]any)
	if card["title"] != "Проверить форму" || card["column"] != "Входящие" || card["created_by"] != "Дмитрий" {
		t.Errorf("card: %v", card)
	}
	var kinds []string
	for _, h := range page["history"].([]any) {
		h := h.(map[string]any)
		kinds = append(kinds, h["kind"].(string))
		if h["kind"] == "comment" && (h["text"] != "Форма падает на Safari" || h["author"] != "Дмитрий") {
			t.Errorf("comment: %v", h)
		}
	}
	if strings.Join(kinds, ",") != "created,comment" {
		t.Errorf("history kinds %v", kinds)
	}

	if status, b := e.Do("GET", "/v1/board/cards/"+id, "k-hank-globex", ""); status != 404 || b["error"].(map[string]any)["code"] != "not_found" {
		t.Errorf("another tenant's card: %d %v", status, b)
	}
	if status, _ := e.Do("GET", "/v1/board/cards/nope", "k-dmitry", ""); status != 404 {
		t.Errorf("unknown card: %d", status)
	}
	if status, _ := e.Do("GET", "/v1/board", "", ""); status != 401 {
		t.Errorf("board without a key: %d", status)
	}
}
