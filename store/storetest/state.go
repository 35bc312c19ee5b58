package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
)

var stateTests = []subtest{
	{name: "EmptyIsNotFound", run: testEmptyIsNotFound},
	{name: "CommitAtomic", run: testCommitAtomic},
	{name: "CommitCanceled", run: testCommitCanceled},
	{name: "CommitKeepsMemoryWhenNil", run: testCommitKeepsMemory},
	{name: "DropPending", run: testDropPending},
	{name: "PutPendingReplaces", run: testPutPendingReplaces},
	{name: "TakePendingWrongID", run: testTakePendingWrongID},
	{name: "TakePendingRace", run: testTakePendingRace},
	{name: "ClaimMessageDedupe", run: testClaimDedupe},
	{name: "ClaimMessageRace", run: testClaimRace},
	{name: "InboxRetention", run: testInboxRetention},
	{name: "ConversationTTL", opts: func(o *Options) { o.ConversationTTL = 10 * time.Minute }, run: testConversationTTL},
	{name: "PendingPastExpiry", run: testPendingPastExpiry},
	{name: "Execution", run: testExecution},
	{name: "ExecutionPerTenant", run: testExecutionPerTenant},
	{name: "BeginExecutionRace", run: testBeginExecutionRace},
	{name: "GetExecution", run: testGetExecution},
	{name: "ExecutionClaimsMessage", run: testExecutionClaimsMessage},
	{name: "TenantIsolation", run: testTenantIsolation},
}

// conversation returns memory of n messages ending at now.
func conversation(now time.Time, n int) store.Conversation {
	c := store.Conversation{StartedAt: now.Add(-time.Duration(n) * time.Second), UpdatedAt: now}
	roles := []string{store.RoleUser, store.RoleAssistant, store.RoleEvidence, store.RoleTool}
	for i := range n {
		m := store.Message{
			Role: roles[i%len(roles)],
			Text: fmt.Sprintf("message %d: привет, \"quoted\" \x00 text", i),
			At:   c.StartedAt.Add(time.Duration(i) * time.Second),
		}
		if m.Role == store.RoleTool || m.Role == store.RoleEvidence {
			m.Name, m.Source = "name-"+m.Role, "source-"+m.Role
		}
		c.Messages = append(c.Messages, m)
	}
	c.Slots = map[string]json.RawMessage{"draft": json.RawMessage(`{"title":"x","n":[1,2]}`)}
	return c
}

func pending(key chat.ConversationKey, id string, now time.Time) store.PendingAction {
	return store.PendingAction{
		ID: id, Key: key, Tool: "create_card",
		Args:     json.RawMessage(`{"title":"Buy milk","list":"todo"}`),
		ArgsHash: "hash-" + id, IdempotencyKey: "idem-" + id, TurnID: "turn-" + id,
		CreatedAt: now, ExpiresAt: now.Add(10 * time.Minute),
	}
}

func mustCommit(t *testing.T, s store.State, c store.Commit) {
	t.Helper()
	if err := s.Commit(t.Context(), c); err != nil {
		t.Fatalf("Commit(%s): %v", c.Key, err)
	}
}

// wantConversation loads key's conversation, failing the test if it
// cannot, checks that it is want and returns it; what names the moment in
// the errors.
func wantConversation(t *testing.T, s store.State, key chat.ConversationKey, what string, want store.Conversation) store.Conversation {
	t.Helper()
	got, err := s.LoadConversation(t.Context(), key)
	if err != nil {
		t.Fatalf("LoadConversation, %s: %v", what, err)
	}
	checkConversation(t, what, got, want)
	return got
}

// putPending commits a new pending action id for key, made at now, and
// returns it.
func putPending(t *testing.T, s store.State, key chat.ConversationKey, id string, now time.Time) store.PendingAction {
	t.Helper()
	p := pending(key, id, now)
	mustCommit(t, s, store.Commit{Key: key, PutPending: &p})
	return p
}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("%s: err = %v, want ErrNotFound", what, err)
	}
}

