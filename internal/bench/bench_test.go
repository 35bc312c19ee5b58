package bench

import "testing"

// The Go benchmarks of one turn; `go run ./cmd/arbiter-bench` prints the
// ratio between them from one interleaved run.

func BenchmarkEngineTurn(b *testing.B) {
	e, err := NewEngine(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	if err := e.Turn(0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := e.Turn(i); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBaselineTurn(b *testing.B) {
	e, err := NewEngine(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for i := range Conversations * 8 {
		if err := e.Turn(i); err != nil {
			b.Fatal(err)
		}
	}
	like, err := e.LastRequest()
	if err != nil {
		b.Fatal(err)
	}
	base := NewBaseline(like)
	e.Close()
	defer base.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := base.Turn(i); err != nil {
			b.Fatal(err)
		}
	}
}
