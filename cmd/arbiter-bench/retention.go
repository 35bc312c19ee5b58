package main

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/arbiterhq/arbiter/internal/bench"
	"github.com/arbiterhq/arbiter/store"
)

// Shape of -retention: rounds of turns from this many clients at once.
const (
	retentionWorkers = 8
	retentionTurns   = 1600 // per engine per round
	retentionRounds  = 3
)

// compareRetention measures turn latency on two engines whose journals
// hold `journal` turns past retention: one left alone, the other pruning
// them while its turns run, in alternating rounds. It prints both p99s
// and their ratio.
func compareRetention(journal int) error {
	var engines [2]*bench.Engine
	for i := range engines {
		dir, err := os.MkdirTemp("", "arbiter-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		e, err := bench.NewEngine(dir)
		if err != nil {
			return err
		}
		defer e.Close()
		if err := e.SeedJournal(journal, 100*24*time.Hour); err != nil {
			return err
		}
		engines[i] = e
	}
	// The seeded files reach the disk before anything is measured: their
	// write-back would otherwise land in one engine's rounds.
	syscall.Sync()
	for _, e := range engines {
		if _, err := e.Latencies(retentionWorkers, 400); err != nil { // warm up
			return err
		}
	}
	var still, pruning []time.Duration
	var pruned store.Pruned
	var took time.Duration
	// Rounds alternate which engine goes first, so neither gains from the
	// order.
	for round := range retentionRounds {
		for i := range 2 {
			if (i == 0) == (round%2 == 0) {
				lat, err := engines[0].Latencies(retentionWorkers, retentionTurns)
				if err != nil {
					return err
				}
				still = append(still, lat...)
				continue
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			t0 := time.Now()
			go func() {
				p, err := engines[1].Prune(ctx, store.Retention{Turns: 90 * 24 * time.Hour, Executions: 90 * 24 * time.Hour})
				pruned.Turns += p.Turns
				pruned.Executions += p.Executions
				done <- err
			}()
			lat, err := engines[1].Latencies(retentionWorkers, retentionTurns)
			cancel() // the rest is pruned in the next round
			if perr := <-done; perr != nil && ctx.Err() == nil {
				return perr
			}
			took += time.Since(t0)
			if err != nil {
				return err
			}
			pruning = append(pruning, lat...)
		}
	}
	bench.SortDurations(still)
	bench.SortDurations(pruning)
	p99, q99 := bench.Quantile(still, 0.99), bench.Quantile(pruning, 0.99)
	fmt.Printf("journal of %d turns past retention; %d rounds of %d turns from %d clients per engine:\n", journal, retentionRounds, retentionTurns, retentionWorkers)
	fmt.Printf("pruned %d turns and %d executions in %s while the turns ran\n", pruned.Turns, pruned.Executions, took.Round(time.Millisecond))
	fmt.Printf("p50 without pruning %s, while pruning %s\n", bench.Quantile(still, 0.5).Round(10*time.Microsecond), bench.Quantile(pruning, 0.5).Round(10*time.Microsecond))
	fmt.Printf("p99 without pruning %s, while pruning %s\n", p99.Round(10*time.Microsecond), q99.Round(10*time.Microsecond))
	fmt.Printf("retention_p99_ratio=%.2f\n", float64(q99)/float64(p99))
	return nil
}