func mustClaim(t *testing.T, s store.State, key chat.ConversationKey, msg, turn string, now time.Time) (store.InboxRecord, bool) {
	t.Helper()
	rec, claimed, err := s.ClaimMessage(t.Context(), key, msg, turn, now)
	if err != nil {
		t.Fatalf("ClaimMessage(%s, %s): %v", key, msg, err)
	}
	return rec, claimed
}

func testEmptyIsNotFound(t *testing.T, e env) {
	ctx, key := t.Context(), testKey("t1", "c1")
	_, err := e.s.LoadConversation(ctx, key)
	wantNotFound(t, "LoadConversation", err)
	_, err = e.s.GetPending(ctx, key)
	wantNotFound(t, "GetPending", err)
	_, err = e.s.TakePending(ctx, key, "p1")
	wantNotFound(t, "TakePending", err)
	err = e.s.FinishExecution(ctx, "t1", "idem-unknown", json.RawMessage(`{}`), e.clock.Now())
	wantNotFound(t, "FinishExecution of an unknown record", err)
}

// testCommitAtomic commits memory, a pending action and an inbox completion
// together and checks all three are visible.
func testCommitAtomic(t *testing.T, e env) {
	ctx, key, now := t.Context(), testKey("t1", "c1"), e.clock.Now()
	rec, claimed := mustClaim(t, e.s, key, "m1", "turn-1", now)
	if !claimed || rec.Done || rec.TurnID != "turn-1" || rec.MessageID != "m1" {
		t.Fatalf("first claim = %+v, claimed=%v; want a fresh record of turn-1", rec, claimed)
	}
	conv, p := conversation(now, 16), pending(key, "p1", now)
	reply := json.RawMessage(`{"say":"Создать карточку?","buttons":[{"label":"Да","value":"yes"}]}`)
	mustCommit(t, e.s, store.Commit{Key: key, Conversation: &conv, PutPending: &p, MessageID: "m1", Reply: reply})

	wantConversation(t, e.s, key, "LoadConversation", conv)
	gp, err := e.s.GetPending(ctx, key)
	if err != nil {
		t.Fatalf("GetPending: %v", err)
	}
	checkPending(t, "GetPending", gp, p)
	rec, claimed = mustClaim(t, e.s, key, "m1", "turn-2", now)
	if claimed || !rec.Done || rec.TurnID != "turn-1" || !jsonEqual(rec.Reply, reply) {
		t.Errorf("claim after commit = %+v (reply %s), claimed=%v; want done record of turn-1 with the reply", rec, rec.Reply, claimed)
	}
}

// testCommitCanceled commits under a canceled context: either everything is
// visible afterwards or nothing is.
func testCommitCanceled(t *testing.T, e env) {
	key, now := testKey("t1", "c1"), e.clock.Now()
	mustClaim(t, e.s, key, "m1", "turn-1", now)
	conv, p := conversation(now, 3), pending(key, "p1", now)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := e.s.Commit(ctx, store.Commit{Key: key, Conversation: &conv, PutPending: &p, MessageID: "m1", Reply: json.RawMessage(`"ok"`)})

	_, convErr := e.s.LoadConversation(t.Context(), key)
	_, pendErr := e.s.GetPending(t.Context(), key)
	rec, _ := mustClaim(t, e.s, key, "m1", "turn-2", now)
	all := convErr == nil && pendErr == nil && rec.Done
	none := errors.Is(convErr, store.ErrNotFound) && errors.Is(pendErr, store.ErrNotFound) && !rec.Done
	switch {
	case err == nil && !all:
		t.Errorf("Commit succeeded but not all visible: memory %v, pending %v, inbox done %v", convErr, pendErr, rec.Done)
	case err != nil && !none:
		t.Errorf("Commit failed (%v) but something was written: memory %v, pending %v, inbox done %v", err, convErr, pendErr, rec.Done)
	}
}

