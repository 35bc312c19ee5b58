package mcpserver

import (
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbiterhq/arbiter/channel/internal/keyring"
	"github.com/arbiterhq/arbiter/chat"
)

// Key is an API key and the identity it authenticates.
type Key struct {
	Token    string
	Identity chat.Identity
}

// HTTPHandler serves streamable HTTP MCP to requests bearing one of keys
// ("Authorization: Bearer <token>"; 401 otherwise), each as its key's
// identity. Every key has its own Server (cfg with that identity) and so
// its own session table: a session opened with one key is unknown under
// another. The returned func closes the servers.
func HTTPHandler(cfg Config, keys []Key) (http.Handler, func(), error) {
	servers := make([]*Server, 0, len(keys))
	closeAll := func() {
		for _, s := range servers {
			s.Close()
		}
	}
	ring, err := keyring.New(tokens(keys))
	if err != nil {
		return nil, nil, fmt.Errorf("mcpserver: %w", err)
	}
	handlers := make([]http.Handler, len(keys))
	for i, k := range keys {
		c := cfg
		c.Identity = k.Identity
		srv, err := New(c)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		servers = append(servers, srv)
		handlers[i] = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.MCP() },
			&mcp.StreamableHTTPOptions{Logger: srv.logger})
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, ok := ring.Find(keyring.Bearer(r))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="arbiter"`)
			http.Error(w, "missing or unknown bearer token", http.StatusUnauthorized)
			return
		}
		handlers[i].ServeHTTP(w, r)
	})
	return h, closeAll, nil
}

// KeyIndex returns the position of token among keys, -1 for none.
func KeyIndex(keys []Key, token string) int {
	ring, err := keyring.New(tokens(keys))
	if err != nil {
		return -1
	}
	if i, ok := ring.Find(token); ok {
		return i
	}
	return -1
}

func tokens(keys []Key) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Token
	}
	return out
}
