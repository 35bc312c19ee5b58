// Command arbiter-bench measures the CPU cost of one arbiter turn as a
// multiple of an in-repo baseline (plain net/http + encoding/json, no
// persistence) doing the same turn in the same process and the same run:
// message over loopback HTTP -> fake OpenAI-compatible model -> read tool
// on the task board -> reply (single); and the agent turn of a loop
// assistant, model -> tool -> model over native tool calling, against a
// baseline doing the same two calls (loop).
//
// Rounds of baseline and engine turns alternate so machine noise hits both
// alike. The last two lines printed are
//
//	loop_cost_ratio=<engine CPU per loop turn / baseline's> loop_allocs_per_turn=<engine allocations per loop turn>
//	turn_cost_ratio=<engine CPU per turn / baseline CPU per turn> allocs_per_turn=<engine allocations per turn>
//
// With -stores it instead compares the embedded store with Redis (on
// 127.0.0.1:6379) under 64 concurrent conversations, in one run, and
// prints turns per second of each and the Redis commands one turn costs.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/arbiterhq/arbiter/internal/bench"
	"github.com/arbiterhq/arbiter/llm/llmtest"
)

func main() {
	turns := flag.Int("turns", 4000, "turns of each kind")
	rounds := flag.Int("rounds", 8, "alternating rounds the turns are split into")
	stores := flag.Bool("stores", false, "compare the embedded store with Redis under concurrent load")
	redisURL := flag.String("redis", "redis://127.0.0.1:6379/0", "Redis for -stores")
	retention := flag.Int("retention", 0, "compare turn latency with and without pruning a journal of this many old turns")
	flag.Parse()
	var err error
	switch {
	case *stores:
		err = compareStores(*redisURL)
	case *retention > 0:
		err = compareRetention(*retention)
	default:
		err = run(*turns, *rounds)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "arbiter-bench:", err)
		os.Exit(1)
	}
}

type tally struct {
	cpu    time.Duration
	allocs uint64
	turns  int
}

func run(turns, rounds int) error {
	dir, err := os.MkdirTemp("", "arbiter-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	loopRatio, loopAllocs, err := compare("loop", filepath.Join(dir, "loop"), bench.NewLoopEngine, bench.NewLoopBaseline, turns, rounds)
	if err != nil {
		return err
	}
	ratio, allocs, err := compare("single", filepath.Join(dir, "single"), bench.NewEngine, bench.NewBaseline, turns, rounds)
	if err != nil {
		return err
	}
	fmt.Printf("loop_cost_ratio=%.2f loop_allocs_per_turn=%d\n", loopRatio, loopAllocs)
	fmt.Printf("turn_cost_ratio=%.2f allocs_per_turn=%d\n", ratio, allocs)
	return nil
}

// compare measures one kind of turn on the engine and on its baseline, in
// alternating rounds, and returns the engine's CPU per turn as a multiple
// of the baseline's and its allocations per turn.
func compare(name, dir string, newEngine func(string) (*bench.Engine, error), newBaseline func(*llmtest.ChatRequest) *bench.Baseline, turns, rounds int) (float64, uint64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, 0, err
	}
	engine, err := newEngine(dir)
	if err != nil {
		return 0, 0, err
	}
	defer engine.Close()
	// Warm up the engine first: it also records the prompt the baseline
	// will send, so both put the same bytes on the wire.
	for i := range 200 {
		if err := engine.Turn(i); err != nil {
			return 0, 0, err
		}
	}
	baseline := newBaseline(engine.LastRequest())
	defer baseline.Close()
	for i := range 200 {
		if err := baseline.Turn(i); err != nil {
			return 0, 0, err
		}
	}

	per := max(turns/rounds, 1)
	var eng, base tally
	for r := range rounds {
		for _, w := range []struct {
			load bench.Workload
			t    *tally
		}{{baseline, &base}, {engine, &eng}} {
			if err := measure(w.load, w.t, r*per, per); err != nil {
				return 0, 0, err
			}
		}
	}
	report := func(kind string, t tally) {
		fmt.Printf("%-6s %-9s %6d turns  cpu %8.1f µs/turn  allocs %6d/turn\n", name, kind, t.turns,
			float64(t.cpu.Microseconds())/float64(t.turns), t.allocs/uint64(t.turns))
	}
	report("baseline", base)
	report("engine", eng)
	ratio := (float64(eng.cpu) / float64(eng.turns)) / (float64(base.cpu) / float64(base.turns))
	return ratio, eng.allocs / uint64(eng.turns), nil
}

// measure runs n turns and adds the process CPU time (user + system) and
// heap allocations they took to t. Everything in the process counts: the
// client, the server under test, the fake model and the garbage collector.
func measure(w bench.Workload, t *tally, from, n int) error {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs := ms.Mallocs
	cpu := cpuTime()
	for i := from; i < from+n; i++ {
		if err := w.Turn(i); err != nil {
			return err
		}
	}
	t.cpu += cpuTime() - cpu
	runtime.ReadMemStats(&ms)
	t.allocs += ms.Mallocs - mallocs
	t.turns += n
	return nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
