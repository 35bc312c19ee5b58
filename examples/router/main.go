// Command router runs the router assistant of the routing article on
// arbiter: before any answer a router decides between a plain answer, a
// skill (a conversational mode of the chat) and a tool — with pre-model
// intercepts, the web-search detector and post-model guards — over mock
// tools this program serves itself with canned results (tools.go).
//
//	OPENAI_API_KEY=... go run ./examples/router -config examples/router/arbiter.yaml
//
// Its eval suite runs with these tools too (see package eval):
//
//	go run ./examples/router eval -config examples/router/arbiter.yaml \
//	  -replay examples/router/recordings -k 3 examples/router/eval.yaml
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/arbiterhq/arbiter/eval"
	"github.com/arbiterhq/arbiter/server"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "eval" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := eval.Main(ctx, os.Args[2:], kinds(), os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	configPath := flag.String("config", "examples/router/arbiter.yaml", "configuration file")
	flag.Parse()
	if err := run(*configPath); err != nil {
		fmt.Fprintln(os.Stderr, "router:", err)
		os.Exit(1)
	}
}

func run(configPath string) error {
	cfg, err := server.Load(configPath, kinds())
	if err != nil {
		return err
	}
	srv, err := server.Build(cfg, kinds(), server.Options{LogOut: os.Stderr})
	if err != nil {
		return err
	}
	defer srv.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return srv.ListenAndServe(ctx, func(addr net.Addr) { fmt.Printf("listening on http://%s\n", addr) })
}
