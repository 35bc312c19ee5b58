package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
)

var actionTests = []subtest{
	{name: "RoundTrip", run: testActionRoundTrip},
	{name: "List", run: testActionList},
	{name: "DecideOnce", run: testActionDecideOnce},
	{name: "TenantsSeparate", run: testActionTenants},
}

// actions returns the backend's store.Actions, skipping a backend without.
func actions(t *testing.T, e env) store.Actions {
	t.Helper()
	a, ok := e.s.(store.Actions)
	if !ok {
		t.Skip("the backend keeps no actions")
	}
	return a
}

// mustPutAction puts a, failing the test if it is refused.
func mustPutAction(t *testing.T, as store.Actions, a store.Action) {
	t.Helper()
	if err := as.PutAction(context.Background(), a); err != nil {
		t.Fatalf("PutAction %s: %v", a.ID, err)
	}
}

func newAction(tenant, id string, e env) store.Action {
	now := e.clock.Now()
	return store.Action{
		ID: id, Tenant: tenant, Key: chat.ConversationKey{Tenant: tenant, Chat: "T-4821", User: "desk"},
		Requester: chat.Identity{TenantID: tenant, UserID: "desk", Role: "desk", Scopes: []chat.Scope{chat.ScopeRead, chat.ScopeWriteFull}},
		Case:      map[string]string{"ticket_id": "T-4821"},
		Tool:      "create_refund", Title: "Refund", Args: json.RawMessage(`{"amount":990,"payment_id":"pay_4821"}`), ArgsHash: "h",
		Fields:    []store.ActionField{{Name: "amount", Value: "990"}, {Name: "payment_id", Value: "pay_4821"}},
		Approvers: []string{"staff"}, Status: store.ActionProposed, TurnID: "turn-1",
		CreatedAt: now, ExpiresAt: now.Add(24 * 3600e9), UpdatedAt: now,
	}
}

func testActionRoundTrip(t *testing.T, e env) {
	as := actions(t, e)
	ctx := context.Background()
	a := newAction("acme", "act-1", e)
	mustPutAction(t, as, a)
	got, err := as.GetAction(ctx, "acme", "act-1")
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, got, a) {
		t.Errorf("got %+v\nwant %+v", got, a)
	}
	if err := as.PutAction(ctx, a); err == nil {
		t.Error("a second PutAction of the same id succeeded")
	}
	if _, err := as.GetAction(ctx, "acme", "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing action: err = %v, want ErrNotFound", err)
	}
}

func testActionList(t *testing.T, e env) {
	as := actions(t, e)
	ctx := context.Background()
	for i := range 5 {
		a := newAction("acme", fmt.Sprintf("act-%d", i), e)
		if i%2 == 1 {
			a.Status = store.ActionRejected
		}
		mustPutAction(t, as, a)
		e.clock.Advance(1e9)
	}
	ids := func(list []store.Action) []string {
		return idsOf(list, func(a store.Action) string { return a.ID })
	}
	all, err := as.ListActions(ctx, "acme", "", 10)
	if err != nil || fmt.Sprint(ids(all)) != "[act-4 act-3 act-2 act-1 act-0]" {
		t.Errorf("all = %v %v, want newest first", ids(all), err)
	}
	proposed, err := as.ListActions(ctx, "acme", store.ActionProposed, 2)
	if err != nil || fmt.Sprint(ids(proposed)) != "[act-4 act-2]" {
		t.Errorf("proposed, limit 2 = %v %v", ids(proposed), err)
	}
	none, err := as.ListActions(ctx, "acme", store.ActionConfirmed, 10)
	if err != nil || len(none) != 0 {
		t.Errorf("confirmed = %v %v, want none", ids(none), err)
	}
}

// Of many concurrent decisions on one proposed action, exactly one wins;
// the others see the winner's status.
func testActionDecideOnce(t *testing.T, e env) {
	as := actions(t, e)
	ctx := context.Background()
	a := newAction("acme", "act-1", e)
	mustPutAction(t, as, a)
	const n = 8
	var wg sync.WaitGroup
	results := make([]error, n)
	for i := range n {
		wg.Go(func() {
			d := a
			d.Status, d.DecidedBy = store.ActionApproved, fmt.Sprintf("staff-%d", i)
			if i%2 == 1 {
				d.Status = store.ActionRejected
			}
			got, err := as.UpdateAction(ctx, d, store.ActionProposed)
			if err != nil && (got.ID != a.ID || got.Status == store.ActionProposed) {
				t.Errorf("a losing update returned %+v", got)
			}
			results[i] = err
		})
	}
	wg.Wait()
	won := 0
	for _, err := range results {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("a losing update failed with %v, want ErrConflict", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d updates from proposed succeeded, want exactly 1", won)
	}
	got, _ := as.GetAction(ctx, "acme", "act-1")
	// The lifecycle goes on from the winner's status.
	next := got
	next.Status, next.IdempotencyKey = store.ActionExecuting, "k1"
	if got.Status == store.ActionApproved {
		if _, err := as.UpdateAction(ctx, next, store.ActionApproved); err != nil {
			t.Errorf("approved → executing: %v", err)
		}
	}
	if _, err := as.UpdateAction(ctx, newAction("acme", "nope", e), store.ActionProposed); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("update of a missing action: %v, want ErrNotFound", err)
	}
}

func testActionTenants(t *testing.T, e env) {
	as := actions(t, e)
	ctx := context.Background()
	mustPutAction(t, as, newAction("acme", "act-1", e))
	if _, err := as.GetAction(ctx, "globex", "act-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another tenant's action: err = %v, want ErrNotFound", err)
	}
	if list, err := as.ListActions(ctx, "globex", "", 10); err != nil || len(list) != 0 {
		t.Errorf("another tenant lists %d actions (%v)", len(list), err)
	}
	other := newAction("globex", "act-1", e)
	other.Status = store.ActionApproved
	if _, err := as.UpdateAction(ctx, other, store.ActionProposed); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another tenant's update: err = %v, want ErrNotFound", err)
	}
}

// sameJSON compares two values by their JSON encoding.
func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		t.Fatalf("encode: %v %v", err1, err2)
	}
	return string(x) == string(y)
}
