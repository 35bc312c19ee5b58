package sqlitestore

import (
	"fmt"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
)

// A limit of zero or less lists the default number of actions (50), not
// none: a caller that passes no limit still sees what waits for it.
func TestListActionsWithoutALimit(t *testing.T) {
	ctx := t.Context()
	s := openTest(t, Options{})
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for i := range 60 {
		a := store.Action{ID: fmt.Sprintf("a%02d", i), Tenant: "t", Key: chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"},
			Tool: "refund", Status: store.ActionProposed, CreatedAt: at.Add(time.Duration(i) * time.Second)}
		if err := s.PutAction(ctx, a); err != nil {
			t.Fatalf("PutAction: %v", err)
		}
	}
	for _, limit := range []int{0, -1} {
		list, err := s.ListActions(ctx, "t", "", limit)
		if err != nil {
			t.Fatalf("ListActions(limit %d): %v", limit, err)
		}
		if len(list) != 50 || list[0].ID != "a59" {
			t.Errorf("ListActions(limit %d): %d actions, first %v; want the newest 50", limit, len(list), first(list))
		}
	}
	if list, _ := s.ListActions(ctx, "t", store.ActionProposed, 1); len(list) != 1 || list[0].ID != "a59" {
		t.Errorf("ListActions(limit 1): %v, want only a59", list)
	}
}

func first(list []store.Action) string {
	if len(list) == 0 {
		return "none"
	}
	return list[0].ID
}
