package turn_test

import (
	"context"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
)

// The approvers' list closes what is past its time: an action whose
// expiry passed lists as expired (and is stored so), never as waiting.
func TestListingExpiresActionsPastTheirTime(t *testing.T) {
	b, l, clk := clockedApprovalBench(t)
	a := proposeRefund(t, b)
	clk.Advance(a.ExpiresAt.Sub(clk.Now()))
	ctx := context.Background()
	if waiting, err := b.eng.Actions(ctx, staff, store.ActionProposed); err != nil || len(waiting) != 0 {
		t.Errorf("waiting actions past their time: %+v (%v)", waiting, err)
	}
	all, err := b.eng.Actions(ctx, staff, "")
	if err != nil || len(all) != 1 || all[0].Status != store.ActionExpired {
		t.Errorf("all actions: %+v (%v), want the one expired", all, err)
	}
	if got := actionStatus(t, b, a.ID); got != store.ActionExpired || l.calls != 0 {
		t.Errorf("stored %s, %d refund calls", got, l.calls)
	}
}

// rivalStore is the store with a rival approver who decides an action in
// the instant between this process reading it and closing it as expired.
type rivalStore struct {
	*sqlitestore.Store
	raced bool
}

func (r *rivalStore) UpdateAction(ctx context.Context, a store.Action, from string) (store.Action, error) {
	if !r.raced && a.Status == store.ActionExpired {
		r.raced = true
		rival := a
		rival.Status, rival.DecidedBy, rival.DecidedAt = store.ActionRejected, "petr", a.UpdatedAt
		if _, err := r.Store.UpdateAction(ctx, rival, from); err != nil {
			return store.Action{}, err
		}
	}
	return r.Store.UpdateAction(ctx, a, from)
}

// An action closed by someone else first shows as what they made it, not
// as expired: the store's answer wins over this process's intent.
func TestExpiryLosesARaceToADecision(t *testing.T) {
	b, _, clk := clockedApprovalBenchOn(t, func(st *sqlitestore.Store) backend { return &rivalStore{Store: st} })
	a := proposeRefund(t, b)
	clk.Advance(a.ExpiresAt.Sub(clk.Now()) + time.Second)
	all, err := b.eng.Actions(context.Background(), staff, "")
	if err != nil || len(all) != 1 || all[0].Status != store.ActionRejected || all[0].DecidedBy != "petr" {
		t.Errorf("listed %+v (%v), want the rival's rejection", all, err)
	}
}
