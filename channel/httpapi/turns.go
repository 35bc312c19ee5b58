package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/arbiterhq/arbiter/chat"
)

// TurnQuery filters GET /v1/turns; empty fields match everything.
type TurnQuery struct {
	ConversationID string
	UserID         string
	Status         string
	Provider       string
	Before         time.Time
	Limit          int
}

// TurnSummary is one turn of the list.
type TurnSummary struct {
	TurnID         string    `json:"turn_id"`
	ConversationID string    `json:"conversation_id"`
	UserID         string    `json:"user_id"`
	Route          string    `json:"route"`
	Status         string    `json:"status"`
	StartedAt      time.Time `json:"started_at"`
	DurationMS     int64     `json:"duration_ms"`
	CostUSD        float64   `json:"cost_usd"`
	CostUnknown    bool      `json:"cost_unknown,omitempty"`
	Providers      []string  `json:"providers"`
}

// listTurns answers GET /v1/turns?conversation_id=&user_id=&status=&provider=&before=&limit=
// with the caller's tenant's turns, newest first, and the cursor of the
// next page.
func (s *Server) listTurns(w http.ResponseWriter, r *http.Request) {
	id, ok := s.caller(w, r)
	if !ok {
		return
	}
	if s.cfg.Turns == nil {
		writeError(w, http.StatusNotImplemented, "not_implemented", "this journal cannot list turns")
		return
	}
	v := r.URL.Query()
	q := TurnQuery{ConversationID: v.Get("conversation_id"), UserID: v.Get("user_id"), Status: v.Get("status"), Provider: v.Get("provider"), Limit: 50}
	if !id.HasScope(chat.ScopeTurnsReadAll) {
		// A user reads only their own turns.
		if q.UserID != "" && q.UserID != id.UserID {
			writeJSON(w, http.StatusOK, map[string]any{"turns": []TurnSummary{}})
			return
		}
		q.UserID = id.UserID
	}
	if b := v.Get("before"); b != "" {
		t, err := time.Parse(time.RFC3339Nano, b)
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_request", "before must be an RFC 3339 time")
			return
		}
		q.Before = t
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 500 {
			writeError(w, http.StatusBadRequest, "bad_request", "limit must be between 1 and 500")
			return
		}
		q.Limit = n
	}
	turns, err := s.cfg.Turns(r.Context(), id.TenantID, q)
	if err != nil {
		s.cfg.Logger.Warn("list turns", "tenant", id.TenantID, "err", err)
		writeUnavailable(w, "the journal is unavailable; retry later")
		return
	}
	if turns == nil {
		turns = []TurnSummary{}
	}
	body := struct {
		Turns      []TurnSummary `json:"turns"`
		NextBefore string        `json:"next_before,omitempty"`
	}{Turns: turns}
	if len(turns) == q.Limit {
		body.NextBefore = turns[len(turns)-1].StartedAt.Format(time.RFC3339Nano)
	}
	writeJSON(w, http.StatusOK, body)
}

// hideReasoning takes the reasoning of the turn's mode — why its model
// did what it did, which a mode records as its section's "reasoning" (an
// interviewer's why it asked, never shown to the user it interviews) —
// out of a turn's record read with a key without turns:read_all, and
// marks it hidden ("<mode>":{…,"reasoning_hidden":true}). A record
// without one is returned as it is. One that cannot be read, or whose
// top-level list holds entries with a reasoning of their own (a section
// malformed as a list), is never shown.
func hideReasoning(rec json.RawMessage) json.RawMessage {
	const unshown = `{"error":"the record cannot be shown"}`
	var top map[string]json.RawMessage
	if json.Unmarshal(rec, &top) != nil {
		return json.RawMessage(unshown) // never unread
	}
	hidden := false
	for name, raw := range top {
		if listsReasoning(raw) {
			return json.RawMessage(unshown)
		}
		var section map[string]json.RawMessage
		if json.Unmarshal(raw, &section) != nil || section["reasoning"] == nil {
			continue // not a section, or one with nothing to hide
		}
		delete(section, "reasoning")
		section["reasoning_hidden"] = json.RawMessage("true")
		top[name], _ = json.Marshal(section)
		hidden = true
	}
	if !hidden {
		return rec
	}
	out, err := json.Marshal(top)
	if err != nil {
		return json.RawMessage(unshown)
	}
	return out
}

// listsReasoning reports whether raw is a list with an entry that holds a
// "reasoning" member. The engine's own lists (calls, steps, vetoes) have
// none at their entries' top level; what a tool returned sits deeper.
func listsReasoning(raw json.RawMessage) bool {
	var list []map[string]json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return false
	}
	for _, entry := range list {
		if entry["reasoning"] != nil {
			return true
		}
	}
	return false
}
