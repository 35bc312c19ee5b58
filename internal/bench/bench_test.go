package bench

import (
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The Go benchmarks of one turn; `go run ./cmd/arbiter-bench` prints the
// ratio between them from one interleaved run.

func BenchmarkEngineTurn(b *testing.B) {
	e := warmEngine(b, 1)
	defer e.Close()
	benchTurns(b, e.Turn)
}

// BenchmarkEngineTurn64 runs turns from Conversations clients at once,
// each in its own conversation: the profile of a loaded server.
func BenchmarkEngineTurn64(b *testing.B) {
	e := warmEngine(b, Conversations)
	defer e.Close()
	benchParallel(b, e.Turn)
}

func BenchmarkBaselineTurn(b *testing.B) {
	e := warmEngine(b, Conversations*8)
	like, err := e.LastRequest()
	if err != nil {
		b.Fatal(err)
	}
	base := NewBaseline(like)
	e.Close()
	defer base.Close()
	benchTurns(b, base.Turn)
}

// BenchmarkLibraryTurn64 is the library turn (the engine in process, a
// write tool) from Conversations goroutines at once.
func BenchmarkLibraryTurn64(b *testing.B) {
	l := warmLibrary(b)
	defer l.Close()
	benchParallel(b, l.Turn)
}

// warmEngine starts an engine and runs its turns 0 to n-1, untimed.
func warmEngine(b *testing.B, n int) *Engine {
	e, err := NewEngine(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if err := e.Turn(i); err != nil {
			e.Close()
			b.Fatal(err)
		}
	}
	return e
}

// warmLibrary starts a library engine calling a write-tool model and runs
// its first turn.
func warmLibrary(tb testing.TB) *Library {
	l, err := NewLibrary(tb.TempDir(), newInProcess(ModelWrite))
	if err != nil {
		tb.Fatal(err)
	}
	if err := l.Turn(0); err != nil {
		l.Close()
		tb.Fatal(err)
	}
	return l
}

// benchTurns times b.N calls of turn, numbered from 0; what the benchmark
// did before is not timed.
func benchTurns(b *testing.B, turn func(i int) error) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := turn(i); err != nil {
			b.Fatal(err)
		}
	}
}

// benchParallel times calls of turn from Conversations goroutines at once,
// each goroutine's numbers in a conversation of its own (the same number
// modulo Conversations).
func benchParallel(b *testing.B, turn func(i int) error) {
	var next atomic.Int64
	b.SetParallelism(max(1, Conversations/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		s := int(next.Add(1) - 1)
		for k := 0; pb.Next(); k++ {
			if err := turn(s + k*Conversations); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// The library baseline runs the same write turn as the library engine.
func TestLibraryTurns(t *testing.T) {
	l := warmLibrary(t)
	defer l.Close()
	like, err := l.LastRequest()
	if err != nil || like == nil {
		t.Fatalf("no request recorded: %v", err)
	}
	base := NewLibraryBaseline(like, newInProcess(ModelWrite))
	defer base.Close()
	if err := base.Turn(0); err != nil {
		t.Fatal(err)
	}
	if w, txs := l.Transactions(); w < 3 || txs == 0 {
		t.Errorf("the write turn made %d writes in %d transactions: no execution record?", w, txs)
	}
}

// The fake model keeps a latency it is given: no answer comes sooner.
func TestModelLatency(t *testing.T) {
	const latency = 30 * time.Millisecond
	m := newInProcessWith(ModelSingle, latency)
	defer m.Close()
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	start := time.Now()
	resp, err := http.Post(m.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != http.StatusOK || took < latency {
		t.Errorf("status %d after %v, want 200 after at least %v", resp.StatusCode, took, latency)
	}
}
