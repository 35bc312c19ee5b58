// Command arbiter-bench measures the CPU cost of an arbiter turn as a
// multiple of an in-repo baseline (plain net/http + encoding/json, no
// persistence) doing the same turn with the same model requests, in the
// same run: message over loopback HTTP -> fake OpenAI-compatible model ->
// read tool on the task board -> reply (single); and the agent turn of a
// loop assistant, model -> tool -> model over native tool calling, against
// a baseline making the same two calls (loop); and the engine as a library
// (server.Build, Engine.HandleTurn in process, no HTTP API) on a loop turn
// whose tool is a write, model -> create_task -> model, against a baseline
// making the same two calls in process (library). Each is measured with
// one session at a time and with 64 at once.
//
// The fake model runs in a child process (this program, started with
// -serve-model), so the CPU and allocations counted — this process's —
// are the engine's or the baseline's side only: its HTTP API, the turn,
// the model client, and the load driver both share. Rounds of baseline and
// engine turns alternate so machine noise hits both alike. The last line
// printed is
//
//	single_ratio=… loop_ratio=… single_ratio_64=… loop_ratio_64=… scaling_64=… allocs_single=… allocs_loop=… … library_ratio=… library_ratio_64=… library_scaling_64=… …
//
// ratios being the engine's CPU per turn over the baseline's (one session;
// _64: 64 sessions), scaling_64 the engine's single turns per second at 64
// sessions over those at one (library_scaling_64 the library turns'),
// allocs the engine's allocations per turn.
//
// The fake model answers at once unless -model-latency says otherwise:
// with no latency to hide, a one-session turn keeps a core busy, so what
// 64 sessions gain depends on the machine's cores (baseline_scaling_64
// shows how much); a real model's latency makes the gain far larger for
// the engine and the baseline alike.
//
// With -stores it instead compares the embedded store with Redis (on
// 127.0.0.1:6379) under 64 concurrent conversations; with -retention N the
// latency of turns while a journal of N old turns is pruned.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/arbiterhq/arbiter/internal/bench"
	"github.com/arbiterhq/arbiter/llm/llmtest"
)

// sessionCounts are the rows' numbers of sessions at once.
var sessionCounts = []int{1, 64}

func main() {
	turns := flag.Int("turns", 4000, "turns of each kind and number of sessions")
	rounds := flag.Int("rounds", 8, "alternating rounds the turns are split into")
	stores := flag.Bool("stores", false, "compare the embedded store, Redis, and Redis with the PostgreSQL journal under concurrent load")
	redisURL := flag.String("redis", "redis://127.0.0.1:6379/0", "Redis for -stores")
	pgURL := flag.String("postgres", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable&connect_timeout=5", "PostgreSQL for -stores (empty: leave it out)")
	retention := flag.Int("retention", 0, "compare turn latency with and without pruning a journal of this many old turns")
	serveModel := flag.String("serve-model", "", "serve the fake model (single, loop or write) until stdin ends; the benchmark starts this itself")
	modelLatency := flag.Duration("model-latency", 0, "how long the fake model takes to answer each request (0: at once)")
	flag.Parse()
	var err error
	switch {
	case *serveModel != "":
		err = bench.ServeModel(bench.ModelKind(*serveModel), *modelLatency, os.Stdin, os.Stdout)
	case *stores:
		err = compareStores(*redisURL, *pgURL)
	case *retention > 0:
		err = compareRetention(*retention)
	default:
		err = run(*turns, *rounds, *modelLatency)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "arbiter-bench:", err)
		os.Exit(1)
	}
}

type tally struct {
	cpu    time.Duration
	wall   time.Duration
	allocs uint64
	turns  int
	// writes and txs are the engine's store writes and the transactions
	// they took (see sqlitestore.GroupStats); zero for the baseline.
	writes, txs int64
}

func (t tally) writesPerTx() float64 { return float64(t.writes) / max(float64(t.txs), 1) }

func (t tally) cpuPerTurn() float64 { return float64(t.cpu) / float64(t.turns) }
func (t tally) perSecond() float64  { return float64(t.turns) / t.wall.Seconds() }

// row is one kind of turn at one number of sessions.
type row struct {
	name      string
	sessions  int
	eng, base tally
}

func (r row) ratio() float64 { return r.eng.cpuPerTurn() / r.base.cpuPerTurn() }

