package eval

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/arbiterhq/arbiter/server"
)

// Usage is the command line of Main, as the arbiter command spells it.
const Usage = `usage:
  arbiter eval -config FILE SUITE.yaml [-k N] [-replay DIR | -record DIR] [-json OUT] [-html OUT] [-traces URL]
  arbiter eval -compare A.json B.json`

// Main is the eval command over kinds (a program with tool kinds of its
// own runs its suites with them): it runs a scenario suite and returns the
// exit status — 1 when a scenario misses in any of its k runs, 2 for a
// wrong command line — or compares two runs' JSON reports.
func Main(ctx context.Context, args []string, kinds server.Kinds, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "the assistant's configuration file")
	k := fs.Int("k", 1, "runs of every scenario; a scenario passes only when all pass (pass^k)")
	replay := fs.String("replay", "", "answer the models from the recordings in this directory (one subdirectory per scenario)")
	record := fs.String("record", "", "record what the models answer into this directory (one subdirectory per scenario)")
	jsonOut := fs.String("json", "", "write the report as JSON to this file")
	htmlOut := fs.String("html", "", "write a single-file HTML report to this file")
	traces := fs.String("traces", "", "a server whose /turns/{id} pages the HTML report links to")
	compare := fs.Bool("compare", false, "compare two JSON reports: arbiter eval -compare A.json B.json")
	// Flags may come before and after the suite.
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if *compare {
		if len(positional) != 2 {
			fmt.Fprintln(stderr, Usage)
			return 2
		}
		a, err := ReadReport(positional[0])
		if err == nil {
			var b *Report
			if b, err = ReadReport(positional[1]); err == nil {
				WriteComparison(stdout, a, b, positional[0], positional[1])
				return 0
			}
		}
		fmt.Fprintln(stderr, "arbiter eval:", err)
		return 1
	}
	if *configPath == "" || len(positional) != 1 {
		fmt.Fprintln(stderr, Usage)
		return 2
	}
	suite, err := LoadSuite(positional[0])
	if err != nil {
		fmt.Fprintf(stderr, "arbiter eval: %s: %v\n", positional[0], err)
		return 1
	}
	opts := Options{Config: *configPath, K: *k, Replay: *replay, Record: *record, Kinds: kinds, Getenv: os.Getenv}
	if _, err := LoadConfig(suite, opts); err != nil {
		fmt.Fprintf(stderr, "invalid configuration %s:\n%v\n", *configPath, err)
		return 1
	}
	rep, err := Run(ctx, suite, opts)
	if err != nil {
		fmt.Fprintln(stderr, "arbiter eval:", err)
		return 2
	}
	rep.WriteText(stdout)
	for _, w := range []struct {
		path  string
		write func(string) error
	}{{*jsonOut, rep.WriteJSON}, {*htmlOut, func(p string) error { return rep.WriteHTML(p, *traces) }}} {
		if w.path == "" {
			continue
		}
		if err := w.write(w.path); err != nil {
			fmt.Fprintln(stderr, "arbiter eval:", err)
			return 1
		}
	}
	if !rep.Passed() {
		return 1
	}
	return 0
}
