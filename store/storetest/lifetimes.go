package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
)

// lifetimeTests pin down that a conversation's parts live for their own
// times (store.Conversation.MessagesUntil, SlotsUntil), judged on the
// clock across a day, a week and a month, and that the end of one never
// takes another with it.
var lifetimeTests = []subtest{
	{name: "PartsEndOneByOne", run: testPartsEndOneByOne},
	{name: "LatestCommitSetsTimes", run: testLatestCommitSetsTimes},
	{name: "PendingApartFromMemory", run: testPendingApartFromMemory},
	{name: "ActionOutlivesConversation", run: testActionOutlivesConversation},
}

const day = 24 * time.Hour

// stateOf is a conversation of the kinds of part the engine keeps, each
// with the lifetime the engine gives it by default: messages for the
// memory's 30 minutes, the case binding and the skill for 30 days, an
// interview and a draft for a day, and one slot with no time of its own.
func stateOf(now time.Time) store.Conversation {
	c := conversation(now, 3)
	c.MessagesUntil = now.Add(30 * time.Minute)
	c.Slots = map[string]json.RawMessage{
		"case":      json.RawMessage(`{"ticket_id":"T-1"}`),
		"skill":     json.RawMessage(`"nutrition"`),
		"interview": json.RawMessage(`{"questions":1,"pending":"call-1"}`),
		"draft":     json.RawMessage(`{"id":"d1"}`),
		"untimed":   json.RawMessage(`1`),
	}
	c.SlotsUntil = map[string]time.Time{
		"case": now.Add(30 * day), "skill": now.Add(30 * day),
		"interview": now.Add(day), "draft": now.Add(day),
	}
	return c
}

