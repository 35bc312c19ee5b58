// Command router runs the router assistant of the routing article on
// arbiter: before any answer a router decides between a plain answer, a
// skill (a conversational mode of the chat) and a tool — with pre-model
// intercepts, the web-search detector and post-model guards — over mock
// tools this program serves itself with canned results (tools.go).
//
//	OPENAI_API_KEY=... go run ./examples/router -config examples/router/arbiter.yaml
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/arbiterhq/arbiter/server"
)

func main() {
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