func run(turns, rounds int, latency time.Duration) error {
	dir, err := os.MkdirTemp("", "arbiter-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var rows []row
	for _, kind := range []string{"single", "loop", "library"} {
		r, err := compare(kind, filepath.Join(dir, kind), turns, rounds, latency)
		if err != nil {
			return err
		}
		rows = append(rows, r...)
	}
	for _, r := range rows {
		for _, side := range []struct {
			name string
			t    tally
		}{{"baseline", r.base}, {"engine", r.eng}} {
			tx := ""
			if side.t.txs > 0 {
				tx = fmt.Sprintf("  %4.1f writes/transaction", side.t.writesPerTx())
			}
			fmt.Printf("%-6s %2d sessions  %-9s %6d turns  cpu %8.1f µs/turn  allocs %6d/turn  %7.0f turns/s%s\n", r.name, r.sessions, side.name,
				side.t.turns, side.t.cpuPerTurn()/1e3, side.t.allocs/uint64(side.t.turns), side.t.perSecond(), tx)
		}
	}
	single1, single64, loop1, loop64, lib1, lib64 := rows[0], rows[1], rows[2], rows[3], rows[4], rows[5]
	// Two figures close the HTTP rows' part: what 64 sessions gain the
	// baseline on this machine at all, and how many writes share a
	// transaction then. The library rows' part follows.
	fmt.Printf("single_ratio=%.2f loop_ratio=%.2f single_ratio_64=%.2f loop_ratio_64=%.2f scaling_64=%.2f allocs_single=%d allocs_loop=%d baseline_scaling_64=%.2f writes_per_transaction_64=%.1f",
		single1.ratio(), loop1.ratio(), single64.ratio(), loop64.ratio(), single64.eng.perSecond()/single1.eng.perSecond(),
		single1.eng.allocs/uint64(single1.eng.turns), loop1.eng.allocs/uint64(loop1.eng.turns),
		single64.base.perSecond()/single1.base.perSecond(), single64.eng.writesPerTx())
	fmt.Printf(" library_ratio=%.2f library_ratio_64=%.2f library_scaling_64=%.2f library_baseline_scaling_64=%.2f allocs_library=%d library_writes_per_transaction_64=%.1f\n",
		lib1.ratio(), lib64.ratio(), lib64.eng.perSecond()/lib1.eng.perSecond(), lib64.base.perSecond()/lib1.base.perSecond(),
		lib1.eng.allocs/uint64(lib1.eng.turns), lib64.eng.writesPerTx())
	return nil
}

// compare measures one kind of turn on the engine and on its baseline,
// each calling its own fake model process, in alternating rounds, at every
// number of sessions.
func compare(kind, dir string, turns, rounds int, latency time.Duration) ([]row, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	modelKind := bench.ModelKind(kind)
	if kind == "library" {
		modelKind = bench.ModelWrite
	}
	modelArgs := []string{"-serve-model", string(modelKind), "-model-latency", latency.String()}
	model, err := bench.StartModel(exe, modelArgs...)
	if err != nil {
		return nil, err
	}
	engine, err := newEngine(kind, dir, model)
	if err != nil {
		return nil, err
	}
	defer engine.Close()
	// Warm up the engine first: it also records the prompt the baseline
	// will send, so both put the same bytes on the wire.
	for i := range 4 * bench.Conversations {
		if err := engine.Turn(i); err != nil {
			return nil, err
		}
	}
	like, err := engine.LastRequest()
	if err != nil {
		return nil, err
	}
	baseModel, err := bench.StartModel(exe, modelArgs...)
	if err != nil {
		return nil, err
	}
	baseline := newBaseline(kind, like, baseModel)
	defer baseline.Close()
	for i := range 4 * bench.Conversations {
		if err := baseline.Turn(i); err != nil {
			return nil, err
		}
	}

	per := max(turns/rounds, 1)
	var out []row
	for _, sessions := range sessionCounts {
		r := row{name: kind, sessions: sessions}
		for n := range rounds {
			for _, w := range []struct {
				load bench.Workload
				t    *tally
			}{{baseline, &r.base}, {engine, &r.eng}} {
				if err := measure(w.load, w.t, n*per, per, sessions); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// engine is a workload of the engine that records its model's requests.
type engine interface {
	bench.Workload
	LastRequest() (*llmtest.ChatRequest, error)
}

// newEngine is the engine of a kind of turn: over the HTTP API (single,
// loop), or as a library (library); it closes model.
func newEngine(kind, dir string, model bench.Model) (engine, error) {
	if kind == "library" {
		return bench.NewLibrary(dir, model)
	}
	e, err := bench.NewEngineWith(dir, kind == "loop", model)
	if err != nil {
		model.Close()
		return nil, err
	}
	return e, nil
}

// newBaseline is the baseline of a kind of turn, sending what like holds.
func newBaseline(kind string, like *llmtest.ChatRequest, model bench.Model) bench.Workload {
	switch kind {
	case "loop":
		return bench.NewLoopBaselineWith(like, model)
	case "library":
		return bench.NewLibraryBaseline(like, model)
	}
	return bench.NewBaselineWith(like, model)
}

// measure runs n turns from `sessions` clients at once, each its own
// conversation, and adds the process CPU time (user + system), wall time
// and heap allocations they took to t.
func measure(w bench.Workload, t *tally, from, n, sessions int) error {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs := ms.Mallocs
	counter, counts := w.(interface{ Transactions() (int64, int64) })
	var writes, txs int64
	if counts {
		writes, txs = counter.Transactions()
	}
	cpu, start := cpuTime(), time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Turn i's conversation is i mod bench.Conversations: with as
			// many sessions, each stays in a conversation of its own.
			base := from - from%bench.Conversations
			for k := 0; k*sessions+s < n; k++ {
				if err := w.Turn(base + k*sessions + s); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	t.wall += time.Since(start)
	t.cpu += cpuTime() - cpu
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	runtime.ReadMemStats(&ms)
	t.allocs += ms.Mallocs - mallocs
	t.turns += n
	if counts {
		w2, tx2 := counter.Transactions()
		t.writes += w2 - writes
		t.txs += tx2 - txs
	}
	return nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