func testCommitKeepsMemory(t *testing.T, e env) {
	key, now := testKey("t1", "c1"), e.clock.Now()
	conv := conversation(now, 2)
	mustCommit(t, e.s, store.Commit{Key: key, Conversation: &conv})
	putPending(t, e.s, key, "p1", now)
	wantConversation(t, e.s, key, "memory after a commit without memory", conv)
}

func testDropPending(t *testing.T, e env) {
	ctx, key, now := t.Context(), testKey("t1", "c1"), e.clock.Now()
	putPending(t, e.s, key, "p1", now)
	if _, err := e.s.GetPending(ctx, key); err != nil {
		t.Fatalf("GetPending after put: %v", err)
	}
	mustCommit(t, e.s, store.Commit{Key: key, DropPending: true})
	_, err := e.s.GetPending(ctx, key)
	wantNotFound(t, "GetPending after drop", err)
	_, err = e.s.TakePending(ctx, key, "p1")
	wantNotFound(t, "TakePending after drop", err)
	// Dropping nothing is not an error.
	mustCommit(t, e.s, store.Commit{Key: key, DropPending: true})
}

func testPutPendingReplaces(t *testing.T, e env) {
	ctx, key, now := t.Context(), testKey("t1", "c1"), e.clock.Now()
	p1, p2, p3 := pending(key, "p1", now), pending(key, "p2", now), pending(key, "p3", now)
	p2.Tool, p2.Args = "delete_card", json.RawMessage(`{"id":7}`)
	mustCommit(t, e.s, store.Commit{Key: key, PutPending: &p1})
	mustCommit(t, e.s, store.Commit{Key: key, PutPending: &p2})
	got, err := e.s.GetPending(ctx, key)
	if err != nil {
		t.Fatalf("GetPending: %v", err)
	}
	checkPending(t, "GetPending after replace", got, p2)
	_, err = e.s.TakePending(ctx, key, "p1")
	wantNotFound(t, "TakePending of the replaced action", err)

	// PutPending wins over DropPending.
	mustCommit(t, e.s, store.Commit{Key: key, PutPending: &p3, DropPending: true})
	got, err = e.s.TakePending(ctx, key, "p3")
	if err != nil {
		t.Fatalf("TakePending(p3) after put+drop commit: %v", err)
	}
	checkPending(t, "TakePending(p3)", got, p3)
}

func testTakePendingWrongID(t *testing.T, e env) {
	ctx, key, now := t.Context(), testKey("t1", "c1"), e.clock.Now()
	p := putPending(t, e.s, key, "p1", now)
	other := key
	other.User = "u-2"
	tests := []struct {
		name string
		key  chat.ConversationKey
		id   string
	}{
		{"wrong id", key, "p2"},
		{"empty id", key, ""},
		{"other user", other, "p1"},
		{"other tenant", chat.ConversationKey{Tenant: "t2", Chat: key.Chat, User: key.User}, "p1"},
	}
	for _, tt := range tests {
		_, err := e.s.TakePending(ctx, tt.key, tt.id)
		wantNotFound(t, "TakePending with "+tt.name, err)
		got, err := e.s.GetPending(ctx, key)
		if err != nil {
			t.Fatalf("GetPending after TakePending with %s: %v", tt.name, err)
		}
		checkPending(t, "GetPending after TakePending with "+tt.name, got, p)
	}
	got, err := e.s.TakePending(ctx, key, "p1")
	if err != nil {
		t.Fatalf("TakePending(p1): %v", err)
	}
	checkPending(t, "TakePending(p1)", got, p)
	_, err = e.s.GetPending(ctx, key)
	wantNotFound(t, "GetPending after take", err)
}

func testTakePendingRace(t *testing.T, e env) {
	key, now := testKey("t1", "c1"), e.clock.Now()
	p := putPending(t, e.s, key, "p1", now)
	const n = 16
	var (
		mu         sync.Mutex
		wins, miss int
	)
	atOnce(n, func(int) {
		got, err := e.s.TakePending(t.Context(), key, "p1")
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			wins++
			if got.ID != "p1" || got.Tool != p.Tool {
				t.Errorf("winner got %+v", got)
			}
		case errors.Is(err, store.ErrNotFound):
			miss++
		default:
			t.Errorf("TakePending: %v", err)
		}
	})
	if wins != 1 || miss != n-1 {
		t.Errorf("%d concurrent takes: %d won, %d not found; want 1 and %d", n, wins, miss, n-1)
	}
}

