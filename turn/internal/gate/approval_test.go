package gate

import (
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
)

// Who decides an action: a member of its approver roles, never the user
// who asked for it, whatever their role.
func TestMayDecide(t *testing.T) {
	a := store.Action{Approvers: []string{"lead", "finance"}, Requester: chat.Identity{UserID: "u1", Role: "lead"}}
	cases := []struct {
		approver          chat.Identity
		approves, decides bool
	}{
		{chat.Identity{UserID: "u2", Role: "lead"}, true, true},
		{chat.Identity{UserID: "u3", Role: "finance"}, true, true},
		{chat.Identity{UserID: "u1", Role: "lead"}, true, false}, // four eyes
		{chat.Identity{UserID: "u4", Role: "member"}, false, false},
		{chat.Identity{UserID: "u4"}, false, false},
	}
	for _, c := range cases {
		if got := Approves(c.approver, a); got != c.approves {
			t.Errorf("Approves(%+v) = %v, want %v", c.approver, got, c.approves)
		}
		if got := MayDecide(c.approver, a); got != c.decides {
			t.Errorf("MayDecide(%+v) = %v, want %v", c.approver, got, c.decides)
		}
	}
}

// A proposal expires at its time, not a moment before; a decided action
// never does.
func TestExpired(t *testing.T) {
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	proposed := store.Action{Status: store.ActionProposed, ExpiresAt: at}
	approved := store.Action{Status: store.ActionApproved, ExpiresAt: at}
	for _, c := range []struct {
		a    store.Action
		now  time.Time
		want bool
	}{
		{proposed, at.Add(-time.Nanosecond), false},
		{proposed, at, true},
		{proposed, at.Add(72 * time.Hour), true},
		{approved, at.Add(72 * time.Hour), false},
	} {
		if got := Expired(c.a, c.now); got != c.want {
			t.Errorf("Expired(%s, %s) = %v, want %v", c.a.Status, c.now, got, c.want)
		}
	}
}

func TestDecided(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	a := store.Action{ID: "a1", Status: store.ActionProposed, Tool: "refund"}
	lead := chat.Identity{UserID: "u2", Role: "lead"}
	for approve, status := range map[bool]string{true: store.ActionApproved, false: store.ActionRejected} {
		got := Decided(a, lead, approve, now)
		if got.Status != status || got.DecidedBy != "u2" || !got.DecidedAt.Equal(now) || !got.UpdatedAt.Equal(now) || got.ID != "a1" || got.Tool != "refund" {
			t.Errorf("Decided(approve=%v) = %+v", approve, got)
		}
	}
	if a.Status != store.ActionProposed || a.DecidedBy != "" {
		t.Errorf("the proposal itself changed: %+v", a)
	}
}
