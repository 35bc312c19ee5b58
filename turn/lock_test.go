package turn_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/turntest"
)

// A turn that runs past the lock's TTL — a model that takes its time —
// keeps the conversation's lock for as long as a turn may run and commit:
// the conversation's next message waits for it instead of taking it over,
// and the slow turn's reply and memory are kept. A turn stuck past that is
// taken over, and its commit refused. The embedded store's lease does not
// renew itself, so the engine extends it.
func TestSlowTurnKeepsTheLock(t *testing.T) {
	clock := turntest.NewClock()
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "turn.db"),
		sqlitestore.Options{Now: clock.Now, LockTTL: time.Second, LockWait: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	inModel, release := make(chan struct{}, 3), make(chan struct{}, 3)
	slowModel := llmtest.Func(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		inModel <- struct{}{}
		select {
		case <-release:
		case <-time.After(5 * time.Second): // a test that failed goes on
			return llm.Response{}, errors.New("never released")
		}
		return llm.Response{Text: `{"say":"Here is the answer.","tool":"","args":{},"done":false,"newTopic":false,"buttons":[]}`}, nil
	})
	model := llmtest.NewScripted(slowModel, slowModel, turntest.Say("Taken over."))
	e := turntest.New(t, turn.Config{Tenants: map[string]turn.Tenant{"t": {ID: "t", Language: "en", Roles: map[string]turn.Role{"user": {}}}}},
		turntest.WithStore(st), turntest.WithClock(clock), turntest.WithModel(model))
	id := chat.Identity{TenantID: "t", UserID: "u", Role: "user", Scopes: []chat.Scope{chat.ScopeRead}}
	send := func(chatID, msg, text string) (chat.Outbound, error) {
		return e.HandleTurn(context.Background(), chat.Inbound{Channel: "api", Chat: chatID, MessageID: msg, Identity: id, Text: text})
	}
	type result struct {
		out chat.Outbound
		err error
	}
	start := func(chatID string) <-chan result {
		done := make(chan result, 1)
		go func() {
			out, err := send(chatID, "slow-"+chatID, "a long question")
			done <- result{out, err}
		}()
		<-inModel
		return done
	}

	slow := start("c1")
	clock.Advance(turn.DefaultTurnTimeout + time.Second) // past the lock's TTL, within the turn's time
	if _, err := send("c1", "m2", "are you there?"); !errors.Is(err, store.ErrLockTimeout) {
		t.Errorf("the next message: err = %v, want it to wait for the slow turn (ErrLockTimeout)", err)
	}
	release <- struct{}{}
	if r := <-slow; r.err != nil || r.out.Say != "Here is the answer." {
		t.Fatalf("the slow turn: %q, %v; want its reply", r.out.Say, r.err)
	}
	conv, err := st.LoadConversation(context.Background(), chat.ConversationKey{Tenant: "t", Chat: "c1", User: "u"})
	if err != nil || len(conv.Messages) != 2 || conv.Messages[1].Text != "Here is the answer." {
		t.Errorf("memory after the slow turn: %+v (%v), want its question and answer", conv.Messages, err)
	}

	stuck := start("c2")
	clock.Advance(turn.DefaultTurnTimeout + 10*time.Second) // past what a turn may take
	if out, err := send("c2", "m3", "are you there?"); err != nil || out.Say != "Taken over." {
		t.Errorf("the message after a stuck turn: %q, %v; want it answered", out.Say, err)
	}
	release <- struct{}{}
	if r := <-stuck; !errors.Is(r.err, store.ErrFenced) {
		t.Errorf("the stuck turn's commit: %v, want ErrFenced", r.err)
	}
}