func testClaimDedupe(t *testing.T, e env) {
	key, now := testKey("t1", "c1"), e.clock.Now()
	first, claimed := mustClaim(t, e.s, key, "m1", "turn-1", now)
	if !claimed || first.MessageID != "m1" || first.TurnID != "turn-1" || first.Done || !first.At.Equal(now) {
		t.Fatalf("first claim = %+v, claimed=%v", first, claimed)
	}
	e.clock.Advance(time.Second)
	again, claimed := mustClaim(t, e.s, key, "m1", "turn-2", e.clock.Now())
	if claimed || again.TurnID != "turn-1" || again.Done || !again.At.Equal(now) {
		t.Errorf("second claim = %+v, claimed=%v; want the first record, claimed=false", again, claimed)
	}
	// The inbox is per conversation: the same id elsewhere is new.
	other := key
	other.Chat = "c2"
	if _, claimed := mustClaim(t, e.s, other, "m1", "turn-3", now); !claimed {
		t.Errorf("claim of m1 in another conversation: claimed=false, want true")
	}
	reply := json.RawMessage(`{"turn_id":"turn-1","say":"done"}`)
	mustCommit(t, e.s, store.Commit{Key: key, MessageID: "m1", Reply: reply})
	done, claimed := mustClaim(t, e.s, key, "m1", "turn-4", e.clock.Now())
	if claimed || !done.Done || done.TurnID != "turn-1" || !jsonEqual(done.Reply, reply) {
		t.Errorf("claim after completion = %+v (reply %s), claimed=%v; want done with the reply", done, done.Reply, claimed)
	}
	other2, claimed := mustClaim(t, e.s, other, "m1", "turn-5", now)
	if claimed || other2.Done {
		t.Errorf("completion leaked into another conversation: %+v claimed=%v", other2, claimed)
	}
}

func testClaimRace(t *testing.T, e env) {
	key, now := testKey("t1", "c1"), e.clock.Now()
	const n = 16
	wins, turns := raceToOne(t, n, "ClaimMessage", func(i int) (string, bool, error) {
		rec, claimed, err := e.s.ClaimMessage(t.Context(), key, "m1", fmt.Sprintf("turn-%d", i), now)
		return rec.TurnID, claimed, err
	})
	if wins != 1 || len(turns) != 1 {
		t.Errorf("%d concurrent claims: %d claimed, records name turns %v; want one claim and one turn", n, wins, turns)
	}
}

// raceToOne runs n calls of try at once, each naming the turn of the record
// it got and whether it won; it returns how many won and the turns named.
func raceToOne(t *testing.T, n int, what string, try func(i int) (turn string, won bool, err error)) (wins int, turns map[string]int) {
	var mu sync.Mutex
	turns = map[string]int{}
	atOnce(n, func(i int) {
		turn, won, err := try(i)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		if won {
			wins++
		}
		turns[turn]++
	})
	return wins, turns
}

// atOnce runs call(0) … call(n-1) in goroutines released together, so that
// they race, and returns once all have returned.
func atOnce(n int, call func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			call(i)
		})
	}
	close(start)
	wg.Wait()
}

// touch commits to an unrelated key so that a backend with lazy cleanup
// gets the chance to run it at the current clock.
func touch(t *testing.T, e env) {
	t.Helper()
	key := testKey("t-touch", fmt.Sprint(e.clock.Now().UnixNano()))
	conv := conversation(e.clock.Now(), 1)
	mustCommit(t, e.s, store.Commit{Key: key, Conversation: &conv})
}

