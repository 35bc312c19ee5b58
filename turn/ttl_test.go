package turn_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/turntest"
)

// Lifetimes counted in days on the injected clock, which the engine and
// its store share: a dead holder's lease, an action waiting for staff.

const day = 24 * time.Hour

// A lease left by a process that died mid-turn holds its conversation
// only for the store's lock TTL, judged on the store's clock: while it is
// live a turn waits out the store's lock wait and gives up without asking
// the model; two days on, the next turn takes the conversation over and
// answers, and the dead holder's lease is lost. The waits run on the
// bubble's fake time.
func TestDeadHoldersLeaseLapsesOnTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := turntest.NewClock()
		tools, _ := tool.NewRegistry()
		e := turntest.New(t, turn.Config{Tools: tools,
			Tenants: map[string]turn.Tenant{"t": {ID: "t", Language: "en", Roles: map[string]turn.Role{"user": {}}}},
		}, turntest.WithClock(clock))
		in := chat.Inbound{Identity: chat.Identity{TenantID: "t", UserID: "u", Role: "user", Scopes: []chat.Scope{chat.ScopeRead}}, Chat: "c", Text: "hello"}
		ctx := context.Background()
		dead, err := e.Store.Lock(ctx, in.Key().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.HandleTurn(ctx, in); !errors.Is(err, store.ErrLockTimeout) || e.Model.Calls() != 0 {
			t.Fatalf("a turn under a live lease: %v, %d model calls; want a lock timeout and none", err, e.Model.Calls())
		}
		clock.Advance(2 * day)
		e.Model.Push(turntest.Say("Hello."))
		if out := e.Send(in); out.Say != "Hello." {
			t.Errorf("two days later the reply is %q", out.Say)
		}
		select {
		case <-dead.Lost():
		default:
			t.Error("the dead holder's lease is not lost after the takeover")
		}
	})
}

// An approval TTL of days is counted on the clock: under a three-day TTL
// an action asked for on a Monday morning still runs when staff approve
// it on Wednesday evening; left a moment past its three days it expires,
// and nothing runs.
func TestApprovalTTLOfDays(t *testing.T) {
	for _, tt := range []struct {
		name    string
		wait    time.Duration
		status  string
		refunds int
	}{
		{"approved on Wednesday evening", 2*day + 9*time.Hour, store.ActionConfirmed, 1},
		{"approved past the three days", 3*day + time.Second, store.ActionExpired, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := &ledger{refunds: map[string]string{}, refunded: map[string]bool{}}
			clock := turntest.NewClock()
			b := newLoopBenchAt(t, turn.Assistant{}, clock, func(c *turn.Config) { c.ApprovalTTL = 3 * day }, &refundTool{l: l})
			a := proposeRefund(t, b)
			if ttl := a.ExpiresAt.Sub(a.CreatedAt); ttl != 3*day {
				t.Errorf("the action waits %s, want three days", ttl)
			}
			clock.Advance(tt.wait)
			b.model.Push(llmtest.ToolCalls("Возврат выполнен."))
			view, _, err := b.eng.Decide(context.Background(), staff, a.ID, true)
			if view.Status != tt.status || actionStatus(t, b, a.ID) != tt.status || l.count() != tt.refunds {
				t.Errorf("decided %s later: %s (%v), stored %s, %d refunds; want %s and %d",
					tt.wait, view.Status, err, actionStatus(t, b, a.ID), l.count(), tt.status, tt.refunds)
			}
		})
	}
}
