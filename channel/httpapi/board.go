package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/arbiterhq/arbiter/chat"
)

// ErrNotFound is what a Read returns for what the caller's tenant does
// not have.
var ErrNotFound = errors.New("not found")

// me is the caller as GET /v1/me shows it: enough for a client to speak
// the user's language and show times in their zone.
type me struct {
	Tenant   string       `json:"tenant"`
	User     string       `json:"user"`
	Name     string       `json:"name,omitempty"`
	Role     string       `json:"role,omitempty"`
	Language string       `json:"language,omitempty"`
	Timezone string       `json:"timezone,omitempty"`
	Scopes   []chat.Scope `json:"scopes"`
	// MaxBodyBytes is the largest request body the server accepts
	// (limits.max_body_bytes): a client checks a message's JSON, in bytes
	// of UTF-8, against it before sending.
	MaxBodyBytes int64 `json:"max_body_bytes"`
}

func (s *Server) getMe(w http.ResponseWriter, r *http.Request) {
	id, ok := s.caller(w, r)
	if !ok {
		return
	}
	scopes := id.Scopes
	if scopes == nil {
		scopes = []chat.Scope{}
	}
	writeJSON(w, http.StatusOK, me{Tenant: id.TenantID, User: id.UserID, Name: id.Name, Role: id.Role,
		Language: id.Language, Timezone: id.Timezone, Scopes: scopes, MaxBodyBytes: s.cfg.MaxBodyBytes})
}

// A Read is a read-only endpoint over data that a part of the server owns
// — the task board's GET /v1/board and GET /v1/board/cards/{id}, added by
// the task board's tool kind —, served only when that part is configured.
// The API authenticates the caller and requires the scope read; Read's
// value is the JSON answer, ErrNotFound a 404, any other error a 503.
type Read struct {
	// Pattern is a ServeMux pattern with its method ("GET /v1/board").
	Pattern string
	// What names the data in errors ("board", "card").
	What string
	Read func(r *http.Request, who chat.Identity) (any, error)
}

// handleRead serves rd, refusing a pattern the mux cannot take (malformed,
// or another read's).
func (s *Server) handleRead(rd Read) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("httpapi: read %s: %v", rd.Pattern, r)
		}
	}()
	if rd.Read == nil || rd.What == "" {
		return fmt.Errorf("httpapi: read %s: What and Read are required", rd.Pattern)
	}
	s.mux.HandleFunc(rd.Pattern, s.serveRead(rd))
	return nil
}

// serveRead is the handler of read rd.
func (s *Server) serveRead(rd Read) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := s.caller(w, r)
		if !ok {
			return
		}
		if !id.HasScope(chat.ScopeRead) {
			writeError(w, http.StatusForbidden, "forbidden", "reading the "+rd.What+" needs a key with the scope read")
			return
		}
		v, err := rd.Read(r, id)
		if errors.Is(err, ErrNotFound) {
			writeError(w, http.StatusNotFound, "not_found", "no "+rd.What+" "+strings.Join(pathValues(r, rd.Pattern), " "))
			return
		}
		s.writeRead(w, rd.What, err, v)
	}
}

// pathValues are the values of pattern's wildcards in r.
func pathValues(r *http.Request, pattern string) []string {
	var out []string
	for _, seg := range strings.Split(pattern, "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			out = append(out, r.PathValue(strings.TrimSuffix(strings.TrimSuffix(name, "}"), "...")))
		}
	}
	return out
}

// writeRead answers a read: the value, or 503 when its store failed.
func (s *Server) writeRead(w http.ResponseWriter, what string, err error, v any) {
	if err != nil {
		s.cfg.Logger.Warn("read "+what, "err", err)
		writeUnavailable(w, "the "+what+" cannot be read right now; retry later")
		return
	}
	writeJSON(w, http.StatusOK, v)
}
