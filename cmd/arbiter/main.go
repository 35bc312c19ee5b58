// Command arbiter runs the arbiter server and its tools:
//
//	arbiter serve [-config FILE]         HTTP API on the configured address
//	arbiter chat [-config FILE]          a terminal chat against the same engine
//	arbiter mcp [-config FILE]           the tools as an MCP server on stdio
//	arbiter check-config -config FILE    validate a configuration and exit
//	arbiter eval -config FILE SUITE.yaml run a scenario suite k times (see package eval)
//	arbiter version                      the module version, commit and Go version it was built from
//
// With no -config, serve and chat start a local setup: 127.0.0.1:8080, the
// store in ./data, the embedded task board, one tenant and user, and a local
// API key printed at start. The model comes from the environment.
//
// mcp acts as the user of the API key in ARBITER_KEY (the local key in the
// local setup); with -listen it serves streamable HTTP instead, each request
// authenticated by its bearer key.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/arbiterhq/arbiter/channel/mcpserver"
	"github.com/arbiterhq/arbiter/cmd/internal/kinds"
	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/server"
)

const usage = `usage:
  arbiter serve [-config FILE] [-record DIR | -replay DIR]   run the HTTP API
  arbiter chat [-config FILE] [-record DIR | -replay DIR]    chat in the terminal
  arbiter mcp [-config FILE] [-listen ADDR] [-confirm-timeout D]
                                       the tools as an MCP server (stdio; ARBITER_KEY
                                       names the user), or streamable HTTP on ADDR/mcp
  arbiter check-config -config FILE    validate a configuration
  arbiter eval -config FILE SUITE.yaml [-k N] [-replay DIR | -record DIR] [-json OUT] [-html OUT]
                                       run a scenario suite (pass^k, metrics from the journal)
  arbiter eval -compare A.json B.json  two runs side by side
  arbiter version                      the version, commit and Go version of this binary

Without -config, a local setup is used (see README).`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "version", "-version", "--version":
		printVersion(stdout)
		return 0
	case "eval":
		return evalCommand(ctx, rest, stdout, stderr)
	}
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "configuration file (YAML)")
	var opts server.Options
	if cmd == "serve" || cmd == "chat" {
		fs.StringVar(&opts.Record, "record", "", "write every provider exchange as cassettes into this directory")
		fs.StringVar(&opts.Replay, "replay", "", "answer provider calls from the cassettes in this directory, with no network")
	}
	var mcpOpts mcpOptions
	if cmd == "mcp" {
		fs.StringVar(&mcpOpts.listen, "listen", "", "serve streamable HTTP on this address (at /mcp) instead of stdio")
		fs.DurationVar(&mcpOpts.confirmTimeout, "confirm-timeout", mcpserver.DefaultConfirmTimeout, "how long to wait for the user's confirmation before cancelling")
	}
	if err := fs.Parse(rest); err != nil {
		return 2
	}
	if opts.Record != "" && opts.Replay != "" {
		fmt.Fprintln(stderr, "-record and -replay exclude each other")
		return 2
	}
	var err error
	switch cmd {
	case "serve":
		err = serve(ctx, *configPath, opts, stdout, stderr)
	case "chat":
		err = chatLoop(ctx, *configPath, opts, stdin, stdout, stderr)
	case "mcp":
		err = mcpCommand(ctx, *configPath, mcpOpts, os.Getenv, stdin, stdout, stderr)
	case "check-config":
		if *configPath == "" {
			fmt.Fprintln(stderr, "check-config needs -config FILE")
			return 2
		}
		err = checkConfig(*configPath, stdout)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "unknown command %q\n%s\n", cmd, usage)
		return 2
	}
	if err != nil {
		var cfgErr configError
		if errors.As(err, &cfgErr) {
			fmt.Fprintf(stderr, "invalid configuration %s:\n%v\n", cfgErr.path, cfgErr.err)
			return 1
		}
		fmt.Fprintf(stderr, "arbiter %s: %v\n", cmd, err)
		return 1
	}
	return 0
}

// configError marks an invalid configuration (exit status 1 with the
// errors, each with its line).
type configError struct {
	path string
	err  error
}

func (e configError) Error() string { return e.path + ": " + e.err.Error() }

// loadConfig reads the file, or builds the local setup when path is "".
func loadConfig(path string) (*config.Config, error) {
	if path == "" {
		return server.LocalConfig(os.Getenv), nil
	}
	cfg, err := server.Load(path, kinds.All())
	if err != nil {
		return nil, configError{path: path, err: err}
	}
	return cfg, nil
}

func checkConfig(path string, stdout io.Writer) error {
	if _, err := loadConfig(path); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: ok\n", path)
	return nil
}
