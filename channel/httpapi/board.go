package httpapi

import (
	"errors"
	"net/http"

	"github.com/arbiterhq/arbiter/chat"
)

// ErrNotFound is what Config.Card returns for a card the caller's tenant
// does not have.
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
		Language: id.Language, Timezone: id.Timezone, Scopes: scopes})
}

// boardReader answers the read-only board pages for callers with scope
// read; the 404 no_board tells a server without an embedded board.
func (s *Server) boardReader(w http.ResponseWriter, r *http.Request) (chat.Identity, bool) {
	id, ok := s.caller(w, r)
	switch {
	case !ok:
		return id, false
	case !id.HasScope(chat.ScopeRead):
		writeError(w, http.StatusForbidden, "forbidden", "reading the board needs a key with the scope read")
		return id, false
	case s.cfg.Board == nil || s.cfg.Card == nil:
		writeError(w, http.StatusNotFound, "no_board", "this server has no embedded task board")
		return id, false
	}
	return id, true
}

func (s *Server) getBoard(w http.ResponseWriter, r *http.Request) {
	id, ok := s.boardReader(w, r)
	if !ok {
		return
	}
	v, err := s.cfg.Board(r.Context(), id.TenantID)
	s.writeRead(w, "board", err, v)
}

func (s *Server) getCard(w http.ResponseWriter, r *http.Request) {
	id, ok := s.boardReader(w, r)
	if !ok {
		return
	}
	cardID := r.PathValue("id")
	v, err := s.cfg.Card(r.Context(), id.TenantID, cardID)
	if errors.Is(err, ErrNotFound) {
		writeError(w, http.StatusNotFound, "not_found", "no card "+cardID)
		return
	}
	s.writeRead(w, "card "+cardID, err, v)
}

// writeRead answers a read: the value, or 503 when its store failed.
func (s *Server) writeRead(w http.ResponseWriter, what string, err error, v any) {
	if err != nil {
		s.cfg.Logger.Warn("read "+what, "err", err)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the "+what+" cannot be read right now; retry later")
		return
	}
	writeJSON(w, http.StatusOK, v)
}