// wantParts loads key and checks which parts it holds: whether the
// messages are there, and exactly which slots, each with its value and
// time as committed.
func wantParts(t *testing.T, e env, what string, key chat.ConversationKey, committed store.Conversation, messages bool, slots ...string) {
	t.Helper()
	got, err := e.s.LoadConversation(t.Context(), key)
	if err != nil {
		t.Fatalf("%s: LoadConversation: %v", what, err)
	}
	if messages != (len(got.Messages) == len(committed.Messages)) || (!messages && len(got.Messages) != 0) {
		t.Errorf("%s: %d messages, want them kept=%v", what, len(got.Messages), messages)
	}
	if messages && !got.MessagesUntil.Equal(committed.MessagesUntil) {
		t.Errorf("%s: messages until %v, want %v", what, got.MessagesUntil, committed.MessagesUntil)
	}
	if len(got.Slots) != len(slots) {
		t.Errorf("%s: slots %v, want exactly %v", what, keys(got.Slots), slots)
	}
	for _, k := range slots {
		if !jsonEqual(got.Slots[k], committed.Slots[k]) {
			t.Errorf("%s: slot %s = %s, want %s", what, k, got.Slots[k], committed.Slots[k])
		}
		if w := committed.SlotsUntil[k]; !w.IsZero() && !got.SlotsUntil[k].Equal(w) {
			t.Errorf("%s: slot %s until %v, want %v", what, k, got.SlotsUntil[k], w)
		}
	}
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func testPartsEndOneByOne(t *testing.T, e env) {
	key, start := testKey("t1", "c1"), e.clock.Now()
	conv := stateOf(start)
	mustCommit(t, e.s, store.Commit{Key: key, Conversation: &conv})
	ttl := e.opts.ConversationTTL
	all := []string{"case", "skill", "interview", "draft", "untimed"}
	steps := []struct {
		at       time.Duration
		messages bool
		slots    []string
	}{
		{30 * time.Minute, true, all}, // inclusive, and the untimed slot's ConversationTTL too
		{ttl + time.Second, false, all[:4]},
		{20 * time.Hour, false, all[:4]},
		{day, false, all[:4]},
		{day + time.Second, false, all[:2]},
		{7 * day, false, all[:2]},
		{30 * day, false, all[:2]},
	}
	for _, st := range steps {
		e.clock.Set(start.Add(st.at))
		touch(t, e) // the backend's cleanup runs on commits: it must spare what still lives
		wantParts(t, e, fmt.Sprintf("after %v", st.at), key, conv, st.messages, st.slots...)
	}
	e.clock.Set(start.Add(30*day + time.Second))
	touch(t, e)
	_, err := e.s.LoadConversation(t.Context(), key)
	wantNotFound(t, "LoadConversation a second past the last part's time", err)
}

// A commit replaces the times: the turn that commits states each part's
// time anew (a case used yesterday lives another month from now), and a
// part it leaves without a time takes ConversationTTL from UpdatedAt.
func testLatestCommitSetsTimes(t *testing.T, e env) {
	key, start := testKey("t1", "c1"), e.clock.Now()
	conv := stateOf(start)
	mustCommit(t, e.s, store.Commit{Key: key, Conversation: &conv})

	e.clock.Set(start.Add(29 * day))
	got, err := e.s.LoadConversation(t.Context(), key)
	if err != nil {
		t.Fatalf("LoadConversation after 29 days: %v", err)
	}
	now := e.clock.Now()
	got.UpdatedAt = now
	got.Messages = []store.Message{{Role: store.RoleUser, Text: "back again", At: now}}
	got.MessagesUntil = now.Add(30 * time.Minute)
	got.SlotsUntil["case"] = now.Add(30 * day)
	delete(got.SlotsUntil, "skill") // no time of its own now: ConversationTTL
	mustCommit(t, e.s, store.Commit{Key: key, Conversation: &got})

	e.clock.Set(now.Add(e.opts.ConversationTTL + time.Second))
	touch(t, e)
	wantParts(t, e, "a ConversationTTL after the second commit", key, got, false, "case")
	e.clock.Set(now.Add(30 * day))
	touch(t, e)
	wantParts(t, e, "a month after the second commit", key, got, false, "case")
	e.clock.Advance(time.Second)
	_, err = e.s.LoadConversation(t.Context(), key)
	wantNotFound(t, "LoadConversation past the renewed case", err)
}

// A pending confirmation lives by its own ExpiresAt (and the grace past
// it), not by the memory's: and the memory's parts not by the pending
// action's.
func testPendingApartFromMemory(t *testing.T, e env) {
	ctx, key, start := t.Context(), testKey("t1", "c1"), e.clock.Now()
	conv := conversation(start, 2)
	conv.Slots = nil
	conv.MessagesUntil = start.Add(10 * time.Minute)
	p := pending(key, "p1", start)
	p.ExpiresAt = start.Add(2 * time.Hour)
	mustCommit(t, e.s, store.Commit{Key: key, Conversation: &conv, PutPending: &p})

	e.clock.Set(start.Add(time.Hour))
	touch(t, e)
	_, err := e.s.LoadConversation(ctx, key)
	wantNotFound(t, "LoadConversation an hour on, its only part ended", err)
	if got, err := e.s.GetPending(ctx, key); err != nil || got.ID != "p1" {
		t.Fatalf("GetPending an hour on = %+v, %v; want p1: the memory's end took it", got, err)
	}

	// And the other way round: a slot kept for a week outlives the
	// pending action and its grace.
	other := testKey("t1", "c2")
	long := conversation(start.Add(time.Hour), 1)
	long.MessagesUntil = start.Add(time.Hour + 30*time.Minute)
	long.SlotsUntil = map[string]time.Time{"draft": start.Add(7 * day)}
	q := pending(other, "p2", start.Add(time.Hour))
	mustCommit(t, e.s, store.Commit{Key: other, Conversation: &long, PutPending: &q})
	if _, err := e.s.TakePending(ctx, other, "p2"); err != nil {
		t.Fatalf("TakePending p2: %v", err)
	}
	e.clock.Set(start.Add(3 * day))
	touch(t, e)
	wantParts(t, e, "three days on, after the pending action was taken", other, long, false, "draft")
	_, err = e.s.GetPending(ctx, other)
	wantNotFound(t, "GetPending of the taken action", err)
}

// An action lives until it ends, whatever its ExpiresAt and whatever the
// conversation it was proposed in still holds: approved after two days,
// carried out after a month, it is there with its case.
func testActionOutlivesConversation(t *testing.T, e env) {
	as, ok := e.s.(store.Actions)
	if !ok {
		t.Skip("the backend keeps no actions")
	}
	ctx, start := t.Context(), e.clock.Now()
	a := newAction("t1", "act-1", e)
	a.ExpiresAt = start.Add(day)
	if err := as.PutAction(ctx, a); err != nil {
		t.Fatal(err)
	}
	conv := conversation(start, 1)
	conv.MessagesUntil = start.Add(30 * time.Minute)
	mustCommit(t, e.s, store.Commit{Key: a.Key, Conversation: &conv})

	e.clock.Set(start.Add(2 * day))
	touch(t, e)
	next := a
	next.Status, next.DecidedBy, next.DecidedAt, next.UpdatedAt = store.ActionApproved, "staff-1", e.clock.Now(), e.clock.Now()
	if _, err := as.UpdateAction(ctx, next, store.ActionProposed); err != nil {
		t.Fatalf("approve after two days: %v", err)
	}
	e.clock.Set(start.Add(31 * day))
	touch(t, e)
	got, err := as.GetAction(ctx, "t1", "act-1")
	if err != nil || got.Status != store.ActionApproved || got.Case["ticket_id"] != "T-4821" {
		t.Fatalf("a month on, GetAction = %+v, %v; want it approved with its case", got, err)
	}
	list, err := as.ListActions(ctx, "t1", store.ActionApproved, 10)
	if err != nil || len(list) != 1 {
		t.Fatalf("a month on, ListActions(approved) = %d, %v; want the action (a resume finds it)", len(list), err)
	}
	if _, err := e.s.LoadConversation(ctx, a.Key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the conversation's memory a month on: err = %v, want ErrNotFound (its parts ended)", err)
	}
}
