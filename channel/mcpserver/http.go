package mcpserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
	handlers := make([]http.Handler, len(keys))
	sums := make([][32]byte, len(keys))
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
		sums[i] = sha256.Sum256([]byte(k.Token))
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		i := keyIndex(sums, strings.TrimSpace(token))
		if i < 0 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="arbiter"`)
			http.Error(w, "missing or unknown bearer token", http.StatusUnauthorized)
			return
		}
		handlers[i].ServeHTTP(w, r)
	})
	return h, closeAll, nil
}

// KeyIndex returns the position of token among keys, -1 for none, in time
// that does not depend on how much of a key was right.
func KeyIndex(keys []Key, token string) int {
	sums := make([][32]byte, len(keys))
	for i, k := range keys {
		sums[i] = sha256.Sum256([]byte(k.Token))
	}
	return keyIndex(sums, token)
}

// keyIndex compares the token's hash with every key's.
func keyIndex(sums [][32]byte, token string) int {
	if token == "" {
		return -1
	}
	got := sha256.Sum256([]byte(token))
	found := -1
	for i := range sums {
		if subtle.ConstantTimeCompare(got[:], sums[i][:]) == 1 && found < 0 {
			found = i
		}
	}
	return found
}
