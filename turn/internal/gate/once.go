package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
)

// StatusOutcomeUnknown marks a write whose earlier attempt may or may not
// have happened, on a tool that cannot tell; it is not repeated.
const StatusOutcomeUnknown = "outcome_unknown"

// Executions is what Once needs of the store: its execution records
// (store.State holds them).
type Executions interface {
	BeginExecution(ctx context.Context, rec store.ExecutionRecord) (existing store.ExecutionRecord, fresh bool, err error)
	FinishExecution(ctx context.Context, tenant, idempotencyKey string, result json.RawMessage, at time.Time) error
}

// A Write is a write to run exactly once: the execution record Once
// begins (its idempotency key names the write; StartedAt is the turn's
// time), whether the tool dedupes by that key itself, and the clock the
// record is finished by.
type Write struct {
	Record     store.ExecutionRecord
	Idempotent bool
	Now        func() time.Time
}

// Ran is what Once did.
type Ran struct {
	Result tool.Result
	// Status is the result's, or StatusOutcomeUnknown.
	Status string
	// Reused: the result is the earlier attempt's; the tool was not
	// called.
	Reused bool
	// Attempted: this is an attempt the journal lists — the tool was
	// called, or an earlier attempt was closed as unknown.
	Attempted bool

	finishing <-chan error // the record's finish under way; nil when none
}

// Finished waits for the record's finish or its closing as unknown, which
// Once writes while its caller goes on with the result (a turn's next
// model call need not wait for a write it does not read), and returns why
// it failed, for the log: the result stands, the record stays open for the
// next attempt. Nil at once when there was nothing to write; call it once
// per Ran. A turn calls
// it before its commit, so that the commit is queued behind the finish and
// its reply is sent only once the record is durable, as it was before.
func (r Ran) Finished() error {
	if r.finishing == nil {
		return nil
	}
	return <-r.finishing
}

// Once runs call at most once per idempotency key, whoever asks — a
// redelivered message, a second "yes" racing the first, a retry after a
// crash. The record is written before the call and finished after it. An
// earlier attempt's result is given back; an earlier attempt that never
// finished is asked again only of a tool that dedupes by key itself (the
// answer tells the earlier outcome without a second effect), and is
// otherwise closed as unknown, never repeated nor left open. A store that
// cannot record the write runs nothing.
func Once(ctx context.Context, ex Executions, w Write, call func() tool.Result) Ran {
	existing, fresh, err := ex.BeginExecution(ctx, w.Record)
	if err != nil {
		res := tool.Result{Status: tool.StatusError, Error: "could not record the execution: the store is unavailable", ObservedAt: w.Record.StartedAt}
		return Ran{Result: res, Status: string(res.Status)}
	}
	if !fresh {
		if existing.State == store.ExecDone {
			var res tool.Result
			if json.Unmarshal(existing.Result, &res) == nil {
				return Ran{Result: res, Status: string(res.Status), Reused: true}
			}
		}
		if !w.Idempotent {
			res := tool.Result{Status: tool.StatusError, Error: StatusOutcomeUnknown, ObservedAt: w.Record.StartedAt}
			ran := Ran{Result: res, Status: StatusOutcomeUnknown, Attempted: true}
			if existing.State != store.ExecDone {
				ran.finishing = finish(ctx, ex, w, res, "close execution record as unknown")
			}
			return ran
		}
	}
	res := call()
	return Ran{Result: res, Status: string(res.Status), Attempted: true,
		finishing: finish(ctx, ex, w, res, "finish execution record")}
}

// finish writes the record's result in a goroutine of its own, at once
// (the store makes it durable as soon as it would have synchronously), and
// sends the outcome on the channel it returns.
func finish(ctx context.Context, ex Executions, w Write, res tool.Result, what string) <-chan error {
	encoded, _ := json.Marshal(res)
	at := w.Now()
	done := make(chan error, 1)
	go func() {
		err := ex.FinishExecution(ctx, w.Record.Tenant, w.Record.IdempotencyKey, encoded, at)
		if err != nil {
			err = fmt.Errorf("%s: %w", what, err)
		}
		done <- err
		close(done)
	}()
	return done
}