func testInboxRetention(t *testing.T, e env) {
	key, start := testKey("t1", "c1"), e.clock.Now()
	mustClaim(t, e.s, key, "m1", "turn-1", start)
	mustClaim(t, e.s, key, "m2", "turn-2", start)
	mustCommit(t, e.s, store.Commit{Key: key, MessageID: "m2", Reply: json.RawMessage(`"r2"`)})
	for _, step := range []time.Duration{time.Hour, 12 * time.Hour, 10*time.Hour + 59*time.Minute, time.Minute} {
		e.clock.Advance(step)
		touch(t, e)
		for _, msg := range []string{"m1", "m2"} {
			rec, claimed := mustClaim(t, e.s, key, msg, "turn-late", e.clock.Now())
			if claimed || rec.TurnID == "turn-late" {
				t.Fatalf("%v after the claim, %s was claimed again (%+v): inbox forgot it", e.clock.Now().Sub(start), msg, rec)
			}
			if msg == "m2" && (!rec.Done || !jsonEqual(rec.Reply, json.RawMessage(`"r2"`))) {
				t.Errorf("%v after the claim, m2 = %+v; want done with its reply", e.clock.Now().Sub(start), rec)
			}
		}
	}
}

func testConversationTTL(t *testing.T, e env) {
	ctx, key, ttl := t.Context(), testKey("t1", "c1"), e.opts.ConversationTTL
	conv := conversation(e.clock.Now(), 4)
	mustCommit(t, e.s, store.Commit{Key: key, Conversation: &conv})

	e.clock.Advance(ttl - time.Second)
	touch(t, e)
	got := wantConversation(t, e.s, key, "1s before the TTL", conv)

	// The TTL slides from UpdatedAt.
	got.UpdatedAt = e.clock.Now()
	got.Messages = append(got.Messages, store.Message{Role: store.RoleUser, Text: "still here", At: got.UpdatedAt})
	mustCommit(t, e.s, store.Commit{Key: key, Conversation: &got})
	e.clock.Advance(ttl - time.Second)
	touch(t, e)
	wantConversation(t, e.s, key, "after an update, 1s before the new TTL", got)

	e.clock.Advance(2 * time.Second)
	_, err := e.s.LoadConversation(ctx, key)
	wantNotFound(t, "LoadConversation 1s past the TTL", err)
	touch(t, e)
	_, err = e.s.LoadConversation(ctx, key)
	wantNotFound(t, "LoadConversation past the TTL after cleanup", err)
	e.clock.Advance(48 * time.Hour)
	touch(t, e)
	_, err = e.s.LoadConversation(ctx, key)
	wantNotFound(t, "LoadConversation two days past the TTL", err)

	// Retention counts from UpdatedAt, not from the commit.
	old := testKey("t1", "c2")
	stale := conversation(e.clock.Now().Add(-ttl/2), 2)
	mustCommit(t, e.s, store.Commit{Key: old, Conversation: &stale})
	if _, err := e.s.LoadConversation(ctx, old); err != nil {
		t.Fatalf("LoadConversation of memory updated TTL/2 ago: %v", err)
	}
	e.clock.Advance(ttl/2 + time.Second)
	_, err = e.s.LoadConversation(ctx, old)
	wantNotFound(t, "LoadConversation 1s past UpdatedAt+TTL", err)
}

func testPendingPastExpiry(t *testing.T, e env) {
	ctx, key, now := t.Context(), testKey("t1", "c1"), e.clock.Now()
	p := putPending(t, e.s, key, "p1", now)

	// Past ExpiresAt the action is still there, so the engine can say
	// "this confirmation expired" instead of "nothing to confirm".
	for _, at := range []time.Duration{time.Hour, 23 * time.Hour} {
		e.clock.Set(p.ExpiresAt.Add(at))
		touch(t, e)
		got, err := e.s.GetPending(ctx, key)
		if err != nil {
			t.Fatalf("GetPending %v past ExpiresAt: %v", at, err)
		}
		checkPending(t, fmt.Sprintf("GetPending %v past ExpiresAt", at), got, p)
	}
	got, err := e.s.TakePending(ctx, key, "p1")
	if err != nil {
		t.Fatalf("TakePending past ExpiresAt: %v", err)
	}
	checkPending(t, "TakePending past ExpiresAt", got, p)

	// More than a day past ExpiresAt it may be gone; nothing else may happen.
	p2 := pending(key, "p2", e.clock.Now())
	mustCommit(t, e.s, store.Commit{Key: key, PutPending: &p2})
	e.clock.Set(p2.ExpiresAt.Add(25 * time.Hour))
	touch(t, e)
	if got, err := e.s.GetPending(ctx, key); err == nil {
		checkPending(t, "GetPending 25h past ExpiresAt", got, p2)
	} else if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetPending 25h past ExpiresAt: %v, want the action or ErrNotFound", err)
	}
}

