// Package keyring finds which API key a bearer token is, for the channels
// that authenticate requests with one (the HTTP API, MCP over HTTP).
package keyring

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
)

// Ring maps tokens to their position in the list it was built from.
// Read-only after New, so safe for concurrent use.
type Ring struct {
	byHash map[[32]byte]int
}

// New builds the ring of tokens; an empty token is an error. A token given
// twice names its first position.
func New(tokens []string) (*Ring, error) {
	r := &Ring{byHash: make(map[[32]byte]int, len(tokens))}
	for i, t := range tokens {
		if t == "" {
			return nil, errors.New("empty API token")
		}
		// Looked up by hash, so the time a lookup takes does not depend
		// on how much of a guessed token matches a real one.
		if _, dup := r.byHash[sha256.Sum256([]byte(t))]; !dup {
			r.byHash[sha256.Sum256([]byte(t))] = i
		}
	}
	return r, nil
}

// Find returns the position of token, or false.
func (r *Ring) Find(token string) (int, bool) {
	if token == "" {
		return 0, false
	}
	i, ok := r.byHash[sha256.Sum256([]byte(token))]
	return i, ok
}

// Bearer is the token of the request's "Authorization: Bearer <token>"
// header, or "".
func Bearer(req *http.Request) string {
	token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(token)
}
