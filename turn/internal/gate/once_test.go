package gate

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
)

// records is a store's execution records, each begin and finish noted.
type records struct {
	existing  *store.ExecutionRecord // what an earlier attempt left, if any
	beginErr  error
	finishErr error
	begun     []store.ExecutionRecord
	finished  []string // tenant/key at time: result
}

func (r *records) BeginExecution(_ context.Context, rec store.ExecutionRecord) (store.ExecutionRecord, bool, error) {
	if r.beginErr != nil {
		return store.ExecutionRecord{}, false, r.beginErr
	}
	r.begun = append(r.begun, rec)
	if r.existing != nil {
		return *r.existing, false, nil
	}
	return rec, true, nil
}

func (r *records) FinishExecution(_ context.Context, tenant, key string, result json.RawMessage, at time.Time) error {
	r.finished = append(r.finished, tenant+"/"+key+" at "+at.Format(time.TimeOnly)+": "+string(result))
	return r.finishErr
}

// A write runs once whoever asks again: an earlier result is given back,
// an unfinished earlier attempt is asked again only of a tool that
// dedupes by key and is otherwise closed as unknown, and nothing runs
// where the store cannot record it.
func TestOnce(t *testing.T) {
	turnAt := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	finishAt := turnAt.Add(3 * time.Second)
	ok := tool.Result{Status: tool.StatusOK, Data: json.RawMessage(`{"id":"R-1"}`), ObservedAt: turnAt}
	okJSON, _ := json.Marshal(ok)
	unknown := tool.Result{Status: tool.StatusError, Error: StatusOutcomeUnknown, ObservedAt: turnAt}
	unknownJSON, _ := json.Marshal(unknown)
	done := &store.ExecutionRecord{State: store.ExecDone, Result: json.RawMessage(`{"status":"ok","data":{"id":"R-0"}}`)}
	corrupt := &store.ExecutionRecord{State: store.ExecDone, Result: json.RawMessage(`{"status":`)}
	started := &store.ExecutionRecord{State: store.ExecStarted}
	finishedOK := []string{"t/k1 at 10:00:03: " + string(okJSON)}
	cases := []struct {
		name       string
		store      records
		idempotent bool
		calls      int
		want       Ran
		finished   []string
	}{
		{"a first attempt", records{}, false, 1, Ran{Result: ok, Status: "ok", Attempted: true}, finishedOK},
		{"done before", records{existing: done}, false, 0,
			Ran{Result: tool.Result{Status: tool.StatusOK, Data: json.RawMessage(`{"id":"R-0"}`)}, Status: "ok", Reused: true}, nil},
		{"done before, idempotent", records{existing: done}, true, 0,
			Ran{Result: tool.Result{Status: tool.StatusOK, Data: json.RawMessage(`{"id":"R-0"}`)}, Status: "ok", Reused: true}, nil},
		{"begun, never finished", records{existing: started}, false, 0,
			Ran{Result: unknown, Status: StatusOutcomeUnknown, Attempted: true}, []string{"t/k1 at 10:00:03: " + string(unknownJSON)}},
		{"begun, never finished, the tool dedupes", records{existing: started}, true, 1, Ran{Result: ok, Status: "ok", Attempted: true}, finishedOK},
		{"done with a result unread", records{existing: corrupt}, false, 0, Ran{Result: unknown, Status: StatusOutcomeUnknown, Attempted: true}, nil},
		{"done with a result unread, the tool dedupes", records{existing: corrupt}, true, 1, Ran{Result: ok, Status: "ok", Attempted: true}, finishedOK},
		{"the store down", records{beginErr: errors.New("connection refused")}, false, 0, Ran{
			Result: tool.Result{Status: tool.StatusError, Error: "could not record the execution: the store is unavailable", ObservedAt: turnAt}, Status: "error"}, nil},
	}
	for _, c := range cases {
		calls := 0
		rec := store.ExecutionRecord{Tenant: "t", IdempotencyKey: "k1", Tool: "refund", State: store.ExecStarted, StartedAt: turnAt}
		got, err := settled(Once(context.Background(), &c.store, Write{Record: rec, Idempotent: c.idempotent, Now: func() time.Time { return finishAt }},
			func() tool.Result { calls++; return ok }))
		if err != nil {
			t.Errorf("%s: finished with %v", c.name, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Once = %+v, want %+v", c.name, got, c.want)
		}
		if calls != c.calls {
			t.Errorf("%s: the tool was called %d times, want %d", c.name, calls, c.calls)
		}
		if !reflect.DeepEqual(c.store.finished, c.finished) {
			t.Errorf("%s: finished %q, want %q", c.name, c.store.finished, c.finished)
		}
		if c.store.beginErr == nil && (len(c.store.begun) != 1 || !reflect.DeepEqual(c.store.begun[0], rec)) {
			t.Errorf("%s: begun %+v, want the record once", c.name, c.store.begun)
		}
	}
}

// A record that cannot be finished leaves the result as it is and says
// why, for the log.
func TestOnceFinishFails(t *testing.T) {
	st := &records{finishErr: errors.New("disk full")}
	ok := tool.Result{Status: tool.StatusOK}
	got, err := settled(Once(context.Background(), st, Write{Record: store.ExecutionRecord{Tenant: "t", IdempotencyKey: "k"}, Now: time.Now},
		func() tool.Result { return ok }))
	if err == nil || err.Error() != "finish execution record: disk full" || got.Status != "ok" || !got.Attempted {
		t.Errorf("Once = %+v, %v; want the result with the finish error", got, err)
	}
	st = &records{existing: &store.ExecutionRecord{State: store.ExecStarted}, finishErr: errors.New("disk full")}
	got, err = settled(Once(context.Background(), st, Write{Record: store.ExecutionRecord{Tenant: "t", IdempotencyKey: "k"}, Now: time.Now},
		func() tool.Result { t.Error("the tool was called again"); return ok }))
	if err == nil || err.Error() != "close execution record as unknown: disk full" || got.Status != StatusOutcomeUnknown {
		t.Errorf("closing as unknown: Once = %+v, %v; want unknown with the finish error", got, err)
	}
}

// Once returns while the record is being finished: the caller's next step
// (a turn's model call) runs alongside the finish, and Finished waits
// for it.
func TestOnceReturnsBeforeTheFinish(t *testing.T) {
	st := &slowFinish{release: make(chan struct{})}
	ran := Once(context.Background(), st, Write{Record: store.ExecutionRecord{Tenant: "t", IdempotencyKey: "k"}, Now: time.Now},
		func() tool.Result { return tool.Result{Status: tool.StatusOK} })
	if ran.Status != "ok" || st.done.Load() {
		t.Fatalf("Once = %+v with the finish done %v: want the result before the finish", ran, st.done.Load())
	}
	close(st.release)
	if err := ran.Finished(); err != nil || !st.done.Load() {
		t.Fatalf("Finished = %v with the finish done %v: want it waited for", err, st.done.Load())
	}
	if err := (Ran{}).Finished(); err != nil {
		t.Fatalf("nothing to finish: Finished = %v", err)
	}
}

// slowFinish finishes a record once released.
type slowFinish struct {
	records
	release chan struct{}
	done    atomic.Bool
}

func (s *slowFinish) FinishExecution(ctx context.Context, tenant, key string, result json.RawMessage, at time.Time) error {
	<-s.release
	s.done.Store(true)
	return nil
}

// settled is ran once its record's finish ended, and the finish's error.
func settled(ran Ran) (Ran, error) {
	err := ran.Finished()
	ran.finishing = nil
	return ran, err
}