func execution(tenant, idem string, now time.Time) store.ExecutionRecord {
	return store.ExecutionRecord{
		Tenant: tenant, IdempotencyKey: idem, Tool: "create_card", ArgsHash: "h-" + idem,
		Args:   json.RawMessage(`{"title":"Buy milk","n":[1,2]}`),
		TurnID: "turn-1", State: store.ExecStarted, StartedAt: now,
	}
}

func testGetExecution(t *testing.T, e env) {
	ctx, now := t.Context(), e.clock.Now()
	_, err := e.s.GetExecution(ctx, "t1", "idem-1")
	wantNotFound(t, "GetExecution of an unknown key", err)
	rec := execution("t1", "idem-1", now)
	rec.Key, rec.MessageID = testKey("t1", "c1"), "m1"
	if _, fresh, err := e.s.BeginExecution(ctx, rec); err != nil || !fresh {
		t.Fatalf("BeginExecution = fresh %v, err %v", fresh, err)
	}
	got, err := e.s.GetExecution(ctx, "t1", "idem-1")
	if err != nil {
		t.Fatalf("GetExecution: %v", err)
	}
	checkExecution(t, "started record", got, rec)
	_, err = e.s.GetExecution(ctx, "t2", "idem-1")
	wantNotFound(t, "GetExecution of another tenant's key", err)
	result, at := json.RawMessage(`{"status":"ok"}`), now.Add(time.Second)
	if err := e.s.FinishExecution(ctx, "t1", "idem-1", result, at); err != nil {
		t.Fatalf("FinishExecution: %v", err)
	}
	got, err = e.s.GetExecution(ctx, "t1", "idem-1")
	done := rec
	done.State, done.Result, done.FinishedAt = store.ExecDone, result, at
	if err != nil {
		t.Fatalf("GetExecution after finish: %v", err)
	}
	checkExecution(t, "finished record", got, done)
}

// testExecutionClaimsMessage: an execution begun for a message leaves its
// claim not done until the turn's Commit completes it.
func testExecutionClaimsMessage(t *testing.T, e env) {
	ctx, key, now := t.Context(), testKey("t1", "c1"), e.clock.Now()
	if _, claimed := mustClaim(t, e.s, key, "m1", "turn-1", now); !claimed {
		t.Fatal("first claim: claimed=false")
	}
	rec := execution("t1", "msg-m1-1", now)
	rec.Key, rec.MessageID = key, "m1"
	if _, fresh, err := e.s.BeginExecution(ctx, rec); err != nil || !fresh {
		t.Fatalf("BeginExecution = fresh %v, err %v", fresh, err)
	}
	again, claimed := mustClaim(t, e.s, key, "m1", "turn-2", now.Add(time.Second))
	if claimed || again.Done || again.TurnID != "turn-1" {
		t.Errorf("claim after the execution began = %+v, claimed=%v; want turn-1's claim, not done", again, claimed)
	}
	reply := json.RawMessage(`{"turn_id":"turn-1"}`)
	mustCommit(t, e.s, store.Commit{Key: key, MessageID: "m1", Reply: reply})
	done, claimed := mustClaim(t, e.s, key, "m1", "turn-3", now.Add(2*time.Second))
	if claimed || !done.Done || done.TurnID != "turn-1" || !jsonEqual(done.Reply, reply) {
		t.Errorf("claim after commit = %+v, claimed=%v; want done with the reply", done, claimed)
	}
}

