package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
)

// SeedJournal writes n journaled turns that started at least age ago, each
// with a trace of the size real turns have (~2.5 KB), a model call and a
// tool call, and a finished execution record for every tenth.
func (e *Engine) SeedJournal(n int, age time.Duration) error {
	st, ok := e.app.State.(*sqlitestore.Store)
	if !ok {
		return errors.New("the journal is not on the embedded store")
	}
	trace := `{"steps":"` + strings.Repeat("x", 2400) + `"}`
	start := time.Now().Add(-age).UnixNano()
	const perTx = 5000
	for from := 0; from < n; from += perTx {
		tx, err := st.DB().Begin()
		if err != nil {
			return err
		}
		for i := from; i < min(n, from+perTx); i++ {
			id := "old-" + strconv.Itoa(i)
			at := start - int64(n-i)*int64(time.Second)
			if _, err := tx.Exec(`INSERT INTO turns (turn_id, tenant, chat, user_id, route, status, started_at, duration_ms, trace)
				VALUES (?, 'bench', 'c', 'u', 'model', 'ok', ?, 40, ?)`, id, at, trace); err != nil {
				tx.Rollback()
				return err
			}
			if _, err := tx.Exec(`INSERT INTO llm_calls (turn_id, seq, tenant, provider, model, operation, strategy, attempt, input_tokens,
				cached_tokens, output_tokens, cost_usd, duration_ms, status, error, note, at)
				VALUES (?, 0, 'bench', 'primary', 'm', 'decide', 'balanced', 'first', 900, 0, 40, 0.0001, 30, 'ok', '', '', ?)`, id, at); err != nil {
				tx.Rollback()
				return err
			}
			if _, err := tx.Exec(`INSERT INTO tool_calls (turn_id, seq, tenant, tool, idempotency_key, status, error, duration_ms, at)
				VALUES (?, 0, 'bench', 'list_my_tasks', '', 'ok', '', 2, ?)`, id, at); err != nil {
				tx.Rollback()
				return err
			}
			if i%10 == 0 {
				if _, err := tx.Exec(`INSERT INTO executions (tenant, idempotency_key, tool, args_hash, turn_id, state, started_at, finished_at)
					VALUES ('bench', ?, 'create_task', 'h', ?, 'done', ?, ?)`, "k-"+id, id, at, at); err != nil {
					tx.Rollback()
					return err
				}
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// Prune runs the state store's retention once.
func (e *Engine) Prune(ctx context.Context, r store.Retention) (store.Pruned, error) {
	p, ok := e.app.State.(store.Pruner)
	if !ok {
		return store.Pruned{}, errors.New("the store does not prune")
	}
	return p.Prune(ctx, time.Now(), r)
}

// Latencies runs n turns from workers clients at once and returns each
// turn's time, sorted.
func (e *Engine) Latencies(workers, n int) ([]time.Duration, error) {
	var (
		mu  sync.Mutex
		out = make([]time.Duration, 0, n)
		wg  sync.WaitGroup
	)
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conv := "lat-" + strconv.Itoa(w)
			for range n / workers {
				t0 := time.Now()
				if _, err := post(e.client, e.api.URL+"/v1/messages", `{"conversation_id":"`+conv+`","text":"Что у меня по задачам?"}`); err != nil {
					errs <- fmt.Errorf("%s: %w", conv, err)
					return
				}
				d := time.Since(t0)
				mu.Lock()
				out = append(out, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// SortDurations sorts d in place.
func SortDurations(d []time.Duration) { slices.Sort(d) }

// Quantile is the q-th quantile of sorted durations.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}
