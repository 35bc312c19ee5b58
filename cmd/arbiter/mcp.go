package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbiterhq/arbiter/channel/mcpserver"
	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/cmd/internal/kinds"
	"github.com/arbiterhq/arbiter/server"
)

// mcpOptions are the flags of `arbiter mcp`.
type mcpOptions struct {
	// listen serves streamable HTTP on this address instead of stdio.
	listen         string
	confirmTimeout time.Duration
}

// mcpCommand offers the configured tools to MCP clients: over stdio as the
// user of the key in ARBITER_KEY (the local key without -config), or over
// streamable HTTP with each request's bearer key. Stdout is the protocol
// in stdio mode, so every log goes to stderr.
func mcpCommand(ctx context.Context, configPath string, o mcpOptions, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg, err := loadConfig(configPath)
	if err != nil {
		return err
	}
	a, err := server.Build(cfg, kinds.All(), server.Options{LogOut: stderr, NoPages: true})
	if err != nil {
		return err
	}
	defer a.Close()
	if o.listen != "" {
		return serveMCPHTTP(ctx, a, o, stdout)
	}
	id, err := mcpIdentity(a, getenv("ARBITER_KEY"))
	if err != nil {
		return err
	}
	srv, err := newMCPServer(a, id, o)
	if err != nil {
		return err
	}
	a.Logger.Info("mcp: serving on stdio", "tenant", id.TenantID, "user", id.UserID)
	return srv.Run(ctx, &mcp.IOTransport{Reader: readCloser(stdin), Writer: nopWriteCloser{stdout}})
}

// mcpIdentity is the identity of the key, or of the local key when none is
// given in the local setup.
func mcpIdentity(a *server.Server, key string) (chat.Identity, error) {
	key = strings.TrimSpace(key)
	if key == "" {
		if a.LocalKey == "" {
			return chat.Identity{}, errors.New("set ARBITER_KEY to one of the configuration's API keys")
		}
		key = a.LocalKey
	}
	if i := mcpserver.KeyIndex(kinds.MCPKeys(a.Keys), key); i >= 0 {
		return a.Keys[i].Identity, nil
	}
	return chat.Identity{}, errors.New("ARBITER_KEY is not an API key of this configuration")
}

func newMCPServer(a *server.Server, id chat.Identity, o mcpOptions) (*mcpserver.Server, error) {
	return mcpserver.New(mcpConfig(a, id, o))
}

func mcpConfig(a *server.Server, id chat.Identity, o mcpOptions) mcpserver.Config {
	return mcpserver.Config{Handler: a.Engine, Identity: id, Name: "arbiter", Version: buildVersion(),
		Logger: a.Logger, ConfirmTimeout: o.confirmTimeout}
}

// serveMCPHTTP serves streamable HTTP at /mcp until ctx ends.
func serveMCPHTTP(ctx context.Context, a *server.Server, o mcpOptions, stdout io.Writer) error {
	h, closeAll, err := mcpHTTPHandler(a, o)
	if err != nil {
		return err
	}
	defer closeAll()
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.listen, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	fmt.Fprintf(stdout, "arbiter mcp listening on http://%s%s\n", ln.Addr(), kinds.MCPPath)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// mcpHTTPHandler serves each key's tools at /mcp to requests bearing that
// key.
func mcpHTTPHandler(a *server.Server, o mcpOptions) (http.Handler, func(), error) {
	h, closeAll, err := mcpserver.HTTPHandler(mcpConfig(a, chat.Identity{}, o), kinds.MCPKeys(a.Keys))
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(kinds.MCPPath, h)
	return mux, closeAll, nil
}

func buildVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}

// readCloser lets the transport close stdin when it is closable, so a
// session ending on our side stops reading.
func readCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	return io.NopCloser(r)
}

// nopWriteCloser keeps stdout open when the session closes: the process
// may still write its exit.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