func testExecution(t *testing.T, e env) {
	ctx, now := t.Context(), e.clock.Now()
	rec := execution("t1", "idem-1", now)
	got, fresh, err := e.s.BeginExecution(ctx, rec)
	if err != nil || !fresh {
		t.Fatalf("first BeginExecution = fresh %v, err %v; want fresh", fresh, err)
	}
	checkExecution(t, "fresh record", got, rec)

	retry := rec
	retry.TurnID, retry.StartedAt = "turn-2", now.Add(time.Minute)
	got, fresh, err = e.s.BeginExecution(ctx, retry)
	if err != nil || fresh {
		t.Fatalf("second BeginExecution = fresh %v, err %v; want the existing record", fresh, err)
	}
	checkExecution(t, "existing record", got, rec)

	result, at := json.RawMessage(`{"status":"ok","card_id":"c-42"}`), now.Add(2*time.Second)
	if err := e.s.FinishExecution(ctx, "t1", "idem-1", result, at); err != nil {
		t.Fatalf("FinishExecution: %v", err)
	}
	got, fresh, err = e.s.BeginExecution(ctx, retry)
	if err != nil || fresh {
		t.Fatalf("BeginExecution after finish = fresh %v, err %v; want the existing record", fresh, err)
	}
	done := rec
	done.State, done.Result, done.FinishedAt = store.ExecDone, result, at
	checkExecution(t, "finished record", got, done)
}

func testExecutionPerTenant(t *testing.T, e env) {
	ctx, now := t.Context(), e.clock.Now()
	a, b := execution("t1", "idem-1", now), execution("t2", "idem-1", now)
	for _, rec := range []store.ExecutionRecord{a, b} {
		if _, fresh, err := e.s.BeginExecution(ctx, rec); err != nil || !fresh {
			t.Fatalf("BeginExecution(%s): fresh %v, err %v; want fresh per tenant", rec.Tenant, fresh, err)
		}
	}
	if err := e.s.FinishExecution(ctx, "t1", "idem-1", json.RawMessage(`"a"`), now); err != nil {
		t.Fatalf("FinishExecution(t1): %v", err)
	}
	got, _, err := e.s.BeginExecution(ctx, b)
	if err != nil {
		t.Fatalf("BeginExecution(t2): %v", err)
	}
	checkExecution(t, "t2's record after t1 finished", got, b)
	err = e.s.FinishExecution(ctx, "t3", "idem-1", json.RawMessage(`"c"`), now)
	wantNotFound(t, "FinishExecution of another tenant's key", err)
}

func testBeginExecutionRace(t *testing.T, e env) {
	const n = 16
	fresh, turns := raceToOne(t, n, "BeginExecution", func(i int) (string, bool, error) {
		rec := execution("t1", "idem-race", e.clock.Now())
		rec.TurnID = fmt.Sprintf("turn-%d", i)
		got, ok, err := e.s.BeginExecution(t.Context(), rec)
		return got.TurnID, ok, err
	})
	if fresh != 1 || len(turns) != 1 {
		t.Errorf("%d concurrent begins: %d fresh, records name turns %v; want exactly one", n, fresh, turns)
	}
}

func testTenantIsolation(t *testing.T, e env) {
	ctx, now := t.Context(), e.clock.Now()
	a := testKey("t1", "c1")
	b := a
	b.Tenant = "t2"
	conv, p := conversation(now, 2), pending(a, "p1", now)
	mustCommit(t, e.s, store.Commit{Key: a, Conversation: &conv, PutPending: &p})
	_, err := e.s.LoadConversation(ctx, b)
	wantNotFound(t, "LoadConversation of another tenant", err)
	_, err = e.s.GetPending(ctx, b)
	wantNotFound(t, "GetPending of another tenant", err)
	mustCommit(t, e.s, store.Commit{Key: b, DropPending: true})
	if _, err := e.s.GetPending(ctx, a); err != nil {
		t.Errorf("another tenant's DropPending removed the action: %v", err)
	}
}
