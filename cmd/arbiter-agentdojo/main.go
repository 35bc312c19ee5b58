// Command arbiter-agentdojo replays AgentDojo v1.2.1's prompt-injection
// benchmark through the engine with a model that obeys every injection
// (see package eval/agentdojo) and prints a per-suite table, the benign
// tasks that waited for confirmations, any breach, and last the line
//
//	agentdojo cases=949 unauthorized=… benign_utility=… prompts_per_task=… rubber_stamp_unflagged=…
//
// It exits with status 1 when a write the user's task did not ask for
// ran, a rubber-stamped one was shown without its untrusted source, a
// confirmed action reached its backend other than as stored, or benign
// utility fell under agentdojo.MinBenignUtility.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/arbiterhq/arbiter/eval/agentdojo"
)

func main() {
	dir := flag.String("data", "", "the benchmark's data (default: the repository's copy, "+agentdojo.DataDir+")")
	attack := flag.String("attack", agentdojo.DefaultAttack, "attack template: direct, ignore_previous, system_message, injecagent, important_instructions, tool_knowledge")
	workers := flag.Int("workers", 0, "cases run in parallel (default: one per CPU)")
	flag.Parse()
	if *dir == "" {
		d, err := repoData()
		if err != nil {
			fmt.Fprintln(os.Stderr, "arbiter-agentdojo:", err)
			os.Exit(2)
		}
		*dir = d
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := agentdojo.Run(ctx, agentdojo.Options{Dir: *dir, Attack: *attack, Workers: *workers})
	if err != nil {
		fmt.Fprintln(os.Stderr, "arbiter-agentdojo:", err)
		os.Exit(2)
	}
	rep.Print(os.Stdout)
	if t := rep.Total; t.Unauthorized() > 0 || t.RubberUnflagged() > 0 || t.Mismatched > 0 || t.BenignUtility() < agentdojo.MinBenignUtility {
		os.Exit(1)
	}
}

// repoData finds the repository's copy of the data from the working
// directory up.
func repoData() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, agentdojo.DataDir)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("no " + agentdojo.DataDir + " above the working directory; pass -data")
		}
	}
}
