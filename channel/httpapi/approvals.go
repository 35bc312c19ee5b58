package httpapi

import (
	"errors"
	"net/http"

	"github.com/arbiterhq/arbiter/chat"
)

// Store statuses an approvals list may filter on.
var actionStatuses = map[string]bool{"": true, "proposed": true, "approved": true, "rejected": true, "expired": true,
	"executing": true, "confirmed": true, "failed": true, "unknown": true}

// approver is the caller of an approvals request, as caller; false after
// answering 401, or 501 when the server keeps no approvals.
func (s *Server) approver(w http.ResponseWriter, r *http.Request) (chat.Identity, bool) {
	id, ok := s.caller(w, r)
	if !ok {
		return id, false
	}
	if s.cfg.Approvals == nil {
		writeError(w, http.StatusNotImplemented, "not_implemented", "this server keeps no approvals")
		return id, false
	}
	return id, true
}

// listApprovals answers GET /v1/approvals?status=: the caller's tenant's
// actions its role may decide, newest first.
func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	id, ok := s.approver(w, r)
	if !ok {
		return
	}
	status := r.URL.Query().Get("status")
	if !actionStatuses[status] {
		writeError(w, http.StatusBadRequest, "bad_request", "unknown status "+status)
		return
	}
	list, err := s.cfg.Approvals.Actions(r.Context(), id, status)
	if err != nil {
		s.cfg.Logger.Warn("list approvals", "tenant", id.TenantID, "err", err)
		writeUnavailable(w, "the approvals are unavailable; retry later")
		return
	}
	if list == nil {
		list = []chat.ActionView{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": list})
}

// decideApproval answers POST /v1/approvals/{id} {"decision": "approve" |
// "reject"}: the decision, once; the action's final state and the reply
// its conversation got.
func (s *Server) decideApproval(w http.ResponseWriter, r *http.Request) {
	id, ok := s.approver(w, r)
	if !ok {
		return
	}
	var body struct {
		Decision string `json:"decision"`
	}
	if err := decodeStrict(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), &body); err != nil {
		s.writeBodyError(w, err)
		return
	}
	if body.Decision != "approve" && body.Decision != "reject" {
		writeError(w, http.StatusBadRequest, "bad_request", `decision must be "approve" or "reject"`)
		return
	}
	actionID := r.PathValue("id")
	view, out, err := s.cfg.Approvals.Decide(r.Context(), id, actionID, body.Decision == "approve")
	switch {
	case errors.Is(err, chat.ErrActionNotFound):
		writeError(w, http.StatusNotFound, "not_found", "no action "+actionID)
	case errors.Is(err, chat.ErrActionClosed):
		writeJSON(w, http.StatusConflict, map[string]any{
			"error":  map[string]string{"code": "already_decided", "message": "the action is " + view.Status + "; nothing was done"},
			"action": view,
		})
	case err != nil && view.ID == "":
		s.cfg.Logger.Warn("decide approval", "tenant", id.TenantID, "action", actionID, "err", err)
		writeUnavailable(w, "the decision could not be taken now; retry later")
	default:
		// Decided. When its conversation's turn could not run now, the
		// decision stands and the action is carried out later.
		resp := map[string]any{"action": view, "reply": nil}
		if err == nil {
			if out.Buttons == nil {
				out.Buttons = []chat.Button{}
			}
			if out.Executed == nil {
				out.Executed = []chat.Execution{}
			}
			resp["reply"] = out
		} else {
			s.cfg.Logger.Warn("carry out approved action", "tenant", id.TenantID, "action", actionID, "err", err)
		}
		writeJSON(w, http.StatusOK, resp)
	}
}
