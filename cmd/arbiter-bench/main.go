// Command arbiter-bench measures the CPU cost of one arbiter turn as a
// multiple of an in-repo baseline (plain net/http + encoding/json, no
// persistence) doing the same turn in the same process and the same run:
// message over loopback HTTP -> fake OpenAI-compatible model -> read tool
// on the task board -> reply.
//
// Rounds of baseline and engine turns alternate so machine noise hits both
// alike. The last line printed is
//
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
	"runtime"
	"syscall"
	"time"

	"github.com/arbiterhq/arbiter/internal/bench"
)

func main() {
	turns := flag.Int("turns", 4000, "turns of each kind")
	rounds := flag.Int("rounds", 8, "alternating rounds the turns are split into")
	stores := flag.Bool("stores", false, "compare the embedded store with Redis under concurrent load")
	redisURL := flag.String("redis", "redis://127.0.0.1:6379/0", "Redis for -stores")
	flag.Parse()
	var err error
	if *stores {
		err = compareStores(*redisURL)
	} else {
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
	engine, err := bench.NewEngine(dir)
	if err != nil {
		return err
	}
	defer engine.Close()
	// Warm up the engine first: it also records the prompt the baseline
	// will send, so both put the same bytes on the wire.
	for i := range 200 {
		if err := engine.Turn(i); err != nil {
			return err
		}
	}
	baseline := bench.NewBaseline(engine.LastRequest())
	defer baseline.Close()
	for i := range 200 {
		if err := baseline.Turn(i); err != nil {
			return err
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
				return err
			}
		}
	}
	report := func(name string, t tally) {
		fmt.Printf("%-9s %6d turns  cpu %8.1f µs/turn  allocs %6d/turn\n", name, t.turns,
			float64(t.cpu.Microseconds())/float64(t.turns), t.allocs/uint64(t.turns))
	}
	report("baseline", base)
	report("engine", eng)
	ratio := (float64(eng.cpu) / float64(eng.turns)) / (float64(base.cpu) / float64(base.turns))
	fmt.Printf("turn_cost_ratio=%.2f allocs_per_turn=%d\n", ratio, eng.allocs/uint64(eng.turns))
	return nil
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
