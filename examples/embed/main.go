// Command embed runs the whole arbiter server inside a program of its own,
// with one tool written here: shout, which upper-cases a text. The tool
// kind "shout" is added to the server's built-in kind table and named in
// arbiter.yaml; everything else — the HTTP API, the web chat, the engine's
// guards and journal — is the server package's.
//
//	OPENAI_API_KEY=... go run . -config arbiter.yaml
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/tool"
)

func main() {
	configPath := flag.String("config", "arbiter.yaml", "configuration file")
	flag.Parse()
	if err := run(*configPath); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
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

// kinds are the server's built-in kinds plus this program's tool.
func kinds() server.Kinds {
	k := server.Builtin()
	k.Tools["shout"] = func(context.Context, *server.Env, server.Section) (server.ToolSet, error) {
		t, err := tool.Func(tool.Spec{Name: "shout", Title: "Shout", Description: "Upper-case a text.", Policy: tool.Policy{Risk: tool.RiskRead}}, shout)
		return server.ToolSet{Tools: []tool.Tool{t}}, err
	}
	return k
}

type shoutInput struct {
	Text string `json:"text" jsonschema:"the text to shout"`
}

func shout(_ context.Context, _ tool.Call, in shoutInput) (string, error) {
	return strings.ToUpper(in.Text), nil
}
