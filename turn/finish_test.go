package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/turntest"
)

// A write's execution record is finished while the turn goes on: the
// model's next call is made without waiting for the finish, and the
// turn's commit (and so its reply) only once the finish is durable.
func TestWriteRecordFinishesAlongsideTheNextModelCall(t *testing.T) {
	b := newLoopBench(t, turn.Assistant{Prompt: "You are the support desk.", Tools: []string{"add_note"}})
	w := &finishWatch{Store: b.st, release: make(chan struct{})}
	model := &secondCallReleases{Scripted: b.model, release: w.release}
	cfg := turn.Config{Tools: b.registry, State: w, Journal: w,
		Assistants: map[string]turn.Assistant{"support": {Mode: "loop", Tools: []string{"add_note"}}},
		Tenants: map[string]turn.Tenant{"t": {ID: "t", Language: "en", Assistant: "support",
			Roles: map[string]turn.Role{"desk": {Tools: []string{"*"}}}}}}
	b.eng = turntest.New(t, cfg, turntest.WithStore(b.st), turntest.WithModel(model)).Engine
	b.model.Push(llmtest.ToolCalls("Adding a note.", call("c1", "add_note", `{"ticket_id":"T-4821","text":"called back"}`)),
		llmtest.ToolCalls("note added"))

	out, tv := b.send("Note that I called back")
	if tv.Status != "ok" || out.Say != "note added" || b.ran("add_note") != 1 {
		t.Fatalf("turn %s said %q, add_note ran %d times", tv.Status, out.Say, b.ran("add_note"))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		t.Fatal(w.err)
	}
	if len(w.events) != 3 || w.events[0] != "finish begun" || w.events[1] != "finish durable" || w.events[2] != "commit" {
		t.Fatalf("store events %q: want the finish durable before the commit", w.events)
	}
	var rec struct{ Executed []turn.ExecutionTrace }
	turntest.ReadTurn(t, b.st, "t", out.TurnID, &rec)
	if len(rec.Executed) != 1 {
		t.Fatalf("executed %+v", rec.Executed)
	}
	x, err := b.st.GetExecution(context.Background(), "t", rec.Executed[0].IdempotencyKey)
	if err != nil || x.State != store.ExecDone {
		t.Fatalf("execution record %+v, %v: want it done", x, err)
	}
}

// finishWatch is the store holding each execution record's finish until
// released, and noting the order of finishes and commits.
type finishWatch struct {
	*sqlitestore.Store
	release chan struct{}
	mu      sync.Mutex
	events  []string
	err     error
}

func (w *finishWatch) note(event string) {
	w.mu.Lock()
	w.events = append(w.events, event)
	w.mu.Unlock()
}

func (w *finishWatch) FinishExecution(ctx context.Context, tenant, key string, result json.RawMessage, at time.Time) error {
	w.note("finish begun")
	select {
	case <-w.release:
	case <-time.After(5 * time.Second):
		w.mu.Lock()
		w.err = errors.New("the model's next call waited for the record's finish")
		w.mu.Unlock()
	}
	err := w.Store.FinishExecution(ctx, tenant, key, result, at)
	w.note("finish durable")
	return err
}

func (w *finishWatch) Commit(ctx context.Context, c store.Commit) error {
	w.note("commit")
	return w.Store.Commit(ctx, c)
}

// secondCallReleases is the scripted model releasing the finish when its
// second call comes.
type secondCallReleases struct {
	*llmtest.Scripted
	release chan struct{}
	once    sync.Once
}

func (m *secondCallReleases) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if m.Scripted.Calls() == 1 {
		m.once.Do(func() { close(m.release) })
	}
	return m.Scripted.Complete(ctx, req)
}
