package pgjournal

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// benchJournal opens a journal on a fresh schema whose connections count
// their writes (round trips) into writes.
func benchJournal(b *testing.B, maxConns int32, writes *atomic.Int64) *Journal {
	b.Helper()
	cfg := testConfig(b)
	cfg.MaxConns = maxConns
	countWrites(cfg, writes)
	return openConfig(b, cfg, freshSchema(b))
}

// BenchmarkAppendTurn appends turns of two model calls and two tool calls,
// one after another on one connection, and reports round trips per turn.
func BenchmarkAppendTurn(b *testing.B) {
	var writes atomic.Int64
	j := benchJournal(b, 1, &writes)
	ctx := b.Context()
	rec := sampleTurn("t1", "warm-up", testNow)
	if err := j.AppendTurn(ctx, rec); err != nil { // prepares the statements
		b.Fatal(err)
	}
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = fmt.Sprintf("turn-%d", i)
	}
	b.ReportAllocs()
	writes.Store(0)
	b.ResetTimer()
	for i := range b.N {
		rec.TurnID = ids[i]
		if err := j.AppendTurn(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(writes.Load())/float64(b.N), "roundtrips/op")
}

// BenchmarkAppendTurnParallel appends from many goroutines over a pool of
// eight connections.
func BenchmarkAppendTurnParallel(b *testing.B) {
	var writes atomic.Int64
	j := benchJournal(b, 8, &writes)
	ctx := b.Context()
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rec := sampleTurn("t1", "", testNow)
		for pb.Next() {
			rec.TurnID = fmt.Sprintf("turn-%d", next.Add(1))
			if err := j.AppendTurn(ctx, rec); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkGetTurn reads back a turn of two model calls and two tool calls.
func BenchmarkGetTurn(b *testing.B) {
	var writes atomic.Int64
	j := benchJournal(b, 1, &writes)
	ctx := b.Context()
	if err := j.AppendTurn(ctx, sampleTurn("t1", "turn-1", testNow)); err != nil {
		b.Fatal(err)
	}
	if _, err := j.GetTurn(ctx, "t1", "turn-1"); err != nil { // prepares the statements
		b.Fatal(err)
	}
	b.ReportAllocs()
	writes.Store(0)
	b.ResetTimer()
	for range b.N {
		if _, err := j.GetTurn(ctx, "t1", "turn-1"); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(writes.Load())/float64(b.N), "roundtrips/op")
}
